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
#: A mode ending so (``"main" + WITH_PAGE``) extracts the text of that mode and the whole page's
#: text from one read of the page (:class:`PageTexts`): ``neardup changes`` tells ``template``
#: from ``unchanged`` by the whole page without reading the inputs a second time.
WITH_PAGE = "+whole"


class PageTexts:
    """The text of a page in its mode and its whole page's text (None: none to be had)."""

    __slots__ = ("text", "page")

    def __init__(self, text: str, page: str | None):
        self.text, self.page = text, page

    def __reduce__(self):  # (sent back from the worker processes)
        return PageTexts, (self.text, self.page)


def extraction_mode(html: str, page_texts: bool) -> str:
    """The mode the extraction runs for a reader's ``html`` mode, with the whole page's text
    beside when asked for (``page_texts``; in mode "whole" the text is the whole page already)."""
    return html + WITH_PAGE if page_texts and html != "whole" else html


def extract_page(mode: str, html, url, charset, errors):
    """The text of one page (None: unparsable), or ``(reason, detail)`` of a page that is not
    decodable ("" for detail: the reader's) or has no text, as the serial reader would say it;
    for a mode ending in :data:`WITH_PAGE`, the text and the whole page's text as
    :class:`PageTexts` (each extracted as in its own mode: the same texts as two reads give)."""
    if mode.endswith(WITH_PAGE):
        text = extract_page(mode[:-len(WITH_PAGE)], html, url, charset, errors)
        if not text or type(text) is tuple:
            return text
        page = extract_page("whole", html, url, charset, errors)
        return PageTexts(text, page if type(page) is str and page else None)
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
