"""The ``neardup`` command. Each sub-command lives in its own module with a ``register`` function.

User mistakes print one line ``neardup: error: ...`` naming the problem and the fix; no
traceback. The exit statuses are those of :mod:`neardup.exitcodes`: 2 for a usage mistake (a bad
option or parameter), 3 for an input that cannot be read (a missing path, an unreadable or corrupt
file, a glob that matches nothing), 1 for a run that skipped more than ``--max-skipped`` allows.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import time

from ..termination import Terminated, received, stop_on_sigterm

# numpy's OpenBLAS starts a thread per core at import that spins for a while; the command never
# calls BLAS on a hot path, and that spinning competes with the kernel's threads on small
# machines (about 0.08 s of CPU at every start). Set before numpy is imported; a user's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Modules that add sub-commands, in the order they appear in --help.
COMMAND_MODULES = ["neardup.cli.core", "neardup.cli.dedup", "neardup.cli.plan", "neardup.cli.evaluate", "neardup.cli.report", "neardup.cli.index", "neardup.cli.changes"]


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Find exact copies, near-copies and contained pages in documents and web crawls.",
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


#: Set by a command whose work is all written and closed when it returns (``dedup`` on the local
#: engine), so that :func:`run` may skip the interpreter's teardown.
nothing_left_to_close = False


def run() -> None:
    """The ``neardup`` program: :func:`main`, then exit.

    When the command said it has nothing left to close, the process exits at once after
    flushing its output (``os._exit``): tearing down a large run's Python objects one by one
    takes tens of milliseconds that the operating system saves by dropping the whole process.
    """
    from ..io.read.sources import remove_stdin_copy

    code = main()
    remove_stdin_copy()  # os._exit below skips atexit
    if nothing_left_to_close:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


# How long a run that ran out of memory waits for its other threads before it says so.
SETTLE_SECONDS = 2.0


def settle_threads(seconds: float = SETTLE_SECONDS) -> None:
    """Wait, up to ``seconds`` in all, for the process's other threads to end. Out of memory, the
    threads of a run unwind beside the main thread, and what the interpreter prints as they drop
    their objects would otherwise land in the middle of the one line that says what happened."""
    deadline = time.monotonic() + seconds
    for t in threading.enumerate():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if t is not threading.current_thread():
            t.join(left)


def main(argv: list[str] | None = None) -> int:
    from ..errors import InputError, NeardupError, OutputError, RunMemoryError
    from ..exitcodes import INPUT_ERROR, OUTPUT_ERROR, USAGE

    parser = build_parser()
    args = parser.parse_args(argv)
    stop_on_sigterm()
    try:
        try:
            status = int(args.handler(args) or 0)
        except Exception:
            # An error raised while the run unwinds from a SIGTERM (a pool writing to a worker that
            # has gone: a broken pipe, which alone would end the command quietly with 0) replaces
            # the Terminated it interrupted; the signal is still what ended the run.
            if received():
                raise Terminated from None
            raise
        if received():
            raise Terminated  # a SIGTERM that some code caught on its way: the command still ends by it
        return status
    except RunMemoryError as exc:
        settle_threads()
        print(f"neardup: error: {exc}", file=sys.stderr)
        return OUTPUT_ERROR
    except OutputError as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return OUTPUT_ERROR
    except InputError as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return INPUT_ERROR
    except NeardupError as exc:
        from ._common import option_error

        print(f"neardup: error: {option_error(exc, args)}", file=sys.stderr)
        return USAGE
    except FileNotFoundError as exc:
        print(f"neardup: error: no such file: {exc.filename} (check the path)", file=sys.stderr)
        return 2
    except IsADirectoryError as exc:
        print(f"neardup: error: {exc.filename} is a folder; give a file", file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(f"neardup: error: permission denied: {exc.filename}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("neardup: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        # unwound (the worker pools shut down): now end by the signal itself, as a process stopped
        # by SIGTERM is expected to (its parent sees -15, not an exit status)
        print("neardup: terminated", file=sys.stderr)
        sys.stderr.flush()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return 128 + signal.SIGTERM
