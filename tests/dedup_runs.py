"""Helpers of the output, resume and fault tests: a generated corpus, ``neardup dedup`` in a real
subprocess (it may be SIGKILLed), and output folders compared byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import orjson

#: what differs between two runs with the same results
VOLATILE = ("seconds", "peak_memory_mb", "resumed_from")


def write_corpus(path, docs: int = 1500, seed: int = 3, compress: str | None = None) -> str:
    """JSONL with near-copies (one word changed in 60) and exact copies; ``compress``: gzip, zstd."""
    rng = random.Random(seed)  # test data only
    words = [f"w{i}" for i in range(3000)]
    lines = []
    for i in range(docs):
        text = [rng.choice(words) for _ in range(rng.randint(30, 90))]
        lines.append(orjson.dumps({"id": f"d{i}", "text": " ".join(text), "n": i}))
        if i % 7 == 0:
            edited = list(text)
            edited[rng.randrange(len(edited))] = "changed"
            lines.append(orjson.dumps({"id": f"d{i}-near", "text": " ".join(edited), "n": -i}))
        if i % 11 == 0:
            lines.append(orjson.dumps({"id": f"d{i}-exact", "text": " ".join(text), "n": i}))
    data = b"\n".join(lines) + b"\n"
    path = os.fspath(path)
    if compress == "gzip":
        import gzip

        data = gzip.compress(data, mtime=0)
    elif compress == "zstd":
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def dedup(*args, env=None, cwd=None, check=False, **kwargs) -> subprocess.CompletedProcess:
    """``neardup dedup ARGS`` in a subprocess: stdout and stderr captured as text."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "neardup", "dedup", *map(str, args), "--quiet"], env=full_env,
                          cwd=cwd, capture_output=True, text=True, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"neardup dedup {args} exited {proc.returncode}: {proc.stderr}")
    return proc


def folder_digest(out) -> dict[str, str]:
    """sha256 of every file in the output folder (not the work folder); summary.json without the
    keys that differ from run to run, and with the folder's own path replaced."""
    got = {}
    out = os.fspath(out)
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if os.path.isdir(path):
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        if name == "summary.json":
            s = json.loads(data.replace(out.encode(), b"OUT"))
            data = json.dumps({k: v for k, v in s.items() if k not in VOLATILE}, sort_keys=True).encode()
        got[name] = hashlib.sha256(data).hexdigest()
    return got


def file_sha(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()
