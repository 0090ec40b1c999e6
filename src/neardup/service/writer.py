"""The writer: the thread (or child process) that runs the fast path's writes in groups, one
transaction and one ``COMMIT`` for all the requests that arrived meanwhile."""

from __future__ import annotations

import asyncio
import logging
import threading

from ..errors import StoreError

__all__ = ["Writer"]

log = logging.getLogger("neardup.service")


class Writer:
    """The thread that runs the writes of the fast path (single-document add and check-and-add),
    in groups: group commit across requests.

    The event loop queues a request; this thread takes everything queued, sketches the group's
    texts as one batch, runs the writes in one write transaction (each request in order and in
    its own savepoint, so each sees the ones before it and "new exactly once" holds), and answers
    each request only after the ``COMMIT`` (an acknowledged add is in the WAL).

    With ``process=True`` (``neardup serve``) the writes run in a child process of their own
    (:func:`_writer_process`): this thread sketches a group and sends it, a second thread
    receives the answers, and the child runs whatever groups have arrived as one transaction.

    Why a process (measured at 1M documents, 8 clients, 2 cores). The writer is the service's
    bottleneck: about 3 ms of CPU per check-and-add, two thirds of it inside SQLite with the GIL
    released. In the server's process it shares the GIL with the event loop and with sketching,
    and each time it comes back from SQLite it may wait for the GIL; 200-218 requests/s. In a
    process of its own it never waits for a GIL, and the next group is sketched meanwhile, here,
    on the other core. Threads instead (a sketching thread beside the writer thread, or the reads
    done ahead of the write lock on another connection) measured slower: the threads take turns
    on the GIL, and a second connection rereads the pages the writer changed.

    Why one thread and not the thread pool (measured with 8 clients on a 100,000-document index).
    Before, each request went to its own thread-pool thread, sketched there and queued at the
    index's group commit: the threads waking each other and taking turns on the GIL cost about
    2 ms of server CPU per check-and-add beyond the 2.6 ms the same calls take in one thread
    (204 requests/s against 267/s). Requests of other paths (batches, HTML) still go through the
    thread pool and meet these at the index's own write lock.
    """

    #: Most requests in one group (a bound on the wait of the first of them).
    MAX_GROUP = 64
    #: With ``process=True``, most requests sketched and sent together. Small, so that the
    #: writer process always has a group to write while the next one is sketched: 8 clients whose
    #: requests all went out as one group would wait for its answers before sending the next,
    #: and sketching and writing would take turns instead of overlapping (measured without
    #: HTTP at 1M documents: 310 check-and-adds/s in groups of 4, 270/s in groups of up to 64).
    #: The writer process still commits every group that has arrived as one transaction.
    SEND_GROUP = 4

    def __init__(self, index, *, process: bool = False):
        self.index = index
        self.process = process
        self._queue: list = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._child = None          # the writer process and its pipes (process=True)
        self._sent: list = []       # groups sent to the child, oldest first, with their pipes

    def ready(self) -> bool:
        """Whether writes can be taken: not closed, and with process=True a live writer process."""
        with self._cond:
            if self._closed:
                return False
            return not self.process or (self._child is not None and self._child[0].is_alive())

    def queued(self) -> int:
        """Requests waiting for the writer thread."""
        with self._cond:
            return len(self._queue)

    def start(self) -> None:
        """Start the writer process now rather than at the first write (process=True)."""
        if self.process:
            with self._cond:
                self._start_child()

    async def run(self, request):
        """``request`` (``("add", docs)`` or ``("check_and_add", docs, limit)``, as
        :meth:`SeenIndex.prepare_many` takes) sketched, run and committed by the writer thread;
        its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._cond:
            if self._closed:
                raise StoreError("the service is shutting down")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="neardup-writer", daemon=True)
                self._thread.start()
            self._queue.append((request, future, loop))
            self._cond.notify()
        return await future

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    break
                size = self.SEND_GROUP if self.process else self.MAX_GROUP
                group, self._queue = self._queue[:size], self._queue[size:]
            requests = [request for request, _, _ in group]
            if self.process:
                self.send_json(group, requests)
                continue
            try:
                # One batch of sketches for the group (half the cost per document of one at a
                # time); a bad document fails its own request (400), not the others.
                results = _write_prepared(self.index, self.index.prepare_many(requests))
            except BaseException as exc:  # noqa: BLE001 - every waiting request gets an answer
                results = [exc] * len(group)
            _answer(group, results)
        with self._cond:
            child, self._child = self._child, None
        if child is not None:
            _stop_child(child)

    # -- process=True ----------------------------------------------------------------------------
    def _start_child(self):
        """The writer process (started if there is none, or the last one died); under _cond."""
        if self._child is not None and self._child[0].is_alive():
            return self._child
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # no fork of a process that runs threads
        requests_in, requests_out = ctx.Pipe(duplex=False)
        results_in, results_out = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer_process, name="neardup-writer", daemon=True,
                           args=(self.index.path, self.index.synchronous, requests_in, results_out))
        proc.start()
        requests_in.close()
        results_out.close()
        self._child = (proc, requests_out, results_in)
        threading.Thread(target=self._receive, args=(self._child,), name="neardup-writer-answers",
                         daemon=True).start()
        return self._child

    def send_json(self, group, requests) -> None:
        try:
            # Sketched here, while the child writes the groups before this one.
            sketched = self.index.sketch_requests(requests)
        except BaseException as exc:  # noqa: BLE001
            return _answer(group, [exc] * len(group))
        with self._cond:
            try:
                child = self._start_child()
                self._sent.append((group, child))
                child[1].send(sketched)
            except Exception as exc:  # the child is gone (or cannot start): this group fails alone
                if self._sent and self._sent[-1][0] is group:
                    self._sent.pop()
                error = StoreError(f"the index's writer process is not available ({type(exc).__name__}: {exc}); "
                                   f"retry")
                _answer(group, [error] * len(group))

    def _receive(self, child) -> None:
        """Answer the groups sent to ``child``, in order, as its results arrive."""
        proc, _, results = child
        while True:
            try:
                answers = results.recv()
            except (EOFError, OSError):
                break
            with self._cond:  # the oldest group sent to this child (an earlier child's may linger)
                group = self._sent.pop(next(i for i, (_, c) in enumerate(self._sent) if c is child))[0]
            _answer(group, answers)
        # The child stopped: what it had not answered may or may not be committed.
        with self._cond:
            lost = [g for g, c in self._sent if c is child]
            self._sent = [(g, c) for g, c in self._sent if c is not child]
            if self._child is child:
                self._child = None
        for group in lost:
            log.error("the index's writer process stopped (exit code %s)", proc.exitcode)
            _answer(group, [StoreError("the index's writer process stopped; retry (an add may have been "
                                       "stored: a retried check-and-add then reports it as an exact copy)")]
                    * len(group))
        results.close()

    def close(self) -> None:
        """Answer what is queued, then stop the thread (and the writer process)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
            child = self._child if thread is None else None
            if thread is None:
                self._child = None
        if thread is not None:
            thread.join()
        if child is not None:
            _stop_child(child)


