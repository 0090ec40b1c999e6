"""Sketching for a :class:`~neardup.store.sqlite.SeenIndex`: a batch of texts to sketches and
band keys (on the index's threads), ids checked and metadata encoded before a write.
:class:`Sketching` is a mixin over the index's configuration."""

from __future__ import annotations

import json


from ..errors import InputError
from ..stages.candidates import band_keys
from ..urls import DEFAULT_RULES
from .schema import Sketch, signed, url_hashes

__all__ = ["Sketching"]


class Sketching:
    """Sketches of texts as the index stores them (see the module docstring)."""

    def _sketch_batch(self, texts: list[str]):
        """The batch's sketches (:func:`neardup.stages.sketch.sketch_documents`) and band keys."""
        return self._sketch_parts([texts])

    def _sketch_parts(self, parts: list):
        """:meth:`_sketch_batch` of a batch given as parts: lists of texts and EncodedDocuments
        (:func:`neardup.stages.sketch.sketch_document_parts`)."""
        from ..stages.sketch import sketch_document_parts

        for part in parts:
            if type(part) is list:
                for t in part:
                    if not isinstance(t, str):
                        raise InputError(f"a document's text must be a str, got {type(t).__name__}")
        cfg = self.config
        # the MOD_m samples only where they are stored: without them a query has no containment
        # answers to look for (Queries), and taking them costs a pass over every shingle id
        sk = sketch_document_parts(parts, cfg.shingle, cfg.minhash, mod_m=cfg.mod_m, jobs=self.jobs,
                                   with_samples=cfg.containment, with_ids=cfg.store_shingles)
        return sk, band_keys(sk.signatures.values, self._bands, self._rows)

    def _sketch_many(self, texts: list[str]) -> list[Sketch]:
        if not texts:
            return []
        cfg = self.config
        sk, keys = self._sketch_batch(texts)
        sig = sk.signatures
        values, offsets = sig.values, sig.offsets
        ids = sig.ids if cfg.store_shingles else None
        out = []
        for i, text in enumerate(texts):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            out.append(Sketch(
                fingerprint=sk.fingerprints[i],
                length=len(text),
                n_shingles=hi - lo,
                signature=values[i],
                bands=keys[i],
                sample=sk.samples[i],
                simhash=sk.simhashes[i],
                shingles=ids[lo:hi] if cfg.store_shingles else None,
            ))
        return out

    def _check_id(self, doc_id, fingerprint: int | None) -> str:
        if doc_id is None:
            if fingerprint is None:
                raise InputError("a document without words needs an id (its content has no fingerprint)")
            return f"{fingerprint:016x}"
        if not isinstance(doc_id, str):
            raise InputError(f"a document id must be a string, got {type(doc_id).__name__} {doc_id!r}")
        if not doc_id:
            raise InputError("a document id must not be empty")
        try:
            doc_id.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"document id {doc_id!r} is not valid Unicode (it holds a lone surrogate)") from None
        return doc_id

    def _check_ids(self, doc_ids: list, fingerprints: list) -> list[str]:
        """:meth:`_check_id` of a batch: a batch of non-empty str ids is checked as a whole (one
        encoding of them all), any other one id by id, which says which id is wrong."""
        if all(type(doc_id) is str and doc_id for doc_id in doc_ids):
            try:
                "".join(doc_ids).encode("utf-8")
                return doc_ids
            except UnicodeEncodeError:
                pass
        return [self._check_id(doc_id, fp) for doc_id, fp in zip(doc_ids, fingerprints)]

    def _url_hashes(self, urls: list) -> tuple[list, list]:
        """``docs.url_hash`` of records' URLs and their canonical forms (:func:`.schema.url_hashes`)
        under the file's URL rules; None for a record without a URL. A file that stores no URLs
        (schema 3-6) still checks them, so that a bad URL is refused whatever the file."""
        if all(url is None for url in urls):
            return [None] * len(urls), [None] * len(urls)
        return url_hashes(urls, self.config.urls or DEFAULT_RULES)

    def _page_fingerprints(self, pages: list) -> list:
        """The whole-page fingerprints given with documents (unsigned 64-bit ints,
        :func:`neardup.text.html_pages.page_fingerprint`) as the file stores them (signed); None
        where none was given (a file whose fingerprints are of an earlier definition stores none
        of them: :meth:`neardup.store.rows.Rows._columns`)."""
        out: list = [None] * len(pages)
        for k, page in enumerate(pages):
            if page is None:
                continue
            if type(page) is not int or not 0 <= page < 1 << 64:
                raise InputError(f"a document's page_fingerprint must be an int in [0, 2**64) (neardup.text."
                                 f"html_pages.page_fingerprint of its HTML), got {page!r:.60}")
            out[k] = signed(page)
        return out

    @staticmethod
    def _meta_json(meta) -> str | None:
        if meta is None:
            return None
        if not isinstance(meta, dict):
            raise InputError(f"document meta must be a JSON object (dict), got {type(meta).__name__}")
        try:
            return json.dumps(meta, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"document meta cannot be stored as JSON: {exc}") from None

    # -- writing -----------------------------------------------------------------------------
    def _block_keys(self, simhash: int) -> list[tuple[int, int]]:
        return [(i, (simhash >> shift) & mask) for i, (shift, mask) in enumerate(self._blocks)]
