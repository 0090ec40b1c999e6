"""The local engine's read-and-sketch stage: every record read, the batches sketched on a thread
pool, the exact pass run in input order, and what the later stages need of each first holder
kept within the memory budget (:mod:`.memory`); and the second read that makes again the shingle
ids a run past its budget dropped."""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ...io.documents import EncodedDocuments, Skipped
from ...stages import candidates as candidate_stage
from ...stages import sketch as sketch_stage
from ...stages.columns import Copies, Growable, Ids, Labels, SourcedNames
from ...stages.encode import batch_texts
from ...stages.exact import FingerprintTable, first_holders
from ...stages.survivors import keep_value
from ...stages.urls import claim_key, record_key
from .disk import keeps_shingle_ids
from .memory import Budget, Pieces

__all__ = ["Sketched", "ReadAndSketch", "record_array_bytes", "record_names"]


@dataclass
class Sketched:
    """What the read-and-sketch pass keeps of a run: per record (by ordinal) its id, the reason
    known so far, its length and keep value; per sketched record (in order) its ordinal, shingle
    count, shingle ids, signature, band keys or simhash; and the exact copies."""

    # by ordinal, as arrays (:mod:`neardup.stages.columns`): no Python object per record
    ids: Ids = field(default_factory=Ids)
    reason: Labels = field(default_factory=Labels)
    lengths: Growable = field(default_factory=lambda: Growable(np.int64))
    keyvals: Growable = field(default_factory=lambda: Growable(np.float64))
    #: exact copy's ordinal -> its first holder's: Copies (arrays), or a dict where keep="source"
    #: moves holders or the index reads it
    exact_of: dict[int, int] | Copies = field(default_factory=dict)
    sketched: Growable = field(default_factory=lambda: Growable(np.int64))
    n_shingles: list[np.ndarray] = field(default_factory=list)
    band_parts: list[np.ndarray] = field(default_factory=list)
    simhashes: list[np.ndarray] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    urls: dict[int, str] = field(default_factory=dict)  # ordinal -> the page's URL (web archives)
    #: URL identity (config.url_field): ordinal -> the record's canonical URL, and its page's
    #: canonical claim in canonical form (neardup.stages.urls), for the records that have one
    url_keys: dict[int, str] = field(default_factory=dict)
    claim_keys: dict[int, str] = field(default_factory=dict)
    #: URL identity saved into an index: ordinal -> the record's whole-page fingerprint (signed,
    #: as the index stores it), for the HTML records read with it
    page_fingerprints: dict[int, int] = field(default_factory=dict)
    id_pieces: Pieces | None = None
    sig_pieces: Pieces | None = None
    #: per record (by ordinal) its source, when the run has sources (several inputs, a source
    #: field, an index); None otherwise
    sources: list | None = None
    #: fingerprint -> ordinal of its first holder in the run (an index's holders are the
    #: Against's); a dict where keep="source" needs one, else a FingerprintTable (arrays)
    first_by_fp: dict | FingerprintTable = field(default_factory=dict)
    #: a run with an index: the content fingerprints of the sketched records, batch by batch
    fingerprint_parts: list[np.ndarray] = field(default_factory=list)
    #: kept for a run against an index (or saving one): the signature pieces and band keys
    signatures: list | None = None
    band_keys: np.ndarray | None = None
    #: keep="source": ordinal -> local index of the sketched records (built when first needed)
    local_of: dict | None = None
    #: the shingle ids went past the memory budget and were dropped: the candidates' are made
    #: again from a second read (ReadAndSketch._ids_again)
    ids_dropped: bool = False


def record_array_bytes(records: int, id_bytes: float) -> int:
    """The bytes of :class:`Sketched`'s arrays after ``records`` records whose ids have
    ``id_bytes`` UTF-8 bytes on average, every record counted as sketched (the most there can be):
    id end offsets (int64), reason codes (uint8), lengths (int64), keep values (float64) and
    sketched ordinals (int64) in doubling arrays, the ids' bytes, shingle counts (int64). The
    part of a run's memory that grows with every record whatever the budget (the held sketches
    and the groupings are bounded by it), for :mod:`neardup.plan`."""
    slots = Growable.slots_for(records)
    return int(slots * (8 + 1 + 8 + 8 + 8) + records * (id_bytes + 8))


