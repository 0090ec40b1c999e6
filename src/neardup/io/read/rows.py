"""The rules that make one input record a Document or a Skipped, whatever reads it.

Every engine applies these to its rows, so that a record is read the same everywhere: the local
readers (one file after another), the Spark executors (JSONL lines as Spark splits them, Parquet
and DataFrame rows), the Ray shards and the in-memory API (:func:`neardup.dedup`).

- :func:`jsonl_record`: one JSONL line (its bytes, its size when over ``max_bytes``, or why the file
  cannot be read further); :func:`json_line_record`: the same for a line without its newline.
- :func:`column_value_record`: the text value of one row of a column (Parquet, Arrow, a DataFrame).
- :func:`finish_record`: a text that was found: extracted when it is HTML, ``empty`` when blank;
  :func:`utf8_page_record`: the same for a page given as its UTF-8 (the compiled JSONL scanner's).
- :func:`id_string`: an id value as a string (the source when there is none).

``reader`` is the :class:`~neardup.io.read.reader.RecordReader` whose options apply (its
``id_field``, ``text_field``, ``keep_fields``, ``content``, ``html``, ``max_bytes``, ``errors``,
``jobs`` and ``claims``).
"""

from __future__ import annotations

import orjson

from ...text.html_pages import FROM_STR, extract_page
from ..documents import Document, Skipped
from .extract import PendingPage, extracted_record

__all__ = ["PAGE_URL_FIELD", "utf8_page_record", "id_string", "utf8_length", "describe_value", "line_or_size",
           "decode_text", "has_nul", "with_claims", "finish_record", "missing_text", "bad_line", "jsonl_record",
           "json_line_record", "column_value_record", "MAX_KEYS_SHOWN"]

#: Keys (columns) named in the detail of a record without its text field.
MAX_KEYS_SHOWN = 12
#: The field of a JSONL record of HTML that holds the page's URL (a string; anything else is no URL).
PAGE_URL_FIELD = "url"


def id_string(value, fallback: str) -> str:
    """An id value as a string: ``fallback`` (the record's source) when null or empty, an int's
    digits, another value's JSON."""
    if value is None or value == "":
        return fallback
    t = type(value)
    if t is str:
        return value
    if t is int:
        return str(value)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def utf8_length(text: str) -> int:
    """The bytes of ``text`` in UTF-8 (lone surrogates counted as encoded)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def describe_value(value) -> str:
    """What a JSON value is, in words (``a number``, ``an object``...)."""
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def line_or_size(line: bytes, max_bytes: int | None) -> bytes | int:
    """A whole line as :func:`neardup.io.read.jsonl.read_lines` gives it: its bytes, or its size when
    over ``max_bytes`` (without "\r\n" or "\n" when the line fits in its ``readline(max_bytes + 2)``,
    else without "\n" only)."""
    if max_bytes is None or len(line) <= max_bytes:
        return line
    size = len(line)
    if size <= max_bytes + 2 and line[-1:] == b"\n":
        size -= 2 if line[-2:] == b"\r\n" else 1
    elif line[-1:] == b"\n":
        size -= 1
    return size if size > max_bytes else line


def decode_text(data: bytes, errors: str) -> str | None:
    """A text file's bytes as a str: UTF-8 (a UTF-8 or UTF-16 byte order mark honoured); None for
    invalid UTF-8 with ``errors="strict"``, else the invalid bytes replaced."""
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if errors == "strict":
            return None
        return data.decode("utf-8", "replace")


def has_nul(data: bytes) -> bool:
    """Whether a file's bytes hold a NUL byte (not a text file), UTF-16 with a byte order mark aside."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return False
    return b"\x00" in data


def with_claims(reader, meta: dict, page, url) -> dict:
    """``meta`` with the page's claims about its URL (``canonical``, ``og_url``) when the reader
    asks for them (``claims``)."""
    if reader.claims:
        from ...text.html_links import page_claims  # parsed only for a run with URL identity

        meta.update(page_claims(page, url))
    return meta


def _blank(ident, n, src, text) -> Skipped:
    return Skipped(ident, n, src, "empty", "the text is empty" if not text else "the text is only white space")


def finish_record(reader, ident, text, n, src, meta, *, is_html, url=None):
    """The record of a text that was found: HTML extracted (or, with ``jobs > 1``, left to the
    worker processes as a :class:`~neardup.io.read.extract.PendingPage`), blank text ``empty``."""
    if is_html and text and not text.isspace():
        meta = with_claims(reader, meta, text, url)
        if reader.jobs > 1:
            return PendingPage(ident, n, src, meta, text, url)
        return extracted_record(ident, n, src, meta, extract_page(reader.extraction, text, url, None, reader.errors))
    if not text or text.isspace():
        return _blank(ident, n, src, text)
    return Document(ident, text, n, src, meta)


