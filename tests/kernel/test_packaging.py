"""The package as a user installs it: an sdist and a wheel built from this tree, installed into an
empty virtual environment, with and without a C compiler.

The checks run from the installed files only: the environment has no path into the checkout, its
``neardup`` must be the one installed there, and the seed's worked numbers must come out of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import D1, D2

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

pytest.importorskip("build")


def _build(out: Path, *what: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # --no-isolation: the build requirements (setuptools, wheel) come from this environment, so
    # the test needs no network; the tree is copied so that the checkout's own build/ and .so
    # files cannot leak into what is built.
    tree = out / "tree"
    anywhere = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "*.so", "__pycache__", "data",
                                      "results")

    def ignore(folder, names):  # out*/ run folders only at the top (src/neardup/io/write/outputs.py is a module)
        left = anywhere(folder, names)
        return left | {n for n in names if n.startswith("out")} if Path(folder) == ROOT else left

    shutil.copytree(ROOT, tree, ignore=ignore)
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", *what, "--outdir", str(out / "dist"), str(tree)],
                       capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def _venv_with(wheel: Path, where: Path) -> Path:
    """A new virtual environment holding the wheel; neardup's dependencies are made visible
    through a .pth file naming their folders (they are not what is tested, and this needs no
    network), never the checkout."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    py = where / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300)
    import numpy
    import orjson
    import xxhash

    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    folders = {str(Path(m.__file__).resolve().parent.parent) for m in (numpy, orjson, xxhash)}
    assert not any(Path(f) == ROOT / "src" for f in folders)
    Path(site, "neardup-test-deps.pth").write_text("\n".join(sorted(folders)) + "\n")
    return py


COMPARE_ARGS = ("compare", "--text", "-k", "3", "--num-perm", "200", "--feature-hash", "md5", "--json", D1, D2)


def _compare_seed(py: Path, cwd: Path) -> subprocess.CompletedProcess:
    neardup = py.parent / "neardup"
    return subprocess.run([str(neardup), *COMPARE_ARGS], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)})


def _assert_seed_numbers(out: str) -> None:
    r = json.loads(out)
    assert (r["shingles_a"], r["shingles_b"], r["shared"], r["union"]) == (10, 10, 5, 15)
    assert r["jaccard"] == pytest.approx(1 / 3) and r["cosine"] == pytest.approx(10 / 12)
    assert (r["simhash_a"], r["simhash_b"], r["hamming"]) == ("93264c674404019d", "91060e274484039d", 7)
    # and every other figure (the MinHash estimate and its interval) as this checkout computes it
    here = subprocess.run([sys.executable, "-m", "neardup", *COMPARE_ARGS], capture_output=True, text=True, check=True,
                          cwd=ROOT, timeout=120).stdout
    assert r == json.loads(here)


