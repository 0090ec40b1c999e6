"""The extraction of pages in the HTML worker processes of ``neardup.io.read.extract`` (``jobs > 1``).

A worker runs :func:`extract_many` on chunks the reading process sends; this module imports only
the extraction (:mod:`neardup.text.html`), so that the forkserver preloads it once and a worker
forked from it imports nothing more when it unpickles its first call. Were the worker's function
in ``neardup.io.read``, each worker would import the readers and through them numpy, the
WARC readers and the text spill (~0.15 s of CPU a worker, on cores the reading process needs).
"""

from __future__ import annotations

from .html import _extract, decode_html, extract_utf8, utf8_page

#: The charset of a str sent as its UTF-8 (``neardup.io.read.extract.PendingPage.job``).
FROM_STR = "\x00str"


def extract_page(mode: str, html, url, charset, errors):
    """The text of one page (None: unparsable), or ``(reason, detail)`` of a page that is not
    decodable ("" for detail: the reader's) or has no text, as the serial reader would say it."""
    if charset == FROM_STR:
        # a UTF-8 page is extracted from its bytes (the same text as from the str: the scan
        # would encode the str back to these bytes); lone surrogates and blank pages take the str
        page = utf8_page(html, text=True) if mode != "article" else None
        if page is not None:
            return extract_utf8(page, mode, url=url)
        html = html.decode("utf-8", "surrogatepass")
    elif type(html) is bytes:
        page = utf8_page(html, charset) if mode != "article" else None
        if page is not None:  # needs no decoding (and is not blank)
            return extract_utf8(page, mode, url=url)
        html = decode_html(html, charset, errors=errors)
        if html is None:
            return ("undecodable", "")
        if not html or html.isspace():
            return ("empty", "the text is empty" if not html else "the text is only white space")
    return _extract(html, mode, url=url)


def extract_many(mode: str, pages: list[tuple]) -> list:
    """Run in a worker process: extract a chunk of pages (``_Pending.job`` tuples)."""
    return [extract_page(mode, *page) for page in pages]
