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
    """One Parquet row (or DataFrame row) as the local Parquet reader makes it.

    Mirrors ``RecordReader._parquet_batch`` value by value: id (``id_string`` with ``<file>:<row>`` as
    the fallback; None here for a DataFrame, filled in later), ``too_large`` on the raw size,
    null text, binary decoded as UTF-8 (``errors``), other types ``not_a_string``, blank text
    ``empty``. (A ``RecordReader._parquet_value(ident, text, n, src, meta)`` method would let both share it.)
    """
    from ...io.documents import Skipped
    from ...io.readers import describe_value, id_string, utf8_length

    if type(ident) is not str or not ident:
        ident = id_string(ident, src)
    tf, max_bytes = reader.text_field, reader.max_bytes
    if max_bytes is not None:
        t = type(text)
        size = utf8_length(text) if t is str else len(text) if t is bytes else 0
        if size > max_bytes:
            return Skipped(ident, n, src, "too_large", f"'{tf}' of {size} bytes is over the {max_bytes} byte limit")
    if type(text) is not str:
        if text is None:
            return Skipped(ident, n, src, "missing_text", f"'{tf}' is null")
        if type(text) is bytes:
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                if reader.errors == "strict":
                    return Skipped(ident, n, src, "undecodable", f"'{tf}' is not UTF-8 (byte {exc.start})")
                text = text.decode("utf-8", "replace")
        else:
            return Skipped(ident, n, src, "not_a_string", f"'{tf}' is {describe_value(text)}, not a string")
    meta = {}
    if keyval is not None and reader.keep_fields:
        meta[reader.keep_fields[0]] = keyval
    return reader.finish_record(ident, text, n, src, meta, is_html=reader.content == "html")


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
