"""The local engine's memory: the budget that the held sketches share, the pieces that spill past
it to memory-mapped files in the work folder, and the passes over those files that let their
pages go a stretch at a time, so that what the process holds resident stays bounded."""

from __future__ import annotations

import mmap

import numpy as np

from ...io.write.outputs import naming

__all__ = ["Budget", "Pieces", "release_pages", "MAPPED_PASS_BYTES", "MAPPING_GRAIN", "PAIR_SLICE", "BAND_ROWS",
           "mapped_resident_bound", "in_pair_slices"]


class Budget:
    """Bytes that the held pieces of a run may still keep in memory."""

    def __init__(self, nbytes: int):
        self.left = nbytes


class Pieces:
    """An append-only sequence of uint64 arrays, read as their concatenation.

    Arrays are kept as they come while the run's memory budget lasts (no copy, and no file to
    write, read back and delete: on the benchmark corpus the ids alone are 124 MB). Beyond the
    budget they are appended to a file that is memory-mapped once writing is done, so memory
    stays bounded on corpora of any size. The kernel's ``intersections`` and ``agreements``
    read the pieces in place.
    """

    def __init__(self, path: str, budget: Budget, dtype=np.uint64):
        self.path = path
        self.budget = budget
        #: uint64, or uint32 for signatures of a 32-bit hash family (half the memory and spill;
        #: every value of a sketched document fits, checked as it comes: see :meth:`append`)
        self.dtype = np.dtype(dtype)
        self.held: list[np.ndarray] = []
        self.fh = None
        self.count = 0
        self.digest = None  # XXH3 of the spill file, for the saved stage's record (io.write.runfolder)

    def append(self, arr: np.ndarray) -> None:
        if self.dtype == np.uint32 and arr.dtype != np.uint32:
            if arr.size and int(arr.max()) > 0xFFFFFFFF:  # never for a document with a shingle
                raise RuntimeError("internal error: a 32-bit family's signature value does not fit 32 bits")
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        if self.fh is None and arr.nbytes <= self.budget.left:
            self.budget.left -= arr.nbytes
            self.held.append(arr)
        else:
            with naming(self.path):
                if self.fh is None:
                    import xxhash

                    self.fh = open(self.path, "wb")
                    self.digest = xxhash.xxh3_64()
                view = memoryview(arr).cast("B")
                self.fh.write(view)
            self.digest.update(view)
            self.count += arr.size

    def finish(self, width: int = 0) -> list[np.ndarray]:
        """The pieces in order; with ``width``, as matrices of ``width`` columns."""
        pieces = list(self.held)
        if self.fh is not None:
            self.fh.close()
            if self.count:
                pieces.append(np.memmap(self.path, dtype=self.dtype, mode="r"))
        if width:
            pieces = [p.reshape(-1, width) for p in pieces]
        return pieces

    @property
    def spilled_bytes(self) -> int:
        return self.count * self.dtype.itemsize

    def release(self) -> None:
        """Drop what is held (nothing spilled yet) and give its bytes back to the budget."""
        assert self.fh is None, "release() of pieces that spilled"
        self.budget.left += sum(p.nbytes for p in self.held)
        self.held = []

    def close_file(self) -> None:
        """Close the spill file (before the stage's folder is saved)."""
        if self.fh is not None:
            with naming(self.path):
                self.fh.close()

    @classmethod
    def restored(cls, pieces: list[np.ndarray], spilled_bytes: int) -> "Pieces":
        """Pieces read back from a saved stage (memory-mapped); ``finish`` gives them as they are."""
        obj = cls("", Budget(0), pieces[0].dtype if pieces else np.uint64)
        obj.held = [p for p in pieces if p.size]
        obj.count = spilled_bytes // obj.dtype.itemsize
        return obj


def release_pages(arrays) -> None:
    """Drop the pages of memory-mapped arrays (the spill, a saved stage read back) from this
    process's resident memory. They are clean pages of files: the kernel keeps them in its page
    cache while it has room and reads them again if they are touched, but a pass over 20 GB of
    signatures would otherwise count 20 GB resident against the process."""
    for arr in arrays if isinstance(arrays, (list, tuple)) else [arrays]:
        mm = getattr(arr, "_mmap", None)
        if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            continue
        try:
            mm.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):  # a closed map, or a platform that refuses: nothing lost
            pass


#: Bytes of memory-mapped spill a pass reads before it lets their pages go: the band keys'
#: sequential pass over the signatures, and each slice of pairs read at random (verification,
#: the estimate filter, the similarity to survivors). Released pages stay in the kernel's page
#: cache, so letting them go costs no reads; it bounds what the process holds resident at once
#: (a 30M-document run, releasing every 2 GB, peaked at 2 GB of file-backed pages).
MAPPED_PASS_BYTES = 256 << 20

#: The most a read of one byte of a memory-mapped file can make resident: the page cache holds
#: a file in folios of up to a PMD (2 MB with 4 kB pages), and a fault maps the whole folio. Seen
#: here (Linux 6.18): one byte read of a freshly written spill file made 2 MB resident, with
#: MADV_NOHUGEPAGE or MADV_RANDOM too; so a slice of pairs is sized by the 2 MB grains its rows
#: lie in, not by their bytes.
MAPPING_GRAIN = 2 << 20

