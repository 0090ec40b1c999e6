"""The index file's format: schema, configuration, storage profiles and the integer postings.

Everything that decides the bytes of an index file lives here: the tables (:data:`SCHEMA`), the
recorded configuration (:class:`IndexConfig`, checked on every open), the profiles, and the
packing of band and simhash-block postings into one integer key each. ``docs/store.md``
describes the same format for readers of the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_float, check_int
from ..config import INDEX_PROFILES as PROFILES
from ..errors import ConfigError, IncompatibleSketchError, InputError
from ..params import MinHashParams, NormalizeParams, ShingleParams, config_fingerprint
from ..stages.candidates import banding_for
from ..urls import URL_RULES_VERSION, UrlRules, url_key

#: ``PRAGMA user_version`` of the files this code writes; bumped with every schema change.
#: 2: ``simhash_blocks`` rows carry the simhash (a candidate is checked without visiting ``docs``).
#: 3: ``docs.source`` (ids are unique within a source) and ``docs.cluster`` (the document number of
#: the survivor of the dedup cluster a document joined; NULL: itself), for ``dedup --against``;
#: band postings packed into one integer key (:func:`band_posting`); signatures as narrow as
#: their family's values (4 bytes for ``mulshift32``) or not stored (profile ``lean``); MOD_m
#: samples only with ``containment``.
#: 4: profiles default and full keep the postings of bulk writes in posting runs too (lean did
#: from 3 on) and those of small writes in the row tables, and queries read both
#: (``IndexConfig.rows_below``); the tables are those of 3. Files of 3 open, read and write as
#: before (their layout is recorded in them).
#: 5: the content fingerprints of bulk writes in posting runs (``IndexConfig.fingerprint_runs``).
#: 6: ids found through a hash of ``(source, id)`` (:mod:`.ids`: small writes' keys in the
#: ``docs_id`` index, bulk writes' in posting runs) instead of the ``UNIQUE (id, source)`` index,
#: which held a second copy of every id and took a random insert per id. Files of 3-5 open, read
#: and write as before (``IndexConfig.id_keys`` is False for them). An id's text up to its last
#: ``/``, where other ids share it, is stored once in ``id_prefixes`` and the row keeps the rest
#: (``IndexConfig.id_prefixes``, :func:`.ids.prefix_length`).
#: 7: the canonical URL of a document (``docs.url_hash``: a 64-bit hash of its canonical form,
#: :func:`url_hashes`, under the URL rules recorded in the configuration, ``IndexConfig.urls``),
#: found through the partial index ``docs_url`` for small writes and URL runs
#: (:data:`.runs.KIND_URLS`) for bulk writes, so that a query answers "URL seen?". Files of 3-6
#: open, read and write as before and store no URLs (their answers' ``url_seen`` is null).
#: ``docs.url`` keeps the canonical URL's text where it is not the id (NULL: the id is the
#: canonical URL), so that ``neardup changes`` can name a page of an index that is gone;
#: ``docs.page_fingerprint`` the fingerprint of the whole page's text where one was given (the
#: main content being ``text``), so that it can tell ``template`` from ``unchanged``.
SCHEMA_VERSION = 7
#: The schema versions this code opens.
READABLE_VERSIONS = (3, 4, 5, 6, 7)
#: Band postings hold a document number in their low bits: at most this many documents per index.
DOC_BITS = 28
MAX_DOCUMENTS = (1 << DOC_BITS) - 1
#: How the postings are laid out, not what is stored: a file keeps its own (recorded) layout
#: whatever profile an open names, and the profile's name does not depend on it.
LAYOUT_FIELDS = ("posting_runs", "rows_below", "fingerprint_runs", "id_keys", "id_prefixes")
#: ``PRAGMA application_id``: "NDUP", so that other tools (``file``) can tell the file apart.
APPLICATION_ID = 0x4E445550
MASK64 = (1 << 64) - 1
DEFAULT_LIMIT = 100
# More values than this in one IN (...) are queried in pieces (SQLite allows 32766 variables).
MAX_VARS = 10000

SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE docs (
    num         INTEGER PRIMARY KEY,
    source      TEXT NOT NULL DEFAULT '',
    id          TEXT NOT NULL,
    fingerprint INTEGER,
    length      INTEGER NOT NULL,
    n_shingles  INTEGER NOT NULL,
    n_sample    INTEGER NOT NULL,
    simhash     INTEGER,
    signature   BLOB,
    sample      BLOB,
    shingles    BLOB,
    meta        TEXT,
    added_at    REAL NOT NULL,
    cluster     INTEGER,
    run_fingerprint INTEGER,
    id_key      INTEGER,
    id_prefix   INTEGER,
    url_hash    INTEGER,
    url         TEXT,
    page_fingerprint INTEGER
);
CREATE TABLE id_prefixes (
    num  INTEGER PRIMARY KEY,
    text TEXT NOT NULL UNIQUE
);
CREATE INDEX docs_id ON docs (id_key) WHERE id_key IS NOT NULL;
CREATE INDEX docs_fingerprint ON docs (fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX docs_url ON docs (url_hash) WHERE url_hash IS NOT NULL AND id_key IS NOT NULL;
CREATE TABLE bands (
    posting INTEGER PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE samples (
    value INTEGER NOT NULL,
    doc   INTEGER NOT NULL,
    PRIMARY KEY (value, doc)
) WITHOUT ROWID;
CREATE TABLE simhash_blocks (
    posting INTEGER PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE posting_runs (
    kind      INTEGER NOT NULL,
    run       INTEGER NOT NULL,
    level     INTEGER NOT NULL,
    first_doc INTEGER NOT NULL,
    last_doc  INTEGER NOT NULL,
    width     INTEGER NOT NULL,
    postings  INTEGER NOT NULL,
    PRIMARY KEY (kind, run)
) WITHOUT ROWID;
CREATE TABLE posting_blocks (
    kind  INTEGER NOT NULL,
    run   INTEGER NOT NULL,
    first INTEGER NOT NULL,
    data  BLOB NOT NULL,
    PRIMARY KEY (kind, run, first)
) WITHOUT ROWID;
"""


