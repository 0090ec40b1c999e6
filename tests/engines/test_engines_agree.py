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
from neardup.engines.local.run import Deduplicator
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


# -- every option of neardup dedup, on both engines ----------------------------------------------

#: Each option of ``neardup dedup`` with the arguments it is tried with, and what the Spark engine
#: must do: "same" (the local engine's output files, byte for byte, with the same arguments) or
#: "refused" (exit 2, one line naming the option and the engine, no output). A new option fails
#: ``test_every_dedup_option_is_classified`` until it is added here.
OPTIONS = {
    "--output": [],  # every run
    "--engine": [],  # every run
    "--quiet": [],  # every run
    "--method": [(["--method", "exact"], "same"), (["--method", "simhash"], "refused"),
                 (["--method", "broder"], "refused"), (["--method", "greedy"], "refused")],
    # the sample and Hamming options change only broder, greedy and simhash runs (refused): with
    # minhash neither engine uses them
    "--sample-mod": [(["--sample-mod", "5"], "same")],
    "--sample-cap": [(["--sample-cap", "3"], "same")],
    "--sample": [(["--sample", "min_s"], "same")],
    "--sample-size": [(["--sample-size", "50"], "same")],
    "--max-distance": [(["--max-distance", "6"], "same")],
    "--threshold": [(["--threshold", "0.55"], "same")],
    "--measure": [(["--measure", "containment"], "same")],
    "--bands": [(["--bands", "32"], "same")],
    "--rows": [(["--rows", "4"], "same")],
    "--no-verify": [(["--no-verify"], "same")],
    "--keep": [(["--keep", "longest"], "same"), (["--keep", "shortest"], "same"), (["--keep", "field:score"], "same"),
               (["--keep", "source:url"], "refused")],
    "--format": [(["--format", "jsonl"], "same"), (["--format", "text"], "refused"), (["--format", "warc"], "refused"),
                 (["--format", "html"], "refused")],
    "--id-field": [(["--id-field", "url"], "same")],
    "--text-field": [(["--text-field", "body"], "same")],
    "--content": [(["--content", "html"], "same")],
    "--html": [(["--content", "html", "--html", "whole"], "same")],
    "--max-bytes": [(["--max-bytes", "1500"], "same")],
    "-k": [(["-k", "3"], "same")],
    "--unit": [(["--unit", "char", "-k", "8"], "same")],
    "--keep-punctuation": [(["--keep-punctuation"], "same")],
    "--no-casefold": [(["--no-casefold"], "same")],
    "--no-nfkc": [(["--no-nfkc"], "same")],
    "--shingle-hash": [(["--shingle-hash", "rabin40"], "same")],
    "--num-perm": [(["--num-perm", "64"], "same")],
    "--seed": [(["--seed", "7"], "same")],
    "--family": [(["--family", "affine61"], "same")],
    "--spark-master": [(["--spark-master", "local[2]"], "same")],
    "--ray-address": [(["--ray-address", "127.0.0.1:1"], "refused")],
    "--jobs": [(["--jobs", "2"], "same"), (["--jobs", "2", "--spark-master", "local[2]"], "refused")],
    "--no-kept": [(["--no-kept"], "same")],
    "--output-format": [(["--output-format", "parquet"], "same")],
    "--in-memory-mb": [(["--in-memory-mb", "10"], "refused")],
    # what a run does about records and files it cannot read: the CLI applies --strict and
    # --max-skipped to either engine's summary (the exit status; this corpus reads whole)
    "--on-error": [(["--on-error", "error"], "same"), (["--on-error", "skip"], "refused")],
    "--strict": [(["--strict"], "same")],
    "--max-skipped": [(["--max-skipped", "5"], "same")],
    "--files-from": [(["--files-from", "{list}"], "same")],  # {list}: a file naming the corpus
    # incremental dedup against an index, and sources: the local engine's
    "--source-field": [(["--source-field", "url"], "refused")],
    # URL groups and canonical claims (stages/urls.py): the URL rules change nothing without
    # --url-field, so they are tried with it
    "--url-field": [(["--url-field", "url"], "same")],
    "--drop-params": [(["--url-field", "url", "--drop-params", "ref"], "same")],
    "--fold-www": [(["--url-field", "url", "--fold-www"], "same")],
    "--fold-trailing-slash": [(["--url-field", "url", "--fold-trailing-slash"], "same")],
    "--save-index": [(["--save-index", "index.db"], "refused")],
    # (with URL identity too: the distributed engines run no --against at all)
    "--against": [(["--against", "index.db"], "refused"), (["--against", "index.db", "--url-field", "url"], "refused")],
    "--update-index": [(["--update-index"], "refused")],
    # the local engine's kept shards, compression and work folder: Spark writes and retries its own way
    "--output-shards": [(["--output-shards", "2"], "refused")],
    "--shard-size": [(["--shard-size", "1MB"], "refused")],
    "--compression": [(["--compression", "gzip"], "refused")],
    "--resume": [(["--resume"], "refused")],
    "--work-dir": [(["--work-dir", "work"], "refused")],
}