def record_names(got: Sketched):
    """The run's records' names for :func:`~neardup.stages.columns.repeated_names`: the ids, or
    with sources the ``(source, id)`` pairs as two columns (a distinct source coded once, no
    tuple per record)."""
    if got.sources is None:
        return got.ids
    distinct = dict.fromkeys(got.sources)
    if len(distinct) >= 255:  # more than a Labels column codes
        return list(zip(got.sources, got.ids))
    labels = Labels()
    code = {s: labels.code(s) for s in distinct}
    labels.codes.extend(np.fromiter(map(code.__getitem__, got.sources), np.uint8, len(got.sources)))
    return SourcedNames(labels, got.ids)


class ReadAndSketch:
    """The read-and-sketch stage of :class:`~neardup.engines.local.run.Deduplicator` (which holds
    the state it reads: ``config``, ``jobs``, ``in_memory_mb``, ``against``, ``save_index``,
    ``progress``, ``seconds`` and the run's sources)."""

    #: text a batch holds: two are in flight (one sketching while the next is read), and their
    #: buffers (texts, shingle ids, signatures, the kernel threads' work) cost about ten times
    #: their bytes of anonymous memory; 2 MB batches held 122 MB at peak where 8 MB held 197
    #: (80,000 records of 600 bytes, --in-memory-mb 16) at the same speed
    BATCH_BYTES = 2 << 20

    def _read_and_sketch(self, docs, work: str) -> Sketched:
        """Read every record, sketch the batches on ``self.jobs`` threads, and run the exact pass.

        The kernel releases the GIL: a batch's chunks run as tasks of one pool while this thread
        reads and parses the next batch, whose chunks are queued before this one's are taken, so
        no thread waits for the last chunk of a batch. Results are taken in submission order, so
        the exact pass sees records in input order.
        """
        cfg = self.config
        got = Sketched()
        # shingle ids (for verification) and signatures (for estimates) in memory up to the budget
        budget = Budget(int(self.in_memory_mb * (1 << 20)))
        # (named as the sketch stage's saved folder has them: -0 what was held, -1 the spill)
        # signatures of the 32-bit family (the default) are kept at their width, uint32: half the
        # memory and spill of uint64
        narrow = cfg.minhash.family == "mulshift32"
        got.sig_pieces = (Pieces(os.path.join(work, "signatures-1.u32"), budget, np.uint32) if narrow
                          else Pieces(os.path.join(work, "signatures-1.u64"), budget))
        got.id_pieces = Pieces(os.path.join(work, "shingles-1.u64"), budget)
        band = cfg.banding() if cfg.method == "minhash" else None
        if cfg.keep != "source":
            got.first_by_fp = FingerprintTable()
            got.exact_of = Copies()
        first_by_fp = got.first_by_fp
        sources = got.sources = [] if self.source_labels is not None or cfg.source_field is not None else None
        url_field, url_rules = cfg.url_field, cfg.rules_of_urls()
        pending: list = []
        self.seconds["exact_pass"] = 0.0

        def collect():
            batch, parts, ords, nbytes = pending.pop(0)
            self._take_batch(got, batch.result(), parts, ords, first_by_fp, band, batch.too_large)
            if self.progress:
                self.progress.update(len(ords), nbytes)

        # a batch is a list of parts in input order: lists of texts (str), and EncodedDocuments
        parts: list = []
        ords: list[int] = []
        nbytes = 0

        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="neardup-sketch") as sketcher:
            def flush():
                nonlocal parts, ords, nbytes
                if parts:
                    if self.against is not None and band is not None:  # (the index may start reading its postings)
                        self.against.expect(len(ords))
                    batch = sketch_stage.submit_batch(sketcher, parts, cfg.shingle, cfg.minhash, jobs=self.jobs)
                    pending.append((batch, parts, ords, nbytes))
                    parts, ords, nbytes = [], [], 0
                while len(pending) > 1:  # at most one batch sketching while the next is read
                    collect()

            for rec in docs:
                if sources is not None:
                    if cfg.source_field is not None:
                        value = rec.meta.get(cfg.source_field) if hasattr(rec, "meta") else None
                        sources.append("" if value is None else str(value))
                    else:
                        label = self.current_source
                        sources.extend([label] * (len(rec) if type(rec) is EncodedDocuments else 1))
                if type(rec) is EncodedDocuments:
                    k = len(rec)
                    ords.extend(range(len(got.ids), len(got.ids) + k))
                    got.ids.extend(rec.ids)
                    got.reason.extend_with("", k)
                    got.lengths.extend(rec.lengths)
                    parts.append(rec)
                    nbytes += int(rec.offsets[-1] - rec.offsets[0])
                elif isinstance(rec, Skipped):
                    got.ids.append(rec.id)
                    got.reason.append(f"skipped:{rec.reason}")
                    got.lengths.append(0)
                    got.keyvals.append(math.nan)
                    got.skipped[rec.reason] += 1
                    continue
                else:
                    ords.append(len(got.ids))
                    if rec.meta and rec.meta.get("url"):
                        got.urls[len(got.ids)] = rec.meta["url"]
                    if url_field is not None:
                        key = record_key(rec.meta.get(url_field) or rec.meta.get("url"), url_rules)
                        if key is not None:
                            got.url_keys[len(got.ids)] = key
                        claim = claim_key(rec.meta, url_rules)
                        if claim is not None:
                            got.claim_keys[len(got.ids)] = claim
                        page = rec.page_fingerprint
                        if page is not None:  # (for an index that keeps them: signed, as it stores them)
                            got.page_fingerprints[len(got.ids)] = page - (1 << 64) if page >> 63 else page
                    got.ids.append(rec.id)
                    text = rec.text
                    got.lengths.append(len(text))
                    if cfg.keep == "field":
                        got.keyvals.append(keep_value(rec.meta.get(cfg.keep_field)))
                    got.reason.append("")
                    if parts and type(parts[-1]) is list:
                        parts[-1].append(text)
                    else:
                        parts.append([text])
                    nbytes += len(text)
                if nbytes >= self.BATCH_BYTES:
                    flush()
            flush()
            while pending:
                collect()
        return got

    def _take_batch(self, got: Sketched, sig, parts, ords, first_by_fp: dict, band, too_large=frozenset()) -> None:
        """Keep what the later stages need of a sketched batch: the exact pass first, then the
        shingle ids, signatures and band keys (or simhashes) of the first holders. ``too_large``:
        positions in the batch of texts the kernel could not take (sketched as empty)."""
        cfg = self.config
        t = time.perf_counter()
        indexed = (self.against.indexed_holders(sig.fingerprints, sig.n_shingles) if self.against is not None
                   else None)
        new, empty, copies = first_holders(ords, sig.fingerprints, sig.n_shingles, first_by_fp, indexed)
        oversized = {ords[k] for k in too_large}
        for o in empty:
            why = "too_large_nfkc" if o in oversized else "empty"
            got.reason[o] = f"skipped:{why}"
            got.skipped[why] += 1
        if isinstance(got.exact_of, Copies):
            got.exact_of.add(copies)
            if copies:
                got.reason[np.array([o for o, _ in copies], dtype=np.int64)] = "exact"
        else:
            for o, first in copies:
                got.exact_of[o] = first
                got.reason[o] = "exact"
        self.seconds["exact_pass"] += time.perf_counter() - t
        if new.any():
            got.sketched.extend(np.asarray(ords, dtype=np.int64)[new])
            if self.against is not None or self.save_index is not None:  # the index stores them
                got.fingerprint_parts.append(sig.fingerprints[new])
        if cfg.keep == "source" and copies:
            self._prefer_sources(got, copies, dict(zip(ords, sig.fingerprints.tolist())))
        if not new.any():
            return
        got.n_shingles.append(sig.n_shingles[new])
        if keeps_shingle_ids(cfg) and not got.ids_dropped:
            for piece in _kept_ids(sig, new):
                if self._reread is not None and piece.nbytes > got.id_pieces.budget.left:
                    # past the budget the ids are not spilled: the candidates' are made again (_ids_again)
                    got.id_pieces.release()
                    got.ids_dropped = True
                    break
                got.id_pieces.append(piece)
        if cfg.method == "minhash":
            values = sig.values if new.all() else sig.values[new]
            got.sig_pieces.append(values)
            if self.against is not None or self.save_index is not None:  # the index needs every key
                got.band_parts.append(candidate_stage.band_keys(values, band.bands, band.rows))
            if self.against is not None:  # looked up in the index while the next batch is sketched
                self.against.look_up(got.band_parts[-1], first_local=len(got.sketched) - int(new.sum()))
        elif cfg.method == "simhash":
            texts = [t for t, keep in zip(batch_texts(parts), new.tolist()) if keep]
            got.simhashes.append(sketch_stage.simhashes(texts, cfg.shingle.normalize))

    def _prefer_sources(self, got: Sketched, copies, fp_of: dict) -> None:
        """``keep="source"``: an exact copy from a preferred source takes its first holder's place
        as the sketched record (the same content has the same sketch), and the holder becomes its
        copy. Copies of the old holder are pointed at the new one before clustering."""
        rank = {s: r for r, s in reversed(list(enumerate(self.config.keep_sources)))}
        if got.local_of is None:
            got.local_of = {}
        for o, first in copies:
            # an earlier copy of this batch may have taken the holder's place already: the copy
            # competes with the holder of now (the holder replaced is a copy of its successor)
            while first >= 0 and first in got.exact_of:
                first = got.exact_of[first]
            if first < 0 or rank.get(got.sources[o], len(rank)) >= rank.get(got.sources[first], len(rank)):
                continue  # an indexed holder, or not a better source
            if not got.local_of or got.sketched[got.local_of.get(first, 0)] != first:
                got.local_of.update((x, k) for k, x in enumerate(got.sketched))
            pos = got.local_of.pop(first)
            got.sketched[pos], got.local_of[o] = o, pos
            del got.exact_of[o]
            got.exact_of[first] = o
            got.reason[o], got.reason[first] = "", "exact"
            got.first_by_fp[fp_of[o]] = o

    #: Text read again per call of the shingle kernel (a batch of the second read).
    AGAIN_BATCH_BYTES = 8 << 20

    def _ids_again(self, sk: np.ndarray, counts: np.ndarray, need: np.ndarray, work: str):
        """``(shingle_ids, offsets, pieces)``: the shingle ids of the sketched records at the local
        indices ``need`` (sorted), made again from a second read of the input (``self._reread``),
        as pieces held within the memory budget and spilled past it; ``offsets`` over every
        sketched record, the others' runs empty. Each document's count of ids is checked against
        the first pass's: the two reads must have seen the same records."""
        cfg = self.config
        if self._reread is None:
            raise RuntimeError("internal error: the shingle ids were dropped but the input cannot be read again")
        pieces = Pieces(os.path.join(work, "shingles-again.u64"), Budget(int(self.in_memory_mb * (1 << 20))))
        want = sk[need]  # ordinals, increasing (sk is in input order)
        texts: list[str] = []
        size = 0
        made = []  # the counts of the documents made again, in order

        def flush():
            nonlocal texts, size
            if texts:
                ids, offs = sketch_stage.shingle_runs(texts, cfg.shingle, jobs=self.jobs)
                pieces.append(ids)
                made.append(np.diff(offs))
                texts, size = [], 0

        def take(text: str, nbytes: int):
            nonlocal size
            texts.append(text)
            size += nbytes
            if size >= self.AGAIN_BATCH_BYTES:
                flush()

        at = ordinal = 0
        records = self._reread()
        for rec in records:
            if at >= want.size:  # the last one needed: the rest is not read
                records.close()
                break
            if type(rec) is EncodedDocuments:
                k = len(rec)
                stop = int(np.searchsorted(want, ordinal + k))
                for i in (want[at:stop] - ordinal).tolist():
                    take(rec.text(i), int(rec.offsets[i + 1] - rec.offsets[i]))
                at, ordinal = stop, ordinal + k
            else:
                if not isinstance(rec, Skipped) and want[at] == ordinal:
                    take(rec.text, len(rec.text))
                    at += 1
                ordinal += 1
        flush()
        again = np.concatenate(made) if made else np.zeros(0, dtype=np.int64)
        if again.size != need.size or not np.array_equal(again, counts[need]):
            raise RuntimeError("internal error: the input read again does not give the records of the first read "
                               "(was it changed during the run?)")
        runs = np.zeros(counts.size, dtype=np.int64)
        runs[need] = counts[need]
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(runs, out=offsets[1:])
        pieces.close_file()
        return pieces.finish(), offsets, pieces


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
