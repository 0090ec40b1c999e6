"""The work folder of a ``neardup dedup`` run: what it has done so far, so that it can resume.

    OUTPUT/.neardup-work/           (for a URL output: $TMPDIR/neardup-work-<hash of the URL>/)
        run.json                    what decides the outputs: configuration and its fingerprint,
                                    the inputs (path, size, mtime), the output layout
        sketch/ candidates/ verify/ cluster/
                                    one folder per completed stage: numpy arrays (.npy, raw
                                    .u64) and meta.json (with each file's size and checksum); a
                                    stage's folder is written as <stage>.partial/ and renamed
                                    when complete
        partial/                    output files being written
        staged/                     output files complete under their final names
        kept.json                   the kept corpus's completed shards

A run that finds a ``run.json`` equal to its own continues after the last completed stage
(and, in the writing stage, after the last completed file or kept shard); one whose
``run.json`` differs is refused with one line naming the differing options. The folder is
removed when the run has published its outputs, and kept when it fails or is killed.

Every stage's result depends only on ``run.json`` (the stages are deterministic whatever
``--jobs`` and ``--in-memory-mb``), so a resumed run's outputs are byte-identical to an
uninterrupted one's.

Test hooks: :func:`neardup.io.write.checkpoints.reached`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy as np
import orjson

from ...errors import ConfigError, OutputError
from ..read.sources import STDIN_NAMES
from .outputs import OutputTarget, fsync_dir, naming, write_atomic

__all__ = ["RunFolder", "STAGES", "run_identity", "WORK_FOLDER"]

#: The stages whose results are kept, in order; ``write`` is resumed file by file.
STAGES = ("sketch", "candidates", "verify", "cluster")
WORK_FOLDER = ".neardup-work"

_JSON = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def input_facts(paths) -> list[dict]:
    """Each input as given, with its size and modification time when it is a local file (a folder:
    its files'), so that a resume over changed inputs is refused. Standard input and pipes cannot
    be read again: their fact is new on every run (the time it was taken), so a run over them
    never resumes another."""
    import stat
    import time


    facts = []
    for p in paths:
        p = os.fsdecode(p) if not isinstance(p, str) else p
        fact: dict = {"path": p}
        try:
            if p in STDIN_NAMES or stat.S_ISFIFO(os.stat(p).st_mode) or stat.S_ISCHR(os.stat(p).st_mode):
                fact["stream_read_at_ns"] = time.time_ns()
                facts.append(fact)
                continue
        except OSError:
            pass
        try:
            if os.path.isdir(p):
                total, newest, count = 0, 0, 0
                for dirpath, dirnames, filenames in os.walk(p):
                    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                    for name in filenames:
                        st = os.stat(os.path.join(dirpath, name))
                        total, newest, count = total + st.st_size, max(newest, st.st_mtime_ns), count + 1
                fact.update(files=count, size=total, mtime_ns=newest)
            elif os.path.isfile(p):
                st = os.stat(p)
                fact.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
        except OSError:
            pass
        facts.append(fact)
    return facts


def run_identity(config, paths, layout: dict) -> dict:
    """What ``run.json`` holds: everything that decides the outputs."""
    from ..._version import __version__

    return {"neardup": __version__, "config_fingerprint": config.fingerprint(), "config": config.as_dict(),
            "inputs": input_facts(paths), "output": layout}


def _flatten(d, prefix=""):
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
    elif isinstance(d, list) and prefix.startswith("inputs."):
        out[prefix[:-1]] = d
    else:
        out[prefix[:-1]] = d
    return out


def differences(old: dict, new: dict) -> list[str]:
    """``name old -> new`` for every setting that differs between two identities."""
    a, b = _flatten(old), _flatten(new)
    names = []
    for key in sorted(set(a) | set(b)):
        if key in ("config_fingerprint",):
            continue
        if a.get(key) != b.get(key):
            label = key.removeprefix("config.").removeprefix("read.")
            if key.startswith("inputs"):
                if any(n.startswith("inputs") for n in names):
                    continue
                streams = any("stream_read_at_ns" in f for f in old.get("inputs", []) + new.get("inputs", []))
                names.append("inputs (standard input or a pipe: it cannot be read again)" if streams
                             else "inputs (paths, sizes or modification times changed)")
                continue
            names.append(f"{label} {a.get(key)!r} -> {b.get(key)!r}")
    return names


class RunFolder:
    """The work folder at ``path`` (see the module's docstring)."""

    def __init__(self, path: str):
        self.path = path
        self.staged = os.path.join(path, "staged")
        self.partial = os.path.join(path, "partial")
        self.resumed_from: str | None = None

    @classmethod
    def for_target(cls, target: OutputTarget, work_root: str | None = None) -> "RunFolder":
        if target.is_local:
            return cls(os.path.join(target.url, WORK_FOLDER))
        import xxhash

        root = work_root or tempfile.gettempdir()
        return cls(os.path.join(root, f"neardup-work-{xxhash.xxh3_64_hexdigest(target.url.encode())}"))

    # --------------------------------------------------------------------------- the run's identity
    def exists(self) -> bool:
        return os.path.exists(os.path.join(self.path, "run.json"))

    def identity(self) -> dict | None:
        try:
            with open(os.path.join(self.path, "run.json"), "rb") as fh:
                return orjson.loads(fh.read())
        except (OSError, ValueError):
            return None

    def begin(self, identity: dict, output: str) -> bool:
        """Start or continue the run ``identity``; True when continuing. Raises ConfigError (one line
        naming the differing options) when the folder holds another run."""
        old = self.identity()
        if old is not None:
            diff = differences(old, identity)
            if diff:
                raise ConfigError(
                    f"{output} holds an interrupted run with other options ({'; '.join(diff)}): rerun it with "
                    f"its options to resume, or remove {self.path} to start over")
            for name in (self.partial,):
                shutil.rmtree(name, ignore_errors=True)
            for stage in STAGES:
                shutil.rmtree(os.path.join(self.path, f"{stage}.partial"), ignore_errors=True)
            for k, stage in enumerate(STAGES):  # a stage damaged by a machine crash is run again
                if self.done(stage) and not self.intact(stage):
                    for later in STAGES[k:]:
                        shutil.rmtree(os.path.join(self.path, later), ignore_errors=True)
                    break
            done = [s for s in STAGES if self.done(s)]
            self.resumed_from = done[-1] if done else "start"
            os.makedirs(self.partial, exist_ok=True)
            os.makedirs(self.staged, exist_ok=True)
            return True
        if os.path.exists(self.path):  # pieces of a run killed before it wrote run.json
            shutil.rmtree(self.path)
        os.makedirs(self.partial)
        os.makedirs(self.staged)
        write_atomic(os.path.join(self.path, "run.json"), orjson.dumps(identity, option=orjson.OPT_INDENT_2))
        return False

    def remove(self) -> None:
        """Remove the folder, or raise :class:`~neardup.errors.OutputError` naming what was left
        and why (a removal that leaves files behind is never silent).

        The folder is first renamed, in one step, into a new folder beside it: whatever then
        cannot be removed is never taken for an interrupted run by the next run on this output
        (which would resume from its stages, or refuse its own options as "other options")."""
        if not os.path.lexists(self.path):
            return
        failures: list[tuple[str, BaseException]] = []
        try:
            holder = tempfile.mkdtemp(prefix=f"{os.path.basename(self.path)}.removing-",
                                      dir=os.path.dirname(self.path) or ".")
        except OSError:  # (a full disk: the folder is removed where it is)
            holder = None
        doomed = self.path
        if holder is not None:
            try:
                os.rename(self.path, os.path.join(holder, "work"))
                doomed = holder
            except OSError as exc:
                failures.append((self.path, exc))
                _remove_tree(holder, failures)  # (empty)
        _remove_tree(doomed, failures)
        left = [p for p in (self.path, holder) if p is not None and os.path.lexists(p)]
        if left:
            where, exc = failures[0] if failures else (left[0], OSError("files appeared in it while it was removed"))
            raise OutputError(f"{left[0]}: the work folder could not be removed ({where}: "
                              f"{getattr(exc, 'strerror', None) or exc}); remove it by hand")

    # --------------------------------------------------------------------------- stages
    def done(self, stage: str) -> bool:
        return os.path.isfile(os.path.join(self.path, stage, "meta.json"))

    def stage_partial(self, stage: str) -> str:
        """The folder a stage writes its pieces into while it runs (renamed by :meth:`save`)."""
        path = os.path.join(self.path, f"{stage}.partial")
        os.makedirs(path, exist_ok=True)
        return path

    def save(self, stage: str, arrays: dict, meta: dict, digests: dict | None = None) -> None:
        """Record a completed stage: ``arrays`` (numpy arrays; lists of uint64 arrays are written as
        one raw ``.u64`` file, lists of uint32 arrays as one ``.u32`` file) and ``meta`` (JSON), then the folder renamed into place.

        The data files are not flushed to disk one by one (for a large corpus that is gigabytes,
        most of a stage's time again): ``meta.json`` records each file's size and XXH3 checksum,
        and is flushed, and a resumed run checks the files against it (:meth:`intact`), so a
        stage whose data did not reach the disk before a machine crash is run again rather than
        read back wrong. ``digests``: the checksums of spill files the stage wrote itself, by name.
        """
        import xxhash

        part = self.stage_partial(stage)
        files = {}
        for name, value in arrays.items():
            h = xxhash.xxh3_64()
            if isinstance(value, list):  # uint64 (or all uint32) pieces, concatenated into one raw file
                narrow = bool(value) and all(np.asarray(piece).dtype == np.uint32 for piece in value)
                ext, dtype = ("u32", np.uint32) if narrow else ("u64", np.uint64)
                path = os.path.join(part, f"{name}.{ext}")
                with naming(path), open(path, "wb") as fh:
                    for piece in value:
                        view = memoryview(np.ascontiguousarray(piece, dtype=dtype)).cast("B")
                        fh.write(view)
                        h.update(view)
                files[f"{name}.{ext}"] = {"size": os.path.getsize(path), "xxh3": h.hexdigest()}
            else:
                path = os.path.join(part, f"{name}.npy")
                with naming(path), open(path, "wb") as fh:
                    _write_npy(fh, value)
                files[f"{name}.npy"] = {"size": os.path.getsize(path), "xxh3": _file_digest(path)}
        for name in os.listdir(part):  # spill files the stage wrote itself
            if name not in files:
                path = os.path.join(part, name)
                digest = (digests or {}).get(name) or _file_digest(path)
                files[name] = {"size": os.path.getsize(path), "xxh3": digest}
        with naming(os.path.join(part, "meta.json")), open(os.path.join(part, "meta.json"), "wb") as fh:
            fh.write(orjson.dumps(dict(meta, _files=files), option=_JSON, default=_plain))
            fh.flush()
            os.fsync(fh.fileno())
        final = os.path.join(self.path, stage)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(part, final)
        fsync_dir(self.path)

    def intact(self, stage: str) -> bool:
        """Whether a saved stage's files are all there with the sizes and checksums it recorded."""
        folder = os.path.join(self.path, stage)
        try:
            with open(os.path.join(folder, "meta.json"), "rb") as fh:
                files = orjson.loads(fh.read())["_files"]
            return all(os.path.getsize(os.path.join(folder, name)) == f["size"]
                       and _file_digest(os.path.join(folder, name)) == f["xxh3"] for name, f in files.items())
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def load(self, stage: str) -> tuple[dict, dict]:
        """``(arrays, meta)`` of a completed stage; ``.u64`` (``.u32``) files come memory-mapped
        (empty ones as empty arrays), ``.npy`` files read into memory."""
        folder = os.path.join(self.path, stage)
        with open(os.path.join(folder, "meta.json"), "rb") as fh:
            meta = orjson.loads(fh.read())
        arrays = {}
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith((".u64", ".u32")):
                dtype = np.uint64 if name.endswith(".u64") else np.uint32
                arrays[name[:-4]] = (np.memmap(path, dtype=dtype, mode="r") if os.path.getsize(path)
                                     else np.zeros(0, dtype=dtype))
            elif name.endswith(".npy"):
                arrays[name[:-4]] = np.load(path, allow_pickle=False)
        return arrays, meta

    # --------------------------------------------------------------------------- output files
    def staged_file(self, name: str) -> str:
        return os.path.join(self.staged, name)

    def is_staged(self, name: str) -> bool:
        return os.path.isfile(self.staged_file(name))

    def partial_file(self, name: str) -> str:
        return os.path.join(self.partial, name)

    def stage_file(self, name: str) -> None:
        """Move the complete file ``partial/name`` to ``staged/name`` (after flushing it)."""
        src = self.partial_file(name)
        with naming(src), open(src, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(src, self.staged_file(name))
        fsync_dir(self.staged)

    def read_json(self, name: str):
        try:
            with open(os.path.join(self.path, name), "rb") as fh:
                return orjson.loads(fh.read())
        except (OSError, ValueError):
            return None

    def write_json(self, name: str, value) -> None:
        write_atomic(os.path.join(self.path, name), orjson.dumps(value, option=_JSON, default=_plain))


def _write_npy(fh, value) -> None:
    """``np.save`` through the file's own ``write``: numpy's ``tofile`` reports a full disk as an
    OSError without errno or file name, which could not be told apart from any other."""
    arr = np.ascontiguousarray(value)
    np.lib.format.write_array_header_1_0(fh, np.lib.format.header_data_from_array_1_0(arr))
    if arr.size:
        fh.write(memoryview(arr.reshape(-1)).cast("B"))


def _file_digest(path: str) -> str:
    import xxhash

    h = xxhash.xxh3_64()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(16 << 20)
            if not block:
                return h.hexdigest()
            h.update(block)


def _plain(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(type(obj).__name__)


def _remove_tree(path: str, failures: list) -> None:
    """``shutil.rmtree(path)``, each entry it cannot remove appended to ``failures`` as
    ``(path, exception)`` instead of stopping there."""
    def failed(function, where, exc):
        failures.append((where, exc if isinstance(exc, BaseException) else exc[1]))

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=failed)
    else:
        shutil.rmtree(path, onerror=failed)
