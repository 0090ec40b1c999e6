"""Streaming readers: every input record comes out once, as a Document or as a Skipped record.

The modules, one concern each: :mod:`~neardup.io.read.sources` (where bytes come from: local paths, standard
input, fsspec URLs), :mod:`~neardup.io.read.compression` (magic numbers and decompressors),
:mod:`~neardup.io.read.sniff` (the format of a file), :mod:`~neardup.io.read.inputs` (the files to read),
:mod:`~neardup.io.read.rows` (the rules that make one record a Document or a Skipped, which every engine
applies), one module per format (:mod:`~neardup.io.read.jsonl`, :mod:`~neardup.io.read.delimited`,
:mod:`~neardup.io.read.columnar`, :mod:`~neardup.io.read.warc`, :mod:`~neardup.io.read.files`),
:mod:`~neardup.io.read.extract` (HTML extracted in worker processes) and
:mod:`~neardup.io.read.reader` (:class:`RecordReader`, which reads a plan of files). A run builds its
reader from its configuration with :func:`record_reader`.

Inputs are local paths, ``-`` (standard input, read once), or fsspec URLs, all opened through
:mod:`neardup.io.read.sources`. With ``format="auto"`` each file's format is found by its content
(:func:`sniff_format`: compression by magic number, gzip, zstd, bzip2 or xz; then Parquet, Arrow
IPC, WARC and ARC magic; then the name; then a JSON object or an HTML page), the name being only
a hint. Formats:

``jsonl``
    ``.jsonl``, ``.json``, ``.ndjson``, optionally ``.gz`` / ``.zst`` (the compression is recognised
    from the file's first bytes, whatever its name). One JSON object per line, read line by line and
    parsed with orjson; lines are UTF-8 strictly (:func:`read_encoded`, which ``neardup dedup``
    uses, gives the same records, ordinary lines scanned in blocks by ``neardup._jsonl``). Every
    line is a record, a blank line included
    (it is Skipped as ``empty``), so ``source`` is ``<file>:<line>`` with 1-based line numbers.
    With ``max_bytes`` a longer line is read in bounded chunks and thrown away (``too_large``).
``parquet``
    ``.parquet`` / ``.pq``, read with ``ParquetFile.iter_batches`` over the id, text and
    ``keep_fields`` columns only. ``source`` is ``<file>:<row>`` with 0-based rows. A ``binary``
    text column is decoded as UTF-8 (``errors`` applies). If the file cannot be read from some row
    on, each remaining row is Skipped as ``unreadable_file``, so a file always yields as many
    records as its footer says it has.
``csv`` / ``tsv``
    ``.csv`` / ``.tsv`` (optionally compressed): a header row, then one record per row, with
    ``id_field`` and ``text_field`` naming columns; ``source`` is ``<file>:<row>``, rows counted
    from 1 after the header.
``arrow``
    An Arrow IPC file (``.arrow``, Feather v2) or stream (``.arrows``), read batch by batch like
    Parquet; ``source`` is ``<file>:<row>`` with 0-based rows.
``warc``
    ``.warc`` / ``.warc.gz`` / ``.warc.zst`` (and ARC, by its ``filedesc://`` magic), read by
    :mod:`neardup.io.read.warc` (FastWARC; ARC with warcio). **Input records are ``response`` records
    and ``conversion`` records** (WET text, taken as plain text); ``warcinfo``, ``request``,
    ``metadata``, ``revisit`` and ``resource`` records are not documents and take no ordinal.
    Of the responses, those with an HTTP status other than 200
    are Skipped as ``http_status``, those whose Content-Type is not ``text/html`` or
    ``application/xhtml+xml`` (or, with no Content-Type, whose body does not start like HTML) as
    ``not_html``; the rest are decoded (HTTP charset, else ``<meta charset>``, else UTF-8) and go
    through :func:`neardup.text.html.extract_text`. ``id`` is the WARC-Target-URI (also in
    ``meta["url"]``; the WARC-Record-ID is ``meta["record_id"]``); ``source`` is ``<file>:<n>``, n the 1-based number of the record among all the
    records of the file.
``html``
    A ``.html`` / ``.htm`` / ``.xhtml`` file, or a folder holding at least one. Each file is a
    document (``id`` = ``source`` = its path), decoded like a WARC body and extracted. In a folder
    recognised as HTML by ``format="auto"``, the other files are Skipped as ``not_html``; with
    ``format="html"`` every file is read as HTML.
``text``
    Any other file, or a folder of them: each file is one document. UTF-8 (a UTF-8 or UTF-16 byte
    order mark is honoured); a file holding NUL bytes is Skipped as ``binary``; invalid UTF-8 is
    replaced (``errors="replace"``, the default) or Skipped as ``undecodable`` (``errors="strict"``).

Folders are walked in sorted order (:func:`neardup.io.read.sources.walk`) without the names Spark
leaves out (``_SUCCESS``, ``_*``, ``.*``, ``*.crc``: :func:`neardup.io.read.sources.is_hidden_name`);
symlinked folders are not followed. With ``format="auto"``, a folder holding data files (JSONL,
CSV, TSV, Parquet, Arrow, WARC) is a dataset: those are read, each in its format, and its other
files are ignored (``InputReport.ignored_files``); else a folder holding an HTML file is ``html``;
else ``text``. A file that is not a regular file (a broken link, a pipe) or a folder that cannot
be listed is one ``unreadable_file`` record. Paths that do not exist raise :class:`InputError`
when :func:`read_documents` is called.

A file that cannot be opened or read to its end is, with ``on_error="skip"`` (the library's
default), one ``unreadable_file`` record (the records before the break are kept) and an entry of
``report.skipped_files``; with ``on_error="error"`` (the command's default) it raises
:class:`UnreadableInput` naming it. Bad records are always Skipped, never raised.

``content="html"`` runs JSONL, Parquet and text-file texts through HTML extraction as well. The
reasons a record is Skipped are the keys of :data:`neardup.io.documents.SKIP_REASONS`.
"""

