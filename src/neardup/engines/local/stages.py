"""The local engine's stage sequence: sketch, candidates, verify, cluster, each saved in the work
folder as it completes (:mod:`neardup.io.write.runfolder`) and read back instead of being run again
by a run that resumes an interrupted one; against an index (``--against``), the cluster stage
is :class:`~neardup.engines.against.Against`'s."""

from __future__ import annotations

import os
import time
from collections import Counter

import numpy as np

from ...io.write.checkpoints import reached
from ...io.write.outputs import folder_bytes
from ...stages.columns import Copies, Floats, Growable, Ids, Labels, Names, repeated_names
from ...stages.survivors import Outcome
from ...stages.verify import Edges
from ..common import VerifiedPairs
from .clusters import ShingleIds
from .memory import Pieces
from .sketching import Sketched, record_names

__all__ = ["StageSequence"]


class StageSequence:
    """The stages of :class:`~neardup.engines.local.run.Deduplicator` in turn, and their results
    saved in and read back from the work folder."""

    def _dedup(self, docs, work: str, kept_known=None, run=None):
        """The outcome of every record, the verified pairs and the statistics; ``kept_known(kept)``
        is called with the final boolean mask of kept records (by ordinal) as soon as it is known.

        With ``run`` (a :class:`~neardup.io.write.runfolder.RunFolder`), each stage's result is saved in
        the work folder as it completes, and a stage saved by an earlier, interrupted run is read
        back instead of being run again (the ``_load_*``/``_save_*`` methods below)."""

        def stage(name: str):
            self._stage_name = name
            reached(name)
            return run is not None and run.done(name)

        t0 = time.perf_counter()
        if stage("sketch"):
            got = self._load_sketch(run)
        else:
            try:
                got = self._read_and_sketch(docs, run.stage_partial("sketch") if run else work)
            finally:
                # a read stopped early (an error, SIGTERM) lets its extraction workers go now: its
                # generator, kept alive by the traceback, would otherwise be closed only after the
                # process has gone, and the workers would wait for work, holding the caller's pipes
                close = getattr(docs, "close", None)
                if close is not None:
                    close()
            self.seconds["read_and_sketch"] = time.perf_counter() - t0
            if got.local_of is not None:  # keep="source" moved holders: copies point at the final one
                for o, first in got.exact_of.items():  # (before the stage is saved, which holds exact_of)
                    while first in got.exact_of:
                        first = got.exact_of[first]
                    got.exact_of[o] = first
            if run is not None:
                self._save_sketch(run, got)
                # what was read is let go before the saved stage is read back: both at once were
                # every per-record array twice (and the exact pass's table) at the stage's end
                got = None
                got = self._load_sketch(run)

        # the sketched ordinals and shingle counts as the stage holds them (views, not copies)
        sk = got.sketched.array()
        got.first_by_fp = None  # (the exact pass is done)
        counts = (got.n_shingles[0] if len(got.n_shingles) == 1 else np.concatenate(got.n_shingles)
                  if got.n_shingles else np.zeros(0, dtype=np.int64))
        got.n_shingles = [counts]
        stats_shingles = int(counts.sum())
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        shingle_ids = got.id_pieces.finish()
        self._records = len(got.ids)
        if run is not None:
            self._sketch_bytes = folder_bytes(os.path.join(run.path, "sketch"))
        stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0,
                       "n_shingles_total": stats_shingles}
        spilled_again = 0  # bytes of the second read's shingle ids spilled (when the first dropped them)

        t = time.perf_counter()
        if stage("candidates"):
            arrays, meta = run.load("candidates")
            ci, cj, est = arrays["ci"], arrays["cj"], arrays["est"]
            stats.update(meta["stats"])
            got.sig_pieces.finish()
            self.seconds["candidates"] = meta["seconds"]
        else:
            ci, cj, est = self._candidates(got, sk.size, stats, shingle_ids, offsets, work)
            self.seconds["candidates"] = time.perf_counter() - t
            if run is not None:
                run.save("candidates", {"ci": ci, "cj": cj, "est": est},
                         {"stats": stats, "seconds": self.seconds["candidates"]})

        t = time.perf_counter()
        cfg = self.config
        again = None  # the second read's pieces of shingle ids, when the first pass dropped them
        if got.ids_dropped and not (run is not None and run.done("verify") and run.done("cluster")):
            if run is not None and run.done("verify"):  # only the clusters' pairs are measured again
                arrays, _ = run.load("verify")
                need = np.union1d(arrays["i"], arrays["j"])
            else:
                need = np.union1d(ci, cj)
            shingle_ids = offsets = None  # the first read's (its ids were dropped): not held beside the second's
            shingle_ids, offsets, again = self._ids_again(sk, counts, need, work)  # timed with verify
            spilled_again = again.spilled_bytes
        if stage("verify"):
            arrays, meta = run.load("verify")
            edges = Edges(arrays["i"], arrays["j"], arrays["jaccard"], arrays["estimate"], arrays["score"])
            self.seconds["verify"] = meta["seconds"]
        else:
            edges = self._verify(ci, cj, est, shingle_ids, offsets, counts)
            self.seconds["verify"] = time.perf_counter() - t
            if run is not None:
                run.save("verify", {"i": edges.i, "j": edges.j, "jaccard": edges.jaccard, "estimate": edges.estimate,
                                    "score": edges.score}, {"seconds": self.seconds["verify"]})
        stats["verified_pairs"] = len(edges)

        t = time.perf_counter()
        pairs = VerifiedPairs(edges, sk)
        write = None
        # the shingle ids as the cluster stage reads them: held there only, so that it can let them go
        ids = ShingleIds(shingle_ids, offsets, counts, again)
        shingle_ids = offsets = counts = again = None
        if self.against is not None:
            outcome, (all_edges, all_sk, names), sizes, kinds, chained, write = self.against.resolve(
                ids=got.ids, sources=got.sources, reason=got.reason,
                lengths=np.array(got.lengths, dtype=np.int64),
                keyvals=np.array(got.keyvals, dtype=np.float64) if cfg.keep == "field" else None,
                exact_of=dict(got.exact_of.items()), sk=sk,
                records=self._run_records(got, sk, ids, names=self.against.update),
                keys=got.band_keys, edges=edges, config=self._survivor_config(), jobs=self.jobs,
                url_keys=got.url_keys, claim_keys=got.claim_keys)
            if kept_known is not None:
                kept_known(outcome.kept)
            pairs = VerifiedPairs(all_edges, all_sk, names)
            stats.update(self.against.stats)
            stats["kinds"] = kinds
            stats["chained"], stats["chained_examples"], stats["cluster_sizes"] = len(chained), chained[:20], sizes
        elif stage("cluster"):
            outcome = self._load_cluster(run, got, stats)
            if kept_known is not None:
                kept_known(outcome.kept)
        else:
            outcome, survivor_local = self._clusters(got, sk, ids, edges, stats, kept_known)
            if self.save_index is not None:
                from ...store.run_records import save_run  # sqlite only for a run with an index

                stats["index_documents_saved"] = save_run(self.save_index, self._run_records(got, sk, ids),
                                                          survivor_local)
            self.seconds["cluster"] = time.perf_counter() - t
            if run is not None:
                self._save_cluster(run, outcome, stats)
        if write is not None:  # --update-index: the new records, in one transaction
            stats["index_documents_added"] = self.against.index._run_write(write)
        if self.against is not None:
            self.seconds["cluster"] = time.perf_counter() - t
        stats["skipped"] = dict(sorted(got.skipped.items()))
        stats["spilled_bytes"] = (got.id_pieces.spilled_bytes + got.sig_pieces.spilled_bytes
                                  + stats.get("grouping_spilled_bytes", 0) + spilled_again)
        if "duplicate_ids" not in stats:  # a cluster stage saved by an earlier run
            stats["duplicate_ids"] = sum(g.size - 1 for g in repeated_names(record_names(got)))
        stats["urls"] = got.urls
        return outcome, pairs, stats

    # the stages' results in the work folder --------------------------------------------------
    def _save_sketch(self, run, got: Sketched) -> None:
        got.id_pieces.close_file()
        got.sig_pieces.close_file()
        arrays = {
            "shingles-0": got.id_pieces.held, "signatures-0": got.sig_pieces.held,  # -1: the spill files
            # views of the columns (np.array would copy every one while the whole record is held)
            "lengths": got.lengths.array(),
            "keyvals": got.keyvals.array(),
            "exact_of": (np.stack(got.exact_of.arrays(), axis=1) if isinstance(got.exact_of, Copies)
                         else np.array(sorted(got.exact_of.items()), dtype=np.int64).reshape(-1, 2)),
            "sketched": got.sketched.array(),
            "n_shingles": (np.concatenate(got.n_shingles) if got.n_shingles else np.zeros(0, dtype=np.int64)),
            "id_bytes": np.frombuffer(got.ids.data, dtype=np.uint8), "id_ends": got.ids.ends,
            "reason_codes": got.reason.codes.array(),
        }
        if got.band_parts:
            arrays["band_keys"] = np.concatenate(got.band_parts)
        if got.simhashes:
            arrays["simhashes"] = np.concatenate(got.simhashes)
        run.save("sketch", arrays, {
            "reason_labels": got.reason.labels, "skipped": dict(got.skipped),
            "urls": sorted(got.urls.items()),  # web archives' pages: clusters.jsonl's url key
            "url_keys": sorted(got.url_keys.items()), "claim_keys": sorted(got.claim_keys.items()),
            "sources": got.sources,  # each record's source (several inputs, --source-field), or None
            "spilled_bytes": [got.id_pieces.spilled_bytes, got.sig_pieces.spilled_bytes],
            "signature_dtype": got.sig_pieces.dtype.name,
            "ids_dropped": got.ids_dropped,
            "input_report": self._input_report.as_dict() if getattr(self, "_input_report", None) else None,
            "seconds": {k: self.seconds[k] for k in ("read_and_sketch", "sketch_wait_and_collect") if k in self.seconds},
        }, digests={os.path.basename(p.path): p.digest.hexdigest() for p in (got.id_pieces, got.sig_pieces)
                    if p.digest is not None})

    def _load_sketch(self, run) -> Sketched:
        arrays, meta = run.load("sketch")
        got = Sketched(ids=Ids(arrays.pop("id_bytes").data, arrays["id_ends"]),
                        reason=Labels(meta["reason_labels"], arrays["reason_codes"]),
                        lengths=Growable(np.int64, arrays["lengths"]), keyvals=Growable(np.float64, arrays["keyvals"]),
                        skipped=Counter(meta["skipped"]),
                        exact_of=(Copies(arrays["exact_of"][:, 0], arrays["exact_of"][:, 1])
                                  if self.config.keep != "source" else dict(arrays["exact_of"].tolist())),
                        sketched=Growable(np.int64, arrays["sketched"]), n_shingles=[arrays["n_shingles"]])
        got.urls = {int(o): url for o, url in meta.get("urls", [])}
        got.url_keys = {int(o): key for o, key in meta.get("url_keys", [])}
        got.claim_keys = {int(o): key for o, key in meta.get("claim_keys", [])}
        got.sources = meta.get("sources")
        got.band_parts = [arrays["band_keys"]] if "band_keys" in arrays else []
        got.simhashes = [arrays["simhashes"]] if "simhashes" in arrays else []
        ids_spilled, sig_spilled = meta["spilled_bytes"]
        got.ids_dropped = bool(meta.get("ids_dropped", False))
        report = getattr(self, "_input_report", None)
        if report is not None and meta.get("input_report"):  # what the first pass left out, as it saw it
            report.skipped_files[:] = meta["input_report"]["skipped_files"]
            report.ignored_files[:] = meta["input_report"]["ignored_files"]
        got.id_pieces = Pieces.restored([arrays["shingles-0"], arrays.get("shingles-1", arrays["shingles-0"][:0])],
                                         ids_spilled)
        # the signatures' width as the run kept them (uint32 for a 32-bit family: see _read_and_sketch)
        width = np.dtype(meta.get("signature_dtype", "uint64"))
        sig_held, sig_spill = arrays["signatures-0"], arrays.get("signatures-1")
        got.sig_pieces = Pieces.restored([sig_held if sig_held.size else sig_held.astype(width),
                                           sig_spill if sig_spill is not None else np.zeros(0, width)], sig_spilled)
        self.seconds.update(meta["seconds"])
        return got

    def _save_cluster(self, run, outcome: Outcome, stats: dict) -> None:
        arrays = {"kept": outcome.kept}
        meta = {"seconds": self.seconds["cluster"],
                "stats": {k: stats[k] for k in ("chained", "chained_examples", "kinds", "urls_identity")
                          if k in stats},
                # with sources a cluster is named (source, survivor id): JSON keeps the pair as a list
                "cluster_sizes": list(stats["cluster_sizes"].items())}
        if isinstance(outcome.cluster, Names):  # outcomes()'s arrays
            arrays.update(reason_codes=outcome.reason.codes.array(), cluster=outcome.cluster.ordinals,
                          duplicate_of=outcome.duplicate_of.ordinals, similarity=outcome.similarity.values)
            meta["reason_labels"] = outcome.reason.labels
        else:  # records with sources: split_sources gives the columns as lists
            meta.update(reason=list(outcome.reason), cluster=list(outcome.cluster),
                        duplicate_of=list(outcome.duplicate_of), similarity=list(outcome.similarity),
                        source=outcome.source, duplicate_of_source=outcome.duplicate_of_source)
        run.save("cluster", arrays, meta)

    def _load_cluster(self, run, got: Sketched, stats: dict) -> Outcome:
        arrays, meta = run.load("cluster")
        stats.update(meta["stats"])
        stats["cluster_sizes"] = Counter({tuple(c) if isinstance(c, list) else c: size
                                          for c, size in meta["cluster_sizes"]})
        self.seconds["cluster"] = meta["seconds"]
        if "reason_labels" in meta:
            return Outcome(ids=got.ids, reason=Labels(meta["reason_labels"], arrays["reason_codes"]),
                           cluster=Names(arrays["cluster"], got.ids),
                           duplicate_of=Names(arrays["duplicate_of"], got.ids),
                           similarity=Floats(arrays["similarity"]), kept=arrays["kept"])
        return Outcome(ids=got.ids, reason=meta["reason"], cluster=meta["cluster"], duplicate_of=meta["duplicate_of"],
                       similarity=meta["similarity"], kept=arrays["kept"], source=meta.get("source"),
                       duplicate_of_source=meta.get("duplicate_of_source"))