#: The Spark runs: each refusal alone; the "same" tries joined into a few runs (a Spark run costs
#: seconds), each try in exactly one run. ``test_the_options_move_the_outputs`` shows that every
#: try alone changes the local engine's outputs, so an engine that dropped one would differ.
GROUPS = [
    ["--method"], ["--threshold", "--measure"], ["--bands", "--no-verify"], ["--rows"], ["--keep"],
    ["--format", "--id-field", "--text-field", "--max-bytes"], ["--content"], ["--html"],
    ["-k", "--keep-punctuation", "--no-casefold", "--no-nfkc", "--shingle-hash"], ["--unit"],
    ["--num-perm", "--seed", "--family", "--sample-mod", "--sample-cap", "--sample", "--sample-size",
     "--max-distance"],
    ["--spark-master", "--no-kept", "--output-format"], ["--jobs"],
    ["--on-error", "--strict", "--max-skipped", "--files-from"],
    ["--url-field"], ["--drop-params"], ["--fold-www"], ["--fold-trailing-slash"],
]


def spark_runs(options=OPTIONS, groups=GROUPS) -> list:
    runs = [(args, "refused") for tries in options.values() for args, what in tries if what == "refused"]
    for group in groups:
        tries = [args for name in group for args, what in options[name] if what == "same"]
        # options of one try each join one run; an option tried several ways gets a run per try
        single = [t for name in group for t in [a for a, w in options[name] if w == "same"]
                  if len([a for a, w in options[name] if w == "same"]) == 1]
        several = [t for t in tries if t not in single]
        if single:
            runs.append(([a for t in single for a in t], "same"))
        runs += [(t, "same") for t in several]
    return runs


CASES = spark_runs()

#: What the Ray engine does where it differs from the Spark engine: it writes the kept corpus with
#: the local writer (shards, compression) and keeps a work folder of finished shards (resume,
#: --work-dir: ``{work}`` is a folder of the test's); --ray-address is tried on a real two-node
#: cluster in tests/engines/test_ray.py (here the module's runtime is in use).
RAY_OPTIONS = {**OPTIONS,
               "--spark-master": [(["--spark-master", "local[2]"], "refused")],
               "--ray-address": [],
               "--jobs": [(["--jobs", "2"], "same"), (["--jobs", "2", "--ray-address", "127.0.0.1:1"], "refused")],
               "--output-shards": [(["--output-shards", "2"], "same")],
               "--shard-size": [(["--shard-size", "1MB"], "same")],
               "--compression": [(["--compression", "gzip"], "same")],
               "--resume": [(["--resume"], "same")],
               "--work-dir": [(["--work-dir", "{work}"], "same")]}
RAY_GROUPS = [[n for n in g if n != "--spark-master"] for g in GROUPS] + [
    ["--output-shards", "--compression"], ["--shard-size"], ["--resume", "--work-dir"]]
RAY_CASES = spark_runs(RAY_OPTIONS, RAY_GROUPS)


def test_every_try_is_in_one_ray_run():
    tried = {" ".join(a) for a, _ in RAY_CASES}
    for name, tries in RAY_OPTIONS.items():
        for args, _ in tries:
            assert any(" ".join(args) in t for t in tried), args

#: The summary's figures that both engines must give alike.
COUNTS = ("input", "kept", "exact_duplicates", "near_duplicates", "skipped_by_reason", "candidate_pairs",
          "estimate_filtered_pairs", "verified_pairs", "largest_bucket", "config_fingerprint")


def test_every_try_is_in_one_spark_run():
    tried = [args for args, what in CASES if what == "same"]
    for name, tries in OPTIONS.items():
        assert not tries or any(name in args for args, _ in CASES), name
    assert sum(1 for g in GROUPS for _ in g) == len({n for g in GROUPS for n in g})
    assert {n for g in GROUPS for n in g} == {n for n, t in OPTIONS.items() if any(w == "same" for _, w in t)}
    assert tried


