"""The local engine's cluster stage: the verified edges (and, with URL identity, the links of one
page's records) clustered by :func:`~neardup.engines.common.cluster_outcomes`, each member
measured against its survivor on the held or spilled shingle ids, and the figures of the
clusters; and the sketched records as an index stores them (``--save-index``, ``--against``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ...stages.columns import Copies, take_values
from ...stages.survivors import cluster_kinds, similarity_to_survivors, split_sources
from ...stages.urls import copy_aliases, no_agreement, url_links
from ...stages.verify import Edges, pair_similarities, score_of
from ..common import cluster_outcomes
from . import memory
from .sketching import Sketched

if TYPE_CHECKING:  # the index's records: sqlite is imported only by a run that saves an index
    from ...store.run_records import RunRecords

__all__ = ["Clustering", "ShingleIds"]


@dataclasses.dataclass
class ShingleIds:
    """The sketched records' shingle ids as the cluster stage reads them: the pieces (run ``r`` at
    ``offsets[r]:offsets[r + 1]``), the offsets, each record's count, and the second read's
    pieces when the first read dropped its ids. The stage lets them go once it has measured
    the members against their survivors (the last step that reads them), unless the index
    still needs them: at 30M records about 40 bytes a record and the second read's ids, up to
    the memory budget, that the outcomes are made without."""

    pieces: list | None
    offsets: np.ndarray | None
    counts: np.ndarray | None
    again: memory.Pieces | None = None

    def release(self) -> None:
        self.pieces = self.offsets = self.counts = self.again = None


class Clustering:
    """The cluster stage of :class:`~neardup.engines.local.run.Deduplicator` (which holds the
    state it reads: ``config``, ``jobs`` and ``save_index``)."""

    def _clusters(self, got: Sketched, sk, ids: ShingleIds, edges: Edges, stats: dict, kept_known) -> tuple:
        """``(outcome, survivor_local)``: every record's outcome over the clusters of the sketched
        records, their survivors (the kept mask given to ``kept_known`` as soon as it is known),
        and the clusters' figures in ``stats``."""
        cfg = self.config
        links = self._links(got, sk, ids) if cfg.url_field is not None else None
        keyvals = np.array(got.keyvals, dtype=np.float64) if cfg.keep == "field" else None
        priority = None
        if cfg.keep == "source":  # the preferred sources first, then the first record
            rank = {s: r for r, s in reversed(list(enumerate(cfg.keep_sources)))}
            priority = np.array([rank.get(got.sources[o], len(rank)) for o in sk.tolist()], dtype=np.int64)

        def member_similarity(survivor_local):
            found = similarity_to_survivors(ids.pieces, ids.offsets, ids.counts, survivor_local, cfg.measure,
                                            jobs=self.jobs, in_slices=memory.in_pair_slices)
            if self.save_index is None:
                # the last step that reads the shingle ids, their offsets and counts, and the
                # texts' lengths is done: they are let go before every record's outcome is made,
                # the largest arrays of the run
                ids.release()
                got.n_shingles, got.lengths = [], None
                got.id_pieces.held = []
            return found

        # with sources, records are named (source, id): ids need only be unique within a source
        names = got.ids if got.sources is None else list(zip(got.sources, got.ids))
        made = cluster_outcomes(
            names, got.reason, sk, (edges.i, edges.j),
            got.exact_of.arrays() if isinstance(got.exact_of, Copies) else got.exact_of,
            keep="first" if cfg.keep == "source" else cfg.keep,
            # (the lengths only where the policy reads them: they are let go with the shingle ids)
            lengths=got.lengths.array() if cfg.keep in ("longest", "shortest") else None,
            keyvals=keyvals, priority=priority, member_similarity=member_similarity,
            chain_below=cfg.threshold if cfg.method in ("minhash", "broder") else None, kept_known=kept_known,
            links=links)
        del keyvals, priority
        outcome, chained = made.outcome, made.chained
        stats["duplicate_ids"] = sum(g.size - 1 for g in made.repeated)
        if links is not None:
            stats["urls_identity"] = links.stats
        if got.sources is not None:
            stats["kinds"] = cluster_kinds(outcome, made.sizes)
            outcome, chained = split_sources(outcome), [i for _, i in chained]
        stats["chained"] = len(chained)
        stats["chained_examples"] = chained[:20]
        stats["cluster_sizes"] = made.sizes
        return outcome, made.survivor_local

    def _links(self, got: Sketched, sk, ids: ShingleIds):
        """URL identity over the sketched records (:func:`neardup.stages.urls.url_links`): an
        exact copy's URL stands for its first holder, and a claim agrees with the content when
        the pair's similarity (the run's measure) is at the threshold (with ``--method exact``,
        never: see :func:`neardup.stages.urls.no_agreement`)."""
        cfg = self.config
        ords = sk.tolist()
        keys = [got.url_keys.get(o) for o in ords]
        claims = [got.claim_keys.get(o) for o in ords]
        aliases, alias_claims = [], []
        if got.url_keys or got.claim_keys:
            copies, holders = (got.exact_of.arrays() if isinstance(got.exact_of, Copies)
                               else (np.fromiter(got.exact_of.keys(), np.int64), np.fromiter(got.exact_of.values(), np.int64)))
            aliases, alias_claims = copy_aliases(copies, holders, got.url_keys.get, got.claim_keys.get,
                                                 {o: k for k, o in enumerate(ords)})

        def measured(a, b):
            return score_of(pair_similarities(ids.pieces, ids.offsets, ids.counts, a, b, jobs=self.jobs),
                            cfg.measure) >= cfg.threshold

        agree = no_agreement if cfg.method == "exact" else measured
        return url_links(keys, claims, agree, ids=take_values(got.ids, sk), aliases=aliases, alias_claims=alias_claims)

    def _survivor_config(self):
        """The configuration the survivors are chosen with against an index (indexed documents
        come first whatever the policy; ``keep="source"`` is ``"first"`` among the new records)."""
        cfg = self.config
        return dataclasses.replace(cfg, keep="first", keep_sources=()) if cfg.keep == "source" else cfg

    def _run_records(self, got: Sketched, sk: np.ndarray, ids: ShingleIds, *, names: bool = True) -> RunRecords:
        """The sketched records as the index stores them (:class:`neardup.store.run_records.RunRecords`);
        without their ids and sources unless ``names`` (only a write to the index needs them:
        decoding 100,000 ids took 0.02 s of a run against an index that it does not update)."""
        record_ids = sources = None
        if names:
            ords = sk.tolist()
            record_ids = take_values(got.ids, np.asarray(ords, dtype=np.int64))
            every = got.sources or [""] * len(got.ids)
            sources = [every[o] for o in ords]
        # (keep="source" may have put a copy in its holder's place: the same content, the same fingerprint)
        fingerprints = (np.concatenate(got.fingerprint_parts) if got.fingerprint_parts
                        else np.zeros(0, dtype=np.uint64)).astype(np.uint64, copy=False)
        from ...store.run_records import RunRecords  # sqlite only for a run with an index

        urls, pages, copies = (self._index_urls(got, ords, every) if names and self.config.url_field is not None
                               else (None, None, []))
        return RunRecords(ids=record_ids, sources=sources,
                          fingerprints=fingerprints,
                          lengths=np.array(got.lengths, dtype=np.int64)[sk], counts=ids.counts, offsets=ids.offsets,
                          shingle_ids=ids.pieces, signatures=got.signatures or [], urls=urls, pages=pages,
                          copies=copies)

    def _index_urls(self, got: Sketched, ords: list, sources: list) -> tuple[list, list, list]:
        """The canonical URLs the index stores (:class:`neardup.store.run_records.RunRecords`'s
        ``urls``, ``pages`` and ``copies``): each URL first with the first record that has it, as
        ``neardup changes`` reads a crawl, sketched or an exact copy (stored with its holder's
        sketch), and each record's whole page's fingerprint where it was read with one."""
        from ...store.run_records import UrlCopy

        position = {o: k for k, o in enumerate(ords)}
        copies, holders = (got.exact_of.arrays() if isinstance(got.exact_of, Copies)
                           else (np.fromiter(got.exact_of.keys(), np.int64), np.fromiter(got.exact_of.values(), np.int64)))
        holder_of = dict(zip(copies.tolist(), holders.tolist()))
        first: dict = {}
        for o in sorted(got.url_keys):  # (records skipped, as empty texts, have no sketch to store)
            if o in position or o in holder_of:
                first.setdefault(got.url_keys[o], o)
        # a later record of a URL keeps it too (the index counts it as a repeat of the URL),
        # unless the URL's first record is a copy: that one, stored after the sketched records,
        # must be the first the index has under the URL
        urls: list = [None] * len(ords)
        for k, o in enumerate(ords):
            key = got.url_keys.get(o)
            if key is not None and first[key] in position:
                urls[k] = key
        stored = []
        for key, o in first.items():
            if o in position:
                continue
            holder, seen = holder_of[o], 0
            while holder not in position and holder in holder_of and seen < len(holder_of):  # (a chain of copies)
                holder, seen = holder_of[holder], seen + 1
            if holder in position or holder < 0:  # (against an index, -1 - k: the index's holder k)
                stored.append((o, holder, key))
        stored.sort()
        names = take_values(got.ids, np.array([o for o, _, _ in stored], dtype=np.int64)) if stored else []
        pages = [got.page_fingerprints.get(o) for o in ords]
        return urls, pages, [UrlCopy(position[h] if h >= 0 else h, name, sources[o], key, got.page_fingerprints.get(o))
                             for (o, h, key), name in zip(stored, names)]
