"""Golden vectors: the persisted values of the default configs may change only with the format version.

``tests/data/golden.json`` (written by ``scripts/gen_golden.py``) holds texts with their shingle
ids, signatures (dedup's ``mulshift32`` and the library's ``affine61``), band keys, content
fingerprints, simhashes and MOD_8 samples. SQLite indexes, sketches and output folders persist these, so a
change to any of them must move ``neardup.params.FORMAT_VERSION`` and regenerate the file in the
same commit::

    PYTHONPATH=src python scripts/gen_golden.py

Every test here fails while the file's versions differ from the code's: a moved version is the
moment the vectors matter most, so it stops the suite until the file is rewritten and reviewed.
"""

import json
import os
import sqlite3

import numpy as np
import pytest

from neardup import MinHash, MinHashParams, ModM, ShingleParams, SimHash, band_keys, fingerprint, shingle_ids
from neardup.config import DedupConfig
from neardup.params import FORMAT_VERSION, TOKENIZER_VERSION
from neardup.stages.sketch import python_signatures, sketch_texts
from neardup.store import SeenIndex
from neardup.store.sqlite import DOC_BITS, band_bucket

PATH = os.path.join(os.path.dirname(__file__), "..", "data", "golden.json")
with open(PATH, encoding="utf-8") as _fh:
    GOLDEN = json.load(_fh)

REGENERATE = "PYTHONPATH=src python scripts/gen_golden.py"


def require_current_versions():
    """Fails the calling test when the golden file was written for other format versions."""
    filed = (GOLDEN["format_version"], GOLDEN["tokenizer_version"])
    if filed != (FORMAT_VERSION, TOKENIZER_VERSION):
        pytest.fail(f"tests/data/golden.json is for format {filed[0]}, tokenizer {filed[1]}; the code is at "
                    f"format {FORMAT_VERSION}, tokenizer {TOKENIZER_VERSION}. Regenerate it in the same commit "
                    f"as the version change ({REGENERATE}) and review the values that moved.", pytrace=False)

DEDUP = DedupConfig()
CASES = GOLDEN["texts"]


def hexes(values) -> list[str]:
    return [f"{int(v):016x}" for v in values]


def test_the_file_is_for_the_default_configs():
    require_current_versions()
    configs = GOLDEN["configs"]
    assert configs["shingle"] == ShingleParams().as_dict() == DEDUP.shingle.as_dict()
    assert configs["dedup_minhash"] == DEDUP.minhash.as_dict()
    assert configs["library_minhash"] == MinHashParams().as_dict()
    assert (configs["bands"], configs["rows"]) == (DEDUP.banding().bands, DEDUP.banding().rows)
    assert len(CASES) >= 8 and any(not c["shingle_ids"] for c in CASES) and any(c["fingerprint"] is None for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_one_text_at_a_time(case):
    require_current_versions()
    text = case["text"]
    assert hexes(shingle_ids(text, ShingleParams())) == case["shingle_ids"]
    sig = MinHash.from_text(text, DEDUP.shingle, DEDUP.minhash).hashvalues
    assert hexes(sig) == case["signature_mulshift32"]
    assert hexes(MinHash.from_text(text, ShingleParams(), MinHashParams()).hashvalues) == case["signature_affine61"]
    band = DEDUP.banding()
    assert hexes(band_keys(np.asarray(sig, dtype=np.uint64), band.bands, band.rows)[0]) == case["band_keys"]
    fp = fingerprint(text)
    assert (None if fp is None else f"{fp:016x}") == case["fingerprint"]
    assert f"{SimHash.from_text(text).value:016x}" == case["simhash"]
    assert hexes(ModM.from_text(text, GOLDEN["configs"]["mod_m"], ShingleParams(), seed=1).values) == case["mod_8_sample"]


@pytest.mark.parametrize("sketch", [sketch_texts, python_signatures], ids=["kernel-or-default", "python"])
def test_the_batch_sketch_stage(sketch):
    require_current_versions()
    texts = [c["text"] for c in CASES]
    sig = sketch(texts, DEDUP.shingle, DEDUP.minhash)
    for i, case in enumerate(CASES):
        assert hexes(sig.values[i]) == case["signature_mulshift32"]
        assert hexes(sig.doc_ids(i)) == case["shingle_ids"]
        assert int(sig.fingerprints[i]) == (int(case["fingerprint"], 16) if case["fingerprint"] else 0)


def test_what_a_new_index_stores(tmp_path):
    require_current_versions()
    db = str(tmp_path / "seen.db")
    with SeenIndex(db, profile="full") as index:  # every part stored, MOD_m samples included
        index.add_many([(str(i), c["text"]) for i, c in enumerate(CASES)])
    with sqlite3.connect(db) as conn:
        docs = {int(i): (fp, sig, sh) for i, fp, sig, sh in
                conn.execute("SELECT id, fingerprint, signature, simhash FROM docs")}
        samples = {}
        for doc_id, value in conn.execute("SELECT d.id, s.value FROM samples s JOIN docs d ON d.num = s.doc"):
            samples.setdefault(int(doc_id), []).append(value & ((1 << 64) - 1))
        bands = {}
        # a posting is band_bucket(band, key) << DOC_BITS | the document's number
        for doc_id, bucket in conn.execute(f"SELECT d.id, b.posting >> {DOC_BITS} FROM bands b JOIN docs d "
                                           f"ON d.num = b.posting & {(1 << DOC_BITS) - 1}"):
            bands.setdefault(int(doc_id), set()).add(bucket)
    for i, case in enumerate(CASES):
        fp, sig, sh = docs[i]
        assert (None if fp is None else f"{fp & ((1 << 64) - 1):016x}") == case["fingerprint"]
        # mulshift32 values fit 32 bits: stored 4 bytes each; a text without shingles has none
        if case["shingle_ids"]:
            assert hexes(np.frombuffer(sig, dtype="<u4").astype(np.uint64)) == case["signature_mulshift32"]
        else:
            assert sig is None
        assert hexes(sorted(samples.get(i, []))) == case["mod_8_sample"]
        if case["shingle_ids"]:
            assert (sh is not None) and f"{sh & ((1 << 64) - 1):016x}" == case["simhash"]
            assert bands[i] == {band_bucket(b, int(k, 16)) for b, k in enumerate(case["band_keys"])}