def dedup_option_strings() -> set:
    """The options of ``neardup dedup`` (its parser, as the CLI builds it), one name each."""
    import argparse

    from neardup.cli import dedup as dedup_cli

    parser = argparse.ArgumentParser()
    dedup_cli.register(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["dedup"]
    return {max(a.option_strings, key=len) if a.option_strings[0] != "-k" else "-k"
            for a in sub._actions if a.option_strings and "--help" not in a.option_strings}


def test_every_dedup_option_is_classified():
    assert dedup_option_strings() == set(OPTIONS)
    assert all(tries for name, tries in OPTIONS.items() if name not in ("--output", "--engine", "--quiet"))


def option_corpus(folder) -> str:
    """Records whose outputs move with every option: real texts (some as HTML with boilerplate),
    exact copies with case, spacing and compatibility characters changed, near copies at several edit rates, and the fields
    the field options name (url, body, score; a copy's URL often the original's, spelled otherwise)."""
    rng = random.Random(5)
    base = [t for _, t in real_texts(limit=40, min_bytes=800)][:36]
    records = []
    for k, text in enumerate(base):
        text = text[:1000 + 100 * (k % 7)]
        if k % 4 == 1:
            text = f"<html><body><nav>home | about | news</nav><p>{text}</p><footer>(c) site</footer></body></html>"
        records.append({"id": f"doc-{k}", "url": f"https://example.org/{k}", "text": text, "score": k % 5,
                        "body": f"{text} extra body words {k}"})
    for k, rec in enumerate(records[:24]):
        words = rec["text"].split()
        if k % 5 == 0:
            # an exact copy through case, spacing and NFKC (fullwidth A)
            text = " ".join(words).upper().replace(" ", "  ").replace("A", "\uff21")
        else:
            for _ in range(max(1, int(len(words) * (0.01, 0.04, 0.1, 0.2)[k % 4]))):
                words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
            text = " ".join(words)
        # a copy's URL: the original's under a spelling that a URL rule folds (by default: tracking
        # parameters, case, default port, fragment; --drop-params ref, --fold-www, --fold-trailing-slash)
        url = (f"https://example.org/{k}?utm_source=feed", f"https://example.org/{k}?ref=home",
               f"https://www.example.org/{k}", f"https://example.org/{k}/", f"HTTPS://Example.ORG:443/{k}#top")[k % 5]
        records.append({"id": f"copy-{k}", "url": url, "text": text,
                        "score": (k * 3) % 7, "body": f"{text} extra body words copy {k}"})
    rng.shuffle(records)
    path = os.path.join(folder, "corpus.jsonl")
    with open(path, "wb") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def with_list(args, corpus, folder):
    """The inputs and ``args`` of a run: the corpus, or with ``{list}`` (``--files-from``) no
    positional input and a file naming the corpus in its place."""
    if "{list}" not in args:
        return [corpus, *args]
    listed = os.path.join(folder, "inputs.txt")
    with open(listed, "w") as fh:
        fh.write(corpus + "\n")
    return [listed if a == "{list}" else a for a in args]


@pytest.fixture(scope="module")
def spark_session():
    pytest.importorskip("pyspark")
    from neardup.spark import get_session

    session = get_session("local[2]", app_name="neardup-tests-options", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return option_corpus(str(tmp_path_factory.mktemp("options")))


@pytest.mark.spark
@pytest.mark.parametrize("args,what", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_each_dedup_option_is_honoured_by_the_spark_engine_or_refused(args, what, corpus, spark_session, tmp_path,
                                                                       capsys):
    run_and_compare("spark", args, what, corpus, tmp_path, capsys, drop=("--spark-master",))


@pytest.fixture(scope="module")
def ray_runtime():
    pytest.importorskip("ray", reason="needs ray: pip install 'neardup[ray]'")
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {k: os.environ[k] for k in ("PYTHONPATH", "NEARDUP_REQUIRE_NATIVE")
                                       if k in os.environ}})
    yield ray
    ray.shutdown()


def run_and_compare(engine: str, args, what, corpus, tmp_path, capsys, drop=()):
    """A run of ``engine`` with ``args``: refused in one line naming the option, or the local
    engine's output files byte for byte and the same counts (``drop``: arguments the local run
    does not take)."""
    from neardup.cli import main

    local, other = str(tmp_path / "local"), str(tmp_path / engine)
    option, args = args[0], with_list(args, corpus, tmp_path)
    args = [str(tmp_path / "work") if a == "{work}" else a for a in args]
    code = main(["dedup", "-o", other, "--engine", engine, "-q", *args])
    err = capsys.readouterr().err.strip()
    label = {"spark": "Spark engine", "ray": "Ray engine"}[engine]
    if what == "refused":
        assert code == 2 and "\n" not in err, err
        assert f"{option} " in err and label in err, err
        assert not os.path.exists(os.path.join(other, "summary.json"))
        return
    assert code == 0, err
    local_args = [a for k, a in enumerate(args) if a not in drop and (k == 0 or args[k - 1] not in drop)]
    assert main(["dedup", "-o", local, "-q", *local_args]) == 0
    names = sorted(os.listdir(local))
    assert sorted(os.listdir(other)) == names
    for name in names:
        if name != "summary.json":
            with open(os.path.join(local, name), "rb") as a, open(os.path.join(other, name), "rb") as b:
                assert a.read() == b.read(), name
    ls, ss = (json.load(open(os.path.join(d, "summary.json"))) for d in (local, other))
    for key in COUNTS:
        assert ls[key] == ss[key], key


@pytest.mark.ray
@pytest.mark.parametrize("args,what", RAY_CASES, ids=[" ".join(a) for a, _ in RAY_CASES])
def test_each_dedup_option_is_honoured_by_the_ray_engine_or_refused(args, what, corpus, ray_runtime, tmp_path,
                                                                     capsys, monkeypatch):
    """Local, Spark (above) and Ray: the same files for every option both honour."""
    monkeypatch.setenv("NEARDUP_RAY_SHARD_MB", str(16 / 1024))  # several shards in every stage
    run_and_compare("ray", args, what, corpus, tmp_path, capsys)


def test_the_options_move_the_outputs(corpus, tmp_path):
    """The corpus is one where the options tried above change the local engine's outputs, so that
    equal outputs mean the Spark engine honoured them (an option both engines dropped would pass)."""
    from neardup.cli import main

    runs = iter(range(1000))

    def outputs(args):
        out = str(tmp_path / f"run-{next(runs)}")
        assert main(["dedup", "-o", out, "-q", *args]) == 0
        got = {n: open(os.path.join(out, n), "rb").read() for n in sorted(os.listdir(out)) if n != "summary.json"}
        summary = json.load(open(os.path.join(out, "summary.json")))
        return got, {k: summary[k] for k in COUNTS if k != "config_fingerprint"}

    base = outputs([corpus])
    assert any(b'"near"' in line for line in base[0]["clusters.jsonl"].splitlines())
    assert any(b'"exact"' in line for line in base[0]["clusters.jsonl"].splitlines())
    inert = {"--sample-mod", "--sample-cap", "--sample", "--sample-size", "--max-distance", "--format", "--spark-master", "--jobs", "--on-error",
             "--strict", "--max-skipped", "--files-from"}
    for name, tries in OPTIONS.items():
        for args, what in tries:
            if what == "same" and name not in inert:
                assert outputs(with_list(args, corpus, tmp_path)) != base, args


def test_spark_master_without_the_spark_engine_is_refused(tmp_path, capsys):
    from neardup.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four five six"}\n')
    code = main(["dedup", str(corpus), "-o", str(tmp_path / "out"), "--spark-master", "local[2]", "-q"])
    assert code == 2 and "--spark-master is not supported by the local engine" in capsys.readouterr().err


def test_several_inputs_are_refused_by_the_spark_engine_since_their_records_carry_a_source(tmp_path, capsys):
    from neardup.cli import main

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "a", "text": "one two three four five six"}\n')
    b.write_text('{"id": "a", "text": "one two three four five six"}\n')
    code = main(["dedup", str(a), str(b), "-o", str(tmp_path / "spark"), "--engine", "spark", "-q"])
    assert code == 2 and "several inputs (2) are not supported by the Spark engine" in capsys.readouterr().err
    assert not (tmp_path / "spark").exists()
    # the local engine gives each record its source: the column the Spark engine would lack
    assert main(["dedup", str(a), str(b), "-o", str(tmp_path / "local"), "-q"]) == 0
    lines = (tmp_path / "local" / "clusters.jsonl").read_text().splitlines()
    assert [json.loads(line)["source"] for line in lines] == [str(a), str(b)]


