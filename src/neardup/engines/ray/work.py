"""The Ray engine's work folder: what each stage has finished, shard by shard.

Every shard of every stage writes its result to a file of its own under the work folder, and
the file appears whole or not at all (written beside, then renamed): a file that exists is a
finished shard. A run started again with the same command finds the folder, checks that it
belongs to the same inputs and options (``run.json``) and runs only the shards whose file is
missing. The folder must be on storage every Ray node sees (a local disk for a one-machine
runtime, NFS or another shared mount for a cluster), since the workers read and write it.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

__all__ = ["WorkFolder"]


class WorkFolder:
    def __init__(self, path: str):
        self.path = path

    def stage(self, name: str) -> str:
        folder = os.path.join(self.path, name)
        os.makedirs(folder, exist_ok=True)
        return folder

    def file(self, stage: str, key: str) -> str:
        return os.path.join(self.path, stage, key)

    def done(self, stage: str, key: str) -> bool:
        return os.path.exists(self.file(stage, key))

    def start(self, identity: dict, *, resume: bool) -> bool:
        """Open the folder for a run of ``identity``; True when it holds an earlier run of the same
        identity (whose finished shards are kept). A folder of another run is removed, or with
        ``resume`` refused."""
        from ...errors import ConfigError

        marker = os.path.join(self.path, "run.json")
        if os.path.exists(marker):
            with open(marker, encoding="utf-8") as fh:
                before = json.load(fh)
            if before == identity:
                return True
            if resume:
                raise ConfigError(f"--resume: the work folder {self.path} belongs to a run with other inputs or "
                                  "options; run the command without --resume to start over")
            shutil.rmtree(self.path)
        elif resume and os.path.isdir(self.path) and os.listdir(self.path):
            raise ConfigError(f"--resume: {self.path} is not a Ray run's work folder")
        os.makedirs(self.path, exist_ok=True)
        write_json(marker, identity)
        return False

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _tmp(path: str) -> str:
    return f"{path}.part-{os.getpid()}"


def write_json(path: str, value) -> None:
    tmp = _tmp(path)
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh)
    os.replace(tmp, path)


def read_json(path: str):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_arrays(path: str, **arrays) -> None:
    """``arrays`` as one uncompressed ``.npz``, in place at once (a reader never sees half of it)."""
    tmp = _tmp(path)
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def read_arrays(path: str) -> dict:
    with np.load(path, allow_pickle=False) as got:
        return {k: got[k] for k in got.files}


def write_array(path: str, arr: np.ndarray) -> None:
    """One ``.npy``, readable memory-mapped (:func:`mapped`)."""
    tmp = _tmp(path)
    with open(tmp, "wb") as fh:
        np.save(fh, arr)
    os.replace(tmp, path)


def write_pieces(path: str, pieces: list, dtype) -> None:
    """The concatenation of the 1-D arrays ``pieces`` as one ``.npy`` (as :func:`write_array`),
    each written as it is: a shard's shingle ids (about 100 MB for 50 MB of text) are never
    joined in memory."""
    dtype = np.dtype(dtype)
    tmp = _tmp(path)
    with open(tmp, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                                                  "shape": (sum(int(p.size) for p in pieces),)})
        for piece in pieces:
            np.ascontiguousarray(piece, dtype=dtype).tofile(fh)
    os.replace(tmp, path)


def mapped(path: str) -> np.ndarray:
    return np.load(path, mmap_mode="r", allow_pickle=False)
