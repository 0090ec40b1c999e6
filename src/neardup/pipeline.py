"""Deduplicate a corpus on one machine: the stages of ``neardup dedup``.

    read ──> exact fingerprints ──> signatures + shingle ids ──> band keys ──> candidate pairs
         ──> estimate filter ──> exact verification ──> union-find ──> survivors ──> outputs

- Exact pass: a document whose normalized content was seen before is an exact duplicate of the
  first holder and is not sketched again.
- Sketches: MinHash signatures and the sorted distinct shingle ids of every other document, made
  by the compiled kernel over batches on all cores. Signatures and ids stay in memory up to a
  budget (``in_memory_mb``, 512 MB) and spill beyond it to files in a work folder (memory-mapped),
  so what stays in memory per document past the budget is its id, a few integers and its band
  keys (8 bytes a band).
- Candidates: documents sharing a band key (see :mod:`neardup.cluster.candidates`).
- Verification (on by default): a candidate pair whose MinHash estimate is more than four
  standard errors below the threshold is dropped; every other one is measured exactly on the
  stored shingle ids, and only pairs at or above the threshold become edges.
- Clusters: union-find over verified edges; the survivor of each cluster is chosen by the keep
  policy, deterministically (ties go to the earlier record).

Every input record comes out exactly once in ``clusters.jsonl``: kept, an exact or near
duplicate of a named kept record, or skipped with a reason. ``summary.json`` counts add up.
"""

from __future__ import annotations

import json
import math
import os
import sys
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ._validate import check_choice, check_float, check_int
from .errors import ConfigError
from .lsh.params import Banding, banding as banding_for, recall_banding
from .params import FORMAT_VERSION, IN_MEMORY_MB, MinHashParams, ShingleParams

METHODS = ("minhash", "simhash", "exact")
MEASURES = ("jaccard", "containment")
KEEP_POLICIES = ("first", "longest", "shortest")
#: Default banding: the most rows whose candidate probability at the threshold is at least this
#: (18 bands x 7 rows at 0.8 with 128 permutations: 0.985 at 0.8, 0.998 at 0.85, 0.13 at 0.5).
RECALL_AT_THRESHOLD = 0.98