_GOLDEN = 0x9E3779B97F4A7C15
_MIX = 0xBF58476D1CE4E5B9


def band_bucket(band: int, key: int) -> int:
    """The 35-bit bucket of band ``band``'s key ``key`` (uint64) in the postings table: the key
    mixed with the band number (one table holds every band). Two keys share a bucket by chance
    with probability 2**-35 per band: a stray candidate, which the signature estimate drops."""
    return ((((key ^ ((band + 1) * _GOLDEN)) & MASK64) * _MIX) & MASK64) >> (64 - 35)


def band_buckets(keys: np.ndarray) -> np.ndarray:
    """:func:`band_bucket` of a (documents, bands) uint64 key matrix, as int64."""
    keys = np.asarray(keys, dtype=np.uint64)
    bands = (np.arange(1, keys.shape[1] + 1, dtype=np.uint64) * np.uint64(_GOLDEN))
    with np.errstate(over="ignore"):
        return (((keys ^ bands) * np.uint64(_MIX)) >> np.uint64(64 - 35)).astype(np.int64)


def fingerprint_buckets(fingerprints: np.ndarray) -> np.ndarray:
    """The 35-bit buckets of content fingerprints (uint64) in the fingerprint runs, as int64: the
    top bits of the fingerprint, a hash already. Two contents share a bucket by chance with
    probability 2**-35: the stored ``run_fingerprint`` drops the stray candidate."""
    return (np.asarray(fingerprints, dtype=np.uint64) >> np.uint64(64 - 35)).astype(np.int64)


def block_bucket(block: int, key: int, width: int) -> int:
    """The 35-bit bucket of simhash block ``block`` holding ``key`` (``width`` bits): the block
    number, then the key itself when it fits 30 bits, else 30 bits of it mixed (a stray
    candidate is dropped when its distance is checked on the stored simhash)."""
    if width > 30:
        key = (((key * _MIX) & MASK64) >> 34) & ((1 << 30) - 1)
    return block << 30 | key


def block_postings(simhashes: np.ndarray, nums: np.ndarray, widths: list[int]) -> np.ndarray:
    """The ``simhash_blocks`` rows of many documents at once, as :func:`block_bucket` makes them
    one by one: a (documents, blocks) int64 matrix for uint64 ``simhashes``, ``nums`` the
    documents' numbers and ``widths`` the blocks' (:func:`simhash_blocks`, most significant first)."""
    simhashes = np.asarray(simhashes, dtype=np.uint64)
    nums = np.asarray(nums, dtype=np.int64)
    out = np.empty((simhashes.size, len(widths)), dtype=np.int64)
    shift = 64
    with np.errstate(over="ignore"):
        for i, width in enumerate(widths):
            shift -= width
            key = (simhashes >> np.uint64(shift)) & np.uint64((1 << width) - 1)
            if width > 30:
                key = ((key * np.uint64(_MIX)) >> np.uint64(34)) & np.uint64((1 << 30) - 1)
            out[:, i] = ((np.uint64(i << 30) | key).astype(np.int64) << DOC_BITS) | nums
    return out


def band_posting(band: int, key: int, doc: int) -> int:
    """The row of the ``bands`` table for document ``doc`` (its number) in band ``band``'s bucket
    of ``key``: ``bucket << DOC_BITS | doc``, one integer, so that a posting costs one B-tree cell
    of about 12 bytes and a bucket is a range of the key."""
    return band_bucket(band, key) << DOC_BITS | doc


