"""The configuration of a dedup run: everything that decides its result, with a fingerprint.

One :class:`DedupConfig` drives every engine (local, Spark, the in-process
:func:`neardup.dedup`) and seeds the index (:meth:`neardup.store.SeenIndex.for_dedup`); it is
recorded with its fingerprint in ``summary.json``.

The other configurations a command fills live here too: the read options every reading command
shares (:class:`ReadOptions`), a report's (:class:`ReportConfig`, :class:`InputOptions`), and an
index's (:class:`IndexConfig`, with a new index's defaults and storage profiles), and how a run
writes its results (:class:`ResultOptions`). Each tuple of choices is defined once, here or in the
module that implements it; the command-line options that fill these fields are defined once in
:mod:`neardup.options`, and only these classes check a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._validate import check_choice, check_float, check_int, check_text
from .errors import ConfigError, IncompatibleSketchError
from .lsh.params import Banding
from .io.read.reader import CONTENTS
from .io.read.sniff import FORMATS
from .io.write.results import DEFAULT_RESULT_FORMAT, RESULT_FORMATS
from .params import FORMAT_VERSION, MinHashParams, NormalizeParams, ShingleParams, config_fingerprint
from .stages.candidates import SAMPLES, banding_for
from .stages.survivors import KEEP_POLICIES
from .text.html import HTML_MODES
from .text.html_scan import PAGE_FINGERPRINT_VERSION
from .urls import DEFAULT_RULES, URL_RULES_VERSION, UrlRules

__all__ = ["DedupConfig", "ReadOptions", "ReportConfig", "InputOptions", "METHODS", "MEASURES", "KEEP_POLICIES",
           "DEFAULT_FAMILY", "INPUT_FORMATS", "CONTENTS", "HTML_MODES", "MAX_BYTES", "SAMPLES", "INDEX_DEFAULTS",
           "INDEX_PROFILES", "ROWS_BELOW", "index_profile", "IndexConfig", "DOC_BITS", "ID_KEY_SEED",
           "URL_KEY_SEED", "LAYOUT_FIELDS", "simhash_blocks", "rules_of", "RESULT_FORMATS", "DEFAULT_RESULT_FORMAT",
           "ResultOptions", "check_result_format", "KEEP_SYNTAX", "keep_fields"]

METHODS = ("minhash", "simhash", "exact", "broder", "greedy")
#: (the readers' formats, the extraction's modes, the kinds of text field and the results' formats
#: are the tuples of the modules that implement them)
INPUT_FORMATS = ("auto", *FORMATS)
#: Records larger than this are skipped (``too_large``) unless ``max_bytes`` says otherwise.
MAX_BYTES = 64 << 20
MEASURES = ("jaccard", "containment")
#: ``keep`` as the command line gives it: a policy's name, ``field:NAME`` or ``source:A,B,...``
#: (:func:`keep_fields`).
KEEP_SYNTAX = ", ".join(KEEP_POLICIES) + ", field:NAME or source:A,B,..."
#: The permutation family of every engine and of the index: 32-bit multiply-shift runs eight
#: lanes per AVX2 register, about four times the rate of 64-bit values (see
#: :class:`neardup.MinHashParams`), and 32-bit values estimate resemblance as well at 128
#: permutations (a chance collision of two values costs 2**-32).
DEFAULT_FAMILY = "mulshift32"


def default_minhash() -> MinHashParams:
    return MinHashParams(num_perm=128, seed=1, family=DEFAULT_FAMILY)


#: Writes of fewer documents than this keep their postings as rows in profiles default and full
#: (``IndexConfig.rows_below``): a service's single-document ``check_and_add`` then costs what it
#: did with rows, with no run and no merge in its transaction; bulk writes (``neardup index add``
#: commits 5,000 documents at a time) append a run.
ROWS_BELOW = 1000
#: The index's storage profiles (``neardup index add --profile``): what is stored beside the band
#: postings, the simhash blocks and the content fingerprints.
INDEX_PROFILES = {
    # near answers estimated from shared bands; postings in runs of delta-coded blocks (runs.py)
    "lean": {"signatures": False, "containment": False, "posting_runs": True, "rows_below": 0},
    # + signatures: MinHash estimates
    "default": {"signatures": True, "containment": False, "posting_runs": True, "rows_below": ROWS_BELOW},
    # + MOD_m samples: containment
    "full": {"signatures": True, "containment": True, "posting_runs": True, "rows_below": ROWS_BELOW},
}


def index_profile(profile: str) -> dict:
    """The index configuration's fields that the storage profile ``profile`` sets."""
    check_choice("profile", profile, tuple(INDEX_PROFILES), owner="SeenIndex")
    return INDEX_PROFILES[profile]