#: Pairs measured at a time at most when the pieces they read are memory-mapped (fewer where
#: their rows lie in more grains than MAPPED_PASS_BYTES holds: see in_pair_slices).
PAIR_SLICE = 1 << 17

#: Signature rows turned into band keys at a time (bounds the keys' temporary arrays).
BAND_ROWS = 1 << 16


def mapped_resident_bound(row_bytes: float) -> int:
    """The most bytes of memory-mapped spill this engine holds resident at once, for rows (a
    document's signature or shingle ids) of ``row_bytes``: a pass's stretch
    (:data:`MAPPED_PASS_BYTES`, or one slice of band rows, or the two rows of one pair, whichever
    is larger) and the grains (:data:`MAPPING_GRAIN`) that its ends and the pair's rows straddle."""
    return int(max(MAPPED_PASS_BYTES, BAND_ROWS * row_bytes, 2 * row_bytes) + 4 * MAPPING_GRAIN)


def _mapped(pieces) -> bool:
    return any(getattr(p, "_mmap", None) is not None for p in (pieces if isinstance(pieces, list) else [pieces]))


class _RowGrains:
    """Which grains (:data:`MAPPING_GRAIN`) of the memory-mapped pieces a row lies in: rows of
    matrices (signatures), or, with ``offsets``, runs of a flat array (shingle ids: row ``r`` is
    ``offsets[r]:offsets[r + 1]`` of the pieces laid end to end). Held pieces have no grains."""

    def __init__(self, pieces, offsets=None):
        pieces = pieces if isinstance(pieces, list) else [pieces]
        self.offsets = offsets
        units = [p.shape[0] for p in pieces]  # rows of a matrix, elements of a flat piece
        self.starts = np.concatenate(([0], np.cumsum(units))).astype(np.int64)
        self.unit_bytes = np.array([p.strides[0] for p in pieces], dtype=np.int64)
        mapped = np.array([getattr(p, "_mmap", None) is not None for p in pieces], dtype=bool)
        grains = np.where(mapped, (np.array(units, dtype=np.int64) * self.unit_bytes) // MAPPING_GRAIN + 1, 0)
        self.first_grain = np.concatenate(([0], np.cumsum(grains)[:-1])).astype(np.int64)
        self.mapped = mapped

    def _grain(self, unit: np.ndarray, last: bool) -> np.ndarray:
        k = np.searchsorted(self.starts, unit, side="right") - 1
        k = np.minimum(k, self.mapped.size - 1)
        byte = (unit - self.starts[k]) * self.unit_bytes[k] + (self.unit_bytes[k] - 1 if last else 0)
        return np.where(self.mapped[k], self.first_grain[k] + byte // MAPPING_GRAIN, -1)

    def of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(first, last)`` grain of each row, -1 for a row in a held piece (or empty)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.offsets is None:
            return self._grain(rows, False), self._grain(rows, True)
        begin = np.asarray(self.offsets[rows], dtype=np.int64)
        end = np.asarray(self.offsets[rows + 1], dtype=np.int64) - 1
        empty = end < begin
        first, last = self._grain(begin, False), self._grain(np.maximum(end, begin), True)
        return np.where(empty, -1, first), np.where(empty, -1, last)


def in_pair_slices(pieces, ci: np.ndarray, cj: np.ndarray, measure, offsets=None):
    """``measure(lo, hi)`` over slices of the pairs ``(ci, cj)`` (rows of ``pieces``, see
    :class:`_RowGrains` for ``offsets``), and the list of its results in order. When ``pieces``
    are memory-mapped, each slice's rows lie in at most :data:`MAPPED_PASS_BYTES` of grains
    (a slice of one pair excepted), and its pages are let go before the next one: what a stage
    holds resident of the spill is bounded by :func:`mapped_resident_bound`, wherever the pairs'
    rows lie (copies next to each other share grains; copies spread over the corpus do not)."""
    if not _mapped(pieces) or not ci.size:
        return [measure(0, ci.size)]
    grains = _RowGrains(pieces, offsets)
    limit = max(1, MAPPED_PASS_BYTES // MAPPING_GRAIN)
    out = []
    for lo in range(0, ci.size, PAIR_SLICE):
        hi = min(ci.size, lo + PAIR_SLICE)
        (i0, i1), (j0, j1) = grains.of(ci[lo:hi]), grains.of(cj[lo:hi])
        # grains between a long row's first and last, counted apart (never shared, at worst)
        between = np.maximum(i1 - i0 - 1, 0) + np.maximum(j1 - j0 - 1, 0)
        for a, b in _slices_within(np.stack([i0, i1, j0, j1]), between, 0, hi - lo, limit):
            out.append(measure(lo + a, lo + b))
            release_pages(pieces)
    return out


def _slices_within(grains: np.ndarray, between: np.ndarray, lo: int, hi: int, limit: int):
    """Consecutive ``(lo, hi)`` slices of the pairs whose rows lie in at most ``limit`` grains
    (``grains``: 4 x pairs, -1 for none), each split in proportion to its count until it fits."""
    g = grains[:, lo:hi].ravel()
    count = np.unique(g[g >= 0]).size + int(between[lo:hi].sum())
    if count <= limit or hi - lo <= 1:
        yield lo, hi
        return
    step = max(1, -(-(hi - lo) // -(-count // limit)))
    for a in range(lo, hi, step):
        yield from _slices_within(grains, between, a, min(hi, a + step), limit)


