"""Named points of a run, where the fault tests and benchmarks act (:func:`reached`).

``NEARDUP_TEST_KILL_AT=POINT`` makes the process SIGKILL itself when it reaches ``POINT`` (a stage
name, ``kept-shard-N``, ``publish``); ``NEARDUP_TEST_FAULT=memory@POINT`` raises MemoryError there;
``NEARDUP_TEST_TRACE=FILE`` appends ``POINT <unix time>`` to FILE at each point (benchmarks/resume.py
places its kills by it); ``NEARDUP_TEST_NO_DISK_CHECK=1`` skips the disk check before the run, so that
a disk filled on purpose fails while written. For the fault tests and benchmarks only.
"""

from __future__ import annotations

import os
import signal

__all__ = ["reached"]

_KILL_ENV = "NEARDUP_TEST_KILL_AT"
_FAULT_ENV = "NEARDUP_TEST_FAULT"
_TRACE_ENV = "NEARDUP_TEST_TRACE"


def reached(point: str) -> None:
    """A named point of the run (test hooks only; nothing happens unless their variables are set)."""
    trace = os.environ.get(_TRACE_ENV)
    if trace:
        import time

        with open(trace, "a", encoding="utf-8") as fh:
            fh.write(f"{point} {time.time():.6f}\n")
    kill = os.environ.get(_KILL_ENV)
    if kill and point in kill.split(","):
        os.kill(os.getpid(), signal.SIGKILL)
    fault = os.environ.get(_FAULT_ENV)
    if fault and fault == f"memory@{point}":
        raise MemoryError(f"test fault at {point}")
