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


TEXTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "texts", "debian-copyright.jsonl.gz")
_TEXTS = []


def real_texts(limit=60, min_bytes=2000):
    """Real text shipped with the tests (tests/data/texts: 420 Debian copyright files, the same on
    every machine): the first ``limit`` of at least ``min_bytes`` UTF-8 bytes, as (path, text)."""
    if not _TEXTS:
        import gzip
        import json

        with gzip.open(TEXTS_FILE, "rt", encoding="utf-8") as fh:
            _TEXTS.extend((r["path"], r["text"]) for r in map(json.loads, fh))
    out = []
    for path, text in _TEXTS:
        if len(text.encode("utf-8")) >= min_bytes:
            out.append((path, text))
        if len(out) >= limit:
            break
    return out
