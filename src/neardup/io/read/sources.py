"""Where input bytes come from: local paths, standard input, globs, lists of paths and fsspec URLs.

Every reader opens its files through this module, so that a location is one string whatever it
names, and a record's ``source`` names it as the user wrote it:

``-`` and ``/dev/stdin``
    Standard input, read ONCE per process into a temporary file in ``$TMPDIR`` (so that the
    second pass that writes the kept corpus reads the same bytes); removed at exit
    (:func:`remove_stdin_copy`). Records name it ``-:<line>`` (or ``/dev/stdin:<line>``). A named
    pipe or ``/dev/fd/N`` (``<(zcat a.gz)``) is copied once the same way.
a URL (``s3://``, ``gs://``, ``hf://``, ``https://``, ``http://``, ``file://``, any fsspec protocol)
    Opened with fsspec; the protocol's client is an extra (:data:`EXTRAS`): a missing one is a
    :class:`~neardup.errors.MissingDependencyError` naming ``pip install 'neardup[EXTRA]'``.
    Options for the filesystem come from fsspec's own configuration, e.g. the environment
    variable ``FSSPEC_S3_ENDPOINT_URL=http://127.0.0.1:9000`` (any ``FSSPEC_<PROTOCOL>_<OPTION>``).
a local path
    As it is.

Folders (local or remote) are walked in sorted order by :func:`walk`, which leaves out the names
:func:`is_hidden_name` says are not data (Spark's and Hadoop's rule, which the Spark engine uses
too): ``_SUCCESS``, ``_committed_*``, ``_delta_log``, ``.part-0.crc``, ``.DS_Store``...
"""

from __future__ import annotations

import glob as globlib
import os
import shutil
import stat
import sys
import tempfile
from typing import Iterator

from ...errors import ConfigError, InputError, MissingDependencyError

__all__ = ["STDIN_NAMES", "EXTRAS", "is_url", "is_hidden_name", "strict_counted", "open_binary", "size_of", "exists", "is_folder",
           "walk", "local_path", "expand_inputs", "read_files_from", "remove_stdin_copy", "failure_reason"]

#: The names that mean standard input.
STDIN_NAMES = ("-", "/dev/stdin")

#: The extra of neardup that installs each protocol's client.
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "hf": "hf", "http": "http", "https": "http"}

_GLOB_CHARS = frozenset("*?[")
#: The temporary copies of standard input ("-") and of pipes given by name, made once per process.
_copies: dict[str, str] = {}


def is_url(path: str) -> bool:
    """True for ``scheme://...`` (a scheme of letters, digits, ``+``, ``-`` or ``.``)."""
    head, sep, _ = path.partition("://")
    return bool(sep) and bool(head) and head[0].isalpha() and all(c.isalnum() or c in "+-." for c in head)


def _protocol(url: str) -> str:
    return url.partition("://")[0].lower()


def _local_of_file_url(url: str) -> str | None:
    """The local path of a ``file://`` URL (read without fsspec), else None."""
    if _protocol(url) != "file":
        return None
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise InputError(f"{url}: a file:// URL on another host ({parts.netloc}) cannot be read")
    return unquote(parts.path)


def filesystem(url: str):
    """``(fsspec filesystem, path inside it)`` for a URL; a missing client names its extra."""
    proto = _protocol(url)
    extra = EXTRAS.get(proto, "remote")
    try:
        import fsspec
    except ImportError:
        raise MissingDependencyError(
            f"{url}: reading {proto}:// URLs needs fsspec: pip install 'neardup[{extra}]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{url}: the {proto}:// client is not installed ({exc}): pip install 'neardup[{extra}]'") from None
    except ValueError as exc:  # an unknown protocol
        raise InputError(f"{url}: {exc}") from None


def is_hidden_name(name: str) -> bool:
    """True for a file or folder name that is not data, by Spark's rule (``InMemoryFileIndex``):
    it starts with ``.``, or with ``_`` and holds no ``=`` (``_SUCCESS``, ``_committed_0``,
    ``_delta_log``; not a partition folder like ``_year=2024``), or it is a Hadoop checksum
    (``.crc``) or a copy under way (``._COPYING_``)."""
    return (name.startswith(".") or (name.startswith("_") and "=" not in name)
            or name.endswith((".crc", "._COPYING_")))