from __future__ import annotations

from typing import Iterator

from ..documents import Document, EncodedDocuments, Skipped
from ..texts import TextSpill, needed as texts_needed
from .columnar import PARQUET_BATCH_ROWS, open_arrow, open_parquet
from .compression import compression_of, open_decompressed
from .delimited import csv_rows
from .extract import extract_pages
from .inputs import InputPlan, InputReport, UnreadableInput, detect_format, input_leaves, plan_inputs
from .jsonl import read_lines
from .reader import CONTENTS, ERRORS, ON_ERROR, RecordReader
from .rows import (column_value_record, describe_value, id_string, json_line_record, jsonl_record, line_or_size,
                   utf8_length)
from .sniff import DATA_FORMATS, FORMATS, kind_of, sniff_format
from .warc import read_input_records

__all__ = ["FORMATS", "DATA_FORMATS", "CONTENTS", "ERRORS", "ON_ERROR", "RecordReader", "InputPlan", "InputReport",
           "UnreadableInput", "plan_inputs", "input_leaves", "detect_format", "kind_of", "sniff_format",
           "compression_of", "open_decompressed", "read_documents", "read_encoded", "read_plan", "record_reader",
           "record_fields", "iter_raw_records", "jsonl_record", "json_line_record", "column_value_record",
           "id_string", "utf8_length", "describe_value", "line_or_size"]


def record_fields(config) -> tuple[str, ...]:
    """The fields a run of ``config`` (a :class:`~neardup.config.DedupConfig`) keeps in each record's
    meta: ``keep_field`` when ``keep="field"``, ``source_field``, ``url_field``."""
    fields: tuple[str, ...] = (config.keep_field,) if config.keep == "field" else ()
    if config.source_field is not None:
        fields += (config.source_field,)
    if config.url_field is not None:
        fields += (config.url_field,)
    return fields


