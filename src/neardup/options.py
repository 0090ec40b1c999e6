"""The command-line options that fill a configuration's fields (:mod:`neardup.config`), each defined
once (:class:`Option`, in the ``*_OPTIONS`` tables) for every command that takes it.

The commands make their argparse options from these definitions
(:func:`neardup.cli._common.add_options`): the choices are the configurations' own tuples, the
defaults those of the configurations, and only the configurations check a value (the command
line then names the option in their error).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import (CONTENTS, HTML_MODES, INDEX_PROFILES, INPUT_FORMATS, KEEP_POLICIES, MEASURES, METHODS,
                     RESULT_FORMATS, SAMPLES)
from .hashing import HASH_NAMES
from .params import FAMILIES, UNITS

__all__ = ["Option", "option_table", "READ_OPTIONS", "SHINGLE_OPTIONS", "MINHASH_OPTIONS", "DEDUP_OPTIONS", "SOURCE_OPTIONS",
           "URL_OPTIONS", "RESULT_OPTIONS", "INDEX_OPTIONS", "REPORT_OPTIONS"]


@dataclass(frozen=True)
class Option:
    """One command-line option and the configuration field it sets, defined once for every
    command that takes it (:func:`neardup.cli._common.add_options` makes the argparse option).

    ``field`` is the option's place in the configuration whose default it shows (``minhash.num_perm``
    in a :class:`~neardup.config.DedupConfig`, ``num_perm`` of ``minhash`` in an index's); ``owner``
    and ``parameter`` name the class and field whose check refuses a bad value (the command line then
    names the option instead; ``also``: more fields of ``owner`` it fills, whose checks name it
    too). ``help`` shows the default where it says ``{default}``. A ``bool`` option is a switch;
    ``negate``: the switch turns the field off (``--no-casefold``); a ``tuple`` option takes names
    separated by commas.
    """

    flags: tuple
    field: str
    owner: str
    parameter: str
    help: str
    kind: type = str
    choices: tuple | None = None
    metavar: str | None = None
    negate: bool = False
    also: tuple = ()

    @property
    def flag(self) -> str:
        """The flag that error messages name."""
        return self.flags[0]

    def default_in(self, config):
        """The option's default: the value of its field in ``config``."""
        value = config
        for name in self.field.split("."):
            value = getattr(value, name) if not isinstance(value, dict) else value[name]
        return value


def option_table(*options: Option) -> dict:
    """The definitions by field, in order."""
    return {o.field: o for o in options}


