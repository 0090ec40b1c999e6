"""One configuration, every engine: a dedup run and an index of the same corpus find the same pairs."""

import json
import os
import random
import sqlite3

import orjson
import pytest

from neardup import fingerprint
from neardup.config import DedupConfig
from neardup.lsh.banding import band_keys
from neardup.pipeline import Deduplicator
from neardup.stages.candidates import band_candidates
from neardup.stages.sketch import sketch_texts
from neardup.store import SeenIndex
from neardup.store.sqlite import DOC_BITS

from conftest import real_texts


def near_copies_corpus(tmp_path):
    """Real copyright texts and edited copies of some of them at several rates (no exact copy,
    so that every record is sketched and banded by both)."""
    rng = random.Random(11)
    seen, records = set(), []
    for path, text in real_texts(limit=120, min_bytes=2500):
        if fingerprint(text) not in seen:  # many packages share one copyright text
            seen.add(fingerprint(text))
            records.append({"id": path, "text": text})
    for k, rec in enumerate(list(records[:24])):
        words = rec["text"].split()
        for _ in range(max(1, int(len(words) * (0.005, 0.02, 0.05, 0.12)[k % 4]))):
            words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
        records.append({"id": f"copy-{k}", "text": " ".join(words)})
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path), records


def index_band_pairs(db: str) -> set:
    """Pairs of stored documents that share a band key, read from the index file itself."""
    with sqlite3.connect(db) as conn:
        ids = dict(conn.execute("SELECT num, id FROM docs"))
        # a posting is band_bucket(band, key) << DOC_BITS | the document's number
        mask = (1 << DOC_BITS) - 1
        rows = conn.execute(f"SELECT DISTINCT a.posting & {mask}, b.posting & {mask} FROM bands a JOIN bands b "
                            f"ON a.posting >> {DOC_BITS} = b.posting >> {DOC_BITS} AND a.posting < b.posting").fetchall()
    return {tuple(sorted((ids[a], ids[b]))) for a, b in rows}


def test_a_dedup_run_and_an_index_of_the_same_corpus_report_the_same_pairs(tmp_path):
    path, records = near_copies_corpus(tmp_path)
    config = DedupConfig()
    out = str(tmp_path / "out")
    summary = Deduplicator(config, jobs=2).run([path], out)
    assert summary["exact_duplicates"] == 0 and summary["skipped"] == 0

    # the dedup run's candidates, from the stages it runs
    ids = [r["id"] for r in records]
    sig = sketch_texts([r["text"] for r in records], config.shingle, config.minhash)
    band = config.banding()
    ci, cj, _ = band_candidates(band_keys(sig.values, band.bands, band.rows))
    dedup_candidates = {tuple(sorted((ids[a], ids[b]))) for a, b in zip(ci.tolist(), cj.tolist())}
    assert len(dedup_candidates) == summary["candidate_pairs"] > 10

    db = str(tmp_path / "seen.db")
    with SeenIndex.for_dedup(db, config, store_shingles=True) as index:
        index.add_many([(r["id"], r["text"]) for r in records])
        near = {tuple(sorted((r["id"], n["id"]))) for r in records for n in index.query(r["text"])["near"]
                if n["id"] != r["id"]}
    assert index_band_pairs(db) == dedup_candidates

    # verified: the dedup run's pairs.jsonl and the index's exactly verified near answers
    with open(os.path.join(out, "pairs.jsonl")) as fh:
        verified = {tuple(sorted((p["a"], p["b"]))) for p in map(json.loads, fh)}
    assert verified == near and len(verified) >= 5  # copies made below at 0.5 % and 2 % edits, on any machine


@pytest.mark.parametrize("option", [["--jobs", "2"], ["--in-memory-mb", "10"]])
def test_an_option_the_spark_engine_cannot_honour_is_refused_in_one_line(option, tmp_path, capsys):
    from neardup.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four five six"}\n')
    code = main(["dedup", str(corpus), "-o", str(tmp_path / "out"), "--engine", "spark", *option, "-q"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert f"{option[0]} " in err and "Spark engine" in err
    assert not (tmp_path / "out" / "summary.json").exists()


def test_spark_master_without_the_spark_engine_is_refused(tmp_path, capsys):
    from neardup.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four five six"}\n')
    code = main(["dedup", str(corpus), "-o", str(tmp_path / "out"), "--spark-master", "local[2]", "-q"])
    assert code == 2 and "--spark-master is not supported by the local engine" in capsys.readouterr().err


def test_the_read_options_are_part_of_the_configuration():
    base = DedupConfig()
    for change in ({"content": "html"}, {"html": "whole"}, {"text_field": "body"}, {"id_field": "url"},
                   {"max_bytes": 1000}, {"format": "parquet"}):
        other = DedupConfig(**change)
        assert other.fingerprint() != base.fingerprint()
        assert other.as_dict()["read"][next(iter(change))] == next(iter(change.values()))
