"""The Spark engine (neardup.engines.spark) against the local engine: identical clusters and pairs.

Real text (Debian copyright files shipped in tests/data/texts) with planted exact copies (case and spacing changed)
and near copies (a few words edited), plus every kind of bad JSONL line. Local mode, 2 cores, one
SparkSession for the module. The first tests need no Spark: they check the pieces that replace
the local reader's loop and the local bucket window against the local code itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random

import numpy as np
import orjson
import pytest

from neardup.config import DedupConfig
from neardup.engines.local.run import Deduplicator

from conftest import real_texts

HAVE_PYSPARK = importlib.util.find_spec("pyspark") is not None
pytestmark = pytest.mark.spark

COLS = ["id", "cluster", "kept", "duplicate_of", "similarity", "reason"]


def mutate(text, rate, rng):
    words = text.split()
    for _ in range(max(1, int(len(words) * rate))):
        words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
    return " ".join(words)


#: Lines the local reader skips or treats specially, each with the reason it gives.
JUNK = [
    b"",                                            # empty (blank line)
    b"   ",                                         # empty
    b"not json",                                    # bad_json
    b"[1, 2]",                                      # not_an_object
    b'{"id": "no-text"}',                           # missing_text
    b'{"id": "null-text", "text": null}',           # missing_text
    b'{"id": "num-text", "text": 12}',              # not_a_string
    b'{"id": "blank", "text": "  \\n "}',           # empty
    b'{"id": "punct", "text": "!!! ??? ..."}',      # no tokens: skipped:empty after sketching
    b'{"id": "bad-utf8", "text": "caf\xe9 au lait"}',  # undecodable
    b'{"id": "crlf", "text": "a line that ends with a carriage return and a line feed"}\r',
    b'{"id": 5, "text": "a numeric id becomes the string five here"}',
    b'{"id": {"k": 1}, "text": "an object id is its JSON text"}',
    b'{"id": "", "text": "an empty id falls back to the file and line"}',
    b'{"text": "no id field at all falls back to the file and line"}',
]


def build_records(n=300, seed=11):
    """(records as dicts with str id and text, in input order): real texts, exact and near copies."""
    rng = random.Random(seed)
    base = real_texts(limit=n, min_bytes=600)
    recs = [{"id": p, "text": t} for p, t in base]
    for k, (p, t) in enumerate(base[:60]):
        if k % 3 == 0:
            recs.append({"id": f"exact-{k}", "text": t.upper().replace(" ", "  ")})
        else:
            recs.append({"id": f"near-{k}", "text": mutate(t, 0.01 * (k % 3), rng)})
    recs.append({"id": base[0][0], "text": "a duplicate id with other words in it entirely"})  # duplicate id
    rng.shuffle(recs)
    return recs


def write_jsonl(path, lines):
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line + b"\n")


def local_run(tmp_path, name, lines, config):
    path = str(tmp_path / f"{name}.jsonl")
    write_jsonl(path, lines)
    out = str(tmp_path / f"{name}-local")
    summary = Deduplicator(config, jobs=2).run([path], out)
    rows = [json.loads(x) for x in open(os.path.join(out, "clusters.jsonl"))]
    pairs = [json.loads(x) for x in open(os.path.join(out, "pairs.jsonl"))]
    kept = [x.rstrip(b"\n").rstrip(b"\r") for x in open(os.path.join(out, "kept.jsonl"), "rb")]
    return path, rows, pairs, summary, kept


def same_bytes(dir_a, dir_b, names):
    """The named files of two output folders, byte for byte."""
    for name in names:
        with open(os.path.join(dir_a, name), "rb") as fa, open(os.path.join(dir_b, name), "rb") as fb:
            a, b = fa.read(), fb.read()
        assert a == b, (name, first_difference(a.splitlines(), b.splitlines()))


def spark_rows(clusters_df):
    return [{c: r[c] for c in COLS} for r in clusters_df.orderBy("ordinal").collect()]


def spark_pairs(pairs_df):
    return [{c: r[c] for c in ("a", "b", "jaccard", "estimate")}
            for r in pairs_df.orderBy("a_ordinal", "b_ordinal").collect()]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    return len(a) == len(b) or (min(len(a), len(b)), "lengths", (len(a), len(b)))


@pytest.fixture(scope="module")
def records():
    recs = build_records()
    assert len(recs) >= 350
    return recs


# -- no Spark needed ---------------------------------------------------------------------------


def test_jsonl_adapter_is_the_local_reader(tmp_path, records):
    from neardup.io import read_documents
    from neardup.io.read import RecordReader
    from neardup.engines.spark.rows import jsonl_record

    lines = [orjson.dumps(r) for r in records[:20]] + JUNK
    path = str(tmp_path / "junk.jsonl")
    write_jsonl(path, lines)
    local = list(read_documents([path], max_bytes=64 << 20, keep_fields=("score",)))
    reader = RecordReader(keep_fields=("score",), max_bytes=64 << 20)
    ours = [jsonl_record(reader, line, n, f"{path}:{n + 1}") for n, line in enumerate(lines)]
    assert [type(x).__name__ for x in ours] == [type(x).__name__ for x in local]
    for a, b in zip(ours, local):
        assert (a.id, a.ordinal, a.source) == (b.id, b.ordinal, b.source)
        if hasattr(b, "reason"):
            assert a.reason == b.reason
        else:
            assert (a.text, a.meta) == (b.text, b.meta)
    # too_large is measured as the local reader measures it (without the line ending)
    sized = []
    for extra in (-1, 0, 1):
        line = b'{"id": "x", "text": "' + b"y" * (17 + extra) + b'"}'
        sized += [line, line + b"\r"]
    assert {len(x) for x in sized} == {39, 40, 41, 42}
    path = str(tmp_path / "sized.jsonl")
    write_jsonl(path, sized)
    local = list(read_documents([path], max_bytes=40))
    small = RecordReader(max_bytes=40)
    ours = [jsonl_record(small, line, n, f"{path}:{n + 1}") for n, line in enumerate(sized)]
    assert [getattr(x, "reason", "doc") for x in ours] == [getattr(x, "reason", "doc") for x in local]
    assert [getattr(x, "reason", "doc") for x in ours].count("too_large") == 2


@pytest.mark.parametrize("max_bytes", [None, 300])
def test_encoded_sketch_rows_equal_the_line_by_line_rows(records, max_bytes):
    """The executors' JSONL fast path (blocks scanned by the local reader's scanner, texts to the
    kernel as UTF-8) gives the line-by-line path's sketch rows value for value: junk lines, lines
    over max_bytes, NFKC-flagged texts, ids from the file and line, and batches that hold
    several files and splits, a split continued across batches."""
    pa = pytest.importorskip("pyarrow")
    from neardup.engines.spark.sketching import map_jsonl
    from neardup.stages.sketch import kernel_handles

    config = DedupConfig(max_bytes=max_bytes)
    if not kernel_handles(config.shingle):
        pytest.skip("the compiled kernel is not built")
    lines = [orjson.dumps(r) for r in records[:60]] + JUNK + [
        orjson.dumps({"id": "nfkc", "text": "ﬁve ｗｉｄｅ letters and the ﬁ ligature in one text"}),
        orjson.dumps({"text": "x " * 30}), orjson.dumps({"id": "long", "text": "word " * 100})]
    rng = random.Random(3)
    rng.shuffle(lines)
    # three (file, split) runs: a, then b's first split across two batches, then b's second
    rows = [(ln, "file:/a", 0) for ln in lines[:30]] + [(ln, "file:/b", 0) for ln in lines[30:60]] + \
           [(ln, "file:/b", 100) for ln in lines[60:]]
    blocks = {("file:/a", 0): (0, 0), ("file:/b", 0): (30, 0), ("file:/b", 100): (60, 30)}
    cuts = [0, 17, 45, len(rows)]

    def batches():
        for lo, hi in zip(cuts, cuts[1:]):
            part = rows[lo:hi]
            yield pa.RecordBatch.from_arrays([pa.array([r[0] for r in part], pa.binary()),
                                              pa.array([r[1] for r in part]), pa.array([r[2] for r in part])],
                                             names=["line", "file", "block"])

    # how a line is read is the config's (record_reader(config)); ctx says where the lines are
    ctx = {"need_kernel": True, "blocks": blocks, "paths": {"file:/a": "a.jsonl", "file:/b": "b.jsonl"}}
    slow = pa.Table.from_batches(list(map_jsonl(batches(), ctx, config))).sort_by("_key").to_pylist()
    fast = pa.Table.from_batches(list(map_jsonl(batches(), {**ctx, "encoded": True}, config)))
    fast = fast.sort_by("_key").to_pylist()
    assert [r["_key"] for r in fast] == list(range(len(rows)))
    for a, b in zip(fast, slow):
        assert {k: v for k, v in a.items() if k != "keyval"} == {k: v for k, v in b.items() if k != "keyval"}
        assert np.isnan(a["keyval"]) and np.isnan(b["keyval"])
    reasons = {r["reason"] for r in fast}
    assert {"", "skipped:bad_json", "skipped:empty", "skipped:undecodable"} <= reasons
    assert any(r["id"].startswith(("a.jsonl:", "b.jsonl:")) for r in fast)  # ids from the file and line
    assert ("skipped:too_large" in reasons) == bool(max_bytes)


def test_row_adapter_is_the_local_parquet_reader(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from neardup.io import read_documents
    from neardup.io.read import RecordReader
    from neardup.engines.spark.rows import row_record

    ids = ["a", None, "", 7, "e", "f", "g"]
    texts = [b"alpha beta gamma delta", b"x y z", None, b"\xff\xfe broken", b"   ", b"ok text here", b"z" * 50]
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"id": pa.array([None if i is None else str(i) if i != "" else "" for i in ids]),
                             "text": pa.array(texts, type=pa.binary())}), path)
    local = list(read_documents([path], max_bytes=40))
    reader = RecordReader(max_bytes=40)
    table = pq.read_table(path).to_pylist()
    ours = [row_record(reader, r["id"], r["text"], {}, n, f"{path}:{n}") for n, r in enumerate(table)]
    for a, b in zip(ours, local):
        assert (type(a), a.id, a.ordinal, a.source) == (type(b), b.id, b.ordinal, b.source)
        assert getattr(a, "reason", None) == getattr(b, "reason", None)
        assert getattr(a, "text", None) == getattr(b, "text", None)


def test_executors_read_html_records_with_the_reader_of_the_config(tmp_path):
    """The executors' JSONL rows are read by record_reader(config), the local engine's reader of
    the same configuration: the HTML of a field extracted, ids and texts from the configured
    fields, a line over max_bytes skipped, the keep field's value and each page's URL claims as
    the local reader (neardup.io.read_documents with the same options) gives them."""
    pa = pytest.importorskip("pyarrow")
    from neardup.engines.spark.rows import parse_jsonl
    from neardup.io import read_documents
    from neardup.stages.survivors import keep_value
    from neardup.stages.urls import claim_key

    def page(body, canonical=None):
        link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
        return f"<html><head><title>t</title>{link}</head><body><nav>menu home about</nav><main><p>{body}</p></main></body></html>"

    story = " ".join(f"word{i} of the story" for i in range(40))
    rows = [{"url": "https://a.test/story", "page": page(story), "n": 3},
            {"url": "https://b.test/copy", "page": page(story, "https://a.test/story"), "n": 5},
            {"url": "https://a.test/long", "page": page("long " * 400), "n": 1},
            {"page": page("no url at all here"), "n": 2},
            {"url": "https://a.test/none"}]
    lines = [orjson.dumps(r) for r in rows]
    path = str(tmp_path / "pages.jsonl")
    write_jsonl(path, lines)
    config = DedupConfig(content="html", text_field="page", id_field="url", keep="field", keep_field="n",
                         url_field="url", max_bytes=1500)
    local = list(read_documents([path], content="html", text_field="page", id_field="url", max_bytes=1500,
                                keep_fields=("n", "url"), claims=True))
    batch = pa.RecordBatch.from_arrays([pa.array(lines, pa.binary()), pa.array(["file:/p"] * len(lines)),
                                        pa.array([0] * len(lines))], names=["line", "file", "block"])
    ctx = {"blocks": {("file:/p", 0): (0, 0)}, "paths": {"file:/p": path}}
    (recs,) = list(parse_jsonl([batch], ctx, config))
    assert recs.keys == [d.ordinal for d in local] == list(range(len(rows)))
    assert recs.ids == [d.id for d in local]
    assert recs.skips == [getattr(d, "reason", None) for d in local]
    assert recs.skips[2] == "too_large" and recs.skips[4] == "missing_text"
    assert recs.texts == [getattr(d, "text", None) for d in local]
    assert "menu" not in recs.texts[0] and "word39 of the story" in recs.texts[0]  # the main content
    want_keys = [keep_value(d.meta.get("n")) for d in local if not hasattr(d, "reason")]
    assert [k for k, skip in zip(recs.keyvals, recs.skips) if skip is None] == want_keys == [3.0, 5.0, 2.0]
    rules = config.rules_of_urls()
    assert recs.claim_keys == [None if hasattr(d, "reason") else claim_key(d.meta, rules) for d in local]
    assert recs.claim_keys[1] is not None  # the copy's canonical link claims the story's URL
    assert recs.page_urls == ["https://a.test/story", "https://b.test/copy", None, None, None]


@pytest.mark.parametrize("cli_args,config,inputs,output", [
    (["--source-field", "src"], DedupConfig(source_field="src"), 1, "out"),
    (["--keep", "source:a,b"], DedupConfig(keep="source", keep_sources=("a", "b")), 1, "out"),
    (["--method", "simhash"], DedupConfig(method="simhash"), 1, "out"),
    (["--format", "text"], DedupConfig(format="text"), 1, "out"),
    ([], DedupConfig(), 2, "out"),
    (["--url-field", "url"], DedupConfig(url_field="url"), 1, "hdfs://cluster/out"),
])
def test_the_library_gets_the_commands_refusals(tmp_path, capsys, cli_args, config, inputs, output):
    """neardup.spark.dedup_paths refuses what ``neardup dedup --engine spark`` refuses, with the
    same line, before a Spark session starts (the engine's refusals, asked by both)."""
    if not HAVE_PYSPARK:
        pytest.skip("pyspark is not installed: pip install 'neardup[spark]'")
    from neardup.cli import main
    from neardup.errors import ConfigError
    from neardup.spark import dedup_paths

    paths = []
    for k in range(inputs):
        paths.append(str(tmp_path / f"c{k}.jsonl"))
        write_jsonl(paths[-1], [b'{"id": "a", "url": "https://a.test/", "src": "a", "text": "one two three four"}'])
    out = output if "://" in output else str(tmp_path / output)
    assert main(["dedup", *paths, "-o", out, "--engine", "spark", "-q", *cli_args]) == 2
    said = capsys.readouterr().err.strip()
    with pytest.raises(ConfigError) as refused:
        dedup_paths(paths, out, config)
    assert str(refused.value) in said and "Spark engine" in str(refused.value)
    assert not os.path.exists(os.path.join(str(tmp_path), "out"))


def test_packed_bucket_pairs_equal_local_candidates_across_batches_and_partitions():
    """Band keys packed per target partition (band_blobs), bucketed per partition from batches
    split anywhere (bucket_pairs) and made distinct per pair partition (distinct_pairs): the
    local engine's candidate pairs and bucket statistics, buckets of every size."""
    pa = pytest.importorskip("pyarrow")
    from neardup.cluster.candidates import BUCKET_WINDOW, candidate_pairs
    from neardup.engines.spark.executors import band_blobs, bucket_pairs, distinct_pairs

    rng = np.random.default_rng(5)
    n, bands = 3000, 4
    keys = rng.integers(0, 400, size=(n, bands)).astype(np.uint64)  # some buckets well over 64
    keys[:200, 0] = 7  # one bucket of 200
    keys[5:9, 1] = 2**64 - 3  # keys past 2**63 (they travel as bytes)
    ci, cj, local_stats = candidate_pairs(keys)
    expected = set(zip(ci.tolist(), cj.tolist()))
    assert local_stats["largest_bucket"] >= 200 and local_stats["buckets_over_window"] >= 1

    def batches_of(table, pieces):
        cuts = sorted(rng.choice(np.arange(1, table.num_rows), size=pieces, replace=False).tolist())
        return [table.slice(lo, hi - lo).to_batches()[0] for lo, hi in zip([0] + cuts, cuts + [table.num_rows])
                if hi > lo]

    targets = (11, 3, 40)  # what repartition maps to partitions 0, 1, 2
    order = rng.permutation(n)  # documents in any order in the sketch table
    sketch = pa.table({"ordinal": pa.array(order.astype(np.int64)),
                       "bands": pa.array([keys[o].tobytes() for o in order.tolist()], pa.binary())})
    by_target: dict = {t: [] for t in targets}
    for rb in band_blobs(iter(batches_of(sketch, 7)), bands, targets):
        for row in rb.to_pylist():
            by_target[row["part"]].append(row)
    pair_rows: dict = {t: [] for t in targets}
    stats = []
    for t in targets:
        table = pa.Table.from_pylist(by_target[t], schema=pa.schema([("part", pa.int32()), ("band", pa.binary()),
                                                                      ("key", pa.binary()), ("ordinal", pa.binary())]))
        inputs = batches_of(table, 5) if table.num_rows > 6 else table.to_batches()
        for rb in bucket_pairs(iter(inputs), BUCKET_WINDOW, targets):
            for row in rb.to_pylist():
                (stats if row["part"] < 0 else pair_rows[row["part"]]).append(row)
    assert len(stats) == len(targets)
    got: list = []
    for t in targets:
        blobs = pa.table({"pairs": pa.array([r["pairs"] for r in pair_rows[t]], pa.binary())})
        for rb in distinct_pairs(iter(blobs.to_batches())):
            got.extend(zip(rb.column(0).to_pylist(), rb.column(1).to_pylist()))
    assert len(got) == len(set(got)) and set(got) == expected
    assert sum(r["shared"] for r in stats) == local_stats["buckets_shared"]
    assert max(r["largest"] for r in stats) == local_stats["largest_bucket"]
    assert sum(r["over"] for r in stats) == local_stats["buckets_over_window"]


# -- on Spark ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    if not HAVE_PYSPARK:
        pytest.skip("pyspark is not installed: pip install 'neardup[spark]'")
    from neardup.spark import get_session

    session = get_session("local[2]", app_name="neardup-tests-engine", conf={"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


def test_paths_jsonl_equals_local_with_bad_lines_and_split_files(spark, tmp_path, records):
    """neardup dedup --engine spark on a JSONL file read in many splits: the local ordinals, ids,
    reasons, clusters, pairs, summary counts and kept records."""
    from neardup.cli import main

    rng = random.Random(3)
    lines = [orjson.dumps(r) for r in records]
    for junk in JUNK:
        lines.insert(rng.randrange(len(lines)), junk)
    config = DedupConfig()
    path, rows, pairs, local_summary, local_kept = local_run(tmp_path, "corpus", lines, config)
    assert any(r["reason"] == "exact" for r in rows) and any(r["reason"] == "near" for r in rows)
    assert len({r["reason"] for r in rows if r["reason"].startswith("skipped:")}) >= 5

    out = str(tmp_path / "spark-out")
    # the file in 6 splits: lines are numbered across split boundaries
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(os.path.getsize(path) // 6 + 1))
    try:
        assert main(["dedup", path, "-o", out, "--engine", "spark", "-q"]) == 0
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    # the local engine's files, from its writers: the same names and bytes
    same_bytes(os.path.dirname(path) + "/corpus-local", out, ["clusters.jsonl", "pairs.jsonl", "kept.jsonl"])
    assert sorted(os.listdir(out)) == sorted(os.listdir(os.path.dirname(path) + "/corpus-local"))
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["engine"] == "spark"
    for key in ("input", "kept", "unique", "exact_duplicates", "near_duplicates", "skipped", "skipped_by_reason",
                "clusters", "candidate_pairs", "estimate_filtered_pairs", "verified_pairs", "chained_members",
                "chained_examples", "largest_bucket", "buckets_over_window", "duplicate_ids", "shingles_total",
                "config", "config_fingerprint"):
        assert summary[key] == local_summary[key], key
    assert summary["kept_output"]["records"] == local_summary["kept_output"]["records"] == len(local_kept)
    # both engines name the same stages in their timing table, in the same order (times not compared)
    spark_stage_names, local_stage_names = list(summary["seconds"]), list(local_summary["seconds"])
    assert spark_stage_names == local_stage_names


def frame_case(spark, tmp_path, records, name, config, order):
    """The records as a DataFrame, and the local result of the same records in the order the Spark
    engine uses: by ``line`` with order_col, else by (id, xxh3-128 of the text)."""
    import xxhash

    rows = [(i, r["id"], r["text"]) for i, r in enumerate(records)]
    if order is None:
        rows.sort(key=lambda t: (t[1], xxhash.xxh3_128_digest(t[2].encode("utf-8", "surrogatepass"))))
    _, local_rows, local_pairs, local_summary, _ = local_run(
        tmp_path, name, [orjson.dumps({"id": i, "text": t}) for _, i, t in rows], config)
    df = spark.createDataFrame(rows, "line long, id string, text string")
    return df, local_rows, local_pairs, local_summary


@pytest.mark.parametrize("partitions,keep,order", [(2, "first", "line"), (7, "first", "line"), (7, "longest", "line"),
                                                   (2, "shortest", None), (7, "shortest", None)])
def test_dataframe_api_equals_local(spark, tmp_path, records, partitions, keep, order):
    from neardup.spark import dedup

    config = DedupConfig(keep=keep)
    df, rows, pairs, local_summary = frame_case(spark, tmp_path, records, f"frame-{partitions}-{keep}", config, order)
    result = dedup(df.repartition(partitions), id_col="id", text_col="text", order_col=order, config=config)
    try:
        got = spark_rows(result.clusters)
        assert got == rows, first_difference(got, rows)
        got_pairs = spark_pairs(result.pairs)
        assert got_pairs == pairs, first_difference(got_pairs, pairs)
        for key in ("input", "kept", "exact_duplicates", "near_duplicates", "clusters", "verified_pairs"):
            assert result.summary[key] == local_summary[key], key
        kept = sorted(r["id"] for r in result.kept.select("id").collect())
        assert kept == sorted(r["id"] for r in rows if r["kept"])
    finally:
        result.unpersist()


def test_parquet_paths_equal_local(spark, tmp_path, records):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from neardup.spark import dedup_paths

    folder = tmp_path / "shards"
    folder.mkdir()
    recs = records[:150]
    for k in range(3):  # three shards, read in name order; rows with null or missing texts
        part = recs[k * 50:(k + 1) * 50]
        ids = [r["id"] if i % 17 else None for i, r in enumerate(part)]
        texts = [r["text"] if i % 23 != 5 else None for i, r in enumerate(part)]
        pq.write_table(pa.table({"id": ids, "text": texts, "score": [float(len(t or "")) for t in texts]}),
                       str(folder / f"part-{k}.parquet"), row_group_size=16)
    config = DedupConfig(keep="field", keep_field="score")
    out_local = str(tmp_path / "pq-local")
    Deduplicator(config, jobs=2).run([str(folder)], out_local)
    rows = [json.loads(x) for x in open(os.path.join(out_local, "clusters.jsonl"))]
    out = str(tmp_path / "pq-spark")
    summary = dedup_paths([str(folder)], out, config, spark=spark)
    same_bytes(out_local, out, ["clusters.jsonl", "pairs.jsonl", "kept.parquet"])
    kept = pq.read_table(os.path.join(out, "kept.parquet"))
    assert kept.column_names == ["id", "text", "score"]  # the input's schema, as the local engine writes it
    assert kept.num_rows == summary["kept"] == sum(r["kept"] for r in rows)
    # clusters and pairs as Parquet, for both engines, by the option and not by the engine
    Deduplicator(config, jobs=2).run([str(folder)], out_local + "-pq", output_format="parquet")
    dedup_paths([str(folder)], out + "-pq", config, spark=spark, output_format="parquet")
    for name in ("clusters.parquet", "pairs.parquet"):
        local_table = pq.read_table(os.path.join(out_local + "-pq", name))
        assert local_table.equals(pq.read_table(os.path.join(out + "-pq", name)))
    assert pq.read_table(os.path.join(out + "-pq", "clusters.parquet")).to_pylist() == rows
    same_bytes(out_local + "-pq", out + "-pq", ["clusters.parquet", "pairs.parquet", "kept.parquet"])


def test_bad_arguments(spark, tmp_path):
    from neardup.errors import ConfigError
    from neardup.spark import dedup, dedup_paths

    df = spark.createDataFrame([(1, "a", "x y z"), (1, "b", "x y z w")], "line long, id string, text string")
    with pytest.raises(ConfigError, match="not unique"):
        dedup(df, order_col="line")
    with pytest.raises(ConfigError, match="not a column"):
        dedup(df, text_col="body")
    with pytest.raises(ConfigError, match="simhash"):
        dedup(df, config=DedupConfig(method="simhash"))
    (tmp_path / "a.txt").write_text("plain text")
    with pytest.raises(ConfigError, match="JSONL"):
        dedup_paths([str(tmp_path / "a.txt")], str(tmp_path / "o"), spark=spark)


def test_max_bytes_and_no_kept_are_honoured_as_locally(spark, tmp_path, records):
    from neardup.spark import dedup_paths

    lines = [orjson.dumps(r) for r in records[:120]]
    limit = sorted(len(x) for x in lines)[60]  # about half the records are over it
    config = DedupConfig(max_bytes=limit)
    path, rows, pairs, summary, _ = local_run(tmp_path, "limit", lines, config)
    assert summary["skipped_by_reason"].get("too_large", 0) >= 50
    out = str(tmp_path / "limit-spark")
    spark_summary = dedup_paths([path], out, config, spark=spark, write_kept=False)
    same_bytes(os.path.dirname(path) + "/limit-local", out, ["clusters.jsonl", "pairs.jsonl"])
    assert spark_summary["skipped_by_reason"] == summary["skipped_by_reason"]
    assert spark_summary["kept_output"] is None and not os.path.exists(os.path.join(out, "kept.jsonl"))


def test_url_identity_equals_local_with_claims_and_exact_copies(spark, tmp_path):
    """--url-field on Spark: URL groups, canonical claims followed and contradicted, and exact copies
    whose URL or claim stands for their first holder: the local engine's files byte for byte, and
    its summary's URL figures, from JSONL and from Parquet; and the DataFrame API on the same rows,
    in the same order, gives the local engine's answers for the Parquet file."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from neardup.errors import ConfigError
    from neardup.spark import dedup, dedup_paths
    from engines.test_dedup_urls import ROWS, SITE

    rows = [*ROWS,
            {"id": "r6", "url": ROWS[2]["url"], "html": ROWS[5]["html"]},  # an exact copy of r5 under r2's URL
            {"id": "r7", "url": SITE + "copy/of/r2.html", "html": ROWS[2]["html"]},  # an exact copy of a claimant
            {"id": "r8", "url": SITE + "z.html", "html": ROWS[4]["html"]}]  # ... of a contradicted claimant
    config = DedupConfig(content="html", text_field="html", url_field="url")
    jsonl = tmp_path / "crawl.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    parquet = tmp_path / "crawl.parquet"
    pq.write_table(pa.table({k: [r[k] for r in rows] for k in ("id", "url", "html")}), str(parquet))
    for path, kept in ((jsonl, "kept.jsonl"), (parquet, "kept.parquet")):
        out_local, out = str(tmp_path / f"{path.name}-local"), str(tmp_path / f"{path.name}-spark")
        local_summary = Deduplicator(config, jobs=2).run([str(path)], out_local)
        summary = dedup_paths([str(path)], out, config, spark=spark)
        same_bytes(out_local, out, ["clusters.jsonl", "pairs.jsonl", kept])
        reasons = {json.loads(x)["id"]: json.loads(x)["reason"] for x in open(os.path.join(out, "clusters.jsonl"))}
        # a Parquet row's relative canonical link is not resolved (the local reader gives the
        # claims no page URL there): one claim fewer, in both engines alike
        followed = {"canonical"} if path == jsonl else set()
        assert {"url", "exact"} | followed <= set(reasons.values())
        for key in ("url_duplicates", "canonical_duplicates", "canonical_claims", "url_groups", "kept"):
            assert summary[key] == local_summary[key], key
        assert summary["canonical_claims"]["contradicted"] >= 1
    local_out = tmp_path / "crawl.parquet-local"
    local = [json.loads(x) for x in open(local_out / "clusters.jsonl")]
    local_summary = json.loads((local_out / "summary.json").read_text())
    df = spark.createDataFrame([(100 + k, f"k{k:03d}", r["id"], r["url"], r["html"]) for k, r in enumerate(rows)],
                               "line long, key string, id string, url string, html string")
    # the order as an integer column (its values are the results' ordinals) and as strings (ranked)
    for order_col, first in (("line", 100), ("key", 0)):
        got = dedup(df, text_col="html", order_col=order_col, config=config)
        clusters = sorted(got.clusters.collect(), key=lambda r: r["ordinal"])
        assert [r["ordinal"] for r in clusters] == list(range(first, first + len(rows)))
        assert [(r["id"], r["cluster"], r["kept"], r["duplicate_of"], r["reason"], r["similarity"]) for r in clusters] \
            == [(x["id"], x["cluster"], x["kept"], x["duplicate_of"], x["reason"], x["similarity"]) for x in local]
        assert {"url", "exact"} <= {r["reason"] for r in clusters}
        assert sorted(r["id"] for r in got.kept.collect()) == sorted(x["id"] for x in local if x["kept"])
        pairs = {(r["a"], r["b"], r["a_ordinal"] - first, r["b_ordinal"] - first) for r in got.pairs.collect()}
        ordinal_of = {x["id"]: k for k, x in enumerate(local)}
        assert pairs == {(x["a"], x["b"], ordinal_of[x["a"]], ordinal_of[x["b"]])
                         for x in map(json.loads, open(local_out / "pairs.jsonl"))}
        for key in ("url_duplicates", "canonical_duplicates", "canonical_claims", "url_groups", "kept", "input"):
            assert got.summary[key] == local_summary[key], key
        got.unpersist()
    with pytest.raises(ConfigError, match="order_col 'nothing' is not a column"):
        dedup(df, text_col="html", order_col="nothing", config=config)