def test_sdist_and_wheel_install_into_an_empty_venv(tmp_path):
    # python -m build makes the sdist, then the wheel from the unpacked sdist: the wheel proves
    # that the sdist holds everything a build needs (the C files, the vendored xxhash.h).
    _build(tmp_path)
    dist = tmp_path / "dist"
    (sdist,) = dist.glob("neardup-*.tar.gz")
    (wheel,) = dist.glob("neardup-*.whl")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    kernel = {f"src/neardup/native/kernel/{n}" for n in ("kernel.h", "module.c", "tokenize.c", "hash.c", "distinct.c",
                                                  "minhash.c", "pairs.c")}
    assert kernel | {"src/neardup/native/_vendor/xxhash/xxhash.h", "src/neardup/native/_vendor/xxhash/LICENSE",
            "src/neardup/native/_htmlscan.c", "src/neardup/native/_htmltext.c", "src/neardup/native/_htmltext.h",
            "src/neardup/native/new_bytearray.h",
            "src/neardup/text/casefold.bin", "setup.py", "pyproject.toml"} <= names
    with zipfile.ZipFile(wheel) as zf:
        inside = set(zf.namelist())
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    assert {f"neardup/_kernel{suffix}", f"neardup/_hamming{suffix}", f"neardup/_jsonl{suffix}",
            f"neardup/_htmlscan{suffix}", "neardup/py.typed",
            "neardup/text/casefold.bin", "neardup/text/charclass.bin", "neardup/text/nfkc_unsafe.bin",
            "neardup/text/blocks.json"} <= inside

    py = _venv_with(wheel, tmp_path / "venv")
    where = subprocess.run([str(py), "-c", "import neardup, neardup._kernel, neardup._hamming, neardup._jsonl as j; "
                            "from neardup import _native; print(neardup.__file__, j.__file__, _native.available())"],
                           capture_output=True, text=True, cwd=tmp_path, check=True,
                           # a developer's PYTHONPATH=src would otherwise lead the venv back into the checkout
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout.split()
    assert all(p.startswith(str(tmp_path / "venv")) for p in where[:2]) and where[2] == "True", where
    r = _compare_seed(py, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" not in r.stderr
    _assert_seed_numbers(r.stdout)


def test_without_a_compiler_the_pure_python_paths_give_the_same_numbers(tmp_path):
    # CC names a compiler that always fails: every extension is left out with a warning that says
    # what is slower, the install succeeds, and neardup says so again when it runs.
    r = _build(tmp_path, "--wheel", env={"CC": "/bin/false", "LDSHARED": "/bin/false"})
    log = r.stdout + r.stderr
    for name in ("neardup._kernel", "neardup._hamming", "neardup._jsonl", "neardup._htmlscan"):
        assert f"WARNING: {name} was not built" in log
    (wheel,) = (tmp_path / "dist").glob("neardup-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith(sysconfig.get_config_var("EXT_SUFFIX"))]
    py = _venv_with(wheel, tmp_path / "venv")
    r = _compare_seed(py, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "neardup._kernel is not built" in r.stderr and "pure Python" in r.stderr
    _assert_seed_numbers(r.stdout)
    # a whole dedup runs on the pure-Python paths too
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate([D1, D2, D1])))
    r = subprocess.run([str(py.parent / "neardup"), "dedup", str(corpus), "-o", str(tmp_path / "out"), "-k", "3",
                        "--quiet"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "out" / "clusters.jsonl").read_text().splitlines()]
    assert [row["reason"] for row in rows] == ["kept", "unique", "exact"]


def test_the_setup_script_refuses_in_one_line_without_root_or_sudo():
    # A user who is not root, without sudo, on a machine that lacks a package: one line naming the
    # packages, exit 1, nothing half-installed. The package is made missing with a stand-in
    # interpreter that answers the script's questions as Debian's python3 without python3-venv
    # does (it fails `import ensurepip`), so the test needs neither a bare machine nor this one's
    # Python to be readable by another user.
    import tempfile

    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to drop root")
    top = Path(tempfile.mkdtemp(prefix="neardup-setup-"))
    try:
        top.chmod(0o755)
        stub = top / "bin"
        stub.mkdir()
        fake = stub / "python3"
        fake.write_text('#!/bin/sh\ncase "$*" in\n  *ensurepip*) exit 1;;\n  *version_info[[]0[]]*) echo 3.11;;\nesac\nexit 0\n')
        fake.chmod(0o755)
        checkout = top / "checkout"
        shutil.copytree(ROOT / "scripts", checkout / "scripts")
        os.chmod(checkout, 0o777)
        env = {"PATH": f"{stub}:/usr/bin:/bin", "HOME": str(top)}
        cmd = ["bash", str(checkout / "scripts" / "setup.sh")]
        if os.geteuid() == 0:  # drop to nobody; sudo, if this machine has it, asks nobody for a password
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
                           cwd=checkout)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert r.returncode == 1 and len(lines) == 1, r.stderr
        assert lines[0].startswith("setup: missing Debian packages: python3.11-venv")
        assert "apt-get install python3.11-venv" in lines[0]
        assert not (checkout / ".venv").exists()
    finally:
        shutil.rmtree(top, ignore_errors=True)
