import os
import sys

import pytest

D1 = "the crawler fetches each page and follows its links to new pages"
D2 = "the crawler fetches every page and follows its links to other pages"
D3 = "a rose is a rose is a rose"
D4 = "a rose is a flower which is a rose"


@pytest.fixture
def seed_docs():
    return {"d1": D1, "d2": D2, "d3": D3, "d4": D4}


def real_texts(limit=60, min_bytes=2000):
    """Real text installed on every Debian machine: /usr/share/doc/*/copyright files."""
    import glob

    out = []
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if len(data) >= min_bytes:
            out.append((path, data.decode("utf-8", "replace")))
        if len(out) >= limit:
            break
    return out
