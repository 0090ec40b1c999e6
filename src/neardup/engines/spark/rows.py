"""Executor side: the records of a batch of Spark rows, read by the local reader's own rules
(:class:`neardup.io.readers.RecordReader`), with the ordinals the local reader gives them."""

from __future__ import annotations

import math
from typing import Iterator

from ...stages.survivors import keep_value


class Recs:
    """Parsed records of one batch: what the local reader yields, column-wise."""

    __slots__ = ("keys", "ids", "texts", "skips", "keyvals", "extras")

    def __init__(self):
        self.keys: list[int] = []
        self.ids: list[str | None] = []
        self.texts: list[str | None] = []
        self.skips: list[str | None] = []
        self.keyvals: list[float] = []
        self.extras: dict = {}

    def add(self, key: int, rec, keep_field: str | None) -> None:
        from ...io.documents import Skipped

        self.keys.append(key)
        self.ids.append(rec.id)
        if isinstance(rec, Skipped):
            self.texts.append(None)
            self.skips.append(rec.reason)
            self.keyvals.append(math.nan)
        else:
            self.texts.append(rec.text)
            self.skips.append(None)
            self.keyvals.append(keep_value(rec.meta.get(keep_field)) if keep_field else math.nan)

    def __len__(self) -> int:
        return len(self.keys)


def local_reader(ctx: dict):
    from ...io.readers import RecordReader

    keep = (ctx["keep_field"],) if ctx.get("keep_field") else ()
    # content="html": the executors extract the text with the local reader's extraction
    # (neardup.text.html), so both engines see the same text of a page.
    return RecordReader(id_field=ctx.get("id_field") or "id", text_field=ctx["text_field"], keep_fields=keep,
                        max_bytes=ctx["max_bytes"], content=ctx.get("content", "text"), html=ctx.get("html", "main"))


def jsonl_record(reader, line: bytes, n: int, src: str):
    """One JSONL line (without its ``\\n``, as Spark splits them) as the local reader makes it:
    ``RecordReader.jsonl_record``, with the size of a line over ``max_bytes`` counted as the local
    reader counts it (HTML extracted when the reader's ``content`` is ``html``)."""
    from ...io.readers import line_or_size

    if reader.max_bytes is not None and len(line) > reader.max_bytes:
        line = line_or_size(line + b"\n", reader.max_bytes)
    return reader.jsonl_record(line, n, src)


def row_record(reader, ident, text, keyval, n: int, src: str | None):
    """One Parquet row (or DataFrame row) as the local Parquet reader makes it
    (:meth:`~neardup.io.readers.RecordReader.value_record`, the value's size measured here as the
    local reader measures a column's); ``ident`` None for a DataFrame row without an id, filled in
    later."""
    meta = {reader.keep_fields[0]: keyval} if keyval is not None and reader.keep_fields else {}
    return reader.value_record(ident, text, n, src, meta, measure_value=True)


def parse_jsonl(batches, ctx: dict) -> Iterator[Recs]:
    """(line binary, file, block) rows, in file order within each split -> parsed records."""
    reader = local_reader(ctx)
    bases = ctx["blocks"]          # (spark file uri, block start) -> (first ordinal, first line - 1)
    paths = ctx["paths"]           # spark file uri -> the path the local reader names
    kf = ctx.get("keep_field")
    seen: dict = {}
    for rb in batches:
        lines = rb.column(0).to_pylist()
        files = rb.column(1).to_pylist()
        blocks = rb.column(2).to_pylist()
        out = Recs()
        for line, f, blk in zip(lines, files, blocks):
            key = (f, blk)
            k = seen.get(key, 0)
            seen[key] = k + 1
            base_ord, base_line = bases[key]
            n = base_ord + k
            out.add(n, jsonl_record(reader, line, n, f"{paths[f]}:{base_line + k + 1}"), kf)
        yield out


def parse_rows(batches, ctx: dict) -> Iterator[Recs]:
    """Parquet rows ``(_id, _text, _kf, file, row)`` or DataFrame rows ``(_id, _text, _kf, _key, extras...)``."""
    import pyarrow as pa

    reader = local_reader(ctx)
    kf = ctx.get("keep_field")
    files = ctx.get("files")  # parquet: spark uri -> (first ordinal, local path)
    extra_names = ctx.get("extras", ())
    for rb in batches:
        ids = rb.column(0).to_pylist()
        texts = rb.column(1).to_pylist()
        kvs = rb.column(2).to_pylist()
        out = Recs()
        if files is not None:
            fcol = rb.column(3).to_pylist()
            rows = rb.column(4).to_pylist()
            for ident, text, kv, f, row in zip(ids, texts, kvs, fcol, rows):
                base, path = files[f]
                n = base + row
                out.add(n, row_record(reader, ident, text, kv, n, f"{path}:{row}"), kf)
        else:
            keys = rb.column(3).to_pylist()
            for ident, text, kv, key in zip(ids, texts, kvs, keys):
                out.add(key, row_record(reader, ident, text, kv, key, None), kf)
            for name in extra_names:
                out.extras[name] = rb.column(name)
            if ctx.get("text_hash"):
                import xxhash

                h = [None if t is None else xxhash.xxh3_128_digest(t if type(t) is bytes else str(t).encode("utf-8", "surrogatepass"))
                     for t in texts]
                out.extras["_h"] = pa.array(h, type=pa.binary())
        yield out