def strict_counted(ignored_files) -> list[dict]:
    """The entries of a run's ``ignored_files`` (``{"path", "reason"}``) that ``--strict`` counts as
    skipped files: every file of a dataset folder that was not read (a ``README.md`` among
    ``part-*.parquet``), but not the names :func:`is_hidden_name` hides (``_SUCCESS``, ``.crc``...),
    which are the dataset's own metadata, never data."""
    return [f for f in ignored_files if not is_hidden_name(f["path"].rstrip("/").rsplit("/", 1)[-1])]


# --------------------------------------------------------------------------- standard input and pipes


def stdin_copy() -> str:
    """The path of this process's copy of standard input, made on first use (read once)."""
    return _copy_once("-", sys.stdin.buffer)


def _copy_once(key: str, stream) -> str:
    """A temporary file holding ``stream``'s bytes, made the first time ``key`` is asked for:
    a stream that cannot be read twice (standard input, a pipe) is read once, and every pass
    reads the copy."""
    path = _copies.get(key)
    if path is None:
        fd, path = tempfile.mkstemp(prefix="neardup-stdin-" if key == "-" else "neardup-pipe-")
        try:
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(stream, out, 1 << 20)
        except BaseException:
            os.unlink(path)
            raise
        if not _copies:
            import atexit

            atexit.register(remove_stdin_copy)
        _copies[key] = path
    return path


def remove_stdin_copy() -> None:
    """Remove the copies of standard input and pipes, if any were made (the command calls this
    before it exits)."""
    while _copies:
        _, path = _copies.popitem()
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _local(path: str) -> str:
    if path in STDIN_NAMES:
        return stdin_copy()
    if path in _copies:
        return _copies[path]
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path  # the open reports it
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):  # <(zcat a.gz), /dev/fd/3: readable once
        with open(path, "rb", buffering=0) as stream:
            return _copy_once(path, stream)
    return path


def local_path(path: str) -> str | None:
    """The local file a location is (standard input's copy for ``-``), or None for a remote URL."""
    if is_url(path):
        return _local_of_file_url(path)
    return _local(path)


# --------------------------------------------------------------------------- one location


def open_binary(path: str, buffering: int = 1 << 20):
    """A readable binary file object of the location's raw (still compressed) bytes."""
    if is_url(path):
        local = _local_of_file_url(path)
        if local is not None:
            return open(local, "rb", buffering=buffering)
        fs, inner = filesystem(path)
        try:
            return fs.open(inner, "rb")
        except FileNotFoundError as exc:
            raise FileNotFoundError(exc.errno or 2, "no such file", path) from None
    return open(_local(path), "rb", buffering=buffering)


def size_of(path: str) -> int:
    if is_url(path):
        local = _local_of_file_url(path)
        if local is not None:
            return os.stat(local).st_size
        fs, inner = filesystem(path)
        return int(fs.size(inner))
    return os.stat(_local(path)).st_size


def exists(path: str) -> bool:
    if path in STDIN_NAMES:
        return True
    if is_url(path):
        local = _local_of_file_url(path)
        if local is not None:
            return os.path.exists(local)
        fs, inner = filesystem(path)
        try:
            return bool(fs.exists(inner))
        except (OSError, PermissionError):
            return False
    return os.path.exists(path)


def is_folder(path: str) -> bool:
    if path in STDIN_NAMES:
        return False
    if is_url(path):
        local = _local_of_file_url(path)
        if local is not None:
            return os.path.isdir(local)
        fs, inner = filesystem(path)
        try:
            return bool(fs.isdir(inner))
        except OSError:
            return False
    return os.path.isdir(path)


