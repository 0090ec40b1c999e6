"""SIGTERM as an exception of the main thread, and the few steps it must not cut in two.

A crawler stops ``neardup`` with SIGTERM. Python's default ends the process at once, leaving the
extraction workers (started by a forkserver, so not its children) alive and holding the caller's
pipes: the caller waits on them forever. So the command raises :class:`Terminated` in its main
thread instead and unwinds like an interrupt, shutting its worker pools down on the way out.

An exception raised by a signal handler lands between any two bytecodes, and a few steps must not
be cut in two: starting a pool's worker process is one (a worker started but not yet recorded by
its pool is never told to stop, and waits for work forever). Such a step runs under
:func:`uninterrupted`: a SIGTERM that arrives during it is raised as soon as it has ended.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Terminated", "received", "stop_on_sigterm", "uninterrupted"]


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the command unwinds like an interrupt."""


# (read and written by the main thread only: the signal handler runs there, and so do the steps
# it must wait for)
_held = 0
_arrived = False
_received = False


def _raise_terminated(signum, frame):
    global _arrived, _received
    _received = True
    if _held:
        _arrived = True  # raised at the end of the step
        return
    raise Terminated


def received() -> bool:
    """Whether a SIGTERM has come since :func:`stop_on_sigterm`. Code outside neardup may catch
    :class:`Terminated` as it catches anything (a library's ``except BaseException`` that carries
    on); the command asks this when it has ended, and ends by the signal all the same."""
    return _received


def stop_on_sigterm() -> None:
    """Make SIGTERM unwind the command as Ctrl-C does, when nothing else has claimed it (the
    service's server has its own); the command then ends by the signal itself."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextlib.contextmanager
def uninterrupted():
    """A step that a SIGTERM must not cut in two: one that arrives meanwhile is raised at its end
    (only in the main thread; elsewhere the step runs as it is)."""
    global _held, _arrived
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _held += 1
    try:
        yield
    finally:
        _held -= 1
        if not _held and _arrived:
            _arrived = False
            raise Terminated
