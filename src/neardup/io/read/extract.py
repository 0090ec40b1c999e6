"""HTML extraction in worker processes (``jobs > 1``): the pages the readers leave pending
(:class:`PendingPage`) are extracted in chunks, a bounded window ahead, and the records come out
in the same order with the same texts as when read serially (:func:`extract_in_parallel`)."""

from __future__ import annotations

import os

from ...termination import uninterrupted
from ...text.html_pages import FROM_STR, TextWithFingerprint, extract_many
from ..documents import Document, Skipped

__all__ = ["PendingPage", "extracted_record", "extract_pages", "extract_in_parallel", "EXTRACT_WORKERS"]


class PendingPage:
    """A document whose HTML is still to be extracted (``jobs > 1``): ``html`` is a str, or the
    page's bytes, decoded by the worker too (with ``charset``, ``errors``; ``undecodable`` is
    the Skipped's detail when they do not decode), which spares the reading process the
    decoding and the pickling of a str."""

    __slots__ = ("ident", "n", "src", "meta", "html", "url", "charset", "errors", "undecodable")

    def __init__(self, ident, n, src, meta, html, url, charset=None, errors="replace", undecodable=""):
        self.ident, self.n, self.src, self.meta, self.html, self.url = ident, n, src, meta, html, url
        self.charset, self.errors, self.undecodable = charset, errors, undecodable

    def job(self, pickled: bool = False):
        """What the worker gets. A str goes to a worker process as its UTF-8 (a bytes object is
        pickled at the speed of a copy, a str at the speed of a codec), decoded back there to
        the same str (lone surrogates included)."""
        if pickled and type(self.html) is str:
            return (self.html.encode("utf-8", "surrogatepass"), self.url, FROM_STR, self.errors)
        return (self.html, self.url, self.charset, self.errors)

    def outcome(self, result):
        """The Document or Skipped for what the worker returned (:func:`neardup.text.html_pages.extract_page`)."""
        if type(result) is tuple:
            reason, detail = result
            return Skipped(self.ident, self.n, self.src, reason, detail or self.undecodable)
        return extracted_record(self.ident, self.n, self.src, self.meta, result)


def extracted_record(ident, n, src, meta, text):
    """The record of a page's extracted text: ``extraction_failed`` (None: unparsable), ``empty``
    (no visible text), else a Document (with its whole-page fingerprint, from :class:`TextWithFingerprint`)."""
    if type(text) is TextWithFingerprint:
        return Document(ident, text.text, n, src, meta, text.page_fingerprint)
    if text is None:
        return Skipped(ident, n, src, "extraction_failed", "the HTML could not be parsed")
    if not text:
        return Skipped(ident, n, src, "empty", "no visible text in the HTML")
    return Document(ident, text, n, src, meta)


_CHUNK_PAGES = 8
#: Where ``jobs > 1`` extracts HTML: "processes" (scale with the cores; a second to start) or
#: "threads" (lexbor's parse and the markup scan release the GIL, the CSS queries do not).
EXTRACT_WORKERS = os.environ.get("NEARDUP_EXTRACT_WORKERS", "processes")
_CHUNK_BYTES = 8 << 20
_CHUNK_ITEMS = 4096


class _Done:
    """The texts of a chunk extracted in the reading process (as a future that is done)."""

    __slots__ = ("texts",)

    def __init__(self, texts):
        self.texts = texts

    def result(self):
        return self.texts


#: While the worker processes start, the reading process extracts chunks itself, up to this many
#: chunks ahead of the first one the workers will return.
_WARMUP_CHUNKS = 64


def extract_pages(items, mode: str, jobs: int):
    """``items`` in the same order, with every :class:`PendingPage` replaced by its Document or Skipped;
    the extraction runs in ``jobs`` worker processes, a bounded window of chunks ahead. Until the
    first of them has returned a chunk (they start through a forkserver), the chunks beyond the
    ones queued for them are extracted here, so no core waits for the start."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    window: deque = deque()

    def resolve(buf, pend, fut):
        if pend:
            try:
                texts = fut.result()
            except Exception:  # noqa: BLE001 - a worker died (BrokenProcessPool): extract here
                texts = extract_many(mode, [p.job(pickled) for p in pend])
            results = iter(texts)
        for item in buf:
            if type(item) is PendingPage:
                yield item.outcome(next(results))
            else:
                yield item

    pickled = EXTRACT_WORKERS != "threads"  # the pages go to other processes
    if not pickled:
        from concurrent.futures import ThreadPoolExecutor

        pool_cm = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-extract")
    else:
        ctx = multiprocessing.get_context("forkserver")  # no fork of a process that may run threads
        # imported once, not per worker: a worker then imports nothing to unpickle its calls
        ctx.set_forkserver_preload(["neardup.text.html_pages", "selectolax.lexbor"])
        pool_cm = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    with pool_cm as pool:
        def submit(pages: list):
            with uninterrupted():  # (a submit may start a worker process)
                return pool.submit(extract_many, mode, [p.job(pickled) for p in pages])

        try:
            buf: list = []
            pend: list = []
            size = 0
            warm = not pickled  # threads run at once; processes once one has returned a chunk
            queued: list = []  # the chunks given to the processes before they were warm
            for item in items:
                buf.append(item)
                if type(item) is PendingPage:
                    pend.append(item)
                    size += len(item.html)
                if len(pend) >= _CHUNK_PAGES or size >= _CHUNK_BYTES or len(buf) >= _CHUNK_ITEMS:
                    # the pages stay until their texts are back (a bounded window), to be extracted
                    # here if a worker dies
                    if not pend:
                        fut = None
                    elif warm or len(queued) <= jobs:
                        fut = submit(pend)
                        if not warm:
                            queued.append(fut)
                    else:  # the processes are starting, with work queued: this chunk is done here
                        fut = _Done(extract_many(mode, [p.job() for p in pend]))
                    window.append((buf, pend, fut))
                    buf, pend, size = [], [], 0
                    if not warm:
                        warm = any(f.done() for f in queued)
                    while len(window) > (2 * jobs if warm else _WARMUP_CHUNKS):
                        yield from resolve(*window.popleft())
            if buf:
                window.append((buf, pend, submit(pend) if pend else None))
            while window:
                yield from resolve(*window.popleft())

        except BaseException:
            # the reader stopped early (an error, SIGTERM, the generator closed): the chunks not
            # started are cancelled and the workers end once their current chunk is done. (Waited
            # for here: a shutdown that does not wait leaves it to the pool's own thread, which a
            # process ending by SIGTERM does not wait for, and the workers wait for work forever.)
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def extract_in_parallel(reader, items):
    """``items`` with their pending pages extracted: in worker processes (:func:`extract_pages`)
    when the reader has ``jobs > 1``; else ``items`` as they are (nothing is pending)."""
    if reader.jobs > 1:
        return extract_pages(items, reader.extraction, reader.jobs)
    return items