#: How records are read: ``neardup dedup``, ``changes``, ``plan``, ``index add`` and ``query``,
#: ``report`` and ``evaluate`` (:class:`~neardup.config.ReadOptions`).
READ_OPTIONS = option_table(
    Option(("--format",), "format", "ReadOptions", "format", choices=INPUT_FORMATS,
           help="how to read every input (default {default}: each file by its content, its name as a hint)"),
    Option(("--id-field",), "id_field", "ReadOptions", "id_field",
           help="JSONL/CSV/Parquet/Arrow field with the record id (default {default})"),
    Option(("--text-field",), "text_field", "ReadOptions", "text_field",
           help="JSONL/CSV/Parquet/Arrow field with the text (default {default})"),
    Option(("--content",), "content", "ReadOptions", "content", choices=CONTENTS,
           help="what the JSONL/Parquet text field holds (default {default})"),
    Option(("--html",), "html", "ReadOptions", "html", choices=HTML_MODES,
           help="HTML to text: main content (default), the whole page, or article (trafilatura)"),
    Option(("--max-bytes",), "max_bytes", "ReadOptions", "max_bytes", kind=int,
           help="skip records larger than this (default 64 MiB)"),
)
#: The shingles (:class:`neardup.ShingleParams`), for a configuration holding them as ``shingle``.
SHINGLE_OPTIONS = option_table(
    Option(("-k",), "shingle.k", "ShingleParams", "k", kind=int, help="tokens per shingle (default {default})"),
    Option(("--unit",), "shingle.unit", "ShingleParams", "unit", choices=UNITS, help="token unit (default {default})"),
    Option(("--keep-punctuation",), "shingle.normalize.remove_punctuation", "NormalizeParams", "remove_punctuation",
           kind=bool, negate=True, help="keep punctuation inside tokens"),
    Option(("--no-casefold",), "shingle.normalize.casefold", "NormalizeParams", "casefold", kind=bool, negate=True,
           help="keep upper and lower case apart"),
    Option(("--no-nfkc",), "shingle.normalize.nfkc", "NormalizeParams", "nfkc", kind=bool, negate=True,
           help="skip Unicode NFKC normalization"),
    Option(("--shingle-hash",), "shingle.hash", "ShingleParams", "hash", choices=HASH_NAMES,
           help="shingle ids: xxh3 (default), Rabin fingerprints of 40 or 64 bits (Broder 1997), md5, sha1"),
)
#: The permutations (:class:`neardup.MinHashParams`), for a configuration holding them as ``minhash``.
MINHASH_OPTIONS = option_table(
    Option(("--num-perm",), "minhash.num_perm", "MinHashParams", "num_perm", kind=int,
           help="hash functions per sketch (default {default})"),
    Option(("--seed",), "minhash.seed", "MinHashParams", "seed", kind=int,
           help="seed of the permutations (default {default})"),
    Option(("--family",), "minhash.family", "MinHashParams", "family", choices=FAMILIES,
           help="permutation family (default {default})"),
)
#: What a dedup run finds (:class:`~neardup.config.DedupConfig`; ``--keep`` has its own syntax,
#: :data:`neardup.config.KEEP_SYNTAX`).
DEDUP_OPTIONS = option_table(
    Option(("--method",), "method", "DedupConfig", "method", choices=METHODS,
           help="minhash + LSH (default), simhash with a Hamming-distance index, exact fingerprints only, "
                "broder: Broder et al. 1997's sampled shingles (MOD_m) and shared-sample counts, or "
                "greedy: their one-pass clustering on the same samples (depends on the input order, "
                "not verified)"),
    Option(("--sample-mod",), "sample_mod", "DedupConfig", "sample_mod", kind=int, metavar="M",
           help="broder: keep the shingle ids divisible by M (default {default}, as in the 1997 experiment)"),
    Option(("--sample",), "sample", "DedupConfig", "sample", choices=SAMPLES,
           help="broder, greedy: the sample of each document's shingle ids: mod_m, those divisible by "
                "--sample-mod (default), or min_s, its --sample-size smallest"),
    Option(("--sample-size",), "sample_size", "DedupConfig", "sample_size", kind=int, metavar="S",
           help="broder, greedy with --sample min_s: ids kept per document (default {default})"),
    Option(("--sample-cap",), "sample_cap", "DedupConfig", "sample_cap", kind=int, metavar="N",
           help="broder: a sample held by more than N documents gives no pairs (boilerplate; default {default})"),
    Option(("--threshold",), "threshold", "DedupConfig", "threshold", kind=float,
           help="similarity at which two documents are duplicates (default {default})"),
    Option(("--measure",), "measure", "DedupConfig", "measure", choices=MEASURES,
           help="verify resemblance (default) or containment (either way round)"),
    Option(("--bands",), "bands", "DedupConfig", "bands", kind=int, help="LSH bands (default: chosen for --threshold)"),
    Option(("--rows",), "rows", "DedupConfig", "rows", kind=int, help="LSH rows per band (default: chosen)"),
    Option(("--max-distance",), "max_distance", "DedupConfig", "max_distance", kind=int,
           help="simhash: largest Hamming distance (0-7, default {default})"),
    Option(("--no-verify",), "verify", "DedupConfig", "verify", kind=bool, negate=True,
           help="trust LSH candidates without exact verification (faster, admits false pairs)"),
    # (its value parsed by neardup.config.keep_fields)
    Option(("--keep",), "keep", "DedupConfig", "keep", metavar="POLICY", also=("keep_field", "keep_sources"),
           help="survivor of each cluster: {default} (default), " + ", ".join(KEEP_POLICIES[1:])
                + ", field:NAME (the largest value of a numeric field), or source:A,B,... (records of source A "
                  "first, then B, ..., then the first record)"),
)
#: Where records come from (:class:`~neardup.config.DedupConfig`).
SOURCE_OPTIONS = option_table(
    Option(("--source-field",), "source_field", "DedupConfig", "source_field", metavar="NAME",
           help="JSONL/Parquet field naming each record's source (default: the input it came from, when there "
                "are several); ids need only be unique within a source"),
)
#: URL identity: the field of a record's URL (:class:`~neardup.config.DedupConfig`) and the rules of
#: the canonical form (:class:`neardup.urls.UrlRules`, which checks them; held as ``url_rules``).
URL_OPTIONS = option_table(
    Option(("--url-field",), "url_field", "DedupConfig", "url_field", metavar="NAME",
           help="JSONL/CSV/Parquet/Arrow field with the record's URL (default: the WARC target URI, else the "
                "'url' field when present)"),
    Option(("--drop-params",), "url_rules.drop_params", "UrlRules", "drop_params", kind=tuple, metavar="A,B,...",
           help="query parameters dropped from URLs (names, * as a wildcard; '' keeps them all); default: utm_*, "
                "click ids (gclid, fbclid, msclkid, ...) and session ids (see docs/urls.md)"),
    Option(("--fold-www",), "url_rules.fold_www", "UrlRules", "fold_www", kind=bool,
           help="www.example.com is example.com (off by default)"),
    Option(("--fold-trailing-slash",), "url_rules.fold_trailing_slash", "UrlRules", "fold_trailing_slash", kind=bool,
           help="/docs/ is /docs (off by default: some servers answer them differently)"),
)
#: How a run writes its results (:class:`~neardup.config.ResultOptions`).
RESULT_OPTIONS = option_table(
    Option(("--output-format",), "output_format", "ResultOptions", "output_format", choices=RESULT_FORMATS,
           help="clusters and pairs as clusters.jsonl and pairs.jsonl (default) or .parquet, with either engine "
                "(the kept corpus keeps the input's format)"),
)
#: What a report measures (:class:`~neardup.config.ReportConfig`).
REPORT_OPTIONS = option_table(
    Option(("--sample",), "sample", "ReportConfig", "sample", kind=int,
           help="pairs of pages to measure exactly (default {default}; all pairs when there are fewer)"),
    Option(("--threshold",), "threshold", "ReportConfig", "threshold", kind=float,
           help="Jaccard at or above which pages are near-duplicates (default {default})"),
    Option(("--boilerplate-fraction",), "boilerplate_fraction", "ReportConfig", "boilerplate_fraction", kind=float,
           help="a shingle on more than this fraction of the pages is boilerplate (default {default})"),
    Option(("--top",), "top", "ReportConfig", "top", kind=int, help="most similar pairs to list (default {default})"),
    Option(("--runs",), "runs", "ReportConfig", "runs", kind=int, help="runs in Figure 1 (default {default})"),
)
#: What an index stores and answers (:class:`~neardup.config.IndexConfig`, whose checks name themselves
#: ``SeenIndex``; its shingles and permutations take the options above).
INDEX_OPTIONS = option_table(
    Option(("--threshold",), "threshold", "SeenIndex", "threshold", kind=float,
           help="estimated Jaccard for near-duplicates (default {default})"),
    Option(("--containment-threshold",), "containment_threshold", "SeenIndex", "containment_threshold", kind=float,
           help="containment for contains/contained_in (default {default})"),
    Option(("--mod-m",), "mod_m", "SeenIndex", "mod_m", kind=int,
           help="containment sample: shingles whose hash is divisible by m (default {default})"),
    Option(("--max-distance",), "simhash_max_distance", "SeenIndex", "simhash_max_distance", kind=int,
           help="simhash neighbours within this many bits (0-31, default {default})"),
    Option(("--store-shingles",), "store_shingles", "SeenIndex", "store_shingles", kind=bool,
           help="store shingle ids, for exact Jaccard and containment in answers"),
    Option(("--profile",), "profile", "SeenIndex", "profile", choices=tuple(INDEX_PROFILES),
           help="what a new index stores: default (signatures, band postings, simhash blocks, "
                "fingerprints: about 0.7 kB a document), lean (no signatures: near answers estimated from "
                "the shared bands; postings in delta-coded runs: about 0.2 kB a document), full (also "
                "MOD_m samples for containment answers)"),
    Option(("--containment",), "containment", "SeenIndex", "containment", kind=bool,
           help="store MOD_m samples (contains/contained_in answers); part of --profile full"),
)
