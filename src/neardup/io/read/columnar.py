"""Tables: Parquet files (read a batch of rows at a time over the columns in use) and Arrow IPC
files and streams, row r of a file being record ``start + r`` with source ``<file>:<r>``; and the
rows of any Arrow RecordBatch by the same rules (:func:`records_of_batch`)."""

from __future__ import annotations

from ...errors import require
from ..documents import Skipped
from .rows import MAX_KEYS_SHOWN, column_value_record, id_string
from .sources import failure_reason, local_path, open_binary

__all__ = ["PARQUET_BATCH_ROWS", "open_parquet", "open_arrow", "read_parquet", "read_arrow", "records_of_batch"]

PARQUET_BATCH_ROWS = 1024


def open_parquet(path: str):
    """``(ParquetFile, number of rows)``, or ``(None, why)``."""
    pq = require("pyarrow.parquet", "io")
    try:
        local = local_path(path)  # a local file is memory-mapped by pyarrow; a URL read through fsspec
        pf = pq.ParquetFile(local if local is not None else open_binary(path))
        return pf, pf.metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - not a parquet file, truncated footer, I/O error
        return None, f"cannot open the Parquet file: {failure_reason(exc)}"


def open_arrow(path: str):
    """``(iterator of the RecordBatches of an Arrow IPC file or stream, None)``, or ``(None, why)``."""
    pa = require("pyarrow", "io")
    ipc = require("pyarrow.ipc", "io")
    local = local_path(path)
    try:
        source = pa.memory_map(local) if local is not None else pa.PythonFile(open_binary(path), mode="r")
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot open the file: {failure_reason(exc)}"
    try:
        f = ipc.open_file(source)
        return (f.get_batch(i) for i in range(f.num_record_batches)), None
    except Exception:  # noqa: BLE001 - not the file format: the stream format (.arrows)?
        pass
    try:
        source.seek(0)
        return iter(ipc.open_stream(source)), None
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot open the Arrow IPC file: {failure_reason(exc)}"


def read_parquet(reader, path: str, n: int):
    """The records of a Parquet file, a batch of rows at a time, numbered from ``n``; returns the next
    ordinal. A file that cannot be read from some row on gives each remaining row as ``unreadable_file``."""
    start = n
    pf, nrows = open_parquet(path)
    if pf is None:
        yield Skipped(path, n, path, "unreadable_file", nrows)
        return n + 1
    names = pf.schema_arrow.names
    tf, idf = reader.text_field, reader.id_field
    if tf not in names:
        shown = ", ".join(names[:MAX_KEYS_SHOWN]) + (", ..." if len(names) > MAX_KEYS_SHOWN else "")
        detail = f"file has no '{tf}' column; columns: {shown or '(none)'} — use --text-field"
        for row in range(nrows):
            src = f"{path}:{row}"
            yield Skipped(src, start + row, src, "missing_text", detail)
        return start + nrows
    extra = [f for f in dict.fromkeys(reader.keep_fields) if f in names and f not in (tf, idf)]
    columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
    row = 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns, use_threads=False):
            yield from _batch_records(reader, path, batch, row, start, idf in names, extra)
            row += batch.num_rows
    except Exception as exc:  # noqa: BLE001 - corrupt page or row group
        detail = f"cannot read rows {row} and on: {failure_reason(exc)}"
        for r in range(row, nrows):
            src = f"{path}:{r}"
            yield Skipped(src, start + r, src, "unreadable_file", detail)
        row = max(row, nrows)
    return start + max(row, nrows)


def records_of_batch(reader, batch, source: str, start: int = 0):
    """The records of an Arrow RecordBatch of rows, as the Parquet reader makes them
    from a file's rows: row r is record ``start + r`` with source ``<source>:<r>``, its id from
    the id column (``<source>:<r>`` without one), its text from the text column, the
    ``keep_fields`` columns in its meta. Without a text column every row is ``missing_text``."""
    import pyarrow as pa

    names = batch.schema.names
    tf, idf = reader.text_field, reader.id_field
    if tf not in names:
        shown = ", ".join(names[:MAX_KEYS_SHOWN]) + (", ..." if len(names) > MAX_KEYS_SHOWN else "")
        for row in range(batch.num_rows):
            src = f"{source}:{row}"
            yield Skipped(src, start + row, src, "missing_text",
                          f"no '{tf}' column; columns: {shown or '(none)'} — use text_field")
        return
    extra = [f for f in dict.fromkeys(reader.keep_fields) if f in names and f not in (tf, idf)]
    columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
    picked = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
    yield from _batch_records(reader, source, picked, 0, start, idf in names, extra)