#: A new index's configuration where none is given: the shingles, permutations and banding
#: policy of ``neardup dedup`` (:class:`DedupConfig`), so that a dedup run and an index of the
#: same corpus hash, band and answer alike. Files made before with other defaults record their
#: own values and open with them.
INDEX_DEFAULTS = {
    "shingle": ShingleParams(),
    "minhash": default_minhash(),
    "threshold": 0.8,
    "containment_threshold": 0.8,
    "mod_m": 8,
    "simhash_max_distance": 3,
    "store_shingles": False,
    "bands": None,
    "rows": None,
    "signatures": True,
    "containment": False,
    "posting_runs": True,
    "rows_below": ROWS_BELOW,
    "fingerprint_runs": True,
    "id_keys": True,
    "id_prefixes": True,
    "urls": DEFAULT_RULES,
}


# -- the index's configuration ---------------------------------------------------------------
# (recorded in every index file, with the constants it records: another value makes old files'
# postings and keys wrong; neardup.store.schema holds the rest of the file's format)

#: Band postings hold a document number in their low bits: at most this many documents per index.
DOC_BITS = 28
#: How the postings are laid out, not what is stored: a file keeps its own (recorded) layout
#: whatever profile an open names, and the profile's name does not depend on it.
LAYOUT_FIELDS = ("posting_runs", "rows_below", "fingerprint_runs", "id_keys", "id_prefixes")
#: The seed of the ids' hash (:func:`neardup.store.ids.id_hashes`; part of the file format: another
#: seed makes old files' keys wrong).
ID_KEY_SEED = 0x6E646964
#: The seed of the canonical URLs' hash (:func:`neardup.store.schema.url_hashes`; part of the file format).
URL_KEY_SEED = 0x6E6475726C


def simhash_blocks(max_distance: int) -> list[int]:
    """Widths of the ``max_distance + 1`` blocks the 64 bits are cut into (most significant first).

    Two fingerprints within ``max_distance`` bits agree exactly on at least one block
    (pigeonhole), so a block match finds every neighbour; the distance is then checked.
    """
    n = max_distance + 1
    base, extra = divmod(64, n)
    return [base + 1 if i < extra else base for i in range(n)]


