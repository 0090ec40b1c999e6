"""Keep an index file in memory while a long-running process serves it.

Why. A query reads about 55 pages at random places of the index's B-trees; when some of them
are not in the operating system's page cache, each costs a disk read, and these reads make the
tail of the latency (measured at 1M documents: query p99 4.3 ms with the file cached, 37-68 ms
after part of the 2.65 GB file had left the cache). Two things push an index's pages out while
a server runs:

* proactive reclaim. Machines that run DAMON's ``pageout`` scheme (this project's benchmark
  VM does: pages not accessed for about 60 s are paged out, with filters that spare anonymous
  memory and page-cache pages that some process has *mapped*) evict the file pages a process
  reads with ``read()``. SQLite maps at most the first 2 GB of a file (``SQLITE_MAX_MMAP_SIZE``
  in the usual builds) and reads the rest, and every page a checkpoint writes, into unmapped
  page cache. Redis, all anonymous memory, keeps its data; the index lost its cold pages.
* the ordinary LRU of a busy machine, which prefers to keep pages that are mapped and recently
  referenced.

What. :class:`ResidentFile` maps the whole file read-only and shared (``MAP_SHARED``, no copy:
the mapping is the page cache itself) and, in a background thread, asks the kernel to fault
every page into the mapping (``madvise(MADV_POPULATE_READ)``, Linux 5.14+), a piece at a time
so that neither startup nor the GIL waits for it. Every ``interval`` seconds it looks at the
file again: pages a checkpoint appended are mapped (the mapping is extended with ``mremap``),
and pages the kernel took back anyway are read in again. Pages written in place stay mapped.
The process never reads the mapping itself: ``MADV_POPULATE_READ`` reports a page beyond the end
of a file that shrank as an error instead of raising ``SIGBUS``, so a file truncated or
replaced under the process (``VACUUM``, a restore) cannot crash it; a replaced or removed file
is let go and the new one, if any, mapped on the next round.

Cost. The page cache holds the whole file (its size on disk, shared by every process that maps
it, and counted in their ``RssFile``) plus page tables of about 2 MB per GB mapped in each
process. Nothing is locked: ``mlock`` would need ``RLIMIT_MEMLOCK`` raised (8 MB by default),
and under real memory pressure the kernel may still take mapped pages back, to be read in again
on the next round. Elsewhere than Linux (or on older kernels) nothing is mapped and
:attr:`ResidentFile.state` says why.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import sys
import threading

log = logging.getLogger("neardup.store")

_PROT_READ = 0x1
_MAP_SHARED = 0x01
_MREMAP_MAYMOVE = 1
_MADV_POPULATE_READ = 22
_MAP_FAILED = ctypes.c_void_p(-1).value
#: Bytes populated per madvise call: small enough that a stop request is seen quickly.
_PIECE = 64 << 20


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.mmap.restype = ctypes.c_void_p
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.munmap.restype = ctypes.c_int
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.madvise.restype = ctypes.c_int
        libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
        libc.mremap.restype = ctypes.c_void_p
        return libc
    except (OSError, AttributeError):
        return None


class ResidentFile:
    """Map ``path`` and keep its pages mapped, from a background thread, until :meth:`close`.

    Args:
        path: the file (an index database).
        interval: seconds between two looks at the file (growth, replacement, pages taken back).
            Shorter than the 60 s after which proactive reclaim takes unmapped pages, so that
            pages a checkpoint appends are mapped before they can go.

    ``state`` is ``"starting"``, ``"populating"``, ``"resident"`` (every page of the file as it
    was at the last round is mapped), ``"waiting"`` (no file at the path), ``"closed"`` or
    ``"unsupported: <why>"``. :meth:`info` gives the figures.
    """

    def __init__(self, path, *, interval: float = 15.0):
        self.path = os.fspath(path)
        self.interval = float(interval)
        self.state = "starting"
        self.rounds = 0
        self.mapped_bytes = 0      # length of the file covered by the mapping
        self._addr: int | None = None
        self._length = 0           # length of the mapping (may reach past the end of the file)
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._libc = _libc()
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._thread: threading.Thread | None = None
        if self._libc is None:
            self.state = "unsupported: needs Linux (mmap, madvise through libc)"
            return
        self._thread = threading.Thread(target=self._loop, name="neardup-resident", daemon=True)
        self._thread.start()

    # -- the background thread -----------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._round()
                if self.state.startswith("unsupported"):
                    return
                self._stop.wait(self.interval)
        except Exception as exc:  # never take the server down: report and stop keeping resident
            self.state = f"unsupported: {type(exc).__name__}: {exc}"
            log.warning("keeping %s resident stopped: %s", self.path, exc)
        finally:
            with self._lock:
                self._release()
            if not self.state.startswith("unsupported"):
                self.state = "closed"

    def _round(self) -> None:
        try:
            st = os.stat(self.path)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None
        with self._lock:
            if self._stop.is_set():
                return
            if ident is None or ident != self._ident:
                # First round, or the file was replaced or removed: let the old one go.
                self._release()
                if ident is None:
                    self.state = "waiting"
                    return
                try:
                    self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                except OSError:
                    self.state = "waiting"
                    return
                self._ident = ident
            size = os.fstat(self._fd).st_size
            if size > self._length:
                self._map(size)
            self.state = "populating"
        done = 0
        while done < size and not self._stop.is_set():
            n = min(_PIECE, size - done)
            with self._lock:  # close() waits for the piece in progress, never unmaps under it
                if self._addr is None or self._stop.is_set():
                    return
                # Rounded up to whole pages; pages past the end of the file are reported as EFAULT.
                length = -(-n // self._page) * self._page
                rc = self._libc.madvise(self._addr + done, length, _MADV_POPULATE_READ)
                err = ctypes.get_errno() if rc != 0 else 0
            if rc != 0:
                if err in (errno.EINVAL, errno.ENOSYS):
                    self.state = "unsupported: the kernel has no MADV_POPULATE_READ (Linux 5.14+)"
                    return
                if err == errno.EFAULT:  # the file shrank under us: look again next round
                    break
                if err != errno.EINTR and err != errno.EAGAIN:
                    raise OSError(err, os.strerror(err))
                continue
            done += n
        self.mapped_bytes = min(done, size)
        self.rounds += 1
        if done >= size:
            self.state = "resident"

    def _map(self, size: int) -> None:
        # Reserve room to grow (twice the size, at least 64 MB): a mapping may reach past the end
        # of the file as long as nobody reads there, and growth then needs no new mapping.
        want = max(2 * size, 64 << 20)
        want = -(-want // self._page) * self._page
        if self._addr is None:
            addr = self._libc.mmap(None, want, _PROT_READ, _MAP_SHARED, self._fd, 0)
        else:
            # mremap keeps the pages already mapped (it moves page tables, not data).
            addr = self._libc.mremap(self._addr, self._length, want, _MREMAP_MAYMOVE)
        if addr in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            raise OSError(err, f"cannot map {self.path}: {os.strerror(err)}")
        self._addr, self._length = addr, want

    def _release(self) -> None:
        if self._addr is not None:
            self._libc.munmap(self._addr, self._length)
        if self._fd is not None:
            os.close(self._fd)
        self._addr, self._length, self._fd, self._ident = None, 0, None, None
        self.mapped_bytes = 0

    # -- the owner's side ------------------------------------------------------------------------
    def info(self) -> dict:
        """``{"state", "mapped_bytes", "rounds"}``."""
        return {"state": self.state, "mapped_bytes": self.mapped_bytes, "rounds": self.rounds}

    def close(self) -> None:
        """Stop the thread and unmap (idempotent; the page cache keeps what the kernel likes)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._lock:
            self._release()
        if not self.state.startswith("unsupported"):
            self.state = "closed"

    def __enter__(self) -> "ResidentFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
