"""Ids of an index of schema 6: each stored once, found through a hash of ``(source, id)``.

Up to schema 5 a ``UNIQUE (id, source)`` index made ids unique and found them; it holds a second
copy of every id (on the benchmark corpus, whose ids are paths of 69 bytes, half of a lean
document's bytes), and every batch of ``index add`` inserts its ids at random places of it
unless they arrive in order: with URL ids, 1M generated pages took 31.1 s to add where
``d0000001``-style ids took 10.1. Schema 6 keys an id by :func:`id_hashes` (XXH3-64 of the
source's and the id's UTF-8 joined by a NUL byte):

- a **small write**'s documents carry ``docs.id_key`` (:func:`row_keys`: the hash's top 32 bits,
  as a signed 4-byte integer) in the partial index ``docs_id``;
- a **bulk write**'s documents (posting runs, ``IndexConfig.posting_runs``) leave ``id_key`` NULL
  and go to a run of kind :data:`.runs.KIND_IDS` instead (:func:`run_buckets`: the top 35 bits,
  appended and merged as the other postings are, with no random insert).

A look-up reads both and compares the rows it finds on ``id`` and ``source``, so two ids that
share a key are still two documents (about one pair in 2**32 by chance; ids made to collide
cost their own look-ups a row each). A bulk write's look-up of its batch's ids (to replace those
stored already) first asks a :class:`RunKeyFilter`, a superset in memory of the 32-bit keys of
the documents in the id runs (a Bloom filter), so that only the few ids it may hold are looked
up in the runs.

**Prefixes.** Ids that are paths or URLs repeat their directories: the benchmark corpus's 70,891
ids (69 bytes on average) have 2,242 distinct texts up to their last ``/``, and what follows it
is 27 bytes. A file of ``IndexConfig.id_prefixes`` keeps such a text once in ``id_prefixes``
and the ``docs`` row the rest in ``id`` and the prefix's number in ``id_prefix``
(:data:`ID_SQL` reads the whole id back). A prefix is stored when it is worth it: two ids of a
write share it, or :class:`PrefixHints` saw it in an earlier write of the process; a prefix
stored once is used by every later id that has it. Ids without a ``/`` (or whose prefix is
shorter than :data:`MIN_PREFIX`) are kept whole, as are ids written before their prefix was
stored. Prefixes are never removed (a removed document's prefix costs its text once).
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np

from .schema import DOC_BITS, ID_KEY_SEED

#: Id runs' buckets: the hash's top bits (the posting runs' bucket width, ``runs.BUCKET_BITS``).
RUN_BUCKET_BITS = 35


def id_hashes(source: str, ids) -> np.ndarray:
    """The uint64 hash of each id of ``source`` (the key of :func:`row_keys` and :func:`run_buckets`)."""
    import xxhash

    digest = xxhash.xxh3_64_intdigest
    prefix = source.encode("utf-8", "surrogatepass") + b"\0"
    return np.fromiter((digest(prefix + doc_id.encode("utf-8", "surrogatepass"), ID_KEY_SEED) for doc_id in ids),
                       dtype=np.uint64)


def keys32(hashes: np.ndarray) -> np.ndarray:
    """The hashes' top 32 bits (uint32): what :class:`RunKeyFilter` holds."""
    return (np.asarray(hashes, dtype=np.uint64) >> np.uint64(32)).astype(np.uint32)


def row_keys(hashes: np.ndarray) -> list[int]:
    """``docs.id_key`` of each hash: its top 32 bits less 2**31 (a signed integer of 4 bytes in
    an SQLite record)."""
    return (keys32(hashes).astype(np.int64) - (1 << 31)).tolist()


def run_buckets(hashes: np.ndarray) -> np.ndarray:
    """The buckets of the hashes in the id runs (int64, :data:`RUN_BUCKET_BITS` bits)."""
    return (np.asarray(hashes, dtype=np.uint64) >> np.uint64(64 - RUN_BUCKET_BITS)).astype(np.int64)


def id_keys(source: str, ids) -> list[int]:
    """``docs.id_key`` of each id of ``source``."""
    return row_keys(id_hashes(source, ids))


