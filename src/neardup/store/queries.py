"""Reading an index: the answers to a query (exact, near, containment, simhash) and inspection.

:class:`Queries` is the read half of :class:`neardup.store.sqlite.SeenIndex` (a mixin over the
index's configuration and connections). The answer shape is in :mod:`neardup.store.sqlite`.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import numpy as np

from .._validate import check_int
from ..errors import InputError
from .schema import (DEFAULT_LIMIT, DOC_BITS, MAX_DOCUMENTS, MAX_VARS, Sketch, band_buckets, block_bucket,
                     fingerprint_buckets, signed, unsigned, url_buckets)

__all__ = ["Queries", "as_record", "check_limit", "jaccard"]

#: Canonical URL hashes looked up per statement by :meth:`Queries.url_numbers`.
_URL_BATCH = 50_000
#: Signatures read per statement by :meth:`Queries.signatures` (12 MB of 256-byte signatures).
_SIGNATURE_BATCH = 50_000
#: What finding URL buckets in the URL runs costs, in seconds, for :func:`_url_run_numbers`'
#: choice: a bucket looked up in a run (its blocks read and decoded, :func:`.runs.lookup_every`)
#: and a posting read in a scan of every run (:func:`.runs.iter_postings`). Measured on 20,000
#: generated pages (one run; 2026-12-06): 20,000 buckets looked up in 1.4-2.8 s, the 20,000
#: postings scanned in a few milliseconds.
URL_LOOKUP_SECONDS_A_RUN = 70e-6
URL_SCAN_SECONDS_A_POSTING = 0.05e-6


def _url_run_numbers(conn, buckets: np.ndarray) -> np.ndarray:
    """The numbers of the documents whose URL postings are in ``buckets`` (sorted, distinct), stale
    ones included (the caller reads each in ``docs``): looked up bucket by bucket, or, when that
    would cost more, every URL posting read a slice at a time and kept where its bucket is one of
    these (one pass, as much memory as a slice)."""
    from . import runs

    n_runs, postings = conn.execute("SELECT count(*), coalesce(sum(postings), 0) FROM posting_runs WHERE kind = ?",
                                    (runs.KIND_URLS,)).fetchone()
    if buckets.size * n_runs * URL_LOOKUP_SECONDS_A_RUN <= postings * URL_SCAN_SECONDS_A_POSTING:
        return runs.lookup_every(conn, runs.KIND_URLS, buckets.tolist())
    found = [np.empty(0, dtype=np.int64)]
    for part in runs.iter_postings(conn, runs.KIND_URLS):
        bucket = part >> DOC_BITS
        at = np.minimum(np.searchsorted(buckets, bucket), buckets.size - 1)
        found.append(part[buckets[at] == bucket] & ((1 << DOC_BITS) - 1))
    return np.concatenate(found)


def as_record(doc) -> tuple:
    """(id, text, meta, url, page_fingerprint) of a tuple (``(id, text)``, ``(id, text, meta)``, ``(id,
    text, meta, url)`` or ``(id, text, meta, url, page_fingerprint)``), a dict (``id``, ``text``,
    ``meta``, ``url``, ``page_fingerprint``) or a Document-like object (``url`` and ``page_fingerprint``: None).
    ``page_fingerprint``: the whole-page fingerprint of the page whose main content ``text`` is
    (:func:`neardup.text.html_pages.page_fingerprint` of its HTML; kept with the URL: ``neardup
    changes`` against an index tells ``template`` by it)."""
    if isinstance(doc, dict):
        if "text" not in doc:
            raise InputError(f"a document needs a 'text' field; got keys {sorted(doc)}")
        return doc.get("id"), doc["text"], doc.get("meta"), doc.get("url"), doc.get("page_fingerprint")
    if isinstance(doc, (tuple, list)):
        if 2 <= len(doc) <= 5:
            return (*doc, *(None,) * (5 - len(doc)))
        raise InputError(f"a document tuple is (id, text), (id, text, meta), (id, text, meta, url) or (id, text, "
                         f"meta, url, page_fingerprint); got {len(doc)} items")
    if hasattr(doc, "text"):
        return getattr(doc, "id", None), doc.text, getattr(doc, "meta", None) or None, None, None
    raise InputError(f"cannot read a document from {type(doc).__name__}: give (id, text), a dict or a Document")


class Queries:
    """Queries of a :class:`~neardup.store.sqlite.SeenIndex` (see the module docstring)."""

    # -- querying ----------------------------------------------------------------------------
    def _query(self, conn, sk: Sketch, doc_id, limit: int | None, url_hash: int | None = None,
               has_url: bool = False) -> dict:
        """The answer for one sketched text; with ``has_url`` (the query gave a URL, whose hash
        is ``url_hash``) also ``url_seen`` and ``url_match``."""
        answer = {"id": doc_id, "exact": [], "near": [], "contains": [], "contained_in": [], "simhash": []}
        if has_url:
            match = self._url_match(conn, url_hash) if self.config.urls is not None else None
            answer["url_seen"] = None if self.config.urls is None else match is not None
            answer["url_match"] = match
        if sk.fingerprint is not None:
            answer["exact"] = self._exact(conn, sk.fingerprint, limit)
        if sk.n_shingles:
            answer["near"] = self._near(conn, sk, limit)
            if sk.sample.size and self.config.containment:
                answer["contains"], answer["contained_in"] = self._containment(conn, sk, limit)
        if sk.simhash is not None:
            answer["simhash"] = self._simhash_neighbours(conn, sk, limit)
        return answer

    def _exact(self, conn, fingerprint: int, limit: int | None) -> list[str]:
        """The ids of the stored documents with this content fingerprint, in id order: those of
        small writes through the ``docs_fingerprint`` index, those of bulk writes (schema 5)
        through the fingerprint runs, each candidate checked on its ``run_fingerprint`` (a
        stray bucket-mate, or a removed or replaced document's stale posting, is dropped)."""
        value = signed(fingerprint)
        ids = [r[0] for r in conn.execute(f"SELECT {self._id_sql} AS whole FROM docs d WHERE d.fingerprint = ? "
                                          "ORDER BY whole LIMIT ?",
                                          (value, -1 if limit is None else limit))]
        from . import runs  # (here, not at the top: a read of an index of rows does not load it)

        if self.config.fingerprint_runs and runs.has_runs(conn, runs.KIND_FINGERPRINTS):
            bucket = int(fingerprint_buckets(np.array([fingerprint], dtype=np.uint64))[0])
            nums = runs.lookup(conn, runs.KIND_FINGERPRINTS, [bucket], MAX_DOCUMENTS, drop_stale=False)[0]
            if nums.size:
                ids += [r[1] for r in docs_of(conn, f"{self._id_sql}, d.run_fingerprint", nums) if r[2] == value]
                ids.sort()  # (ORDER BY id's order: UTF-8 bytes compare as code points do)
                if limit is not None:
                    del ids[limit:]
        return ids

    def _url_match(self, conn, url_hash: int) -> str | None:
        """The id of the first stored document (the lowest number) whose canonical URL has this
        hash, or None."""
        num = self.url_numbers(conn, [url_hash]).get(url_hash)
        return None if num is None else docs_of(conn, self._id_sql, np.array([num], dtype=np.int64))[0][1]

    def url_numbers(self, conn, url_hashes) -> dict:
        """``{url hash: number}`` of the first stored document (the lowest number) of each of
        ``url_hashes`` (signed, as stored) that the index holds, in one batch whatever their count:
        small writes' through the partial index ``docs_url`` (one join of the hashes handed over
        as one JSON array), bulk writes' through the URL runs (their buckets' blocks read, then
        the documents' hashes checked in ``docs``). Never a read of every stored URL."""
        import orjson

        from . import runs

        wanted = np.unique(np.asarray(list(url_hashes), dtype=np.int64))
        if self.config.urls is None or not wanted.size:
            return {}
        first: dict = {}
        for lo in range(0, wanted.size, _URL_BATCH):
            part = wanted[lo:lo + _URL_BATCH]
            # (sorted: the join walks docs_url in order)
            for h, num in conn.execute(
                    "SELECT d.url_hash, min(d.num) FROM json_each(?) j JOIN docs d ON d.url_hash = j.value "
                    "AND d.id_key IS NOT NULL GROUP BY d.url_hash",
                    (orjson.dumps(part, option=orjson.OPT_SERIALIZE_NUMPY).decode(),)):
                first[h] = num
        if self.config.posting_runs and runs.has_runs(conn, runs.KIND_URLS):
            nums = _url_run_numbers(conn, np.unique(url_buckets(wanted)))
            wanted_set = set(wanted.tolist())
            for num, h in docs_of(conn, "d.url_hash", nums):  # (a bucket holds other hashes too)
                if h in wanted_set and (h not in first or num < first[h]):
                    first[h] = num
        return first

    def has_urls(self) -> bool:
        """Whether a stored document has a canonical URL: a probe of ``docs_url`` and of the URL
        runs (no scan of the documents, whatever their number)."""
        from . import runs

        if self.config.urls is None:
            return False
        with self._read() as conn:
            if conn.execute("SELECT 1 FROM docs WHERE url_hash IS NOT NULL AND id_key IS NOT NULL LIMIT 1").fetchone():
                return True
            return bool(self.config.posting_runs) and runs.has_runs(conn, runs.KIND_URLS)

    def _near(self, conn, sk: Sketch, limit):
        cfg = self.config
        params = []
        cap = self.CANDIDATES_PER_BUCKET
        mask = (1 << DOC_BITS) - 1
        buckets = band_buckets(sk.bands[None, :])[0].tolist()
        from . import runs

        if cfg.posting_runs and (not cfg.rows_below or runs.has_runs(conn, runs.KIND_BANDS)):
            rows = self._near_rows_of_runs(conn, buckets, cap)
        else:
            for bucket in buckets:
                params += (bucket << DOC_BITS, bucket << DOC_BITS | mask, cap)
            rows = conn.execute(self._near_sql, params).fetchall()
        if not rows:
            return []
        if cfg.signatures:
            sigs = self._signature_matrix([r[1] for r in rows])
            ours = sk.signature & np.uint64(0xFFFF) if cfg.signature_width == 2 else sk.signature
            estimates = np.count_nonzero(sigs == ours, axis=1) / self._m
        else:
            # lean: b bands of r rows share a key with probability s**r each, so the shared
            # fraction estimates s**r (a coarse estimate: b values instead of num_perm)
            shared = np.array([r[-1] for r in rows], dtype=np.float64)
            estimates = np.minimum(shared / self._bands, 1.0) ** (1.0 / self._rows)
        out = []
        for i, row in enumerate(rows):
            entry = {"id": row[0], "jaccard": round(float(estimates[i]), 6) if not cfg.signatures
                     else float(estimates[i])}
            if cfg.store_shingles:
                other = np.frombuffer(row[2], dtype="<u8") if row[2] is not None else np.empty(0, np.uint64)
                entry["exact_jaccard"] = jaccard(sk.shingles, other)
                if entry["exact_jaccard"] < cfg.threshold:
                    continue
            elif entry["jaccard"] < cfg.threshold:
                continue
            out.append(entry)
        key = "exact_jaccard" if cfg.store_shingles else "jaccard"
        out.sort(key=lambda e: (-e[key], -e["jaccard"], e["id"]))
        return out[:limit] if limit is not None else out

    def _near_rows_of_runs(self, conn, buckets: list[int], cap: int) -> list:
        """``self._near_sql``'s rows ``(id, signature[, shingles], shared)`` from posting runs
        (and the row table, where small writes put theirs)."""
        from . import runs

        found = runs.lookup(conn, runs.KIND_BANDS, buckets, cap, drop_stale=self.config.exact_signatures,
                            rows=self._row_bucket_docs(conn, "bands", buckets, cap) if self.config.rows_below else None)
        docs, shared = np.unique(np.concatenate(found), return_counts=True)
        count_of = dict(zip(docs.tolist(), shared.tolist()))
        extra = ", d.shingles" if self.config.store_shingles else ""
        return [(*row[1:], count_of[row[0]]) for row in docs_of(conn, f"{self._id_sql}, d.signature{extra}", docs)]

    def _row_bucket_docs(self, conn, table: str, buckets: list[int], cap: int) -> list[np.ndarray]:
        """For each bucket, the sorted numbers of its first ``cap`` documents in a row table
        (``bands`` or ``simhash_blocks``), in one statement."""
        mask = (1 << DOC_BITS) - 1
        sql = (" UNION ALL ".join(f"SELECT {i}, doc FROM (SELECT posting & {mask} AS doc FROM {table} "
                                  f"WHERE posting BETWEEN ? AND ? ORDER BY posting LIMIT ?)" for i in range(len(buckets))))
        params: list = []
        for bucket in buckets:
            params += (bucket << DOC_BITS, bucket << DOC_BITS | mask, cap)
        found = np.array(conn.execute(sql, params).fetchall(), dtype=np.int64).reshape(-1, 2)
        found = found[np.lexsort((found[:, 1], found[:, 0]))]
        bounds = np.searchsorted(found[:, 0], np.arange(len(buckets) + 1))
        return [found[bounds[k]:bounds[k + 1], 1] for k in range(len(buckets))]

    def _containment(self, conn, sk: Sketch, limit):
        cfg = self.config
        t = cfg.containment_threshold
        values = sk.sample.view(np.int64).tolist()
        n_q = len(values)
        exact = cfg.store_shingles
        columns = f"d.num, {self._id_sql}, d.n_sample, count(*)" + (", d.shingles" if exact else "")
        rows = []
        # Each sample value gives at most CANDIDATES_PER_BUCKET documents, the oldest: those up
        # to its cap-th document (a seek in the (value, doc) key), as _near does for bands.
        capped = ("WITH q(value) AS (VALUES {}) SELECT {} FROM q JOIN samples s ON s.value = q.value "
                  "AND s.doc <= coalesce((SELECT doc FROM samples WHERE value = q.value ORDER BY doc "
                  "LIMIT 1 OFFSET ?), 9223372036854775807) {}")
        skip = self.CANDIDATES_PER_BUCKET - 1
        if n_q <= MAX_VARS:
            # Without stored shingles the estimate decides: let SQLite drop what cannot pass
            # (with a little slack for rounding; the exact test is below).
            having = "" if exact else " HAVING count(*) >= ? OR count(*) >= ? * d.n_sample"
            sql = capped.format(",".join(["(?)"] * n_q), columns,
                                f"JOIN docs d ON d.num = s.doc GROUP BY s.doc{having}")
            params = values + [skip] + ([] if exact else [t * n_q - 1e-9, t - 1e-12])
            rows = conn.execute(sql, params).fetchall()
        else:
            shared: Counter = Counter()
            for start in range(0, n_q, MAX_VARS):
                chunk = values[start:start + MAX_VARS]
                sql = capped.format(",".join(["(?)"] * len(chunk)), "s.doc, count(*)", "GROUP BY s.doc")
                for doc, count in conn.execute(sql, chunk + [skip]):
                    shared[doc] += count
            nums = list(shared)
            for start in range(0, len(nums), MAX_VARS):
                chunk = nums[start:start + MAX_VARS]
                rows += [(r[0], r[1], r[2], shared[r[0]], *r[3:]) for r in conn.execute(
                    f"SELECT {columns.replace(', count(*)', '')} FROM docs d WHERE d.num IN "
                    f"({','.join('?' * len(chunk))})", chunk)]
        contains, contained_in = [], []
        for row in rows:
            doc_id, n_d, s = row[1], row[2], row[3]
            c_d_in_q, c_q_in_d = s / n_d, s / n_q
            if exact:
                other = np.frombuffer(row[4], dtype="<u8") if row[4] is not None else np.empty(0, np.uint64)
                inter = np.intersect1d(sk.shingles, other, assume_unique=True).size
                ex_d_in_q = inter / other.size if other.size else 0.0
                ex_q_in_d = inter / sk.shingles.size if sk.shingles.size else 0.0
                if ex_d_in_q >= t:
                    contains.append({"id": doc_id, "containment": c_d_in_q, "exact_containment": ex_d_in_q})
                if ex_q_in_d >= t:
                    contained_in.append({"id": doc_id, "containment": c_q_in_d, "exact_containment": ex_q_in_d})
            else:
                if c_d_in_q >= t:
                    contains.append({"id": doc_id, "containment": c_d_in_q})
                if c_q_in_d >= t:
                    contained_in.append({"id": doc_id, "containment": c_q_in_d})
        key = "exact_containment" if exact else "containment"
        for lst in (contains, contained_in):
            lst.sort(key=lambda e: (-e[key], -e["containment"], e["id"]))
        if limit is not None:
            return contains[:limit], contained_in[:limit]
        return contains, contained_in

    def _simhash_neighbours(self, conn, sk: Sketch, limit):
        params = []
        cap = self.CANDIDATES_PER_BUCKET
        mask = (1 << DOC_BITS) - 1
        buckets = [block_bucket(b, key, w) for (b, key), w in zip(self._block_keys(sk.simhash), self._block_widths)]
        from . import runs

        if self.config.posting_runs and (not self.config.rows_below or runs.has_runs(conn, runs.KIND_SIMHASH)):
            found = runs.lookup(conn, runs.KIND_SIMHASH, buckets, cap, rows=self._row_bucket_docs(
                conn, "simhash_blocks", buckets, cap) if self.config.rows_below else None)
            rows = docs_of(conn, "d.simhash", np.unique(np.concatenate(found)))
        else:
            for bucket in buckets:
                params += (bucket << DOC_BITS, bucket << DOC_BITS | mask, cap)
            rows = conn.execute(self._simhash_sql, params).fetchall()
        if not rows:
            return []
        k = self.config.simhash_max_distance
        nums = np.array([r[0] for r in rows], dtype=np.int64)
        values = np.array([r[1] for r in rows], dtype=np.int64).view(np.uint64) ^ np.uint64(sk.simhash)
        if hasattr(np, "bitwise_count"):
            distance = np.bitwise_count(values)
        else:  # numpy < 2.0
            distance = np.array([int(v).bit_count() for v in values.tolist()], dtype=np.uint8)
        close = distance <= k
        if not close.any():
            return []
        found = dict(zip(nums[close].tolist(), distance[close].tolist()))  # a doc may match several blocks
        out = [{"id": doc_id, "distance": int(found[num])}
               for num, doc_id in docs_of(conn, self._id_sql, np.fromiter(found, dtype=np.int64, count=len(found)))]
        out.sort(key=lambda e: (e["distance"], e["id"]))
        return out[:limit] if limit is not None else out

    def query(self, text: str, id: str | None = None, *, url: str | None = None,
              limit: int | None = DEFAULT_LIMIT) -> dict:
        """What the index holds that resembles ``text`` (answer shape in the module docstring).

        ``id`` is only echoed in the answer; ``limit`` cuts each list (None: no limit). With a
        ``url``, the answer also holds ``url_seen`` (a document with the same canonical URL is
        stored; None when the index stores no URLs, files of schema 3-6) and ``url_match`` (the
        id of the first one stored, else None).
        """
        return self.query_many([(id, text, None, url)], limit=limit)[0]

    def query_many(self, docs, *, limit: int | None = DEFAULT_LIMIT) -> list[dict]:
        """Answers for many documents, sketched as one batch and read in one snapshot."""
        check_limit(limit)
        records = [as_record(d) for d in docs]
        urls = [r[3] for r in records]
        hashes = self._url_hashes(urls)[0]
        sketches = self._sketch_many([r[1] for r in records])
        with self._read() as conn:
            return [self._query(conn, sk, r[0], limit, h, url is not None)
                    for r, sk, url, h in zip(records, sketches, urls, hashes)]


    def near_many(self, texts, *, limit: int | None = DEFAULT_LIMIT) -> list[list[dict]]:
        """The ``near`` lists of :meth:`query_many`'s answers for ``texts`` alone, without the
        exact, containment and simhash look-ups (of generated pages, whose common words fill the
        simhash blocks, those took 8 times the time of the near look-up)."""
        check_limit(limit)
        sketches = self._sketch_many(list(texts))
        with self._read() as conn:
            return [self._near(conn, sk, limit) if sk.n_shingles else [] for sk in sketches]

    # -- inspecting --------------------------------------------------------------------------
    def get(self, doc_id: str) -> dict | None:
        """What is stored for a document: id, fingerprint and simhash (hex), length, counts, meta."""
        with self._read() as conn:
            fingerprint = "coalesce(d.fingerprint, d.run_fingerprint)" if self.config.fingerprint_runs \
                else "d.fingerprint"
            found = self._rows_of_ids(conn, [doc_id], "", f"{self._id_sql}, {fingerprint}, d.length, d.n_shingles, "
                                      "d.n_sample, d.simhash, d.meta, d.added_at")
        if not found:
            return None
        row = found[0]
        return {"id": row[0], "fingerprint": None if row[1] is None else f"{unsigned(row[1]):016x}",
                "length": row[2], "n_shingles": row[3],
                "n_sample": row[4], "simhash": None if row[5] is None else f"{unsigned(row[5]):016x}",
                "meta": None if row[6] is None else json.loads(row[6]), "added_at": row[7]}

    def url_pages(self):
        """Every stored document that has a canonical URL (schema 7), in the order they were
        added: ``(number, id, url hash, url, fingerprint, n_shingles, page fingerprint)``, ``url``
        being the canonical URL's text, or None where it is the id; the fingerprints unsigned
        (None without tokens; the page's None where no whole page was given). One read snapshot.
        (Their signatures: :meth:`signatures`, of the documents that need them.)"""
        if self.config.urls is None:
            return
        fingerprint = "coalesce(d.fingerprint, d.run_fingerprint)" if self.config.fingerprint_runs else "d.fingerprint"
        with self._read() as conn:
            for num, doc_id, url_hash, url, fp, n, page in conn.execute(
                    f"SELECT d.num, {self._id_sql}, d.url_hash, d.url, {fingerprint}, d.n_shingles, "
                    "d.page_fingerprint FROM docs d WHERE d.url_hash IS NOT NULL ORDER BY d.num"):
                yield (num, doc_id, url_hash, url, None if fp is None else unsigned(fp), n,
                       None if page is None else unsigned(page))

    def signatures(self, nums) -> np.ndarray:
        """The stored MinHash signatures of the documents numbered ``nums``, in that order, as a
        (len(nums), num_perm) matrix of the stored width (``<u2``, ``<u4``, ``<u8``); zeros where
        a document has none (no shingles, or not stored). Read in batches by number."""
        width = self.config.signature_width
        nums = np.asarray(nums, dtype=np.int64)
        out = np.zeros((nums.size, self._m), dtype={2: "<u2", 4: "<u4", 8: "<u8"}[width])
        if not nums.size or not self.config.signatures:
            return out
        distinct, where = np.unique(nums, return_inverse=True)
        rows = np.zeros((distinct.size, self._m), dtype=out.dtype)
        with self._read() as conn:
            for lo in range(0, distinct.size, _SIGNATURE_BATCH):
                part = distinct[lo:lo + _SIGNATURE_BATCH]
                found = [(num, blob) for num, blob in docs_of(conn, "d.signature", part) if blob]
                if found:
                    at = np.searchsorted(part, np.array([num for num, _ in found], dtype=np.int64)) + lo
                    rows[at] = np.frombuffer(b"".join(blob for _, blob in found), dtype=out.dtype).reshape(-1, self._m)
        out[:] = rows[where.ravel()]
        return out

    def __contains__(self, doc_id) -> bool:
        if not isinstance(doc_id, str):
            return False
        with self._read() as conn:
            return bool(self._rows_of_ids(conn, [doc_id], "", "1"))

    def ids(self) -> list[str]:
        """Every stored id, in the order the documents were added."""
        with self._read() as conn:
            return [r[0] for r in conn.execute(f"SELECT {self._id_sql} FROM docs d ORDER BY d.num")]

    def __len__(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT value FROM meta WHERE key = 'documents'").fetchone()[0])

    def stats(self) -> dict:
        """Documents, file sizes, schema version and the configuration (with its fingerprint)."""
        with self._read() as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            from . import runs

            posting_runs = runs.run_stats(conn) if self.config.posting_runs else None
        wal = self.path + "-wal"
        return {
            "path": self.path,
            "documents": int(meta["documents"]),
            "schema_version": conn.execute("PRAGMA user_version").fetchone()[0],
            "created_at": meta.get("created_at"),
            "created_by": meta.get("created_by"),
            "config_fingerprint": meta["config_fingerprint"],
            "config": json.loads(meta["config"]),
            "database_bytes": pages * page_size,
            "wal_bytes": os.path.getsize(wal) if os.path.exists(wal) else 0,
            "wal_truncations": self.truncations,
            "resident": self.resident_info(),
            # profile lean: runs, postings, blocks and block bytes of each kind (None elsewhere)
            "posting_runs": posting_runs,
        }


    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"`` or the problems SQLite found."""
        with self._read() as conn:
            return "\n".join(r[0] for r in conn.execute("PRAGMA integrity_check"))



def docs_of(conn, columns: str, nums: np.ndarray) -> list:
    """``(num, columns...)`` of the stored documents among ``nums`` (of ``docs d``): the numbers
    travel as one JSON array, and each is a look-up of ``docs``' key (an ``IN`` list of a few
    thousand parameters is a new statement to parse each time and a temporary index: about 3
    times slower for a query's simhash candidates)."""
    if not len(nums):
        return []
    import orjson

    text = orjson.dumps(np.ascontiguousarray(nums, dtype=np.int64), option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return conn.execute(f"SELECT d.num, {columns} FROM json_each(?) j JOIN docs d ON d.num = j.value",
                        (text,)).fetchall()


def check_limit(limit) -> None:
    if limit is not None:
        check_int("limit", limit, 1, None, owner="SeenIndex.query")


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    inter = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - inter
    return inter / union if union else 1.0
