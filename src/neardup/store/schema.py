"""The index file's format: schema, configuration, storage profiles and the integer postings.

Everything that decides the bytes of an index file lives here: the tables (:data:`SCHEMA`) and the
packing of band and simhash-block postings into one integer key each; the recorded configuration
(:class:`neardup.config.IndexConfig`, checked on every open), the profiles and the constants the
configuration records (document bits, hash seeds) are the config's, and imported from there.
``docs/store.md`` describes the same format for readers of the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import DOC_BITS, ID_KEY_SEED, INDEX_PROFILES as PROFILES, LAYOUT_FIELDS, URL_KEY_SEED, IndexConfig
from ..config import rules_of, simhash_blocks
from ..errors import InputError
from ..params import config_fingerprint
from ..urls import UrlRules, url_key

__all__ = ["SCHEMA_VERSION", "READABLE_VERSIONS", "MAX_DOCUMENTS", "APPLICATION_ID", "MASK64", "DEFAULT_LIMIT",
           "MAX_VARS", "SCHEMA", "band_bucket", "band_buckets", "fingerprint_buckets", "block_bucket", "block_postings",
           "band_posting", "url_hashes", "url_hash_of", "url_buckets", "signed", "unsigned", "flatten", "differences",
           "Sketch",
           # the index configuration and what it records, defined in neardup.config, for the store's modules
           "DOC_BITS", "ID_KEY_SEED", "URL_KEY_SEED", "LAYOUT_FIELDS", "PROFILES", "IndexConfig", "rules_of",
           "simhash_blocks", "config_fingerprint"]

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
#: Band postings hold a document number in their low bits (:data:`neardup.config.DOC_BITS`): at most
#: this many documents per index.
MAX_DOCUMENTS = (1 << DOC_BITS) - 1
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


# -- configuration (recorded in the file: :class:`neardup.config.IndexConfig`) ----------------


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