def record_reader(config, *, jobs: int = 1, on_error: str = "skip", report: InputReport | None = None,
                  text_spill: str | None = None, want=None, page_fingerprints: bool = False) -> RecordReader:
    """The reader of a run's records, built from its configuration (a
    :class:`~neardup.config.DedupConfig`): its read options (``id_field``, ``text_field``,
    ``content``, ``html``, ``max_bytes``; ``format`` is the plan's, :func:`plan_inputs`), the
    :func:`record_fields` in each record's meta and, with URL identity (``url_field``), each page's
    claims about its URL. Every engine and the API read their records through it; the other
    arguments are those of :func:`read_documents`."""
    options = config.read_options()
    options.pop("format")
    return RecordReader(**options, keep_fields=record_fields(config), claims=config.url_field is not None,
                        jobs=jobs, on_error=on_error, report=report, text_spill=text_spill, want=want,
                        page_fingerprints=page_fingerprints)


def read_documents(paths: list[str], *, format: str = "auto", id_field: str = "id", text_field: str = "text",
                   content: str = "text", html: str = "main", keep_fields: tuple[str, ...] = (),
                   max_bytes: int | None = None, errors: str = "replace", jobs: int = 1, on_error: str = "skip",
                   report: "InputReport | None" = None, text_spill: str | None = None,
                   claims: bool = False, want=None, page_fingerprints: bool = False) -> Iterator[Document | Skipped]:
    """Every record of ``paths`` (files or folders, in the order given), as a Document or a Skipped.

    Options and paths are checked when this is called (ConfigError, InputError); reading is lazy
    and never raises for bad data, nor for a file that cannot be read unless ``on_error="error"``
    (then :class:`UnreadableInput`); ``report`` (an :class:`InputReport`) collects the files
    skipped and the files of dataset folders ignored. ``ordinal`` runs from 0 across all the paths, skipped records
    included. ``keep_fields`` (JSONL, Parquet) are copied into ``meta`` when present and not null.
    ``max_bytes`` bounds one record's raw size (a JSONL line, a file, a WARC HTTP body, a Parquet
    text value). ``errors`` is what to do with invalid UTF-8 in files and Parquet binary columns
    (JSONL lines are always strict). ``jobs > 1`` extracts HTML (WARC, HTML files, ``content="html"``)
    in that many worker processes, a bounded window ahead, same order and same output; plain text
    is never sent to them. ``text_spill`` (a run's work folder): the texts that the kept corpus
    would extract again are kept there for :func:`~neardup.io.write_kept` (:mod:`neardup.io.texts`).
    ``claims``: a web page's ``<link rel="canonical">`` and ``og:url``, resolved against its URL,
    go into its meta as ``canonical`` and ``og_url`` (:func:`neardup.text.html_links.page_claims`).
    ``want``: a predicate of ordinals; the records it refuses are counted (ordinals stay those of
    the whole input) but neither yielded nor, for HTML, extracted. ``page_fingerprints``: an HTML
    record's Document carries its whole-page fingerprint too (``page_fingerprint``, computed by the
    scan of the markup that precedes the parse of its main content:
    :func:`neardup.text.html_pages.page_fingerprint`).
    See the module docstring for each format.
    """
    reader = RecordReader(id_field=id_field, text_field=text_field, content=content, html=html,
                          keep_fields=keep_fields, max_bytes=max_bytes, errors=errors, jobs=jobs, on_error=on_error,
                          report=report, text_spill=text_spill, claims=claims, want=want,
                          page_fingerprints=page_fingerprints)
    return read_plan(reader, plan_inputs(paths, format))


def read_encoded(paths: list[str], *, table=None, format: str = "auto",
                 **options) -> Iterator[Document | Skipped | EncodedDocuments]:
    """The records of :func:`read_documents` (same options), with runs of ordinary JSONL records
    as :class:`~neardup.io.documents.EncodedDocuments`: their text as UTF-8 bytes, never a str.

    ``neardup dedup`` reads this way: a compiled scanner takes the ids and texts out of the
    JSONL lines off the GIL, and the kernel reads the bytes. ``table`` (a uint8 array of 0x110000
    entries, or None) marks code points to flag (``EncodedDocuments.flagged``). Lines the scanner
    does not take, and every other format, come out as :func:`read_documents` gives them; with
    ``content="html"``, ``keep_fields``, or without the compiled scanner, everything does (JSONL
    of HTML is scanned all the same, by both: its pages reach the extraction as the scanner's
    UTF-8, :func:`neardup.io.read.jsonl.scans_jsonl_pages`).
    """
    return read_plan(RecordReader(**options), plan_inputs(paths, format), table)


