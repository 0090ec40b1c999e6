"""CSV and TSV inputs: a header row, then one record per row, ``id_field`` and ``text_field``
naming columns; ``source`` is ``<file>:<row>``, rows counted from 1 after the header."""

from __future__ import annotations

import io

from ..documents import Skipped
from .compression import open_decompressed
from .rows import finish_record, missing_text, utf8_length
from .sources import failure_reason

__all__ = ["csv_rows", "read_csv", "csv_row_record"]


def csv_rows(path: str, fmt: str, errors: str = "replace"):
    """``(row number from 1, {column: value})`` for each row of a CSV or TSV file after its header."""
    import csv

    csv.field_size_limit(2**31 - 1)  # a long text is one field; max_bytes bounds it per record
    with open_decompressed(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors=errors, newline="") as fh:
        rows = csv.DictReader(fh, delimiter="," if fmt == "csv" else "\t")
        for row, fields in enumerate(rows, 1):
            yield row, fields


def read_csv(reader, path: str, fmt: str, n: int):
    """One record per row after the header row; ``source`` is ``<file>:<row>``, rows counted
    from 1 after the header (a quoted field may span lines)."""
    row = 0
    try:
        for row, fields in csv_rows(path, fmt, reader.errors):
            src = f"{path}:{row}"
            if reader.want is not None and not reader.want(n):
                n += 1
                continue
            yield csv_row_record(reader, fields, n, src)
            n += 1
    except Exception as exc:  # noqa: BLE001 - I/O error, corrupt compressed stream, bad UTF-8, bad quoting
        src = f"{path}:{row + 1}"
        yield Skipped(src, n, src, "unreadable_file", f"cannot read the file after row {row}: {failure_reason(exc)}")
        n += 1
    return n


def csv_row_record(reader, fields: dict, n: int, src: str):
    """The record of one CSV or TSV row (``{column: value}``); no id column: the source is the id."""
    ident = fields.get(reader.id_field)
    if not ident:
        ident = src
    text = fields.get(reader.text_field)
    if text is None:
        return missing_text(reader, fields, ident, n, src)
    if reader.max_bytes is not None and utf8_length(text) > reader.max_bytes:
        return Skipped(ident, n, src, "too_large", f"'{reader.text_field}' is over the {reader.max_bytes} byte limit")
    meta = {f: fields[f] for f in reader.keep_fields if fields.get(f) is not None}
    return finish_record(reader, ident, text, n, src, meta, is_html=reader.content == "html")
