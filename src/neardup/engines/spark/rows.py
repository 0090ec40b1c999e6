"""Executor side: the records of a batch of Spark rows, read by the local reader's own rules (the
reader of the run's configuration, :func:`neardup.io.read.record_reader`, shipped to the
executors with the config), with the ordinals the local reader gives them."""

from __future__ import annotations

import math
from typing import Iterator

from ...config import DedupConfig
from ...io.read import record_reader
from ...stages.survivors import keep_value
from ...stages.urls import claim_key, record_key


class Recs:
    """Parsed records of one batch: what the local reader yields, column-wise."""

    __slots__ = ("keys", "ids", "texts", "skips", "keyvals", "extras", "urls", "url_keys", "claim_keys", "page_urls")

    def __init__(self, urls: tuple | None = None):
        #: URL identity (``(url field, URL rules)``, None without): each record's canonical URL
        #: and its page's claim, as the local engine reads them (:mod:`neardup.stages.urls`)
        self.urls = urls
        self.url_keys: list[str | None] = []
        self.claim_keys: list[str | None] = []
        #: the record's ``url`` field as it is (clusters.jsonl's ``url``, as the local engine writes it)
        self.page_urls: list[str | None] = []
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
            if self.urls is not None:
                self.url_keys.append(None)
                self.claim_keys.append(None)
                self.page_urls.append(None)
        else:
            self.texts.append(rec.text)
            self.skips.append(None)
            self.keyvals.append(keep_value(rec.meta.get(keep_field)) if keep_field else math.nan)
            if self.urls is not None:
                url_field, rules = self.urls
                self.url_keys.append(record_key(rec.meta.get(url_field) or rec.meta.get("url"), rules))
                self.claim_keys.append(claim_key(rec.meta, rules))
                url = rec.meta.get("url")
                self.page_urls.append(url if isinstance(url, str) and url else None)

    def __len__(self) -> int:
        return len(self.keys)


def keep_field_of(config: DedupConfig) -> str | None:
    """The field whose value ``--keep field:NAME`` compares (each record's ``keyval``), or None."""
    return config.keep_field if config.keep == "field" else None


def url_identity(config: DedupConfig) -> tuple | None:
    """``(url field, URL rules)`` of a run with URL identity, else None (:class:`Recs`)."""
    return (config.url_field, config.rules_of_urls()) if config.url_field is not None else None


def jsonl_record(reader, line: bytes, n: int, src: str):
    """One JSONL line (without its ``\\n``, as Spark splits them) as the local reader makes it:
    ``RecordReader.jsonl_record``, with the size of a line over ``max_bytes`` counted as the local
    reader counts it (HTML extracted when the reader's ``content`` is ``html``)."""
    from ...io.read import line_or_size

    if reader.max_bytes is not None and len(line) > reader.max_bytes:
        line = line_or_size(line + b"\n", reader.max_bytes)
    return reader.jsonl_record(line, n, src)


def row_record(reader, ident, text, meta: dict, n: int, src: str | None):
    """One Parquet row (or DataFrame row) as the local Parquet reader makes it
    (:func:`neardup.io.read.rows.column_value_record`, the value measured against ``max_bytes``
    here); ``ident`` None for a DataFrame row without an id, filled in later; ``meta``: the row's
    kept fields that are not null."""
    return reader.column_value_record(ident, text, n, src, meta)


def row_meta(kf: str | None, keyval, url_field: str | None, url) -> dict:
    """A row's kept fields (the keep policy's, the URL's) that are not null, as the local Parquet
    reader keeps them."""
    meta = {}
    if kf is not None and keyval is not None:
        meta[kf] = keyval
    if url_field is not None and url is not None:
        meta[url_field] = url
    return meta


def parse_jsonl(batches, ctx: dict, config: DedupConfig) -> Iterator[Recs]:
    """(line binary, file, block) rows, in file order within each split -> parsed records."""
    reader = record_reader(config)
    bases = ctx["blocks"]          # (spark file uri, block start) -> (first ordinal, first line - 1)
    paths = ctx["paths"]           # spark file uri -> the path the local reader names
    kf = keep_field_of(config)
    identity = url_identity(config)
    seen: dict = {}
    for rb in batches:
        lines = rb.column(0).to_pylist()
        files = rb.column(1).to_pylist()
        blocks = rb.column(2).to_pylist()
        out = Recs(identity)
        for line, f, blk in zip(lines, files, blocks):
            key = (f, blk)
            k = seen.get(key, 0)
            seen[key] = k + 1
            base_ord, base_line = bases[key]
            n = base_ord + k
            out.add(n, jsonl_record(reader, line, n, f"{paths[f]}:{base_line + k + 1}"), kf)
        yield out


def parse_rows(batches, ctx: dict, config: DedupConfig) -> Iterator[Recs]:
    """Parquet rows ``(_id, _text, _kf, file, row)`` or DataFrame rows ``(_id, _text, _kf, _key, extras...)``."""
    import pyarrow as pa

    reader = record_reader(config)
    kf = keep_field_of(config)
    url_field = config.url_field
    identity = url_identity(config)
    files = ctx.get("files")  # parquet: spark uri -> (first ordinal, local path)
    extra_names = ctx.get("extras", ())
    for rb in batches:
        ids = rb.column(0).to_pylist()
        texts = rb.column(1).to_pylist()
        kvs = rb.column(2).to_pylist()
        urls = rb.column("_url").to_pylist() if "_url" in rb.schema.names else [None] * rb.num_rows
        out = Recs(identity)
        if files is not None:
            fcol = rb.column(3).to_pylist()
            rows = rb.column(4).to_pylist()
            for ident, text, kv, url, f, row in zip(ids, texts, kvs, urls, fcol, rows):
                base, path = files[f]
                n = base + row
                out.add(n, row_record(reader, ident, text, row_meta(kf, kv, url_field, url), n, f"{path}:{row}"), kf)
        else:
            keys = rb.column(3).to_pylist()
            for ident, text, kv, url, key in zip(ids, texts, kvs, urls, keys):
                out.add(key, row_record(reader, ident, text, row_meta(kf, kv, url_field, url), key, None), kf)
            for name in extra_names:
                out.extras[name] = rb.column(name)
            if ctx.get("text_hash"):
                import xxhash

                h = [None if t is None else xxhash.xxh3_128_digest(t if type(t) is bytes else str(t).encode("utf-8", "surrogatepass"))
                     for t in texts]
                out.extras["_h"] = pa.array(h, type=pa.binary())
        yield out
