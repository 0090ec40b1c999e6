"""The record reader: the reading options, checked once, and the reading of a plan of files, each
by the reader of its format (one module each), with ordinals from 0 across all of them."""

from __future__ import annotations

from typing import Iterator

from ...errors import ConfigError
from ...text.html import HTML_MODES
from ...text.html_pages import extraction_mode
from ..documents import Document, EncodedDocuments, Skipped
from . import columnar, jsonl, rows
from .delimited import read_csv
from .files import read_file
from .inputs import UnreadableInput, plan_inputs
from .warc import read_warc

__all__ = ["RecordReader", "CONTENTS", "ERRORS", "ON_ERROR"]

CONTENTS = ("text", "html")
ERRORS = ("replace", "strict")
#: What to do with a file that cannot be read: raise UnreadableInput naming it, or skip it (one
#: ``unreadable_file`` record, and its path in the InputReport).
ON_ERROR = ("error", "skip")


class RecordReader:
    """The reading options (checked here: ConfigError) and the reading of a plan of files.

    Each format's reader (``read_jsonl``, ``read_parquet``, ... in the modules of
    :mod:`neardup.io.read`) is a generator of the Documents and Skipped records of one file
    numbered from ``n``, which returns the next ordinal."""

    def __init__(self, *, id_field="id", text_field="text", content="text", html="main", keep_fields=(),
                 max_bytes=None, errors="replace", jobs=1, want=None, on_error="skip", report=None, text_spill=None,
                 claims=False, page_fingerprints=False):
        for name, value in (("id_field", id_field), ("text_field", text_field)):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"The '{name}' parameter must be a non-empty str. Got {value!r} instead.")
        if content not in CONTENTS:
            raise ConfigError(f"The 'content' parameter must be one of 'text', 'html'. Got {content!r} instead.")
        if html not in HTML_MODES:
            raise ConfigError(f"The 'html' parameter must be one of 'main', 'whole'. Got {html!r} instead.")
        if errors not in ERRORS:
            raise ConfigError(f"The 'errors' parameter must be one of 'replace', 'strict'. Got {errors!r} instead.")
        if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1):
            raise ConfigError(f"The 'max_bytes' parameter must be None or a positive int. Got {max_bytes!r} instead.")
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ConfigError(f"The 'jobs' parameter must be a positive int. Got {jobs!r} instead.")
        if isinstance(keep_fields, str):
            keep_fields = (keep_fields,)
        self.id_field = id_field
        self.text_field = text_field
        self.content = content
        self.html = html
        self.keep_fields = tuple(keep_fields)
        self.max_bytes = max_bytes
        self.errors = errors
        self.jobs = jobs
        self.want = want  # write_kept: an ordinal predicate; records not wanted are counted, not read
        if on_error not in ON_ERROR:
            raise ConfigError(f"The 'on_error' parameter must be one of 'error', 'skip'. Got {on_error!r} instead.")
        self.on_error = on_error
        self.report = report  # an InputReport: the files skipped (on_error="skip") and ignored
        # a run's work folder: the read pass keeps there the texts that write_kept would extract
        # again (neardup.io.texts); self.spill is its TextSpill while the plan is read
        self.text_spill = text_spill
        self.spill = None
        # a page's canonical link and og:url into its meta (neardup.text.html_links), for URL identity
        self.claims = claims
        # the mode the pages are extracted in: the whole-page fingerprint too, in
        # Document.page_fingerprint, for page_fingerprints (from the same read of each page)
        self.extraction = extraction_mode(html, page_fingerprints)

    # -- the rules of one record (neardup.io.read.rows), with this reader's options -----------

    def claimed(self, meta: dict, page, url) -> dict:
        """``meta`` with the page's claims about its URL when asked for (:func:`~neardup.io.read.rows.with_claims`)."""
        return rows.with_claims(self, meta, page, url)

    def finish_record(self, ident, text, n, src, meta, *, is_html, url=None):
        """:func:`neardup.io.read.rows.finish_record` with this reader's options."""
        return rows.finish_record(self, ident, text, n, src, meta, is_html=is_html, url=url)

    def jsonl_record(self, line: bytes | int | str, n: int, src: str):
        """:func:`neardup.io.read.rows.jsonl_record` with this reader's options."""
        return rows.jsonl_record(self, line, n, src)

    def json_line_record(self, line: bytes, n: int, src: str):
        """:func:`neardup.io.read.rows.json_line_record` with this reader's options."""
        return rows.json_line_record(self, line, n, src)

    def column_value_record(self, ident, text, n: int, src: str, meta: dict):
        """:func:`neardup.io.read.rows.column_value_record` with this reader's options."""
        return rows.column_value_record(self, ident, text, n, src, meta)

    def records_of_batch(self, batch, source: str, start: int = 0):
        """:func:`neardup.io.read.columnar.records_of_batch` with this reader's options."""
        return columnar.records_of_batch(self, batch, source, start)

    def scans_jsonl_blocks(self) -> bool:
        """:func:`neardup.io.read.jsonl.scans_jsonl_blocks` for this reader's options."""
        return jsonl.scans_jsonl_blocks(self)

    def jsonl_block_records(self, block, n: int, path: str, lineno: int, table):
        """:func:`neardup.io.read.jsonl.jsonl_block_records` with this reader's options."""
        return jsonl.jsonl_block_records(self, block, n, path, lineno, table)

    # -- files -------------------------------------------------------------------------------

    def read_leaf(self, path: str, fmt: str, n: int):
        """The records of one file read as ``fmt``, numbered from ``n``; returns the next ordinal."""
        if fmt == "jsonl":
            return (yield from jsonl.read_jsonl(self, path, n))
        if fmt == "parquet":
            return (yield from columnar.read_parquet(self, path, n))
        if fmt == "arrow":
            return (yield from columnar.read_arrow(self, path, n))
        if fmt in ("csv", "tsv"):
            return (yield from read_csv(self, path, fmt, n))
        if fmt == "warc":
            return (yield from read_warc(self, path, n))
        return (yield from read_file(self, path, fmt, n))

    def file_failed(self, path: str, why: str) -> None:
        """A file that cannot be read (or read to its end): raise, or note it and go on."""
        if self.on_error == "error":
            raise UnreadableInput(f"{path}: {why} (add --on-error skip to go on without it)", path=path)
        if self.report is not None:
            self.report.skipped_files.append({"path": path, "reason": why})

    def _checked(self, path: str, records):
        """The records of one file; the first ``unreadable_file`` among them goes to :meth:`file_failed`."""
        failed = False
        while True:
            try:
                rec = next(records)
            except StopIteration as stop:
                return stop.value
            if not failed and type(rec) is Skipped and rec.reason == "unreadable_file":
                failed = True
                self.file_failed(path, rec.detail)
            yield rec

    def read(self, plan, encoded_table=False) -> Iterator[Document | Skipped | EncodedDocuments]:
        """Every record of the plan. With ``encoded_table`` (None or a flag table, see
        :func:`neardup.io.read.read_encoded`), JSONL files yield their ordinary records as EncodedDocuments."""
        n = 0
        # JSONL of HTML is scanned whatever the caller takes: its records are those of read_jsonl
        fast = jsonl.scans_jsonl_pages(self) or (encoded_table is not False and self.scans_jsonl_blocks())
        plan = plan_inputs(plan, "auto")
        if self.report is not None:
            self.report.ignored_files.extend(plan.ignored)
        spill = self.spill
        for path, fmt, why in plan.leaves:
            if spill is not None:
                spill.leaf_started(fmt if why is None else "unreadable", n)
            if why is not None:
                self.file_failed(path, why)
                if self.want is None or self.want(n):
                    yield Skipped(path, n, path, "unreadable_file", why)
                n += 1
            elif fast and fmt == "jsonl":
                table = None if encoded_table is False else encoded_table
                n = yield from self._checked(path, jsonl.read_jsonl_encoded(self, path, n, table))
            else:
                n = yield from self._checked(path, self.read_leaf(path, fmt, n))
            if spill is not None:
                spill.leaf_ended(n)
        return n