def read_plan(reader: RecordReader, plan, encoded_table=False):
    """``reader.read(plan, encoded_table)``, HTML extracted in worker processes when the reader
    has ``jobs > 1`` and the plan has HTML to extract (plain text is never sent to them)."""
    if reader.jobs > 1 and (reader.content == "html" or plan.formats() & {"html", "warc"}):
        items = extract_pages(reader.read(plan, encoded_table), reader.extraction, reader.jobs)
    else:
        reader.jobs = 1
        items = reader.read(plan, encoded_table)
    if reader.text_spill is not None and texts_needed(plan, reader.content):
        return _spilling(reader, plan, items)
    return items


def _spilling(reader: RecordReader, plan, items):
    """``items``, with the documents the kept corpus would extract again written to the run's
    work folder as they pass (complete once the input has ended)."""
    spill = reader.spill = TextSpill(reader.text_spill, plan, reader.content)
    try:
        for item in items:
            if type(item) is Document:
                spill.add(item)
            yield item
    except BaseException:
        spill.discard()
        raise
    spill.commit()


def iter_raw_records(paths, *, format: str = "auto", max_bytes: int | None = None) -> Iterator[tuple[int, object]]:
    """The original records, by the same ordinals as :func:`read_documents`, for a second pass.

    Yields ``(ordinal, record)`` with record: the line's bytes as read (line ending included) for
    JSONL; a dict of the row's columns for Parquet; ``{"id", "url", "body", "charset"}`` for a
    WARC HTML response or WET conversion record (``body`` is the decoded HTTP payload or the
    record's block; also ``record_id`` and ``is_html``); the file's path (``str``) for text
    and HTML files. Records that can never be documents (unreadable files, non-HTML WARC
    responses, JSONL lines over ``max_bytes``) take their ordinal but are not yielded.
    """
    plan = plan_inputs(paths, format)
    return _raw(plan, max_bytes)


def _raw(plan, max_bytes):
    n = 0
    for path, fmt, why in input_leaves(plan):
        if why is not None or fmt == "not_html":
            n += 1
        elif fmt == "jsonl":
            for _, line in read_lines(path, max_bytes):
                if type(line) is bytes:
                    yield n, line
                n += 1
        elif fmt == "parquet":
            pf, nrows = open_parquet(path)
            if pf is None:
                n += 1
                continue
            row = 0
            try:
                for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                    for rec in batch.to_pylist():
                        yield n + row, rec
                        row += 1
            except Exception:  # noqa: BLE001 - the first pass reported these rows
                pass
            n += max(row, nrows)
        elif fmt in ("csv", "tsv"):
            try:
                for _, fields in csv_rows(path, fmt):
                    yield n, fields
                    n += 1
            except Exception:  # noqa: BLE001 - the first pass reported the rest as one record
                n += 1
        elif fmt == "arrow":
            batches, _ = open_arrow(path)
            if batches is None:
                n += 1
                continue
            try:
                for batch in batches:
                    for rec in batch.to_pylist():
                        yield n, rec
                        n += 1
            except Exception:  # noqa: BLE001 - the first pass reported the rest as one record
                n += 1
        elif fmt == "warc":
            for _, kind, payload in read_input_records(path, max_bytes):
                if kind == "doc" or kind == "text":
                    ident, url, body, charset, record_id = payload
                    yield n, {"id": ident, "url": url, "body": body, "charset": charset, "record_id": record_id,
                              "is_html": kind == "doc"}
                n += 1
        else:
            yield n, path
            n += 1
