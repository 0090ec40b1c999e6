"""``neardup index add`` reads JSONL as ``neardup dedup`` does: runs of ordinary records as
EncodedDocuments (UTF-8 the kernel reads in place), cut where a batch ends. The index it writes
must be the one the same records give as Documents, row for row."""

from __future__ import annotations

import json
import sqlite3

import pytest

from neardup.cli import main
from neardup.cli.index import _batches
from neardup.io import Skipped, read_documents
from neardup.io.documents import EncodedDocuments
from neardup.io.read import read_encoded
from neardup.stages.sketch import flag_table
from neardup.params import NormalizeParams
from neardup.store.sqlite import SeenIndex

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def _corpus(path, n: int = 2600) -> None:
    """Ordinary records, with the lines the scanner hands back to the line reader sprinkled in:
    bad JSON, empty and blank texts, no id, a repeated id, texts NFKC changes."""
    lines = []
    for k in range(n):
        words = [WORDS[(k * 7 + j * 3) % len(WORDS)] for j in range(8 + k % 23)]
        doc = {"id": f"d{k}", "text": " ".join(words) + f" n{k % 50}"}
        if k % 97 == 5:
            doc["text"] = "ﬁle ＦＵＬＬ width Ⅻ " + doc["text"]  # NFKC changes these
        if k % 89 == 7:
            doc["text"] = "café naïve 日本語 " + doc["text"]
        if k % 101 == 11:
            del doc["id"]
        if k % 211 == 13:
            doc["id"] = "d3"  # a repeated id: the last one is kept
        lines.append(json.dumps(doc, ensure_ascii=k % 2 == 0))
        if k % 331 == 17:
            lines.append("{not json")
        if k % 337 == 19:
            lines.append(json.dumps({"id": f"e{k}", "text": ""}))
        if k % 347 == 23:
            lines.append(json.dumps({"id": f"w{k}", "text": "   \n "}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rows(db: str) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT num, source, id, fingerprint, length, n_shingles, n_sample, simhash, signature, "
                            "meta, cluster, run_fingerprint FROM docs ORDER BY num").fetchall()
    finally:
        conn.close()


def _blocks(db: str) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT * FROM posting_blocks ORDER BY kind, run, first").fetchall()
    finally:
        conn.close()


def test_batches_cut_encoded_blocks_where_a_batch_ends(tmp_path):
    path = tmp_path / "c.jsonl"
    _corpus(path, 700)
    table = flag_table(NormalizeParams())
    records = list(read_encoded([str(path)], table=table))
    assert any(type(r) is EncodedDocuments for r in records)  # the fast path is taken
    batches = list(_batches(iter(records), 64))

    def count(batch):
        return sum(len(r) if type(r) is EncodedDocuments else 1 for r in batch)

    assert all(count(b) == 64 for b in batches[:-1]) and 0 < count(batches[-1]) <= 64
    ids = [i for b in batches for r in b for i in (r.ids if type(r) is EncodedDocuments else [r.id])]
    assert ids == [r.id for r in read_documents([str(path)])]
    texts = [t for b in batches for r in b if type(r) is EncodedDocuments for t in map(r.text, range(len(r)))]
    assert texts == [r.text for r in read_documents([str(path)]) if not isinstance(r, Skipped)
                     and r.id in {i for b in batches for x in b if type(x) is EncodedDocuments for i in x.ids}]


@pytest.mark.parametrize("profile", ["default", "lean", "full"])
def test_index_add_writes_what_the_documents_give(tmp_path, profile):
    path = tmp_path / "c.jsonl"
    _corpus(path)
    encoded, plain = str(tmp_path / "encoded.db"), str(tmp_path / "plain.db")
    assert main(["index", "add", "--db", encoded, "--profile", profile, "--batch-size", "1000", str(path)]) == 0

    # the same batches of the same records, given to the index as Documents
    with SeenIndex(plain, create=True, profile=profile) as index:
        for batch in _batches(read_documents([str(path)]), 1000):
            docs = [r for r in batch if not isinstance(r, Skipped)]
            outcome = index.run_prepared([index.prepare_add(docs)])[0]
            assert not isinstance(outcome, BaseException)
    got, want = _rows(encoded), _rows(plain)
    assert len(want) > 2000
    assert got == want
    assert _blocks(encoded) == _blocks(plain)


@pytest.mark.parametrize("with_samples", [False, True])
def test_parts_sketch_as_the_texts_do(tmp_path, with_samples):
    from neardup.config import default_minhash
    from neardup.params import ShingleParams
    from neardup.stages.sketch import sketch_document_parts, sketch_documents

    path = tmp_path / "c.jsonl"
    _corpus(path, 900)
    records = list(read_encoded([str(path)], table=flag_table(NormalizeParams())))
    parts = [r if type(r) is EncodedDocuments else [r.text] for r in records if not isinstance(r, Skipped)]
    texts = [t for p in parts for t in (p if type(p) is list else map(p.text, range(len(p))))]
    shingle, minhash = ShingleParams(), default_minhash()
    a = sketch_documents(texts, shingle, minhash, mod_m=8, jobs=2, with_samples=with_samples)
    b = sketch_document_parts(parts, shingle, minhash, mod_m=8, jobs=2, with_samples=with_samples)
    assert a.fingerprints == b.fingerprints and a.simhashes == b.simhashes
    assert (a.signatures.values == b.signatures.values).all()
    assert (a.signatures.offsets == b.signatures.offsets).all()
    assert len(a.samples) == len(b.samples) == len(texts)
    assert all((x == y).all() for x, y in zip(a.samples, b.samples))


def test_the_packed_insert_without_the_arrow_operator_writes_the_same_rows(tmp_path, monkeypatch):
    """SQLite before 3.38 (Ubuntu 22.04's 3.37) has no ``->>``: the packed insert then reads
    its rows with json_extract, and must store the same values."""
    import neardup.store.rows as store

    path = tmp_path / "c.jsonl"
    _corpus(path, 1500)
    docs = [r for r in read_documents([str(path)]) if not isinstance(r, Skipped)]
    dbs = []
    for arrow in ([True] if store._ARROW else []) + [False]:
        monkeypatch.setattr(store, "_ARROW", arrow)
        db = str(tmp_path / f"arrow-{arrow}.db")
        with SeenIndex(db, create=True) as index:
            index.add_many(docs)
        dbs.append(db)
    assert "->>" not in store._json_item(0) and "json_extract" in store._json_item(0)
    rows = [_rows(db) for db in dbs]
    assert len(rows[-1]) > 1000 and all(r == rows[0] for r in rows)
