"""The write operations of a :class:`~neardup.store.sqlite.SeenIndex`: add, remove and
check-and-add, one document or many, and their preparation for the group commit
(:mod:`.writer`). :class:`Writes` is a mixin over :class:`~neardup.store.rows.Rows`,
:class:`~neardup.store.sketching.Sketching` and :class:`~neardup.store.writer.GroupCommit`."""

from __future__ import annotations


import numpy as np

from ..errors import ConfigError, InputError
from ..io.documents import Document, EncodedDocuments
from .queries import as_record as _as_record, check_limit as _check_limit
from ..config import ROWS_BELOW
from .schema import DEFAULT_LIMIT
from .writer import Prepared

__all__ = ["Writes", "POLICIES"]


class Writes:
    """Adds, removals and check-and-adds (see the module docstring)."""

    def add(self, doc_id: str | None, text: str, meta: dict | None = None, *, url: str | None = None) -> str:
        """Store a document (replacing any entry with the same id); returns its id.

        Without an id, the id is the 16-hex-digit content fingerprint. ``url``: the page's URL,
        whose canonical form the index keeps (schema 7: see :meth:`query`'s ``url_seen``).
        """
        return self.add_many([(doc_id, text, meta, url)])[0]

    def add_many(self, docs) -> list[str]:
        """Store many documents in one transaction: all or none. Returns their ids.

        ``docs`` holds ``(id, text)``, ``(id, text, meta)``, ``(id, text, meta, url)`` or ``(id,
        text, meta, url, page_fingerprint)`` tuples, dicts with those keys (:func:`.queries.as_record`), or
        :class:`neardup.io.Document` objects. When an id repeats, the last one wins.
        """
        return self._run_write(self.prepare_add(docs).work)

    def prepare_add(self, docs) -> "Prepared":
        """:meth:`add_many`'s sketching and checks, without writing: for :meth:`run_prepared`.

        Raises what :meth:`add_many` raises for a bad document.
        """
        # parts: lists of (id, text, meta) records, and the reader's EncodedDocuments as they are
        # (JSONL texts as UTF-8, which the kernel reads in place: ``neardup index add``)
        parts: list = []
        n = 0
        for d in docs:
            if type(d) is EncodedDocuments:
                parts.append(d)
                n += len(d)
                continue
            # (the reader's Documents taken apart here, without as_record's checks of other kinds)
            record = (d.id, d.text, d.meta or None, None, None) if type(d) is Document else _as_record(d)
            if parts and type(parts[-1]) is list:
                parts[-1].append(record)
            else:
                parts.append([record])
            n += 1
        if n < ROWS_BELOW:
            records = [r for part in parts for r in (part if type(part) is list else
                                                     [(i, part.text(k), None, None, None) for k, i in enumerate(part.ids)])]
            return self._add_work(records, self._sketch_many([r[1] for r in records]))
        return self._bulk_add_work(parts)

    def _bulk_add_work(self, parts: list) -> "Prepared":
        """:meth:`_add_work` of a bulk write, from the batch's sketch arrays without a
        :class:`Sketch` per document (the same documents, in the same order: an id that repeats
        is stored once, at the place of its last occurrence, with its last text). ``parts``:
        lists of (id, text, meta) records and EncodedDocuments (no meta), in order."""
        cfg = self.config
        ids: list = []
        lengths: list = []
        metas: list = []
        texts_of = []
        urls: list = []
        pages: list = []
        for part in parts:
            if type(part) is list:
                ids.extend([r[0] for r in part])
                urls.extend([r[3] for r in part])
                pages.extend([r[4] for r in part])
                texts = [r[1] for r in part]
                texts_of.append(texts)
                lengths.extend([len(t) if isinstance(t, str) else 0 for t in texts])
                metas.extend([self._meta_json(r[2]) for r in part])
            else:
                ids.extend(part.ids)
                texts_of.append(part)
                lengths.extend(part.lengths.tolist())
                metas.extend([None] * len(part))
                urls.extend([None] * len(part))
                pages.extend([None] * len(part))
        url_col, url_texts = self._url_hashes(urls)
        page_col = self._page_fingerprints(pages)
        sk, keys = self._sketch_parts(texts_of)
        sig = sk.signatures
        ids = given = self._check_ids(ids, sk.fingerprints)
        offsets = sig.offsets
        n_shingles = np.diff(offsets)
        fingerprints, samples, simhashes = sk.fingerprints, sk.samples, sk.simhashes
        signatures = sig.values if cfg.signatures else None
        last = {doc_id: k for k, doc_id in enumerate(ids)}
        keep = range(len(ids))
        if len(last) < len(ids):
            # (only a batch that repeats an id is picked from: the common case takes the lists whole)
            keep = sorted(last.values())
            pick = np.asarray(keep, dtype=np.int64)
            ids, fingerprints, samples, simhashes, lengths, metas, url_col, url_texts, page_col = (
                [col[k] for k in keep] for col in (ids, fingerprints, samples, simhashes, lengths, metas, url_col,
                                                   url_texts, page_col))
            n_shingles, keys = n_shingles[pick], keys[pick]
            signatures = None if signatures is None else signatures[pick]
        shingles = ([sig.ids[int(offsets[k]):int(offsets[k + 1])] for k in keep] if cfg.store_shingles
                    else [None] * len(keep))
        columns = self._columns(ids, fingerprints, lengths, n_shingles, signatures, samples, simhashes, shingles,
                                metas, band_keys=keys, url_hashes=url_col, url_texts=url_texts,
                                page_fingerprints=page_col)
        stored = ids

        def work(conn):
            self._delete(conn, stored)
            self._write_columns(conn, columns)
            return given

        return Prepared(self, work)

    def _add_work(self, records, sketches) -> "Prepared":
        items = {}
        ids = []
        hashes, texts = self._url_hashes([r[3] for r in records])
        pages = self._page_fingerprints([r[4] for r in records])
        for (doc_id, _, meta, _, _), sk, url_hash, url_text, page in zip(records, sketches, hashes, texts, pages):
            doc_id = self._check_id(doc_id, sk.fingerprint)
            items.pop(doc_id, None)
            items[doc_id] = (doc_id, sk, self._meta_json(meta), url_hash, url_text, page)
            ids.append(doc_id)

        columns = self._columns_of(list(items.values())) if items else None  # (on the caller's thread)

        def work(conn):
            self._delete(conn, list(items))
            if columns is not None:
                self._write_columns(conn, columns)
            return ids

        return Prepared(self, work)

    def prepare_many(self, requests) -> list:
        """:meth:`prepare_add` and :meth:`prepare_check_and_add` of several requests at once.

        ``requests``: ``("add", docs)`` or ``("check_and_add", docs, limit[, policy])`` each. The texts of
        all are sketched as one batch, which costs about half as much per document as one at a
        time (measured with 8 single-document requests). Returns, for each request, its
        prepared write, or the exception its own ``prepare_*`` call would have raised.
        """
        return self.prepared_of(self.sketch_requests(requests))

    def sketch_requests(self, requests) -> list:
        """:meth:`prepare_many` in two halves, so that a server can sketch in one process and
        write in another: this half reads and sketches the texts (no index access) and returns,
        for each request, a picklable ``(kind, records, sketches, limit, policy)`` (the records
        without their texts) or the exception; :meth:`prepared_of` turns these into prepared writes."""
        out: list = [None] * len(requests)
        parsed = []  # (position, kind, records, limit, policy)
        for i, request in enumerate(requests):
            try:
                kind, docs = request[0], request[1]
                limit = request[2] if len(request) > 2 else DEFAULT_LIMIT
                policy = request[3] if len(request) > 3 else "exact"
                if kind == "check_and_add":
                    _check_limit(limit)
                    _check_policy(policy)
                elif kind != "add":
                    raise InputError(f"unknown kind of write {kind!r}: 'add' or 'check_and_add'")
                parsed.append((i, kind, [_as_record(d) for d in docs], limit, policy))
            except Exception as exc:
                out[i] = exc
        texts = [r[1] for _, _, records, _, _ in parsed for r in records]
        try:
            sketches = self._sketch_many(texts)
        except Exception:
            sketches = None  # a bad text: sketch request by request, so that only its own fails
        start = 0
        for i, kind, records, limit, policy in parsed:
            try:
                if sketches is not None:
                    mine = sketches[start:start + len(records)]
                    start += len(records)
                else:
                    mine = self._sketch_many([r[1] for r in records])
                out[i] = (kind, [(r[0], None, r[2], r[3], r[4]) for r in records], mine, limit, policy)
            except Exception as exc:
                out[i] = exc
        return out

    def prepared_of(self, sketched: list) -> list:
        """The prepared writes (or exceptions) of what :meth:`sketch_requests` returned."""
        out = []
        for item in sketched:
            if isinstance(item, BaseException):
                out.append(item)
                continue
            kind, records, sketches, limit, policy = item
            try:
                out.append(self._add_work(records, sketches) if kind == "add"
                           else self._check_and_add_work(records, sketches, limit, policy))
            except Exception as exc:
                out.append(exc)
        return out

    def remove(self, doc_id: str) -> bool:
        """Remove a document; False when no document has that id."""
        return bool(self._run_write(lambda conn: self._delete(conn, [doc_id])))

    def remove_many(self, doc_ids) -> list[str]:
        """Remove documents in one transaction; returns the ids that were not in the index."""
        doc_ids = list(dict.fromkeys(doc_ids))
        found = self._run_write(lambda conn: self._delete(conn, doc_ids))
        return [d for d in doc_ids if d not in found]


    def check_and_add(self, doc_id: str | None, text: str, meta: dict | None = None, *, url: str | None = None,
                      limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> dict:
        """Query and, unless a copy is present, store, as one atomic step.

        ``policy``: what counts as a copy: ``"exact"`` (the same content fingerprint) or
        ``"near"`` (that, or a near answer: an estimated, or with stored shingles exact,
        Jaccard of at least the threshold). Either way the check and the add happen under the
        write lock, so of two near-copies posted at once under ``"near"`` exactly one is added.

        Returns the answer plus ``"added"``: True when no copy was found (the document is now
        stored; ``id`` is the id it was stored under), False when one was (nothing stored; the
        copies are in ``exact`` and ``near``). With a ``url``, the answer also says whether a
        document with the same canonical URL is stored (``url_seen``, ``url_match``: see
        :meth:`query`); the URL does not decide ``added``, the content does.
        """
        return self.check_and_add_many([(doc_id, text, meta, url)], limit=limit, policy=policy)[0]

    def check_and_add_many(self, docs, *, limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> list[dict]:
        """:meth:`check_and_add` for many documents in one transaction, in order.

        Each document is checked against the index and the documents before it in ``docs``.
        """
        return self._run_write(self.prepare_check_and_add(docs, limit=limit, policy=policy).work)

    def prepare_check_and_add(self, docs, *, limit: int | None = DEFAULT_LIMIT, policy: str = "exact") -> "Prepared":
        """:meth:`check_and_add_many`'s sketching and checks, without reading or writing the
        index: for :meth:`run_prepared`, which does the check and the add under the write lock.

        Raises what :meth:`check_and_add_many` raises for a bad document.
        """
        _check_limit(limit)
        _check_policy(policy)
        records = [_as_record(d) for d in docs]
        return self._check_and_add_work(records, self._sketch_many([r[1] for r in records]), limit, policy)

    def _check_and_add_work(self, records, sketches, limit, policy: str) -> "Prepared":
        hashes, texts = self._url_hashes([r[3] for r in records])
        pages = self._page_fingerprints([r[4] for r in records])
        prepared = [(self._check_id(doc_id, sk.fingerprint), sk, self._meta_json(meta), url_hash, url_text, page)
                    for (doc_id, _, meta, _, _), sk, url_hash, url_text, page
                    in zip(records, sketches, hashes, texts, pages)]

        def work(conn):
            answers = []
            for doc_id, sk, meta, url_hash, url_text, page in prepared:
                answer = self._query(conn, sk, doc_id, limit, url_hash, url_text is not None)
                answer["added"] = not answer["exact"] and (policy == "exact" or not answer["near"])
                if answer["added"]:
                    self._delete(conn, [doc_id])
                    self._insert(conn, [(doc_id, sk, meta, url_hash, url_text, page)])
                answers.append(answer)
            return answers

        return Prepared(self, work)


    # -- closing -----------------------------------------------------------------------------


POLICIES = ("exact", "near")


def _check_policy(policy) -> None:
    if policy not in POLICIES:
        raise ConfigError(f"The 'policy' parameter of SeenIndex.check_and_add must be one of 'exact', 'near'. "
                          f"Got {policy!r} instead.")
