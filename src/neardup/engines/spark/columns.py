"""Arrow binary columns read and built in place as numpy arrays (the packed sketches, band keys and pairs
that the executor passes exchange), and the rounding of the local writers."""

from __future__ import annotations

import numpy as np


def joined_lines(lines, a: int, b: int) -> bytes:
    """Rows ``a:b`` of a binary Arrow column of lines (without their ``\\n``, as Spark splits them)
    as one block of whole lines, each ended by ``\\n``: the bytes of the file the local reader scans."""
    sub = lines.slice(a, b - a)
    offs = binary_offsets(sub)
    data = np.frombuffer(binary_values(sub), dtype=np.uint8)
    return np.insert(data, offs[1:] - offs[0], np.uint8(10)).tobytes()


def _large_types():
    import pyarrow as pa

    return (pa.large_binary(), pa.large_string())


def binary_column(valid: np.ndarray, nbytes: np.ndarray, data: bytes):
    """A binary Arrow column of ``valid.size`` rows: row r (when ``valid[r]``) holds the next
    ``nbytes[r]`` bytes of ``data`` (the runs of the valid rows, in row order); the others are null."""
    import pyarrow as pa

    n = valid.size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.where(valid, nbytes, 0), out=offsets[1:])
    if offsets[-1] != len(data):
        raise RuntimeError("internal error: binary column runs do not add up")
    if offsets[-1] >= 2**31:
        raise RuntimeError("a batch of sketches is over 2 GiB: lower spark.sql.execution.arrow.maxRecordsPerBatch")
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets.astype(np.int32).tobytes()),
                                                 pa.py_buffer(data)], null_count=int(n - valid.sum()))


def binary_offsets(col) -> np.ndarray:
    """The ``len(col) + 1`` value offsets of a binary Arrow column (int64)."""
    offs_buf = col.buffers()[1]
    width = np.int64 if col.type in _large_types() else np.int32
    return np.frombuffer(offs_buf, dtype=width)[col.offset : col.offset + len(col) + 1].astype(np.int64)


def binary_values(col) -> memoryview:
    """The value bytes of a binary Arrow column without nulls, as one buffer (no copy)."""
    offs = binary_offsets(col)
    return memoryview(col.buffers()[2])[int(offs[0]) : int(offs[-1])]


def u64_runs(col) -> np.ndarray:
    return np.frombuffer(binary_values(col), dtype=np.uint64)


def run_offsets(counts: np.ndarray) -> np.ndarray:
    """The ``counts.size + 1`` offsets of runs of ``counts`` values laid end to end."""
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def rounded(values: np.ndarray):
    """An Arrow float column of ``values`` rounded to 6 places as the local writers round them
    (Python's ``round``, not numpy's)."""
    import pyarrow as pa

    return pa.array([round(x, 6) for x in values.tolist()], type=pa.float64())