@dataclass(frozen=True, kw_only=True)
class DedupConfig:
    """Everything that decides the result of a run (recorded, with its fingerprint, in summary.json)."""

    shingle: ShingleParams = field(default_factory=lambda: ShingleParams(k=5))
    minhash: MinHashParams = field(default_factory=lambda: MinHashParams(num_perm=128, seed=1, family="mulshift32"))
    method: str = "minhash"
    threshold: float = 0.8
    measure: str = "jaccard"
    bands: int | None = None
    rows: int | None = None
    max_distance: int = 3
    keep: str = "first"
    keep_field: str | None = None
    verify: bool = True

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS, owner="DedupConfig")
        check_choice("measure", self.measure, MEASURES, owner="DedupConfig")
        check_choice("keep", self.keep, KEEP_POLICIES + ("field",), owner="DedupConfig")
        check_float("threshold", self.threshold, 0.0, 1.0, owner="DedupConfig", closed="right")
        check_int("max_distance", self.max_distance, 0, 7, owner="DedupConfig")
        if self.keep == "field" and not self.keep_field:
            raise ConfigError("keep='field' needs keep_field, the numeric field whose largest value survives")
        if self.bands is not None:
            check_int("bands", self.bands, 1, self.minhash.num_perm, owner="DedupConfig")
        if self.rows is not None:
            check_int("rows", self.rows, 1, self.minhash.num_perm, owner="DedupConfig")
            if (self.bands or 1) * self.rows > self.minhash.num_perm:
                raise ConfigError(f"{self.bands} bands x {self.rows} rows need more than num_perm "
                                  f"{self.minhash.num_perm} values; lower one of them or raise --num-perm")

    def banding(self) -> Banding:
        m = self.minhash.num_perm
        if self.bands is not None and self.rows is not None:
            return Banding(bands=self.bands, rows=self.rows, num_perm=m)
        if self.bands is not None:
            return banding_for(m, self.bands)
        if self.rows is not None:
            return Banding(bands=m // self.rows, rows=self.rows, num_perm=m)
        # Containment pairs of unequal sizes have a lower resemblance than their containment:
        # band for a lower resemblance so that more of them are candidates (they are verified).
        target = self.threshold if self.measure == "jaccard" else max(self.threshold / 2, 0.05)
        return recall_banding(min(target, 0.99), m, min_recall=RECALL_AT_THRESHOLD)

    def as_dict(self) -> dict:
        band = self.banding() if self.method == "minhash" else None
        return {
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "measure": self.measure,
            "threshold": self.threshold,
            "shingle": self.shingle.as_dict(),
            "minhash": self.minhash.as_dict(),
            "bands": band.bands if band else None,
            "rows": band.rows if band else None,
            "max_distance": self.max_distance,
            "keep": self.keep,
            "keep_field": self.keep_field,
            "verify": self.verify,
        }

    def fingerprint(self) -> str:
        import xxhash

        return f"{xxhash.xxh3_64_intdigest(json.dumps(self.as_dict(), sort_keys=True).encode()):016x}"


@dataclass
class Outcome:
    """What became of every input record, in input order (arrays indexed by ordinal)."""

    ids: list[str]
    reason: list[str]
    cluster: list[str | None]
    duplicate_of: list[str | None]
    similarity: list[float | None]
    kept: np.ndarray


class _Budget:
    """Bytes that the held pieces of a run may still keep in memory."""

    def __init__(self, nbytes: int):
        self.left = nbytes


class _Pieces:
    """An append-only sequence of uint64 arrays, read as their concatenation.

    Arrays are kept as they come while the run's memory budget lasts (no copy, and no file to
    write, read back and delete: on the benchmark corpus the ids alone are 124 MB). Beyond the
    budget they are appended to a file that is memory-mapped once writing is done, so memory
    stays bounded on corpora of any size. The kernel's ``intersections`` and ``agreements``
    read the pieces in place.
    """

    def __init__(self, path: str, budget: _Budget):
        self.path = path
        self.budget = budget
        self.held: list[np.ndarray] = []
        self.fh = None
        self.count = 0

    def append(self, arr: np.ndarray) -> None:
        arr = np.ascontiguousarray(arr, dtype=np.uint64)
        if self.fh is None and arr.nbytes <= self.budget.left:
            self.budget.left -= arr.nbytes
            self.held.append(arr)
        else:
            if self.fh is None:
                self.fh = open(self.path, "wb")
            self.fh.write(memoryview(arr).cast("B"))
            self.count += arr.size

    def finish(self, width: int = 0) -> list[np.ndarray]:
        """The pieces in order; with ``width``, as matrices of ``width`` columns."""
        pieces = list(self.held)
        if self.fh is not None:
            self.fh.close()
            if self.count:
                pieces.append(np.memmap(self.path, dtype=np.uint64, mode="r"))
        if width:
            pieces = [p.reshape(-1, width) for p in pieces]
        return pieces

    @property
    def spilled_bytes(self) -> int:
        return self.count * 8


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MB (0.0 where the platform does not say)."""
    try:
        import resource  # POSIX only
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


class Deduplicator:
    """Runs the stages over documents from :func:`neardup.io.read_documents`.

    >>> # Deduplicator(DedupConfig(threshold=0.8)).run(["corpus.jsonl"], "out/")
    """

    BATCH_BYTES = 8 << 20

    def __init__(self, config: DedupConfig = DedupConfig(), *, jobs: int | None = None, progress=None,
                 work_dir: str | None = None, in_memory_mb: float = IN_MEMORY_MB):
        self.config = config
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.progress = progress
        self.work_dir = work_dir
        self.in_memory_mb = in_memory_mb
        self.seconds: dict[str, float] = {}

    # ------------------------------------------------------------------------------------------
    def run(self, paths: list[str], output: str, *, format: str = "auto", id_field: str = "id",
            text_field: str = "text", content: str = "text", html: str = "main",
            max_bytes: int | None = 64 << 20, write_kept: bool = True) -> dict:
        """Deduplicate ``paths`` into the folder ``output``; returns the summary."""
        from . import _native
        from .io import read_documents
        from .io.readers import read_encoded

        os.makedirs(output, exist_ok=True)
        start = time.perf_counter()
        keep_fields = (self.config.keep_field,) if self.config.keep == "field" else ()
        read_options = dict(format=format, id_field=id_field, text_field=text_field, content=content, html=html,
                            max_bytes=max_bytes, jobs=self.jobs)
        if _native.supports(self.config.shingle):
            # JSONL records come as UTF-8 straight from a compiled scanner: their text never
            # becomes a Python str. Texts holding a code point that NFKC may change, and that
            # the kernel does not map itself, are flagged.
            table = _native.flag_table(self.config.shingle.normalize)
            docs = read_encoded(paths, table=table, keep_fields=keep_fields, **read_options)
        else:
            docs = read_documents(paths, keep_fields=keep_fields, **read_options)
        work = tempfile.mkdtemp(prefix="neardup-", dir=self.work_dir)
        from concurrent.futures import ThreadPoolExecutor

        from .io import write_kept as write_kept_records

        # The kept corpus (mostly I/O, off the GIL) is written on its own thread as soon as the
        # survivors are known, beside the rest of the clustering and the writing of clusters
        # and pairs (mostly Python).
        kept_writing = []

        def write_kept_from(kept: np.ndarray) -> None:
            if write_kept:
                kept_writing.append(writer.submit(write_kept_records, paths, kept, output, **read_options))

        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-kept") as writer:
                outcome, stats = self._dedup(docs, work, kept_known=write_kept_from)
                t = time.perf_counter()
                self._write_clusters(outcome, output)
                self._write_pairs(output, stats, outcome.ids)
                kept_info = kept_writing[0].result() if kept_writing else None
                self.seconds["write"] = time.perf_counter() - t
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.seconds["total"] = time.perf_counter() - start
        summary = self._summary(outcome, stats, kept_info)
        with open(os.path.join(output, "summary.json"), "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        return summary

    # ------------------------------------------------------------------------------------------
    def _dedup(self, docs, work: str, kept_known=None):
        """The outcome of every record, and the statistics; ``kept_known(kept)`` is called with
        the final boolean mask of kept records (by ordinal) as soon as it is known."""
        from .io import Skipped
        from .io.documents import EncodedDocuments

        cfg = self.config
        t0 = time.perf_counter()
        ids: list[str] = []
        reason: list[str] = []
        lengths: list[int] = []
        keyvals: list[float] = []
        first_by_fp: dict[int, int] = {}
        exact_of: dict[int, int] = {}     # ordinal -> ordinal of the first record with its content
        sketched: list[int] = []          # ordinals of documents that were sketched, in order
        # shingle ids (for verification) and signatures (for estimates) in memory up to the budget
        budget = _Budget(int(self.in_memory_mb * (1 << 20)))
        sig_pieces = _Pieces(os.path.join(work, "signatures.u64"), budget)
        id_pieces = _Pieces(os.path.join(work, "shingles.u64"), budget)
        n_shingles: list[np.ndarray] = []
        band_parts: list[np.ndarray] = []
        simhashes: list[np.ndarray] = []
        band = cfg.banding() if cfg.method == "minhash" else None
        skipped = Counter()
        # a batch is a list of parts in input order: lists of texts (str), and EncodedDocuments
        batch_parts: list = []
        batch_ords: list[int] = []
        batch_bytes = 0
        t_sketch = 0.0

        # Sketching runs on self.jobs threads (the kernel releases the GIL), a batch's chunks
        # as tasks of one pool, while this thread reads and parses the next batch: the next
        # batch's chunks are queued before this one's are taken, so no thread waits for the
        # last chunk of a batch. Results are taken in submission order, so the exact pass sees
        # records in input order.
        from concurrent.futures import ThreadPoolExecutor

        from . import _native

        native = _native.supports(cfg.shingle)
        sketcher = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="neardup-sketch")
        pending: list = []

        def collect():
            nonlocal t_sketch
            batch, parts, ords, nbytes, too_large = pending.pop(0)
            ts = time.perf_counter()
            sig = batch.result()
            fps = sig.fingerprints
            new = np.zeros(len(ords), dtype=bool)
            for k, (o, fp, ns) in enumerate(zip(ords, fps.tolist(), sig.n_shingles.tolist())):
                if k in too_large:
                    reason[o] = "skipped:too_large_nfkc"
                    skipped["too_large_nfkc"] += 1
                    continue
                if ns == 0:
                    reason[o] = "skipped:empty"
                    skipped["empty"] += 1
                    continue
                first = first_by_fp.get(fp)
                if first is not None:
                    exact_of[o] = first
                    reason[o] = "exact"
                    continue
                first_by_fp[fp] = o
                new[k] = True
            if new.any():
                sketched.extend(o for o, keep in zip(ords, new.tolist()) if keep)
                counts = sig.n_shingles[new]
                n_shingles.append(counts)
                if cfg.method != "exact":
                    for piece in _kept_ids(sig, new):
                        id_pieces.append(piece)
                if cfg.method == "minhash":
                    from .lsh.banding import band_keys

                    values = sig.values if new.all() else sig.values[new]
                    sig_pieces.append(values)
                    band_parts.append(band_keys(values, band.bands, band.rows))
                elif cfg.method == "simhash":
                    simhashes.append(self._simhashes([t for t, keep in zip(_texts(parts), new.tolist()) if keep]))
            t_sketch += time.perf_counter() - ts
            if self.progress:
                self.progress.update(len(ords), nbytes)

        def flush():
            nonlocal batch_parts, batch_ords, batch_bytes
            if batch_parts:
                too_large = frozenset()
                if native:
                    # NFKC'd here, so that the sketching threads only run the kernel
                    segments, too_large = _without_too_large(_encode_parts(batch_parts, cfg.shingle.normalize))
                    batch = _native.submit_signatures_encoded(
                        sketcher, segments, cfg.shingle, cfg.minhash,
                        jobs=self.jobs, with_ids=True, with_fingerprints=True)
                else:
                    batch = sketcher.submit(self._sketch_python, _texts(batch_parts))
                pending.append((batch, batch_parts, batch_ords, batch_bytes, too_large))
                batch_parts, batch_ords, batch_bytes = [], [], 0
            while len(pending) > 1:  # at most one batch sketching while the next is read
                collect()

        for rec in docs:
            if type(rec) is EncodedDocuments:
                k = len(rec)
                batch_ords.extend(range(len(ids), len(ids) + k))
                ids.extend(rec.ids)
                reason.extend([""] * k)
                lengths.extend(rec.lengths.tolist())
                batch_parts.append(rec)
                batch_bytes += int(rec.offsets[-1] - rec.offsets[0])
                if batch_bytes >= self.BATCH_BYTES:
                    flush()
                continue
            ordinal = len(ids)
            ids.append(rec.id)
            if isinstance(rec, Skipped):
                reason.append(f"skipped:{rec.reason}")
                lengths.append(0)
                keyvals.append(math.nan)
                skipped[rec.reason] += 1
                continue
            text = rec.text
            lengths.append(len(text))
            if cfg.keep == "field":
                keyvals.append(_numeric(rec.meta.get(cfg.keep_field)))
            reason.append("")
            if batch_parts and type(batch_parts[-1]) is list:
                batch_parts[-1].append(text)
            else:
                batch_parts.append([text])
            batch_ords.append(ordinal)
            batch_bytes += len(text)
            if batch_bytes >= self.BATCH_BYTES:
                flush()
        flush()
        while pending:
            collect()
        sketcher.shutdown()
        del first_by_fp
        self.seconds["read_and_sketch"] = time.perf_counter() - t0
        self.seconds["sketch_wait_and_collect"] = t_sketch

        n_all = len(ids)
        sk = np.array(sketched, dtype=np.int64)
        n = sk.size
        counts = np.concatenate(n_shingles) if n_shingles else np.zeros(0, dtype=np.int64)
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        shingle_ids = id_pieces.finish()
        stats: dict = {"candidate_pairs": 0, "estimate_filtered": 0, "verified_pairs": 0}

        # candidates and verification, on local indices 0..n-1 of the sketched documents
        t = time.perf_counter()
        if cfg.method == "minhash" and n:
            signatures = sig_pieces.finish(cfg.minhash.num_perm)
            keys = np.concatenate(band_parts)
            from .cluster.candidates import candidate_pairs, estimate_similarity

            ci, cj, cstats = candidate_pairs(keys)
            del keys
            stats.update(cstats)
            stats["candidate_pairs"] = int(ci.size)
            est = estimate_similarity(signatures, ci, cj, jobs=self.jobs)
            if cfg.verify:
                m = cfg.minhash.num_perm
                t_ = cfg.threshold if cfg.measure == "jaccard" else max(cfg.threshold / 2, 0.05)
                floor = t_ - 4 * math.sqrt(t_ * (1 - t_) / m) - 1.0 / m
                keep = est >= floor
                stats["estimate_filtered"] = int(np.count_nonzero(~keep))
                ci, cj, est = ci[keep], cj[keep], est[keep]
        elif cfg.method == "simhash" and n:
            sig_pieces.finish()
            from .lsh.hamming import SimhashIndex

            fps = np.concatenate(simhashes)
            index = SimhashIndex(max_distance=cfg.max_distance, expected_size=n)
            index.add(np.arange(n, dtype=np.int64), fps)
            pairs = list(index.pairs())
            ci = np.array([min(a, b) for a, b, _ in pairs], dtype=np.int64)
            cj = np.array([max(a, b) for a, b, _ in pairs], dtype=np.int64)
            dist = np.array([d for _, _, d in pairs], dtype=np.float64)
            order = np.lexsort((cj, ci))
            ci, cj, dist = ci[order], cj[order], dist[order]
            est = 1.0 - dist / 64.0
            stats["candidate_pairs"] = int(ci.size)
        else:
            sig_pieces.finish()
            ci = cj = np.empty(0, dtype=np.int64)
            est = np.empty(0)
        self.seconds["candidates"] = time.perf_counter() - t

        t = time.perf_counter()
        from .cluster.candidates import exact_overlaps, similarities

        if ci.size and cfg.method != "exact":
            inter = exact_overlaps(shingle_ids, offsets, ci, cj, jobs=self.jobs)
            sims = similarities(counts, inter, ci, cj)
            if cfg.measure == "jaccard":
                score = sims["jaccard"]
            else:
                score = np.maximum(sims["containment_a_in_b"], sims["containment_b_in_a"])
            if cfg.verify and cfg.method == "minhash":
                ok = score >= cfg.threshold
            else:
                ok = np.ones(ci.size, dtype=bool)
            ei, ej = ci[ok], cj[ok]
            edge_jac, edge_est, edge_score = sims["jaccard"][ok], est[ok], score[ok]
        else:
            ei = ej = np.empty(0, dtype=np.int64)
            edge_jac = edge_est = edge_score = np.empty(0)
        stats["verified_pairs"] = int(ei.size)
        self.seconds["verify"] = time.perf_counter() - t

        # clusters over sketched documents, then survivors
        t = time.perf_counter()
        from .cluster.unionfind import UnionFind

        uf = UnionFind(n)
        for a, b in zip(ei.tolist(), ej.tolist()):
            uf.union(a, b)
        comp = uf.components() if n else np.zeros(0, dtype=np.int64)
        # survivor per component by the keep policy, ties to the earlier record
        length_arr = np.array(lengths, dtype=np.int64)
        if cfg.keep == "first":
            primary = np.zeros(n)
        elif cfg.keep == "longest":
            primary = -length_arr[sk].astype(np.float64)
        elif cfg.keep == "shortest":
            primary = length_arr[sk].astype(np.float64)
        else:
            vals = np.array(keyvals, dtype=np.float64)[sk]
            primary = np.where(np.isnan(vals), np.inf, -vals)
        order = np.lexsort((sk, primary, comp))  # by component, then policy, then input order
        survivor_local = np.empty(n, dtype=np.int64)
        if n:
            comp_sorted = comp[order]
            firsts = np.concatenate(([True], comp_sorted[1:] != comp_sorted[:-1]))
            head = order[firsts]
            survivor_of_comp = np.empty(n, dtype=np.int64)  # components are named by their smallest member
            survivor_of_comp[comp_sorted[firsts]] = head
            survivor_local = survivor_of_comp[comp]
        survivor_of = sk[survivor_local]  # ordinal of each sketched record's survivor
        survivors = sk[survivor_of == sk].tolist()
        kept = np.zeros(n_all, dtype=bool)
        kept[survivors] = True
        if kept_known is not None:
            kept_known(kept)

        # similarity of each member to its survivor: exact, on the stored shingle ids
        members = np.flatnonzero(survivor_local != np.arange(n))
        sim_to_survivor = {}
        if members.size:
            a, b = np.minimum(members, survivor_local[members]), np.maximum(members, survivor_local[members])
            inter = exact_overlaps(shingle_ids, offsets, a, b, jobs=self.jobs)
            sims = similarities(counts, inter, a, b)
            if cfg.measure == "jaccard":
                sval = sims["jaccard"]
            else:
                sval = np.maximum(sims["containment_a_in_b"], sims["containment_b_in_a"])
            sim_to_survivor = dict(zip(members.tolist(), sval.tolist()))
        self.seconds["cluster"] = time.perf_counter() - t

        # outcome per record
        cluster: list = [None] * n_all
        duplicate_of: list = [None] * n_all
        similarity: list = [None] * n_all
        for o, s in zip(sk.tolist(), survivor_of.tolist()):
            cluster[o] = ids[s]
        for o in survivors:
            similarity[o] = 1.0
        chained = []
        minhash, threshold = cfg.method == "minhash", cfg.threshold
        for i, o, s in zip(members.tolist(), sk[members].tolist(), survivor_of[members].tolist()):
            duplicate_of[o] = ids[s]
            sim = sim_to_survivor[i]
            similarity[o] = round(float(sim), 6)
            reason[o] = "near"
            if minhash and sim < threshold:
                chained.append(ids[o])
        local_of = np.full(n_all, -1, dtype=np.int64)
        local_of[sk] = np.arange(n)
        exact_survivors = []
        for o, first in exact_of.items():
            i = int(local_of[first])
            s = int(survivor_of[i])
            exact_survivors.append(s)
            cluster[o] = ids[s]
            duplicate_of[o] = ids[s]
            if s == first:
                similarity[o] = 1.0
            else:
                reason[o] = "near"
                similarity[o] = round(float(sim_to_survivor[i]), 6)
        # cluster sizes by cluster id (records of equal ids share a count, as their lines share
        # the id); a survivor is "kept" when its cluster has other members, "unique" otherwise
        size_of = np.bincount(np.concatenate((survivor_of, np.array(exact_survivors, dtype=np.int64))),
                              minlength=n_all)
        holders = np.flatnonzero(size_of)
        cluster_sizes = Counter()
        for s, size in zip(holders.tolist(), size_of[holders].tolist()):
            cluster_sizes[ids[s]] += size
        for o in survivors:
            reason[o] = "kept" if cluster_sizes[ids[o]] > 1 else "unique"
        stats["chained"] = len(chained)
        stats["chained_examples"] = chained[:20]
        stats["skipped"] = dict(sorted(skipped.items()))
        stats["cluster_sizes"] = cluster_sizes
        stats["pairs"] = (ei, ej, edge_jac, edge_est, edge_score, sk)
        stats["n_shingles_total"] = int(counts.sum())
        stats["spilled_bytes"] = id_pieces.spilled_bytes + sig_pieces.spilled_bytes
        stats["duplicate_ids"] = len(ids) - len(set(ids))
        outcome = Outcome(ids=ids, reason=reason, cluster=cluster, duplicate_of=duplicate_of,
                          similarity=similarity, kept=kept)
        return outcome, stats

    # ------------------------------------------------------------------------------------------
    def _sketch(self, texts: list[str]):
        """(signatures with shingle ids, content fingerprints) of a list of texts (the Spark
        engine's executors sketch with this)."""
        from . import _native

        cfg = self.config
        if _native.supports(cfg.shingle):
            sig = _native.signatures(texts, cfg.shingle, cfg.minhash, jobs=self.jobs, with_ids=True,
                                     with_fingerprints=True)
        else:
            sig = self._sketch_python(list(texts))
        return sig, sig.fingerprints

    def _sketch_python(self, texts: list[str]):
        """Signatures with shingle ids and content fingerprints, in pure Python, for shingle
        options the kernel does not handle."""
        import dataclasses

        from .exact.fingerprint import fingerprint

        cfg = self.config
        sig = _python_signatures(texts, cfg.shingle, cfg.minhash)
        fps = np.array([fingerprint(t, cfg.shingle.normalize) or 0 for t in texts], dtype=np.uint64)
        return dataclasses.replace(sig, fingerprints=fps)

    def _simhashes(self, texts: list[str]) -> np.ndarray:
        from .sketch.simhash import SimHash

        return np.array([SimHash.from_text(t, normalize=self.config.shingle.normalize).value for t in texts],
                        dtype=np.uint64)

    # ------------------------------------------------------------------------------------------
    def _write_clusters(self, outcome: Outcome, output: str) -> None:
        import orjson

        with open(os.path.join(output, "clusters.jsonl"), "wb") as fh:
            buf = []
            for o, doc_id in enumerate(outcome.ids):
                buf.append(orjson.dumps({
                    "id": doc_id,
                    "cluster": outcome.cluster[o],
                    "kept": bool(outcome.kept[o]),
                    "duplicate_of": outcome.duplicate_of[o],
                    "similarity": outcome.similarity[o],
                    "reason": outcome.reason[o],
                }))
                if len(buf) >= 4096:
                    fh.write(b"\n".join(buf) + b"\n")
                    buf = []
            if buf:
                fh.write(b"\n".join(buf) + b"\n")

    def _write_pairs(self, output: str, stats: dict, ids: list[str]) -> None:
        import orjson

        ei, ej, jac, est, _score, sk = stats["pairs"]
        with open(os.path.join(output, "pairs.jsonl"), "wb") as fh:
            for a, b, j, e in zip(sk[ei].tolist(), sk[ej].tolist(), jac.tolist(), est.tolist()):
                fh.write(orjson.dumps({"a": ids[a], "b": ids[b], "jaccard": round(j, 6), "estimate": round(e, 6)}))
                fh.write(b"\n")

    def _summary(self, outcome: Outcome, stats: dict, kept_info) -> dict:
        reasons = Counter(r if not r.startswith("skipped:") else "skipped" for r in outcome.reason)
        sizes = stats["cluster_sizes"]
        multi = {c: s for c, s in sizes.items() if s > 1}
        dist = Counter(multi.values())
        largest = sorted(multi.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        summary = {
            "input": len(outcome.ids),
            "kept": int(outcome.kept.sum()),
            "unique": reasons.get("unique", 0),
            "exact_duplicates": reasons.get("exact", 0),
            "near_duplicates": reasons.get("near", 0),
            "skipped": sum(stats["skipped"].values()),
            "skipped_by_reason": stats["skipped"],
            "clusters": {
                "count": len(multi),
                "documents_in_clusters": sum(multi.values()),
                "size_distribution": {str(k): v for k, v in sorted(dist.items())},
                "largest": [{"survivor": c, "size": s} for c, s in largest],
            },
            "candidate_pairs": stats["candidate_pairs"],
            "estimate_filtered_pairs": stats["estimate_filtered"],
            "verified_pairs": stats["verified_pairs"],
            "chained_members": stats["chained"],
            "chained_examples": stats["chained_examples"],
            "largest_bucket": stats.get("largest_bucket", 0),
            "buckets_over_window": stats.get("buckets_over_window", 0),
            "duplicate_ids": stats["duplicate_ids"],
            "shingles_total": stats["n_shingles_total"],
            "spilled_mb": round(stats["spilled_bytes"] / (1 << 20), 1),
            "kept_output": kept_info,
            "config": self.config.as_dict(),
            "config_fingerprint": self.config.fingerprint(),
            "jobs": self.jobs,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "peak_memory_mb": round(peak_memory_mb(), 1),
        }
        assert summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"] \
            == summary["input"], "internal error: counts do not add up"
        return summary


def _numeric(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _kept_ids(sig, new: np.ndarray):
    """The shingle ids of the batch's documents where ``new`` is true, in order, as views of the
    kernel's arrays: one per run of consecutive such documents within an array. A copy through
    a mask would cost as much again in fresh memory as the ids themselves."""
    bounds = np.zeros(len(sig.id_parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in sig.id_parts], out=bounds[1:])
    edges = np.flatnonzero(np.diff(np.concatenate(([0], new.view(np.int8), [0]))))
    for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):  # documents a..b-1
        lo, hi = int(sig.offsets[a]), int(sig.offsets[b])
        k = int(np.searchsorted(bounds, lo, side="right")) - 1
        while lo < hi:  # the run may span the arrays of several kernel chunks
            stop = min(hi, int(bounds[k + 1]))
            if stop > lo:
                yield sig.id_parts[k][lo - bounds[k] : stop - bounds[k]]
            lo, k = stop, k + 1


def _texts(parts: list) -> list[str]:
    """The texts of a batch's parts, as str."""
    out: list[str] = []
    for part in parts:
        out.extend(part if type(part) is list else (part.text(i) for i in range(len(part))))
    return out


def _encode_parts(parts: list, norm) -> list[tuple]:
    """A batch's texts as the kernel reads them: ``(data, offsets)`` segments for
    :func:`neardup._native.signatures_encoded`. EncodedDocuments are UTF-8 already and are read
    in place; only the lines of flagged texts (a code point that NFKC may change) that hold such
    code points are decoded and normalized, and a text NFKC changes becomes a segment of its own."""
    from . import _native
    from .text.nfkc import nfkc_utf8

    segments: list[tuple] = []
    for part in parts:
        if type(part) is list:
            segments.append(_native.encode_texts(part, norm))
            continue
        data, offsets = part.data, part.offsets
        view = memoryview(data)
        first = 0  # the texts from first on are not in segments yet
        for i in (np.flatnonzero(part.flagged).tolist() if norm.nfkc else ()):
            start, stop = int(offsets[i]), int(offsets[i + 1])
            lo, hi = (start + int(x) for x in part.flag_spans[i])
            # NFKC never acts across a newline: the lines holding the flagged code points suffice
            lo = max(start, data.rfind(b"\n", start, lo) + 1)
            hi = data.find(b"\n", hi, stop)
            hi = stop if hi < 0 else hi
            fixed = nfkc_utf8(view[lo:hi].tobytes())
            if fixed is None:
                continue  # NFKC already
            if i > first:
                segments.append((data, offsets[first : i + 1]))
            text = b"".join((view[start:lo], fixed, view[hi:stop]))
            segments.append((text, np.array([0, len(text)], dtype=np.int64)))
            first = i + 1
        if first < offsets.size - 1:
            segments.append((data, offsets[first:]))
    return segments


def _without_too_large(segments: list[tuple]) -> tuple[list[tuple], frozenset]:
    """``segments`` with each text over the kernel's limit (NFKC can make a record under
    ``max_bytes`` grow past it) replaced by an empty one, and the positions of those texts in
    the batch: the kernel refuses a whole call for one such text, and the record is skipped
    with its reason instead."""
    from . import _native

    limit = _native.max_doc_bytes()
    out: list[tuple] = []
    dropped: list[int] = []
    base = 0
    for data, offsets in segments:
        offsets = np.asarray(offsets, dtype=np.int64)
        first = 0
        for i in np.flatnonzero(np.diff(offsets) > limit).tolist():
            if i > first:
                out.append((data, offsets[first : i + 1]))
            out.append((b"", np.zeros(2, dtype=np.int64)))
            dropped.append(base + i)
            first = i + 1
        if first == 0:
            out.append((data, offsets))
        elif first < offsets.size - 1:
            out.append((data, offsets[first:]))
        base += offsets.size - 1
    return out, frozenset(dropped)


def _python_signatures(texts, shingle_params, minhash_params):
    """The pure-Python equivalent of the kernel's batch (used for options the kernel lacks)."""
    from ._native import Signatures
    from .shingle import shingle_ids
    from .sketch.minhash import MinHash

    values = np.empty((len(texts), minhash_params.num_perm), dtype=np.uint64)
    pieces, counts = [], []
    for i, text in enumerate(texts):
        ids = shingle_ids(text, shingle_params)
        mh = MinHash(minhash_params, hash=shingle_params.hash)
        mh.update_ids(ids)
        values[i] = mh.hashvalues
        pieces.append(ids)
        counts.append(ids.size)
    counts = np.array(counts, dtype=np.int64)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)
    return Signatures(values=values, n_shingles=counts, offsets=offsets, id_parts=(ids,))