def failure_reason(exc: BaseException) -> str:
    """Why a file could not be opened or read, in a few words (an OSError's own words, else the
    exception's type and message)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def missing(path: str) -> str:
    """Why a location that does not exist cannot be read, in a few words."""
    if not is_url(path) and os.path.lexists(path):
        return "a broken link"
    return "no such file or folder"


# --------------------------------------------------------------------------- folders


def walk(top: str) -> Iterator[tuple[str, str | None]]:
    """The data files under the folder ``top`` in a fixed (sorted) order: ``(path, None)``, or
    ``(path, why)`` for one that cannot be read (a broken link, a folder that cannot be listed).
    Names :func:`is_hidden_name` rejects are left out, and their folders are not entered;
    symlinked folders are not followed."""
    if is_url(top):
        local = _local_of_file_url(top)
        if local is None:
            yield from _walk_remote(top)
            return
        top = local
    errors: list[OSError] = []

    def drain():
        while errors:
            err = errors.pop(0)
            yield (err.filename or top), f"cannot list the folder: {err.strerror or err}"

    for dirpath, dirnames, filenames in os.walk(top, onerror=errors.append):
        yield from drain()
        dirnames[:] = sorted(d for d in dirnames if not is_hidden_name(d))
        for name in sorted(filenames):
            if is_hidden_name(name):
                continue
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                yield path, None
            else:
                yield path, "not a regular file (a broken link, a pipe or a socket)"
    yield from drain()


def _walk_remote(top: str) -> Iterator[tuple[str, str | None]]:
    fs, inner = filesystem(top)
    proto = _protocol(top)
    base = inner.rstrip("/")
    try:
        found = fs.find(base, detail=True)
    except OSError as exc:
        yield top, f"cannot list the folder: {exc}"
        return
    for path in sorted(found):
        rel = path[len(base):].lstrip("/") if path.startswith(base) else path
        if any(is_hidden_name(part) for part in rel.split("/") if part):
            continue
        if found[path].get("type", "file") != "file":
            continue
        yield _unstrip(fs, proto, path), None


def _unstrip(fs, proto: str, path: str) -> str:
    """A path that fsspec's ``find`` gave, as a URL of the same protocol."""
    url = fs.unstrip_protocol(path)
    if not url.startswith(proto + "://") and "://" in url:  # e.g. s3a:// given, s3:// returned
        url = proto + "://" + url.partition("://")[2]
    return url


# --------------------------------------------------------------------------- the list of inputs


def _has_glob(path: str) -> bool:
    return any(c in _GLOB_CHARS for c in path)


def expand_inputs(paths, files_from: str | None = None) -> list[str]:
    """The inputs as the command line gives them, with globs expanded (``*``, ``?``, ``[...]``,
    ``**`` for any depth; sorted) and the lines of ``files_from`` (a file or URL with one path
    or URL per line, or ``-`` for standard input) appended. A path that exists as written is never
    taken for a glob; a glob that matches nothing is an InputError. Standard input may be named
    once."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out: list[str] = []
    for p in paths:
        p = os.fsdecode(p)
        out.extend(_expand_one(p))
    if files_from is not None:
        for line in read_files_from(files_from):
            out.extend(_expand_one(line))
    stdin = [p for p in out if p in STDIN_NAMES]
    if len(stdin) > 1 or (stdin and files_from in STDIN_NAMES):
        raise ConfigError("standard input ('-' or /dev/stdin) can be read only once: name it once, "
                          "and not both as an input and as --files-from")
    return out


def _expand_one(p: str) -> list[str]:
    if p in STDIN_NAMES or not _has_glob(p):
        return [p]
    if is_url(p):
        local = _local_of_file_url(p)
        if local is None:
            fs, inner = filesystem(p)
            if fs.exists(inner):
                return [p]
            proto = _protocol(p)
            matches = sorted(fs.glob(inner))
            if not matches:
                raise InputError(f"{p}: no file or folder matches this pattern")
            return [_unstrip(fs, proto, m) for m in matches]
        p = local
    if os.path.lexists(p):
        return [p]
    matches = sorted(globlib.glob(p, recursive=True))
    if not matches:
        raise InputError(f"{p}: no file or folder matches this pattern")
    return matches


def read_files_from(source: str) -> list[str]:
    """The paths listed in ``source`` (``--files-from``): one per line, surrounding white space
    removed; blank lines and lines starting with ``#`` are ignored."""
    try:
        if source in STDIN_NAMES:
            data = sys.stdin.buffer.read()
        else:
            with open_binary(source) as fh:
                data = fh.read()
    except FileNotFoundError:
        raise InputError(f"--files-from {source}: no such file") from None
    except OSError as exc:
        raise InputError(f"--files-from {source}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"--files-from {source}: not UTF-8 text (byte {exc.start})") from None
    paths = [line.strip() for line in text.splitlines()]
    paths = [p for p in paths if p and not p.startswith("#")]
    if not paths:
        raise InputError(f"--files-from {source}: the list holds no path")
    return paths
