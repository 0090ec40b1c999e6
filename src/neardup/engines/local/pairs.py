"""The local engine's pairs: candidates (band keys, simhash distances or shared samples, the
groupings spilled past the budget), the estimate filter and exact verification over the held or
memory-mapped sketches."""

from __future__ import annotations

import numpy as np

from ...stages import candidates as candidate_stage
from ...stages.verify import Edges, verify_pairs
from . import memory
from .sketching import Sketched

__all__ = ["CandidatePairs"]


class CandidatePairs:
    """The candidates and verify stages of :class:`~neardup.engines.local.run.Deduplicator` (which
    holds the state they read: ``config``, ``jobs``, ``in_memory_mb``, ``against`` and
    ``save_index``). The passes over memory-mapped sketches go through :mod:`.memory`'s module
    attributes, which the spill tests shrink."""

    #: The groupings (band keys, method broder's samples) spill past this budget at the least (``in_memory_mb`` 0
    #: spills the held ids; grouping by one record at a time would only be slow).
    GROUPING_MIN_MB = 4

    def _grouping_budget(self) -> int:
        """Bytes each grouping (band keys, samples) may hold before it spills."""
        return int(max(self.in_memory_mb, self.GROUPING_MIN_MB) * (1 << 20))

    def _sampled_candidates(self, shingle_ids, offsets, stats: dict, work: str):
        """Methods broder and greedy: candidate pairs from each document's sample of its ids."""
        cfg = self.config
        size = cfg.sample_mod if cfg.sample == "mod_m" else cfg.sample_size
        values, sample_offsets = candidate_stage.sample_ids(shingle_ids, offsets, cfg.sample, size)
        sample = {"kind": cfg.sample, **({"mod": cfg.sample_mod} if cfg.sample == "mod_m" else {"size": size})}
        if cfg.method == "greedy":
            ci, cj = candidate_stage.greedy_pairs(values, sample_offsets)
            stats["samples"] = {**sample, "values": int(values.size)}
            stats["candidate_pairs"] = int(ci.size)
            return ci, cj, np.full(ci.size, np.nan)
        ci, cj, est, bstats = candidate_stage.sampled_candidates(values, sample_offsets, cfg.threshold,
                                                                 measure=cfg.measure, cap=cfg.sample_cap,
                                                                 budget_bytes=self._grouping_budget(), folder=work)
        stats["grouping_spilled_bytes"] = sum(g["spilled_bytes"] for g in bstats["grouping"].values())
        stats["samples"] = {**sample, "cap": cfg.sample_cap, "values": int(values.size),
                            **{k: v for k, v in bstats.items() if k not in ("sample_pairs_kept",)}}
        stats["candidate_pairs"] = bstats["sample_pairs"]
        stats["estimate_filtered"] = bstats["sample_pairs"] - bstats["sample_pairs_kept"]
        return ci, cj, est

    def _band_candidates(self, signatures: list[np.ndarray], work: str):
        """Band-key candidates of the signature pieces (held, or memory-mapped from the spill),
        keys made a slice at a time and grouped within the budget
        (:class:`neardup.stages.candidates.BandKeys`: in memory while they fit, partitioned
        spill and external sort past it; the same pairs either way)."""
        band = self.config.banding()
        with candidate_stage.BandKeys(self._grouping_budget(), work) as keys:
            for piece in signatures:
                # a mapped piece's pages let go every MAPPED_PASS_BYTES read (see mapped_resident_bound)
                every = max(1, memory.MAPPED_PASS_BYTES // max(1, memory.BAND_ROWS * piece.strides[0]))
                for k, a in enumerate(range(0, piece.shape[0], memory.BAND_ROWS)):
                    keys.add(candidate_stage.band_keys(piece[a:a + memory.BAND_ROWS], band.bands, band.rows))
                    if k % every == every - 1:
                        memory.release_pages(piece)
                memory.release_pages(piece)
            return keys.candidates()

    def _candidates(self, got: Sketched, n: int, stats: dict, shingle_ids, offsets, work: str):
        """Candidate pairs (local indices) with their estimates, after the estimate filter."""
        cfg = self.config
        if cfg.method in ("broder", "greedy") and n:
            got.sig_pieces.finish()
            return self._sampled_candidates(shingle_ids, offsets, stats, work)
        if cfg.method == "minhash" and n:
            signatures = got.sig_pieces.finish(cfg.minhash.num_perm)
            if self.against is not None or self.save_index is not None:
                keys = np.concatenate(got.band_parts)
                ci, cj, cstats = candidate_stage.band_candidates(keys)
                got.signatures, got.band_keys = signatures, keys
                del keys
            else:
                ci, cj, cstats = self._band_candidates(signatures, work)
            grouping = cstats.pop("grouping", None)
            if grouping is not None:  # the keys went past the budget: their partition files
                stats["band_grouping"] = grouping
                stats["grouping_spilled_bytes"] = sum(g["spilled_bytes"] for g in grouping.values())
            stats.update(cstats)
            stats["candidate_pairs"] = int(ci.size)
            floor = (candidate_stage.estimate_floor(cfg.threshold, cfg.minhash.num_perm, cfg.measure)
                     if cfg.verify else None)
            parts = memory.in_pair_slices(signatures, ci, cj, lambda lo, hi: candidate_stage.estimate_filter(
                signatures, ci[lo:hi], cj[lo:hi], floor, jobs=self.jobs))
            if len(parts) == 1:
                ci, cj, est, stats["estimate_filtered"] = parts[0]
            else:
                ci, cj, est = (np.concatenate([p[k] for p in parts]) for k in range(3))
                stats["estimate_filtered"] = sum(p[3] for p in parts)
            return ci, cj, est
        got.sig_pieces.finish()
        if cfg.method == "simhash" and n:
            ci, cj, est = candidate_stage.simhash_candidates(np.concatenate(got.simhashes), cfg.max_distance)
            stats["candidate_pairs"] = int(ci.size)
            return ci, cj, est
        none = np.empty(0, dtype=np.int64)
        return none, none, np.empty(0)


    def _verify(self, ci, cj, est, shingle_ids, offsets, counts) -> Edges:
        """The candidate pairs measured exactly on their shingle ids (the estimate filter's floor
        applied first where the method has estimates): the verified edges."""
        cfg = self.config
        if cfg.method == "exact":
            return Edges.empty()
        threshold = cfg.threshold if cfg.verify and cfg.method in ("minhash", "broder") else None
        parts = memory.in_pair_slices(shingle_ids, ci, cj, lambda lo, hi: verify_pairs(
            shingle_ids, offsets, counts, ci[lo:hi], cj[lo:hi], est[lo:hi], measure=cfg.measure,
            threshold=threshold, jobs=self.jobs), offsets=offsets)
        return parts[0] if len(parts) == 1 else Edges(
            *(np.concatenate([getattr(p, k) for p in parts]) for k in ("i", "j", "jaccard", "estimate", "score")))
