"""Where a run's outputs go, and how they become visible: a local folder or any fsspec URL.

A run writes every output file into a staging folder inside its work folder
(:class:`~neardup.io.write.runfolder.RunFolder`), under its final name, and the target publishes
them only when all are complete (:meth:`OutputTarget.publish`):

- a local folder: each file is renamed into place (same filesystem, so each rename is atomic),
  then ``summary.json`` is written to a temporary name, flushed to disk and renamed: a folder
  holding ``summary.json`` is complete;
- an fsspec URL (``s3://bucket/dedup/``, ``gs://``, ``memory://``...; the client's extra as for
  inputs, :data:`neardup.io.read.sources.EXTRAS`): each file is uploaded,
  ``summary.json`` last (an object store has no rename; one object's upload is atomic, so the
  summary's presence again means the rest is there).

Before a run (fresh or resumed) writes anything, :meth:`OutputTarget.unpublish` removes an older
``summary.json``, so a folder being rewritten never looks complete.

Write errors that are the machine's, not the program's (a full disk, a read-only filesystem, a
file-size limit) become an :class:`~neardup.errors.OutputError` naming the path and the space the
run needs (:func:`output_error`).
"""

from __future__ import annotations

import errno
import os
import shutil
from contextlib import contextmanager

import orjson

from ...errors import MissingDependencyError, OutputError
from ..read.sources import EXTRAS
from .checkpoints import reached

__all__ = ["OutputTarget", "open_target", "output_error", "is_url", "fsync_dir", "write_atomic", "naming",
           "SUMMARY", "DISK_ERRNOS"]

SUMMARY = "summary.json"

#: errno values that mean "the machine cannot take this write" rather than a bug: full disk or
#: quota, a read-only filesystem, a file-size limit (RLIMIT_FSIZE), permission.
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM}

#: The client each URL scheme needs (the extra that installs it: :data:`neardup.io.read.sources.EXTRAS`).
_CLIENTS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "hf": "huggingface_hub",
            "http": "aiohttp", "https": "aiohttp", "az": "adlfs", "abfs": "adlfs"}


def is_url(path: str) -> bool:
    """True for ``scheme://...`` other than ``file://`` (which is a local path)."""
    path = os.fspath(path)
    return "://" in path and not path.startswith("file://")


@contextmanager
def naming(path: str):
    """Give an OSError raised inside (a write to an open file carries no file name) the name of
    the file being written, so that the error message can name it."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = path
        raise


def fsync_dir(path: str) -> None:
    """Make the renames inside folder ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary name, flushed to disk, then renamed."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with naming(tmp), open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    fsync_dir(os.path.dirname(path) or ".")


def summary_bytes(summary: dict) -> bytes:
    return orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n"


class OutputTarget:
    """The output folder of a run: ``url`` is what the user gave (a local path or a URL)."""

    def __init__(self, url: str, fs=None, root: str | None = None):
        self.url = url
        self.fs = fs  # None for a local folder
        self.root = root if root is not None else url  # the path inside fs

    @property
    def is_local(self) -> bool:
        return self.fs is None

    def join(self, name: str) -> str:
        """The full location of output file ``name`` (a path, or a URL for a remote target)."""
        if self.is_local:
            return os.path.join(self.url, name)
        return self.url.rstrip("/") + "/" + name

    def _remote(self, name: str) -> str:
        return self.root.rstrip("/") + "/" + name

    def prepare(self) -> None:
        """Create the folder (local) and check that it can be written: fails early, before the run's
        work, with the folder's path."""
        if self.is_local:
            try:  # (a folder that cannot be written fails when the work folder is made in it, with its errno)
                os.makedirs(self.url, exist_ok=True)
            except OSError as exc:
                raise output_error(exc, self.url) from exc
        else:
            try:
                self.fs.makedirs(self.root, exist_ok=True)
            except OSError as exc:
                raise output_error(exc, self.url) from exc

    def summary(self) -> dict | None:
        """The published summary, or None when the folder is not complete."""
        try:
            if self.is_local:
                with open(self.join(SUMMARY), "rb") as fh:
                    return orjson.loads(fh.read())
            return orjson.loads(self.fs.cat_file(self._remote(SUMMARY)))
        except (OSError, ValueError):
            return None

    def unpublish(self) -> None:
        """Remove an older ``summary.json``: from now on the folder does not look complete."""
        try:
            if self.is_local:
                path = self.join(SUMMARY)
                # and the temporary file of a summary whose writing was killed before its rename
                stale = [n for n in os.listdir(self.url) if n.startswith(f"{SUMMARY}.tmp-")]
                for name in stale:
                    os.remove(self.join(name))
                if os.path.lexists(path) or stale:
                    if os.path.lexists(path):
                        os.remove(path)
                    fsync_dir(self.url)
            elif self.fs.exists(self._remote(SUMMARY)):
                self.fs.rm_file(self._remote(SUMMARY))
        except OSError as exc:
            raise output_error(exc, self.join(SUMMARY)) from exc

    def publish(self, staged: str, names: list[str], summary: dict, obsolete=()) -> None:
        """Move (or upload) the complete files ``names`` from folder ``staged`` into place, remove
        the ``obsolete`` names an older run left (other shards), then write ``summary.json`` last."""
        current = None
        try:
            if self.is_local:
                for name in names:
                    current = self.join(name)
                    src = os.path.join(staged, name)
                    if not os.path.exists(src) and os.path.exists(current):
                        continue  # moved by a run killed while publishing
                    os.replace(src, current)
                reached("publish-moved")
                for name in obsolete:
                    current = self.join(name)
                    if name not in names and os.path.lexists(current):
                        os.remove(current)
                fsync_dir(self.url)
                current = self.join(SUMMARY)
                write_atomic(current, summary_bytes(summary))
            else:
                for name in names:
                    current = self.join(name)
                    self.fs.put_file(os.path.join(staged, name), self._remote(name))
                reached("publish-moved")
                for name in obsolete:
                    current = self.join(name)
                    if name not in names and self.fs.exists(self._remote(name)):
                        self.fs.rm_file(self._remote(name))
                current = self.join(SUMMARY)
                self.fs.pipe_file(self._remote(SUMMARY), summary_bytes(summary))
        except OSError as exc:
            raise output_error(exc, current or self.url) from exc

    def listing(self) -> list[str]:
        """The names of the files in the folder now (for the obsolete shards of an older run)."""
        try:
            if self.is_local:
                return sorted(os.listdir(self.url))
            return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.root, detail=False))
        except OSError:
            return []