def _batch_records(reader, path, batch, row0, start, has_id, extra):
    """The records of a batch of the columns in use (text first, then the id when ``has_id``, then
    ``extra``): row ``row0 + i`` of ``path``. The text column is measured against ``max_bytes``
    by Arrow, which also spares turning a text over the limit into a str."""
    import pyarrow as pa
    import pyarrow.compute as pc

    want = reader.want
    max_bytes = reader.max_bytes
    tf = reader.text_field
    tcol = batch.column(0)
    too_big = None
    measured = False
    if max_bytes is not None:
        try:
            lengths = pc.binary_length(tcol)
            big = pc.fill_null(pc.greater(lengths, max_bytes), False)
            if pc.any(big).as_py():
                too_big = {i: size for i, (b, size) in enumerate(zip(big.to_pylist(), lengths.to_pylist())) if b}
                tcol = pc.if_else(big, pa.scalar(None, tcol.type), tcol)
            measured = True
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
            pass  # not a string or binary column: column_value_record measures each value
    texts = tcol.to_pylist()
    ids = batch.column(1).to_pylist() if has_id else None
    extras = [(f, batch.column(f).to_pylist()) for f in extra]
    keep_id = has_id and reader.id_field in reader.keep_fields
    for i, text in enumerate(texts):
        row = row0 + i
        n = start + row
        if want is not None and not want(n):
            continue
        src = f"{path}:{row}"
        ident = ids[i] if ids is not None else None
        if too_big is not None and i in too_big:
            if type(ident) is not str or not ident:
                ident = id_string(ident, src)
            yield Skipped(ident, n, src, "too_large", f"'{tf}' of {too_big[i]} bytes is over the {max_bytes} byte limit")
            continue
        meta = {}
        for f, values in extras:
            if values[i] is not None:
                meta[f] = values[i]
        if keep_id and ident is not None:
            meta[reader.id_field] = ident
        yield column_value_record(reader, ident, text, n, src, meta, measured=measured)


def read_arrow(reader, path: str, n: int):
    """The records of an Arrow IPC file or stream, batch by batch, numbered from ``n``; returns the
    next ordinal."""
    start = n
    batches, why = open_arrow(path)
    if batches is None:
        yield Skipped(path, n, path, "unreadable_file", why)
        return n + 1
    row = 0
    tf, idf = reader.text_field, reader.id_field
    try:
        for batch in batches:
            names = batch.schema.names
            if tf not in names:
                shown = ", ".join(names[:MAX_KEYS_SHOWN]) + (", ..." if len(names) > MAX_KEYS_SHOWN else "")
                for r in range(row, row + batch.num_rows):
                    src = f"{path}:{r}"
                    if reader.want is None or reader.want(start + r):
                        yield Skipped(src, start + r, src, "missing_text",
                                      f"file has no '{tf}' column; columns: {shown or '(none)'} — use --text-field")
                row += batch.num_rows
                continue
            extra = [f for f in dict.fromkeys(reader.keep_fields) if f in names and f not in (tf, idf)]
            columns = [tf] + ([idf] if idf in names and idf != tf else []) + extra
            import pyarrow as pa

            picked = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
            yield from _batch_records(reader, path, picked, row, start, idf in names, extra)
            row += batch.num_rows
    except Exception as exc:  # noqa: BLE001 - a truncated or corrupt IPC file
        src = f"{path}:{row}"
        yield Skipped(src, start + row, src, "unreadable_file", f"cannot read rows {row} and on: {failure_reason(exc)}")
        row += 1
    return start + row