def _write_prepared(index, prepared: list) -> list:
    """The results of prepared writes (:meth:`SeenIndex.prepare_many`) run as one transaction:
    a request whose preparation failed keeps its exception; if the transaction fails, every
    request gets that exception."""
    results = list(prepared)
    ready = [i for i, p in enumerate(prepared) if not isinstance(p, BaseException)]
    try:
        for i, r in zip(ready, index.run_prepared([prepared[i] for i in ready])):
            results[i] = r
    except Exception as exc:  # noqa: BLE001 - every waiting request gets an answer
        results = [exc] * len(prepared)
    return results


def _answer(group, results) -> None:
    """Hand each request of ``group`` its result (or exception) on its own event loop."""
    by_loop: dict = {}
    for (_, future, loop), result in zip(group, results):
        by_loop.setdefault(loop, []).append((future, result))
    for loop, answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resolve, answers)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


def _stop_child(child) -> None:
    """Let the writer process finish what it was sent (it answers all of it), then stop."""
    proc, requests, _ = child
    try:
        requests.send(None)
    except (OSError, ValueError):
        pass
    proc.join(timeout=60)
    if proc.is_alive():
        proc.kill()
        proc.join()
    requests.close()


def _writer_process(path: str, synchronous: str, requests, results) -> None:
    """The writer process of :class:`Writer`: runs every group that has arrived as one
    transaction (:meth:`SeenIndex.prepared_of`, :meth:`SeenIndex.run_prepared`) and sends each
    group its results after the ``COMMIT``; stops at ``None`` or when the server is gone."""
    import signal

    from ..store import SeenIndex

    # Ctrl-C reaches the whole process group: the server shuts down and stops this process
    # when it has answered everything (a write cut in the middle would only be rolled back).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    index = SeenIndex(path, create=False, synchronous=synchronous)
    try:
        while True:
            try:
                groups = [requests.recv()]
                while groups[-1] is not None and requests.poll():
                    groups.append(requests.recv())
            except (EOFError, OSError):
                return  # the server is gone
            stop = groups[-1] is None
            if stop:
                groups.pop()
            if groups:
                answers = _write_prepared(index, index.prepared_of([item for group in groups for item in group]))
                start = 0
                for group in groups:
                    results.send(answers[start:start + len(group)])
                    start += len(group)
            if stop:
                return
    finally:
        index.close()
        results.close()


def _resolve(answers) -> None:
    for future, result in answers:
        if future.done():  # the request was cancelled (client gone)
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)
