"""The extraction of pages in the HTML worker processes of ``neardup.io.read.extract`` (``jobs > 1``).

A worker runs :func:`extract_many` on chunks the reading process sends; this module imports only
the extraction (:mod:`neardup.text.html`), so that the forkserver preloads it once and a worker
forked from it imports nothing more when it unpickles its first call. Were the worker's function
in ``neardup.io.read``, each worker would import the readers and through them numpy, the
WARC readers and the text spill (~0.15 s of CPU a worker, on cores the reading process needs).
"""

from __future__ import annotations

from .html import _extract, _scanned, decode_html, extract_utf8, utf8_page
from .html_scan import TextWithFingerprint

__all__ = ["FROM_STR", "WITH_PAGE", "TextWithFingerprint", "extraction_mode", "extract_page", "extract_many",
           "extract_with_page", "page_fingerprint"]

#: The charset of a str sent as its UTF-8 (``neardup.io.read.extract.PendingPage.job``).
FROM_STR = "\x00str"
#: A mode ending so (``"main" + WITH_PAGE``) extracts the text of that mode and the page's
#: whole-page fingerprint (:func:`page_fingerprint`) from one read of the page (:class:`TextWithFingerprint`):
#: ``neardup changes`` tells ``template`` from ``unchanged`` by it, and an index keeps it.
WITH_PAGE = "+page"


def extraction_mode(html: str, page_fingerprints: bool) -> str:
    """The mode the extraction runs for a reader's ``html`` mode, with the whole-page fingerprint
    beside when asked for (``page_fingerprints``; in mode "whole" the text is the whole page already)."""
    return html + WITH_PAGE if page_fingerprints and html != "whole" else html


def page_fingerprint(html: str | bytes, charset: str | None = None, errors: str = "replace") -> int | None:
    """The whole-page fingerprint of a page: XXH3-64 of its visible text as the markup scan reads
    it (defined in ``native/_htmlscan.c``, the sixth item of :func:`neardup.text.html_scan.scan`),
    over its UTF-8 whatever its charset (bytes are decoded as the readers decode them; None: they
    do not decode). Mode "main" computes it in the scan that precedes its parse
    (:func:`extract_with_page`, :func:`extract_page`); this is the same value for a caller that
    has only the markup."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        data = bytes(html)
        page = utf8_page(data, charset)
        if page is None:
            page = decode_html(data, charset, errors=errors)
            if page is None:
                return None
        html = page
    return _scanned(html.replace("\x00", "") if isinstance(html, str) else html.replace(b"\x00", b""), page=True)[5]


def extract_with_page(html: str | bytes, mode: str = "main", *, url: str | None = None) -> TextWithFingerprint:
    """The text of a page as :func:`neardup.text.html.extract_text` gives it ("" for none) and its
    whole-page fingerprint, in mode "main" from the scan that precedes the parse (one read)."""
    got = _extract(html, mode, url=url, with_page=True)
    return TextWithFingerprint(got.text or "", got.page_fingerprint)


def extract_page(mode: str, html, url, charset, errors):
    """The text of one page (None: unparsable), or ``(reason, detail)`` of a page that is not
    decodable ("" for detail: the reader's) or has no text, as the serial reader would say it;
    for a mode ending in :data:`WITH_PAGE`, the text and the whole-page fingerprint as
    :class:`TextWithFingerprint` (the text as in its own mode)."""
    with_page = mode.endswith(WITH_PAGE)
    if with_page:
        mode = mode[:-len(WITH_PAGE)]
    if charset == FROM_STR:
        # a UTF-8 page is extracted from its bytes (the same text as from the str: the scan
        # would encode the str back to these bytes); lone surrogates and blank pages take the str
        page = utf8_page(html, text=True) if mode != "article" else None
        if page is not None:
            return _page_result(extract_utf8(page, mode, url=url, with_page=with_page), with_page)
        html = html.decode("utf-8", "surrogatepass")
    elif type(html) is bytes:
        page = utf8_page(html, charset) if mode != "article" else None
        if page is not None:  # needs no decoding (and is not blank)
            return _page_result(extract_utf8(page, mode, url=url, with_page=with_page), with_page)
        html = decode_html(html, charset, errors=errors)
        if html is None:
            return ("undecodable", "")
        if not html or html.isspace():
            return ("empty", "the text is empty" if not html else "the text is only white space")
    return _page_result(_extract(html, mode, url=url, with_page=with_page), with_page)


def _page_result(got, with_page: bool):
    """The extraction's result as the readers take it: with the fingerprint only for a page with
    text (a page without text is skipped, and its fingerprint goes with it)."""
    return got if not with_page or got.text else got.text


def extract_many(mode: str, pages: list[tuple]) -> list:
    """Run in a worker process: extract a chunk of pages (``_Pending.job`` tuples)."""
    return [extract_page(mode, *page) for page in pages]
