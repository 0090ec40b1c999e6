"""What the HTML worker processes and the extractor's name cost at start: the worker's function
imports only the extraction, and the versions in the extractor's name are importlib.metadata's."""

from __future__ import annotations

import pickle
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version

import pytest

from neardup.io.read import extract as readers
from neardup.text import html, html_pages


def test_the_worker_function_pickles_by_the_extraction_module():
    # a worker unpickles its call by the function's module: that module, not the readers, is
    # what it imports (and what the forkserver preloads)
    assert readers.extract_many is html_pages.extract_many
    assert b"neardup.text.html_pages" in pickle.dumps(readers.extract_many)
    assert b"neardup.io" not in pickle.dumps(readers.extract_many)


def test_the_extraction_module_imports_no_reader_nor_numpy():
    code = ("import sys, neardup.text.html_pages; "
            "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('neardup.io', 'neardup.stages'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_worker_chunk_gives_the_readers_outcomes():
    pages = [(b"<html><body><main><p>caf\xc3\xa9 one</p></main></body></html>", None, None, "replace"),
             ("<p>two</p>".encode("utf-8", "surrogatepass"), None, html_pages.FROM_STR, "replace"),
             (b"   ", None, None, "replace")]
    got = html_pages.extract_many("main", pages)
    assert got[0] == html.extract_text(pages[0][0]) and "café one" in got[0]
    assert got[1] == html.extract_text("<p>two</p>")
    assert got[2] == ("empty", "the text is only white space")


@pytest.mark.parametrize("name", ["selectolax", "charset-normalizer", "charset_normalizer", "lxml", "orjson",
                                  "no-such-distribution-here"])
def test_dist_versions_are_importlib_metadatas(name):
    try:
        want = version(name)
    except PackageNotFoundError:
        want = "missing"
    assert html._dist_version(name) == want
    fast = html._dist_info_version(name)
    assert fast is None or fast == want


def test_dist_version_falls_back_on_an_egg_info(tmp_path, monkeypatch):
    (tmp_path / "fakedist-1.0.egg-info").mkdir()
    (tmp_path / "fakedist-1.0.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: fakedist\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert html._dist_info_version("fakedist") is None  # importlib.metadata's to answer
    (tmp_path / "other-2.5.dist-info").mkdir()
    (tmp_path / "other-2.5.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Other\nVersion: 2.5rc1\n\nbody\n")
    assert html._dist_info_version("Other") == "2.5rc1"