def utf8_page_record(reader, ident, page: bytes, n, src, url):
    """:func:`finish_record` of an HTML text given as the UTF-8 of its str, which must not be blank,
    for a reader without ``keep_fields`` or ``claims``: the page goes to the extraction as these
    bytes (as a worker process gets the str), so it is never decoded to a str in this process."""
    pending = PendingPage(ident, n, src, {}, page, url, FROM_STR, reader.errors)
    if reader.jobs > 1:
        return pending
    return pending.outcome(extract_page(reader.extraction, page, url, FROM_STR, reader.errors))


def missing_text(reader, obj: dict, ident, n, src) -> Skipped:
    """The Skipped record of a JSON object (a CSV row) whose text field is absent, null or not a string."""
    tf = reader.text_field
    if tf not in obj:
        keys = list(obj)
        shown = ", ".join(map(str, keys[:MAX_KEYS_SHOWN])) + (", ..." if len(keys) > MAX_KEYS_SHOWN else "")
        return Skipped(ident, n, src, "missing_text",
                       f"record has no '{tf}' field; keys: {shown or '(none)'} — use --text-field")
    value = obj[tf]
    if value is None:
        return Skipped(ident, n, src, "missing_text", f"'{tf}' is null")
    return Skipped(ident, n, src, "not_a_string", f"'{tf}' is {describe_value(value)}, not a string")


def bad_line(line: bytes, exc, n, src) -> Skipped:
    """The Skipped record of a line that is not JSON: blank, not UTF-8, or bad JSON."""
    if not line.strip():
        return Skipped(src, n, src, "empty", "blank line")
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return Skipped(src, n, src, "undecodable", f"invalid UTF-8 at byte {uexc.start} of the line")
    return Skipped(src, n, src, "bad_json", f"invalid JSON: {exc}")


def jsonl_record(reader, line: bytes | int | str, n: int, src: str):
    """The record of one line from :func:`~neardup.io.read.jsonl.read_lines` (its bytes, its size
    when too large, or why the file cannot be read further)."""
    if type(line) is not bytes:
        if type(line) is int:
            return Skipped(src, n, src, "too_large", f"line of {line} bytes is over the {reader.max_bytes} byte limit")
        return Skipped(src, n, src, "unreadable_file", line)
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return bad_line(line, exc, n, src)
    if type(obj) is not dict:
        return Skipped(src, n, src, "not_an_object", f"the line holds {describe_value(obj)}, not a JSON object")
    ident = obj.get(reader.id_field)
    if type(ident) is not str or not ident:
        ident = id_string(ident, src)
    text = obj.get(reader.text_field)
    if type(text) is not str:
        return missing_text(reader, obj, ident, n, src)
    meta = {}
    for f in reader.keep_fields:
        v = obj.get(f)
        if v is not None:
            meta[f] = v
    if reader.content == "html":
        url = obj.get(PAGE_URL_FIELD)
        return finish_record(reader, ident, text, n, src, meta, is_html=True, url=url if type(url) is str else None)
    if not text or text.isspace():
        return _blank(ident, n, src, text)
    return Document(ident, text, n, src, meta)


def json_line_record(reader, line: bytes, n: int, src: str):
    """:func:`jsonl_record` of a line given without its ``\\n`` (as Spark splits a file, as the API
    serialises a dict), a line over ``max_bytes`` measured as the local reader measures it."""
    if reader.max_bytes is not None and len(line) > reader.max_bytes:
        line = line_or_size(line + b"\n", reader.max_bytes)
    return jsonl_record(reader, line, n, src)


def column_value_record(reader, ident, text, n: int, src: str, meta: dict, *, measured: bool = False):
    """The record of one row of a table (Parquet, Arrow IPC, a DataFrame): ``ident`` the id
    column's value (``id_string`` with ``src`` as the fallback), ``text`` the text column's
    value: ``too_large`` over ``max_bytes`` (its UTF-8 or binary length), ``missing_text`` when
    null, a binary value decoded as UTF-8 (``errors``; ``undecodable`` when strict), another type
    ``not_a_string``; then :func:`finish_record` with ``meta``. ``measured``: the caller has
    already measured the column against ``max_bytes`` (the Parquet reader, with Arrow)."""
    if type(ident) is not str or not ident:
        ident = id_string(ident, src)
    tf, max_bytes = reader.text_field, reader.max_bytes
    if max_bytes is not None and not measured:
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
    return finish_record(reader, ident, text, n, src, meta, is_html=reader.content == "html")