class RunKeyFilter:
    """A superset, in memory, of the 32-bit keys (:func:`keys32`) of the documents in an index's
    id runs: what a bulk write asks before it looks its batch's ids up in the runs.

    A blocked Bloom filter: each key sets :data:`BITS_SET` bits in one block of
    :data:`BLOCK_WORDS` 64-bit words (half of them in each word), the block and the bits from a mix of
    the key (:meth:`_words_and_masks`); about :data:`BITS_PER_KEY` bits a key at its capacity (2
    bytes): about 0.2 % of the keys it does not hold answer "may hold" there, fewer below it
    (``tests/store/test_id_keys.py``). Each of those costs a look-up in every id run, which at
    10M documents was a fifth of ``index add``'s writer with the one-word filter of 12 bits a key
    it replaces (1 % false positives at capacity). It is made for :data:`GROWTH` times as many
    documents as the index has numbered (at least :data:`MIN_CAPACITY`) and made again, from the
    runs, a slice of postings at a time, when the numbers pass that: from 2 to 2.5 bytes a
    document, 200-250 MB at 100M, and no copy of it while it grows (a sorted array of every key
    took 4 bytes a document and twice that again for each merge of its parts).

    :meth:`refresh`, inside the write transaction, adds the keys of every document numbered after
    the last one it saw (the numbers only grow, ``meta.last_num``): what this process wrote and
    what others did. Keys of removed or replaced documents stay (a superset: the look-up that
    follows drops them), and after a write that rolled back the owner drops the whole filter
    (the numbers it saw may be given again)."""

    #: bits of the filter per key at its capacity
    BITS_PER_KEY = 16
    #: 64-bit words of a key's block
    BLOCK_WORDS = 2
    #: bits each key sets in its block (BITS_SET / BLOCK_WORDS in each word)
    BITS_SET = 8
    #: the smallest capacity (keys): 128 kB
    MIN_CAPACITY = 1 << 16
    #: capacity made for this many times the documents numbered
    GROWTH = 1.25

    def __init__(self) -> None:
        self.words: np.ndarray | None = None
        self.capacity = 0
        self.seen_last: int | None = None

    def refresh(self, conn) -> None:
        from . import runs

        row = conn.execute("SELECT value FROM meta WHERE key = 'last_num'").fetchone()
        last = int(row[0]) if row else 0
        if self.seen_last is not None and last < self.seen_last:  # (another file under the path)
            self.words, self.seen_last = None, None
        if self.words is None or last > self.capacity:
            # (made for the numbers, not the documents: removed ones keep theirs, and their keys
            # may stay in the runs)
            self.capacity = max(self.MIN_CAPACITY, int(last * self.GROWTH))
            self.words = None  # (the old one freed before the new one is made)
            blocks = -(-self.capacity * self.BITS_PER_KEY // (64 * self.BLOCK_WORDS))
            self.words = np.zeros(blocks * self.BLOCK_WORDS, dtype=np.uint64)
            for postings in runs.iter_postings(conn, runs.KIND_IDS):
                self._add(self._keys_of(postings))
        elif last > self.seen_last:
            postings = runs.postings_after(conn, runs.KIND_IDS, self.seen_last)
            if postings.size:
                self._add(self._keys_of(postings))
        self.seen_last = last

    @staticmethod
    def _keys_of(postings: np.ndarray) -> np.ndarray:
        return (postings >> DOC_BITS >> (RUN_BUCKET_BITS - 32)).astype(np.uint32)

    @staticmethod
    def _mix(x: np.ndarray) -> np.ndarray:
        """splitmix64's finalizer (uint64 to uint64)."""
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    def _words_and_masks(self, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each word of a key's block: the word's index and the key's bits in it. The block
        from the top 32 bits of a mix of the key (multiply-shift onto the number of blocks), the
        bits from 6-bit fields of a second mix."""
        x = self._mix(keys.astype(np.uint64))
        bits = self._mix(x)
        blocks = np.uint64(self.words.size // self.BLOCK_WORDS)
        first = (((x >> np.uint64(32)) * blocks) >> np.uint64(32)).astype(np.int64) * self.BLOCK_WORDS
        per_word = self.BITS_SET // self.BLOCK_WORDS
        out = []
        field = 0
        for w in range(self.BLOCK_WORDS):
            masks = np.zeros(keys.size, dtype=np.uint64)
            for _ in range(per_word):
                masks |= np.uint64(1) << ((bits >> np.uint64(6 * field)) & np.uint64(63))
                field += 1
            out.append((first + w, masks))
        return out

    def _add(self, keys: np.ndarray) -> None:
        for words, masks in self._words_and_masks(keys):
            np.bitwise_or.at(self.words, words, masks)

    def may_hold(self, keys: np.ndarray) -> np.ndarray:
        """For each uint32 key, whether a document of the runs may have it."""
        if self.words is None or not keys.size:
            return np.zeros(keys.size, dtype=bool)
        held = np.ones(keys.size, dtype=bool)
        for words, masks in self._words_and_masks(np.asarray(keys, dtype=np.uint32)):
            held &= (self.words[words] & masks) == masks
        return held


#: A prefix shorter than this is not worth a reference (the number's 1-4 bytes and a header byte).
MIN_PREFIX = 8
#: The whole id of row ``d`` of ``docs`` in a file with prefixes.
ID_SQL = ("CASE WHEN d.id_prefix IS NULL THEN d.id "
          "ELSE (SELECT p.text FROM id_prefixes p WHERE p.num = d.id_prefix) || d.id END")


def prefix_length(doc_id: str) -> int | None:
    """The length (in characters, as SQLite's ``substr`` counts them) of the part of ``doc_id``
    that may be stored as a prefix: up to and including its last ``/``; None if it has none or
    a shorter one than :data:`MIN_PREFIX`."""
    cut = doc_id.rfind("/") + 1
    return cut if cut >= MIN_PREFIX else None


def prefix_counts(ids, lengths) -> Counter:
    """How many of a write's ids have each prefix (``lengths`` from :func:`prefix_length`)."""
    return Counter(doc_id[:k] for doc_id, k in zip(ids, lengths) if k is not None)


class PrefixHints:
    """Which prefixes of a write to store (:meth:`choose`): those two of its ids share, and
    those an earlier write of this process had once (remembered here, at most ``capacity`` of
    them, forgotten all at once when full). A hint only: what is stored is decided in the write
    transaction (``INSERT OR IGNORE``), and a hint lost with a rolled-back write costs a prefix
    stored one write later."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.capacity = capacity
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def choose(self, counts: Counter) -> list[str]:
        with self._lock:
            chosen = sorted(p for p, c in counts.items() if c > 1 or p in self._seen)
            once = [p for p, c in counts.items() if c == 1 and p not in self._seen]
            if len(self._seen) + len(once) > self.capacity:
                self._seen.clear()
            self._seen.update(once[:self.capacity])
            self._seen.difference_update(chosen)
            return chosen