#: The seed of the ids' hash (:func:`neardup.store.ids.id_hashes`; part of the file format: another
#: seed makes old files' keys wrong).
ID_KEY_SEED = 0x6E646964
#: The seed of the canonical URLs' hash (:func:`url_hashes`; part of the file format).
URL_KEY_SEED = 0x6E6475726C


def url_hashes(urls: list, rules: UrlRules) -> tuple[list, list]:
    """The ``docs.url_hash`` values of records' URLs and their canonical forms
    (:func:`neardup.urls.url_key`), None where a record has none: the hash is xxh3-64 of the UTF-8
    canonical form with :data:`URL_KEY_SEED`, signed. Two canonical URLs share a hash by chance
    with probability 2**-64."""
    out: list = []
    texts: list = []
    for url in urls:
        if url is None:
            out.append(None)
            texts.append(None)
            continue
        if not isinstance(url, str) or not url.strip():
            raise InputError(f"a document's url must be a non-empty string, got {url!r}")
        canonical = url_key(url, rules)
        out.append(url_hash_of(canonical))
        texts.append(canonical)
    return out, texts


def url_hash_of(canonical: str) -> int:
    """The ``docs.url_hash`` of a canonical URL (:func:`neardup.urls.url_key`'s value)."""
    import xxhash

    return signed(xxhash.xxh3_64_intdigest(canonical.encode("utf-8", "surrogatepass"), seed=URL_KEY_SEED))


def url_buckets(hashes: np.ndarray) -> np.ndarray:
    """The 35-bit buckets of URL hashes (int64, as stored) in the URL runs: their top bits."""
    return (np.asarray(hashes, dtype=np.int64).view(np.uint64) >> np.uint64(64 - 35)).astype(np.int64)


def signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def unsigned(x: int) -> int:
    return x & MASK64


# -- configuration ---------------------------------------------------------------------------

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
    """Everything that decides what an index stores; recorded in the file and checked on open."""

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
    #: band and simhash-block postings in runs of delta-coded blocks (:mod:`.runs`) instead of
    #: one row each (profile ``lean``)
    posting_runs: bool = False
    #: with ``posting_runs``: writes of fewer documents than this put their postings in the row
    #: tables instead (0: every write appends a run, as profile lean does); queries read both
    rows_below: int = 0
    #: with ``posting_runs`` (schema 5): the content fingerprints of a bulk write in runs too
    #: (:data:`.runs.KIND_FINGERPRINTS`, the document's ``run_fingerprint`` column) instead of
    #: the ``docs_fingerprint`` index, whose inserts land on random pages: at a million
    #: documents that index more than doubled the cost of inserting the docs rows, and every
    #: batch rewrote a page of it per document in the WAL. Small writes keep ``fingerprint``.
    fingerprint_runs: bool = False
    #: (schema 6) ids found through their hash (:mod:`.ids`): ``docs.id_key`` and the ``docs_id``
    #: index for small writes, id runs for bulk writes (with ``posting_runs``); files of 3-5
    #: (False) through their ``UNIQUE (id, source)`` index
    id_keys: bool = False
    #: (schema 6) an id's text up to its last ``/`` stored once in ``id_prefixes`` where other
    #: ids share it, the ``docs`` row holding the number of the prefix and the rest (:mod:`.ids`)
    id_prefixes: bool = False
    #: (schema 7) the rules of the canonical URLs whose hashes the file stores (None: files of 3-6,
    #: which store no URLs)
    urls: UrlRules | None = None

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
        for name, fields in PROFILES.items():
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
                   urls=rules_of(d["urls"]["rules"]) if "urls" in d else None)


def rules_of(recorded: dict) -> UrlRules:
    """The URL rules recorded in a file's configuration (:meth:`neardup.urls.UrlRules.as_dict`)."""
    if recorded.get("version") != URL_RULES_VERSION:
        raise IncompatibleSketchError(f"the index records URL rules of version {recorded.get('version')}, this "
                                      f"neardup canonicalizes URLs with version {URL_RULES_VERSION}: rebuild the index")
    return UrlRules(drop_params=tuple(recorded["drop_params"]), fold_www=recorded["fold_www"],
                    fold_trailing_slash=recorded["fold_trailing_slash"])


def flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(stored: dict, given: dict) -> list[str]:
    a, b = flatten(stored), flatten(given)
    return [f"{k} stored {a.get(k)!r}, given {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


# -- sketches of one document ----------------------------------------------------------------

@dataclass(slots=True)
class Sketch:
    fingerprint: int | None     # unsigned; None without tokens
    length: int
    n_shingles: int
    signature: np.ndarray       # (num_perm,) uint64
    bands: np.ndarray           # (bands,) uint64
    sample: np.ndarray          # sorted uint64
    simhash: int | None         # unsigned, None without words
    shingles: np.ndarray | None  # sorted uint64 ids, when stored