def test_the_read_options_are_part_of_the_configuration():
    base = DedupConfig()
    for change in ({"content": "html"}, {"html": "whole"}, {"text_field": "body"}, {"id_field": "url"},
                   {"max_bytes": 1000}, {"format": "parquet"}):
        other = DedupConfig(**change)
        assert other.fingerprint() != base.fingerprint()
        assert other.as_dict()["read"][next(iter(change))] == next(iter(change.values()))


@pytest.mark.parametrize("engine", ["local", "spark", "ray"])
def test_every_engine_refuses_a_bad_output_format_alike_before_any_work(tmp_path, engine):
    """The one check of --output-format (config.ResultOptions) in each entry point: the same
    message, and neither a runtime started nor an output folder made."""
    from neardup.errors import ConfigError

    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "text": "one two three four five six"}\n')
    out = tmp_path / "out"
    if engine == "local":
        def call():
            Deduplicator(DedupConfig()).run([str(data)], str(out), output_format="csv")
    else:
        pytest.importorskip("pyspark" if engine == "spark" else "ray")
        import importlib

        public = importlib.import_module(f"neardup.{engine}")  # neardup.spark, neardup.ray

        def call():
            public.dedup_paths([str(data)], str(out), DedupConfig(), output_format="csv")
    with pytest.raises(ConfigError, match=r"^--output-format must be one of jsonl, parquet, got 'csv'$"):
        call()
    assert not out.exists()
