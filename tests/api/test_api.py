"""neardup.dedup in process: every input kind gives the command line's outcomes, record for record."""

import json
import os
import random
import warnings

import numpy as np
import orjson
import pytest

import neardup
from neardup.cli import main

from conftest import real_texts

try:
    import pyarrow as pa
except ImportError:
    pa = None

#: neardup.dedup answers in Arrow tables: its tests need pyarrow; the rest of the module does not
needs_pyarrow = pytest.mark.skipif(pa is None, reason="neardup.dedup needs pyarrow: pip install 'neardup[io]'")

SUMMARY_KEYS = ("input", "kept", "unique", "exact_duplicates", "near_duplicates", "skipped", "skipped_by_reason",
                "clusters", "candidate_pairs", "estimate_filtered_pairs", "verified_pairs", "chained_members",
                "duplicate_ids", "shingles_total", "config", "config_fingerprint")


@pytest.fixture(scope="module")
def records():
    """Real texts, exact copies (case changed), near copies, and records the reader skips."""
    rng = random.Random(5)
    base = [{"id": path, "text": text} for path, text in real_texts(limit=50, min_bytes=2000)]
    out = list(base)
    for k, rec in enumerate(base[:16]):
        if k % 2:
            out.append({"id": f"copy-{k}", "text": rec["text"].upper()})
        else:
            words = rec["text"].split()
            for _ in range(max(1, len(words) // 60)):
                words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
            out.append({"id": f"near-{k}", "text": " ".join(words)})
    out += [{"id": "blank", "text": "   "}, {"id": "short", "text": "one two"}]
    rng.shuffle(out)
    return out


@pytest.fixture(scope="module")
def cli_answer(records, tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    corpus = d / "corpus.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    out = d / "out"
    assert main(["dedup", str(corpus), "-o", str(out), "-q", "--jobs", "2"]) == 0
    rows = [json.loads(line) for line in open(out / "clusters.jsonl")]
    pairs = [json.loads(line) for line in open(out / "pairs.jsonl")]
    summary = json.load(open(out / "summary.json"))
    kept = [json.loads(line)["id"] for line in open(out / "kept.jsonl")]
    return rows, pairs, summary, kept


def same_as_cli(result, cli_answer, records):
    rows, pairs, summary, kept = cli_answer
    assert result.outcomes.column_names == list(neardup.api.OUTCOME_COLUMNS)
    assert result.outcomes.to_pylist() == rows
    assert result.pairs.to_pylist() == pairs and len(pairs) >= 5
    assert result.keep.dtype == bool and result.keep.tolist() == [r["kept"] for r in rows]
    assert [r["id"] for r, k in zip(records, result.keep) if k] == kept
    assert {k: result.summary[k] for k in SUMMARY_KEYS} == {k: summary[k] for k in SUMMARY_KEYS}
    reasons = set(result.outcomes.column("reason").to_pylist())
    assert {"exact", "near", "kept", "unique", "skipped:empty"} <= reasons


@needs_pyarrow
def test_a_list_of_dicts(records, cli_answer):
    same_as_cli(neardup.dedup(records, jobs=1), cli_answer, records)


@needs_pyarrow
def test_id_text_pairs(records, cli_answer):
    same_as_cli(neardup.dedup([(r["id"], r["text"]) for r in records]), cli_answer, records)


@needs_pyarrow
def test_a_pyarrow_table_and_its_batches(records, cli_answer):
    table = pa.Table.from_pylist(records)
    same_as_cli(neardup.dedup(table), cli_answer, records)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    same_as_cli(neardup.dedup(reader), cli_answer, records)


@needs_pyarrow
def test_a_pandas_dataframe(records, cli_answer):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(records)
    result = neardup.dedup(df)
    same_as_cli(result, cli_answer, records)
    assert df[result.keep]["id"].tolist() == cli_answer[3]


@needs_pyarrow
def test_a_polars_dataframe(records, cli_answer):
    pl = pytest.importorskip("polars")
    df = pl.DataFrame(records)
    result = neardup.dedup(df)
    same_as_cli(result, cli_answer, records)
    assert df.filter(pl.Series(result.keep))["id"].to_list() == cli_answer[3]


@needs_pyarrow
def test_a_datasets_dataset(records, cli_answer):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(records)  # in memory: nothing downloaded
    result = neardup.dedup(ds)
    same_as_cli(result, cli_answer, records)
    assert ds.select(np.flatnonzero(result.keep))["id"] == cli_answer[3]


@needs_pyarrow
def test_options_replace_the_config_and_unknown_ones_are_refused(records):
    strict = neardup.dedup(records, threshold=0.99)
    assert strict.summary["config"]["threshold"] == 0.99
    assert strict.summary["near_duplicates"] < neardup.dedup(records).summary["near_duplicates"]
    other = neardup.dedup([{"url": r["id"], "body": r["text"]} for r in records], id_field="url", text_field="body")
    assert other.outcomes.column("reason").to_pylist() == neardup.dedup(records).outcomes.column("reason").to_pylist()
    with pytest.raises(neardup.ConfigError, match="no option 'treshold'"):
        neardup.dedup(records, treshold=0.9)
    with pytest.raises(neardup.ConfigError, match="not one text"):
        neardup.dedup("one text")


def test_signature_matrix_is_what_dedup_bands():
    texts = [r for _, r in real_texts(limit=5)]
    sig = neardup.signature_matrix(texts)
    config = neardup.DedupConfig()
    assert sig.shape == (5, config.minhash.num_perm) and sig.dtype == np.uint64
    one = neardup.MinHash.from_text(texts[0], config.shingle, config.minhash)
    assert np.array_equal(sig[0], one.hashvalues)
    with pytest.raises(TypeError):
        neardup.signature_matrix("one text")


def test_all_is_what_the_docs_list():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "api.md")
    with open(path, encoding="utf-8") as fh:
        listed = [line.split("`")[1] for line in fh if line.startswith("- `")]
    assert sorted(listed) == sorted(set(listed)), "a name is listed twice"
    assert sorted(listed) == [n for n in neardup.__all__ if n != "__version__"]
    for name in listed:
        assert getattr(neardup, name) is not None


def test_names_no_longer_exported_warn_with_their_home():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from neardup.lsh.params import threshold

        assert neardup.threshold is threshold
    assert "neardup.lsh.params" in str(caught[0].message) and caught[0].category is DeprecationWarning
    assert "threshold" not in neardup.__all__


@needs_pyarrow
@pytest.mark.parametrize("kind", ["dicts", "arrow"])
def test_keep_field_and_html_content_as_the_cli(kind, records, tmp_path):
    pytest.importorskip("trafilatura")
    rows = [{"id": r["id"], "body": f"<html><body><nav>menu</nav><p>{r['text'][:3000]}</p></body></html>",
             "score": float(len(r["text"]) % 97)} for r in records[:40]]
    corpus = tmp_path / "pages.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out"
    assert main(["dedup", str(corpus), "-o", str(out), "-q", "--content", "html", "--text-field", "body",
                 "--keep", "field:score", "--no-kept"]) == 0
    expected = [json.loads(line) for line in open(out / "clusters.jsonl")]
    data = rows if kind == "dicts" else pa.Table.from_pylist(rows)
    result = neardup.dedup(data, content="html", text_field="body", keep="field", keep_field="score")
    assert result.outcomes.to_pylist() == expected
    assert result.summary["config"] == json.load(open(out / "summary.json"))["config"]