def open_target(output: str) -> OutputTarget:
    """The target of ``-o OUTPUT``: a local folder, ``file://`` path, or fsspec URL (the URL's client
    comes with its extra: ``pip install 'neardup[s3]'``, ``[gcs]``, ``[hf]``, ``[http]``, ``[remote]``)."""

    output = os.fspath(output)
    if output.startswith("file://"):
        return OutputTarget(output[len("file://"):])
    if not is_url(output):
        return OutputTarget(output)
    scheme = output.split("://", 1)[0].lower()
    extra = EXTRAS.get(scheme, "remote")
    try:
        import fsspec
    except ImportError as exc:
        raise MissingDependencyError(
            f"{scheme}:// outputs need fsspec and {_CLIENTS.get(scheme, 'its client')}: "
            f"pip install 'neardup[{extra}]'") from exc
    try:
        fs, root = fsspec.core.url_to_fs(output)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{scheme}:// outputs need {_CLIENTS.get(scheme, 'the fsspec client of ' + scheme)}: "
            f"pip install 'neardup[{extra}]'") from exc
    except ValueError as exc:  # an unknown protocol
        raise OutputError(f"{output}: {exc}") from exc
    return OutputTarget(output, fs, root)


def folder_bytes(path: str) -> int:
    """Bytes held by the files under ``path`` (0 if it is gone)."""
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _mb(nbytes: float) -> str:
    return f"{nbytes / (1 << 20):,.1f} MB"


def free_bytes(path: str) -> int | None:
    """Free bytes on the filesystem holding ``path`` (or its nearest existing parent)."""
    p = os.path.abspath(path)
    while p and not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def output_error(exc: OSError, path: str, *, needed: int | None = None, used: int = 0) -> OSError | OutputError:
    """The one-line :class:`OutputError` for a write the machine refused, or ``exc`` itself when it
    is another kind of error. ``needed``: the bytes the run needs on that filesystem, if known;
    ``used``: what the run's own files hold there now (so the room it had is free + used)."""
    if not isinstance(exc, OSError):
        return exc
    where = exc.filename or path
    if exc.errno is None and exc.filename and (free_bytes(where) or 0) < (64 << 10):
        # a library's write error without errno (Arrow's, numpy's tofile) on a disk left with no room
        exc = OSError(errno.ENOSPC, f"No space left on device ({exc})", exc.filename)
    if exc.errno not in DISK_ERRNOS:
        return exc
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        free = free_bytes(where)
        need = f": the run needs about {_mb(needed)} there" if needed else ""
        have = f" and had {_mb(free + used)}" if free is not None and needed else ""
        what = "no space left on the device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        msg = f"{what} writing {where}{need}{have}; free some space or choose another output (-o, --work-dir)"
    elif exc.errno == errno.EFBIG:
        need = f" (the run needs about {_mb(needed)})" if needed else ""
        msg = f"file too large writing {where}: the file-size limit (ulimit -f) was reached{need}"
    elif exc.errno == errno.EROFS:
        msg = f"read-only filesystem: cannot write {where}; choose a writable -o"
    else:
        msg = f"permission denied: cannot write {where}; choose a writable -o"
    return OutputError(msg + "; the output is not complete (no summary.json)")