@dataclass(frozen=True)
class IndexConfig:
    """Everything that decides what an index stores (:class:`neardup.store.SeenIndex`); recorded in
    the file (:meth:`as_dict`, with its :meth:`fingerprint`) and checked on every open. Its checks
    name themselves ``SeenIndex``, the class a caller configures."""

    shingle: ShingleParams
    minhash: MinHashParams
    threshold: float
    containment_threshold: float
    mod_m: int
    simhash_max_distance: int
    store_shingles: bool
    #: None: the banding policy of every engine for ``threshold`` (:func:`default_banding`)
    bands: int | None = None
    rows: int | None = None
    #: store MinHash signatures (near answers estimated from them; without: from shared bands)
    signatures: bool = True
    #: store MOD_m samples (containment answers)
    containment: bool = False
    #: band and simhash-block postings in runs of delta-coded blocks (:mod:`neardup.store.runs`) instead of
    #: one row each (profile ``lean``)
    posting_runs: bool = False
    #: with ``posting_runs``: writes of fewer documents than this put their postings in the row
    #: tables instead (0: every write appends a run, as profile lean does); queries read both
    rows_below: int = 0
    #: with ``posting_runs`` (schema 5): the content fingerprints of a bulk write in runs too
    #: (:data:`neardup.store.runs.KIND_FINGERPRINTS`, the document's ``run_fingerprint`` column) instead of
    #: the ``docs_fingerprint`` index, whose inserts land on random pages: at a million
    #: documents that index more than doubled the cost of inserting the docs rows, and every
    #: batch rewrote a page of it per document in the WAL. Small writes keep ``fingerprint``.
    fingerprint_runs: bool = False
    #: (schema 6) ids found through their hash (:mod:`neardup.store.ids`): ``docs.id_key`` and the ``docs_id``
    #: index for small writes, id runs for bulk writes (with ``posting_runs``); files of 3-5
    #: (False) through their ``UNIQUE (id, source)`` index
    id_keys: bool = False
    #: (schema 6) an id's text up to its last ``/`` stored once in ``id_prefixes`` where other
    #: ids share it, the ``docs`` row holding the number of the prefix and the rest (:mod:`neardup.store.ids`)
    id_prefixes: bool = False
    #: (schema 7) the rules of the canonical URLs whose hashes the file stores (None: files of 3-6,
    #: which store no URLs)
    urls: UrlRules | None = None
    #: (with ``urls``) the definition of the whole-page fingerprints the file stores beside the
    #: URLs (:data:`neardup.text.html_scan.PAGE_FINGERPRINT_VERSION`); None: a file made before
    #: it was recorded, whose fingerprints are of another definition: they count as absent
    #: (``neardup changes`` against it cannot tell ``template``) and none are added to them
    page_fingerprints: int | None = PAGE_FINGERPRINT_VERSION

    @property
    def current_page_fingerprints(self) -> bool:
        """Whether the file's whole-page fingerprints are of this neardup's definition."""
        return self.urls is not None and self.page_fingerprints == PAGE_FINGERPRINT_VERSION

    def __post_init__(self) -> None:
        owner = "SeenIndex"
        for name in ("signatures", "containment", "posting_runs", "fingerprint_runs", "id_keys", "id_prefixes"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"The '{name}' parameter of {owner} must be a bool. "
                                  f"Got {getattr(self, name)!r} instead.")
        for name, kind in (("shingle", ShingleParams), ("minhash", MinHashParams)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"The '{name}' parameter of {owner} must be a {kind.__name__}. "
                                  f"Got {getattr(self, name)!r} instead.")
        if self.urls is not None and not isinstance(self.urls, UrlRules):
            raise ConfigError(f"The 'urls' parameter of {owner} must be a UrlRules or None. "
                              f"Got {self.urls!r} instead.")
        check_float("threshold", self.threshold, 0.0, 1.0, owner=owner, closed="neither")
        check_float("containment_threshold", self.containment_threshold, 0.0, 1.0, owner=owner, closed="right")
        check_int("mod_m", self.mod_m, 1, 1 << 20, owner=owner)
        check_int("rows_below", self.rows_below, 0, None, owner=owner)
        check_int("simhash_max_distance", self.simhash_max_distance, 0, 31, owner=owner,
                  hint=" Each of the k+1 simhash blocks needs at least 2 bits.")
        if not isinstance(self.store_shingles, bool):
            raise ConfigError(f"The 'store_shingles' parameter of {owner} must be a bool. "
                              f"Got {self.store_shingles!r} instead.")
        if self.bands is None or self.rows is None:
            chosen = banding_for(self.threshold, self.minhash.num_perm, bands=self.bands, rows=self.rows)
            object.__setattr__(self, "bands", chosen.bands)
            object.__setattr__(self, "rows", chosen.rows)
        check_int("bands", self.bands, 1, self.minhash.num_perm, owner=owner)
        check_int("rows", self.rows, 1, self.minhash.num_perm, owner=owner)
        if self.bands * self.rows > self.minhash.num_perm:
            raise ConfigError(f"{self.bands} bands x {self.rows} rows need more than num_perm "
                              f"{self.minhash.num_perm} values")

    def as_dict(self) -> dict:
        return {
            # (a file without id keys is in the format of schema 5, or of 4 without fingerprint
            # runs: it opens as before)
            "store_format": 7 if self.urls else 6 if self.id_keys else 5 if self.fingerprint_runs else 4,
            "shingle": self.shingle.as_dict(),
            "minhash": self.minhash.as_dict(),
            "lsh": {"threshold": self.threshold, "bands": self.bands, "rows": self.rows},
            "containment": {"threshold": self.containment_threshold, "sketch": "mod_m", "mod_m": self.mod_m,
                            "seed": self.minhash.seed, "stored": self.containment},
            "signatures": {"stored": self.signatures, "bytes_per_value": self.signature_width},
            "band_postings": {"bucket_bits": 35, "doc_bits": DOC_BITS,
                              **({"layout": "runs", "block": 128, "fanout": 4} if self.posting_runs else {}),
                              **({"rows_below": self.rows_below} if self.posting_runs and self.rows_below else {})},
            "simhash": {"max_distance": self.simhash_max_distance, "blocks": simhash_blocks(self.simhash_max_distance),
                        "features": "word counts", "feature_hash": self.shingle.hash},
            "fingerprint": {"hash": "blake2b-64", "of": "normalized text",
                            **({"layout": "runs"} if self.fingerprint_runs else {})},
            "store_shingles": self.store_shingles,
            **({"ids": {"hash": "xxh3-64 of source NUL id", "seed": ID_KEY_SEED, "row_key": "hash >> 32, less 2**31",
                        **({"layout": "runs", "bucket_bits": 35} if self.posting_runs else {}),
                        **({"prefixes": "up to the last '/', when shared"} if self.id_prefixes else {})}}
               if self.id_keys else {}),
            **({"urls": {"hash": "xxh3-64 of the canonical URL", "seed": URL_KEY_SEED, "rules": self.urls.as_dict(),
                         **({"layout": "runs", "bucket_bits": 35} if self.posting_runs else {})}}
               if self.urls else {}),
            **({"page_fingerprints": {"version": self.page_fingerprints, "hash": "xxh3-64",
                                      "of": "the visible text tokens of the markup"}}
               if self.urls and self.page_fingerprints is not None else {}),
        }

    @property
    def signature_width(self) -> int:
        """Bytes a stored signature value takes: 2 (the low 16 bits, Li and Konig's b-bit MinHash)
        when the index stores neither shingle ids nor samples (profile ``default``: estimates
        only, which two unequal values raise by 2**-16 each); else the whole value, 4 bytes
        where the family's values fit 32 bits."""
        if not self.store_shingles and not self.containment:
            return 2
        return 4 if self.minhash.family == "mulshift32" else 8

    @property
    def exact_signatures(self) -> bool:
        """Whether stored signatures hold whole values (band keys can be computed from them)."""
        return self.signatures and self.signature_width > 2

    @property
    def profile(self) -> str:
        """The name of the profile this configuration stores (``custom`` if none)."""
        for name, fields in INDEX_PROFILES.items():
            if all(getattr(self, k) == v for k, v in fields.items() if k not in LAYOUT_FIELDS):
                return name
        return "custom"

    def fingerprint(self) -> int:
        return config_fingerprint(self.as_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "IndexConfig":
        s = dict(d["shingle"])
        s.pop("tokenizer_version", None)
        s["normalize"] = NormalizeParams(**s["normalize"])
        return cls(shingle=ShingleParams(**s), minhash=MinHashParams(**d["minhash"]),
                   threshold=d["lsh"]["threshold"], containment_threshold=d["containment"]["threshold"],
                   mod_m=d["containment"]["mod_m"], simhash_max_distance=d["simhash"]["max_distance"],
                   store_shingles=d["store_shingles"], bands=d["lsh"]["bands"], rows=d["lsh"]["rows"],
                   signatures=d["signatures"]["stored"], containment=d["containment"]["stored"],
                   posting_runs=d["band_postings"].get("layout") == "runs",
                   rows_below=d["band_postings"].get("rows_below", 0),
                   fingerprint_runs=d.get("fingerprint", {}).get("layout") == "runs",
                   id_keys="ids" in d, id_prefixes="prefixes" in d.get("ids", {}),
                   urls=rules_of(d["urls"]["rules"]) if "urls" in d else None,
                   page_fingerprints=d.get("page_fingerprints", {}).get("version"))


def rules_of(recorded: dict) -> UrlRules:
    """The URL rules recorded in a file's configuration (:meth:`neardup.urls.UrlRules.as_dict`)."""
    if recorded.get("version") != URL_RULES_VERSION:
        raise IncompatibleSketchError(f"the index records URL rules of version {recorded.get('version')}, this "
                                      f"neardup canonicalizes URLs with version {URL_RULES_VERSION}: rebuild the index")
    return UrlRules(drop_params=tuple(recorded["drop_params"]), fold_www=recorded["fold_www"],
                    fold_trailing_slash=recorded["fold_trailing_slash"])


@dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """How records are read (:func:`neardup.io.read_documents`): the options that every command
    reading records shares, declared and checked here once. A :class:`DedupConfig` is one too (it
    holds them as its own fields: ``DedupConfig(html="whole")``), so :meth:`read_options` gives
    them for either; :meth:`as_dict` is each class's whole record (a DedupConfig's is the run's).

    ``format`` of the input files (``auto``: each by its content), ``id_field`` and ``text_field``
    (of JSONL, CSV, Parquet and Arrow records), ``content`` (what the text field holds: ``text``
    or ``html``), ``html`` (HTML to text: the ``main`` content, the ``whole`` page or the
    ``article``) and ``max_bytes`` (larger records are skipped as ``too_large``; None: no limit).
    """

    format: str = "auto"
    id_field: str = "id"
    text_field: str = "text"
    content: str = "text"
    html: str = "main"
    max_bytes: int | None = MAX_BYTES

    def __post_init__(self) -> None:
        check_choice("format", self.format, INPUT_FORMATS, owner="ReadOptions")
        check_choice("content", self.content, CONTENTS, owner="ReadOptions")
        check_choice("html", self.html, HTML_MODES, owner="ReadOptions")
        check_text("id_field", self.id_field, owner="ReadOptions")
        check_text("text_field", self.text_field, owner="ReadOptions")
        if self.max_bytes is not None:
            check_int("max_bytes", self.max_bytes, 1, None, owner="ReadOptions")

    def read_options(self) -> dict:
        """The options of :func:`neardup.io.read_documents` that these fix."""
        return {"format": self.format, "id_field": self.id_field, "text_field": self.text_field,
                "content": self.content, "html": self.html, "max_bytes": self.max_bytes}

    def as_dict(self) -> dict:
        return self.read_options()


@dataclass(frozen=True, kw_only=True)
class DedupConfig(ReadOptions):
    """Everything that decides the result of a run (recorded, with its fingerprint, in summary.json).

    The read options decide what a record's id and text are, so they are part of it too: its
    fields ``format``, ``id_field``, ``text_field``, ``content``, ``html`` and ``max_bytes`` are
    those of :class:`ReadOptions` (declared and checked there; recorded under ``read``).
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
        super().__post_init__()  # the read options' checks
        check_choice("method", self.method, METHODS, owner="DedupConfig")
        check_int("sample_mod", self.sample_mod, 1, None, owner="DedupConfig")
        check_int("sample_cap", self.sample_cap, 2, None, owner="DedupConfig")
        check_choice("sample", self.sample, SAMPLES, owner="DedupConfig")
        check_int("sample_size", self.sample_size, 1, None, owner="DedupConfig")
        check_choice("measure", self.measure, MEASURES, owner="DedupConfig")
        check_choice("keep", self.keep, KEEP_POLICIES + ("field", "source"), owner="DedupConfig",
                     requirement=KEEP_SYNTAX)
        if self.keep == "source" and not self.keep_sources:
            raise ConfigError("keep='source' needs keep_sources, the sources in order of preference",
                              owner="DedupConfig", parameter="keep_sources", value=self.keep_sources,
                              requirement="source:A,B,... naming at least one source")
        check_text("source_field", self.source_field, owner="DedupConfig", optional=True)
        object.__setattr__(self, "keep_sources", tuple(self.keep_sources))
        check_text("url_field", self.url_field, owner="DedupConfig", optional=True)
        if self.url_rules is not None and not isinstance(self.url_rules, UrlRules):
            raise ConfigError(f"The 'url_rules' parameter of DedupConfig must be a neardup.urls.UrlRules or None. "
                              f"Got {self.url_rules!r} instead.")
        check_float("threshold", self.threshold, 0.0, 1.0, owner="DedupConfig", closed="right")
        check_int("max_distance", self.max_distance, 0, 7, owner="DedupConfig")
        if self.keep == "field" and not self.keep_field:
            raise ConfigError("keep='field' needs keep_field, the numeric field whose largest value survives",
                              owner="DedupConfig", parameter="keep_field", value=self.keep_field,
                              requirement="field:NAME with a field name")
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
        return self.url_rules if self.url_rules is not None else DEFAULT_RULES

    def fingerprint(self) -> str:
        """:func:`neardup.params.config_fingerprint` of :meth:`as_dict`, as 16 hex digits."""
        return f"{config_fingerprint(self.as_dict()):016x}"


def keep_fields(keep: str) -> dict:
    """The :class:`DedupConfig` fields of ``keep`` as the command line gives it (:data:`KEEP_SYNTAX`):
    ``field:NAME`` sets ``keep_field``, ``source:A,B,...`` ``keep_sources``; another value is the
    policy's name. The configuration checks them."""
    kind, colon, rest = keep.partition(":")
    if colon and kind == "field":
        return {"keep": "field", "keep_field": rest}
    if colon and kind == "source":
        return {"keep": "source", "keep_sources": tuple(x for x in rest.split(",") if x)}
    return {"keep": keep}


@dataclass(frozen=True)
class ResultOptions:
    """How a run writes its results (``neardup dedup --output-format``; every engine's
    ``output_format``): ``clusters.*`` and ``pairs.*`` as JSON lines or Parquet."""

    output_format: str = DEFAULT_RESULT_FORMAT

    def __post_init__(self) -> None:
        if self.output_format not in RESULT_FORMATS:
            # (the engines' message since the option existed: the one check of every entry point)
            shown = ", ".join(RESULT_FORMATS)
            raise ConfigError(f"--output-format must be one of {shown}, got {self.output_format!r}",
                              owner="ResultOptions", parameter="output_format", value=self.output_format,
                              requirement="one of " + ", ".join(map(repr, RESULT_FORMATS)))


def check_result_format(format: str) -> str:
    """``format`` when :class:`ResultOptions` takes it; else its ConfigError, which every engine
    gives before any work starts."""
    return ResultOptions(output_format=format).output_format


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """Everything that decides the numbers of a report (recorded as ``config``;
    :func:`neardup.report.build_report`)."""

    shingle: ShingleParams = field(default_factory=lambda: ShingleParams(k=4))
    num_perm: int = 200
    seed: int = 1
    family: str = "mulshift64"
    sample: int = 2000
    threshold: float = 0.8
    boilerplate_fraction: float = 0.5
    top: int = 20
    runs: int = 30
    simhash_hash: str = "xxh3"

    def __post_init__(self) -> None:
        check_int("sample", self.sample, 1, None, owner="ReportConfig")
        check_float("threshold", self.threshold, 0.0, 1.0, owner="ReportConfig", closed="right")
        check_float("boilerplate_fraction", self.boilerplate_fraction, 0.0, 1.0, owner="ReportConfig", closed="left")
        check_int("top", self.top, 1, None, owner="ReportConfig")
        check_int("runs", self.runs, 1, None, owner="ReportConfig")
        self.minhash  # noqa: B018 - MinHashParams checks num_perm, seed and family

    @property
    def minhash(self) -> MinHashParams:
        return MinHashParams(num_perm=self.num_perm, seed=self.seed, family=self.family)

    def as_dict(self) -> dict:
        from ._version import __version__

        return {
            "k": self.shingle.k, "unit": self.shingle.unit, "shingle_hash": self.shingle.hash,
            "normalize": self.shingle.normalize.as_dict(), "num_perm": self.num_perm, "seed": self.seed,
            "family": self.family, "sample": self.sample, "threshold": self.threshold,
            "boilerplate_fraction": self.boilerplate_fraction, "top": self.top, "runs": self.runs,
            "simhash_hash": self.simhash_hash, "above": "at or above", "version": __version__,
        }


@dataclass(frozen=True)
class InputOptions:
    """How ``neardup report`` reads SITE: the read options of ``neardup dedup``
    (:class:`ReadOptions`, which checks them), except that the text field and what it holds
    may be left to the first record."""

    format: str = "auto"
    id_field: str = "id"
    text_field: str | None = None  # None: "html" (as HTML) when the first record has one, else "text"
    content: str | None = None     # None: "html" for the "html" field, else "text"
    max_bytes: int | None = MAX_BYTES

    def __post_init__(self) -> None:
        given = {name: value for name, value in (("text_field", self.text_field), ("content", self.content))
                 if value is not None}
        ReadOptions(format=self.format, id_field=self.id_field, max_bytes=self.max_bytes, **given)
