"""The configuration of a dedup run: everything that decides its result, with a fingerprint.

One :class:`DedupConfig` drives every engine (local, Spark, the in-process
:func:`neardup.dedup`) and seeds the index (:meth:`neardup.store.SeenIndex.for_dedup`); it is
recorded with its fingerprint in ``summary.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._validate import check_choice, check_float, check_int
from .errors import ConfigError
from .lsh.params import Banding
from .params import FORMAT_VERSION, MinHashParams, ShingleParams, config_fingerprint
from .stages.candidates import banding_for
from .stages.survivors import KEEP_POLICIES

__all__ = ["DedupConfig", "METHODS", "MEASURES", "KEEP_POLICIES", "DEFAULT_FAMILY", "INPUT_FORMATS", "CONTENTS",
           "HTML_MODES", "MAX_BYTES"]

METHODS = ("minhash", "simhash", "exact", "broder", "greedy")
INPUT_FORMATS = ("auto", "jsonl", "parquet", "arrow", "csv", "tsv", "warc", "html", "text")
CONTENTS = ("text", "html")
HTML_MODES = ("main", "whole", "article")
#: Records larger than this are skipped (``too_large``) unless ``max_bytes`` says otherwise.
MAX_BYTES = 64 << 20
MEASURES = ("jaccard", "containment")
#: The permutation family of every engine and of the index: 32-bit multiply-shift runs eight
#: lanes per AVX2 register, about four times the rate of 64-bit values (see
#: :class:`neardup.MinHashParams`), and 32-bit values estimate resemblance as well at 128
#: permutations (a chance collision of two values costs 2**-32).
DEFAULT_FAMILY = "mulshift32"


def default_minhash() -> MinHashParams:
    return MinHashParams(num_perm=128, seed=1, family=DEFAULT_FAMILY)


@dataclass(frozen=True, kw_only=True)
class DedupConfig:
    """Everything that decides the result of a run (recorded, with its fingerprint, in summary.json).

    The read options decide what a record's id and text are, so they are part of it too:
    ``format`` (of the input files, ``auto`` by extension), ``id_field`` and ``text_field`` (of
    JSONL and Parquet records), ``content`` (what the text field holds: ``text`` or ``html``),
    ``html`` (HTML to text: the ``main`` content or the ``whole`` page) and ``max_bytes``
    (larger records are skipped as ``too_large``; None for no limit).
    """

    shingle: ShingleParams = field(default_factory=lambda: ShingleParams(k=5))
    minhash: MinHashParams = field(default_factory=default_minhash)
    method: str = "minhash"
    threshold: float = 0.8
    measure: str = "jaccard"
    bands: int | None = None
    rows: int | None = None
    max_distance: int = 3
    keep: str = "first"
    keep_field: str | None = None
    verify: bool = True
    format: str = "auto"
    id_field: str = "id"
    text_field: str = "text"
    content: str = "text"
    html: str = "main"
    max_bytes: int | None = MAX_BYTES
    #: ``method="broder"`` (Broder et al. 1997, :mod:`neardup.cluster.broder`): keep the shingle
    #: ids divisible by ``sample_mod`` (the experiment kept 1 in 25), and give no pairs from a
    #: sample that more than ``sample_cap`` documents share. ``method="greedy"`` uses the same
    #: samples for the experiment's one-pass clustering (order-dependent, unverified).
    #: ``sample="min_s"`` keeps each document's ``sample_size`` smallest ids instead (MIN_s).
    sample_mod: int = 25
    sample_cap: int = 1000
    sample: str = "mod_m"
    sample_size: int = 100
    #: The HTML extraction (:func:`neardup.text.html.extractor_id`) when the inputs are web pages:
    #: another extractor (or version) gives other texts, so it is part of the fingerprint.
    extraction: str | None = None
    #: The field naming each record's source (ids need only be unique within a source); None:
    #: the input (file or folder) a record came from, when there are several.
    source_field: str | None = None
    #: ``keep="source"``: the sources whose records survive first, in order of preference (a
    #: source not listed comes after them), then the first record.
    keep_sources: tuple = ()
    #: URL identity (:mod:`neardup.stages.urls`): the field holding each record's URL (a WARC
    #: record's is its target URI whatever the name); records under one canonical URL are one
    #: page, and pages' canonical claims are checked against their content. None: off.
    url_field: str | None = None
    #: The rules of the canonical form (:class:`neardup.urls.UrlRules`; None: the defaults).
    url_rules: object = None

    def __post_init__(self) -> None:
        check_choice("format", self.format, INPUT_FORMATS, owner="DedupConfig")
        check_choice("content", self.content, CONTENTS, owner="DedupConfig")
        check_choice("html", self.html, HTML_MODES, owner="DedupConfig")
        for name in ("id_field", "text_field"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"The '{name}' parameter of DedupConfig must be a non-empty str. "
                                  f"Got {getattr(self, name)!r} instead.")
        if self.max_bytes is not None:
            check_int("max_bytes", self.max_bytes, 1, None, owner="DedupConfig")
        check_choice("method", self.method, METHODS, owner="DedupConfig")
        check_int("sample_mod", self.sample_mod, 1, None, owner="DedupConfig")
        check_int("sample_cap", self.sample_cap, 2, None, owner="DedupConfig")
        check_choice("sample", self.sample, ("mod_m", "min_s"), owner="DedupConfig")
        check_int("sample_size", self.sample_size, 1, None, owner="DedupConfig")
        check_choice("measure", self.measure, MEASURES, owner="DedupConfig")
        check_choice("keep", self.keep, KEEP_POLICIES + ("field", "source"), owner="DedupConfig")
        if self.keep == "source" and not self.keep_sources:
            raise ConfigError("keep='source' needs keep_sources, the sources in order of preference")
        if self.source_field is not None and (not isinstance(self.source_field, str) or not self.source_field):
            raise ConfigError(f"The 'source_field' parameter of DedupConfig must be a non-empty str or None. "
                              f"Got {self.source_field!r} instead.")
        object.__setattr__(self, "keep_sources", tuple(self.keep_sources))
        if self.url_field is not None and (not isinstance(self.url_field, str) or not self.url_field):
            raise ConfigError(f"The 'url_field' parameter of DedupConfig must be a non-empty str or None. "
                              f"Got {self.url_field!r} instead.")
        if self.url_rules is not None:
            from .urls import UrlRules

            if not isinstance(self.url_rules, UrlRules):
                raise ConfigError(f"The 'url_rules' parameter of DedupConfig must be a neardup.urls.UrlRules or None. "
                                  f"Got {self.url_rules!r} instead.")
        check_float("threshold", self.threshold, 0.0, 1.0, owner="DedupConfig", closed="right")
        check_int("max_distance", self.max_distance, 0, 7, owner="DedupConfig")
        if self.keep == "field" and not self.keep_field:
            raise ConfigError("keep='field' needs keep_field, the numeric field whose largest value survives")
        if self.bands is not None:
            check_int("bands", self.bands, 1, self.minhash.num_perm, owner="DedupConfig")
        if self.rows is not None:
            check_int("rows", self.rows, 1, self.minhash.num_perm, owner="DedupConfig")
            if (self.bands or 1) * self.rows > self.minhash.num_perm:
                raise ConfigError(f"{self.bands} bands x {self.rows} rows need more than num_perm "
                                  f"{self.minhash.num_perm} values; lower one of them or raise --num-perm")

    def banding(self) -> Banding:
        return banding_for(self.threshold, self.minhash.num_perm, self.measure, bands=self.bands, rows=self.rows)

    def as_dict(self) -> dict:
        band = self.banding() if self.method == "minhash" else None
        return {
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "measure": self.measure,
            "threshold": self.threshold,
            "shingle": self.shingle.as_dict(),
            "minhash": self.minhash.as_dict(),
            "bands": band.bands if band else None,
            "rows": band.rows if band else None,
            "max_distance": self.max_distance,
            "keep": self.keep,
            "keep_field": self.keep_field,
            "verify": self.verify,
            "read": self.read_options(),
            # Only for the method that uses them, so that other fingerprints stay as they were.
            **({"sample_mod": self.sample_mod, "sample_cap": self.sample_cap}
               if self.method in ("broder", "greedy") else {}),
            # MIN_s only when chosen, so that the fingerprints of MOD_m runs stay as they were.
            **({"sample": self.sample, "sample_size": self.sample_size}
               if self.method in ("broder", "greedy") and self.sample != "mod_m" else {}),
            # Only when set, so that the fingerprints of runs on plain text do not name a parser.
            **({"extraction": self.extraction} if self.extraction is not None else {}),
            # Only when set, so that the fingerprints of runs without sources stay as they were.
            **({"source_field": self.source_field} if self.source_field is not None else {}),
            **({"keep_sources": list(self.keep_sources)} if self.keep == "source" else {}),
            # Only when on, so that the fingerprints of runs without URL identity stay as they were;
            # the rules carry their version (neardup.urls.URL_RULES_VERSION)
            **({"urls": {"field": self.url_field, **self.rules_of_urls().as_dict()}} if self.url_field else {}),
        }

    def rules_of_urls(self):
        """The URL rules of the run (:class:`neardup.urls.UrlRules`)."""
        from .urls import DEFAULT_RULES

        return self.url_rules if self.url_rules is not None else DEFAULT_RULES

    def read_options(self) -> dict:
        """The options of :func:`neardup.io.read_documents` that this configuration fixes."""
        return {"format": self.format, "id_field": self.id_field, "text_field": self.text_field,
                "content": self.content, "html": self.html, "max_bytes": self.max_bytes}

    def fingerprint(self) -> str:
        """:func:`neardup.params.config_fingerprint` of :meth:`as_dict`, as 16 hex digits."""
        return f"{config_fingerprint(self.as_dict()):016x}"
