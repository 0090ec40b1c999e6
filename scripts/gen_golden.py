#!/usr/bin/env python3
"""Write tests/data/golden.json: texts and the values neardup computes for them by default.

The values are persisted by users (SQLite indexes store fingerprints, signatures, band keys,
MOD_m samples and simhashes; sketches carry signatures), so none may change while ``neardup.params.FORMAT_VERSION``
stays: ``tests/sketch/test_golden.py`` compares them, and fails while the file's versions are not the
code's. Run this only together with a version bump, from the checkout's root:

    PYTHONPATH=src python scripts/gen_golden.py
"""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "golden.json")

#: Short texts covering the normalization steps: ASCII, case and punctuation, NFKC (ligatures,
#: full-width, superscripts), scripts without spaces, fewer words than k, white space only.
TEXTS = [
    "the crawler fetches each page and follows its links to new pages",
    "The Crawler fetches EACH page, and follows its links -- to new pages!",
    "ﬁle ｆｕｌｌ－ｗｉｄｔｈ x² café naïve Ǆemal façade “quoted” ½ ℌ",
    "東京都の天気は晴れです。 ภาษาไทย ไม่มีช่องว่าง 한국어 문장",
    "a rose is a rose is a rose",
    "two words",
    "   \n\t  ",
    "line one of a file\nline two of a file\n\nline four, after a blank line",
]


def golden() -> dict:
    import numpy as np

    from neardup import MinHash, MinHashParams, ModM, ShingleParams, SimHash, band_keys, fingerprint, shingle_ids
    from neardup.config import DedupConfig
    from neardup.params import FORMAT_VERSION, TOKENIZER_VERSION

    dedup = DedupConfig()
    band = dedup.banding()
    hexes = lambda values: [f"{int(v):016x}" for v in values]  # noqa: E731
    out = {"format_version": FORMAT_VERSION, "tokenizer_version": TOKENIZER_VERSION,
           "configs": {"shingle": ShingleParams().as_dict(), "dedup_minhash": dedup.minhash.as_dict(),
                       "library_minhash": MinHashParams().as_dict(), "bands": band.bands, "rows": band.rows,
                       "simhash": {"features": "word counts", "hash": "xxh3"}, "mod_m": 8},
           "texts": []}
    for text in TEXTS:
        ids = shingle_ids(text, ShingleParams())
        sig = MinHash.from_text(text, dedup.shingle, dedup.minhash).hashvalues
        lib = MinHash.from_text(text, ShingleParams(), MinHashParams()).hashvalues
        fp = fingerprint(text)
        out["texts"].append({
            "text": text,
            "shingle_ids": hexes(ids),
            "signature_mulshift32": hexes(sig),
            "signature_affine61": hexes(lib),
            "band_keys": hexes(band_keys(np.asarray(sig, dtype=np.uint64), band.bands, band.rows)[0]),
            "fingerprint": None if fp is None else f"{fp:016x}",
            "simhash": f"{SimHash.from_text(text).value:016x}",
            "mod_8_sample": hexes(ModM.from_text(text, 8, ShingleParams(), seed=1).values),
        })
    return out


if __name__ == "__main__":
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(golden(), fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(f"wrote {os.path.normpath(OUT)}")
