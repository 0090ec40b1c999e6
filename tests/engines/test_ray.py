"""The Ray engine: a local Ray runtime (one for the module) and a two-node cluster on loopback give
the local engine's output files byte for byte; a run killed in each stage and started again keeps
its finished shards and gives the same bytes; options it does not honour are refused in one line."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import orjson
import pytest

from neardup.cli import main
from neardup.config import DedupConfig
from neardup.engines.local.run import Deduplicator

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = [pytest.mark.ray, pytest.mark.skipif(not HAS_RAY, reason="needs ray: pip install 'neardup[ray]'")]
OUTPUTS = ("clusters.jsonl", "pairs.jsonl", "kept.jsonl")
#: The summary's figures every engine must give alike.
COUNTS = ("input", "kept", "unique", "exact_duplicates", "near_duplicates", "skipped_by_reason", "clusters",
          "candidate_pairs", "estimate_filtered_pairs", "verified_pairs", "largest_bucket", "buckets_over_window",
          "chained_members", "duplicate_ids", "shingles_total", "config_fingerprint")

#: Lines the local reader skips or treats specially, each for its own reason.
JUNK = [
    b"", b"   ", b"not json", b"[1, 2]", b'{"id": "no-text"}', b'{"id": "null-text", "text": null}',
    b'{"id": "num-text", "text": 12}', b'{"id": "blank", "text": "  \\n "}', b'{"id": "punct", "text": "!!! ??? ..."}',
    b'{"id": "bad-utf8", "text": "caf\xe9 au lait"}',
    b'{"id": "crlf", "text": "a line that ends with a carriage return and a line feed"}\r',
    b'{"id": 5, "text": "a numeric id becomes the string five here"}',
    b'{"id": "", "text": "an empty id falls back to the file and line"}',
    b'{"text": "no id field at all falls back to the file and line"}',
    b'{"id": "nfkc", "text": "\\uff21\\uff22\\uff23 fullwidth letters that NFKC folds to ABC and more words"}',
]


def corpus_lines(n: int = 400, seed: int = 3) -> list[bytes]:
    """JSONL lines from a fixed seed: texts of random words, exact copies (case and spacing
    changed), near copies at several edit rates, a duplicate id, and the junk lines."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(4000)]
    recs = [{"id": f"doc-{k}", "text": " ".join(rng.choice(vocab) for _ in range(rng.randint(40, 160))),
             "score": k % 7, "url": f"https://example.org/{k}"} for k in range(n)]
    for k in range(n // 4):
        words = recs[k]["text"].split()
        if k % 4 == 0:
            text = "  ".join(words).upper()
        else:
            for _ in range(max(1, int(len(words) * (0.01, 0.04, 0.1)[k % 3]))):
                words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
            text = " ".join(words)
        recs.append({"id": f"copy-{k}", "text": text, "score": (k * 3) % 7, "url": f"https://example.org/c/{k}"})
    recs.append({"id": "doc-1", "text": "a duplicate id with other words in it entirely"})
    rng.shuffle(recs)
    lines = [orjson.dumps(r) for r in recs]
    for junk in JUNK:
        lines.insert(rng.randrange(len(lines)), junk)
    return lines


def write_corpus(path, lines) -> str:
    with open(path, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    return str(path)


def same_files(a: str, b: str, names=OUTPUTS) -> None:
    for name in names:
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            assert fa.read() == fb.read(), name


def same_counts(a: str, b: str) -> dict:
    sa, sb = (json.load(open(os.path.join(d, "summary.json"))) for d in (a, b))
    for key in COUNTS:
        assert sa[key] == sb[key], key
    return sb


@pytest.fixture(scope="module")
def ray_runtime():
    """One local Ray runtime of two CPUs for the module's runs in this process."""
    if not HAS_RAY:
        pytest.skip("needs ray: pip install 'neardup[ray]'")
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {k: os.environ[k] for k in ("PYTHONPATH", "NEARDUP_REQUIRE_NATIVE")
                                       if k in os.environ}})
    yield ray
    ray.shutdown()


@pytest.fixture
def small_shards(monkeypatch):
    """Shards of 16 kB: a small corpus still makes several shards in every stage."""
    monkeypatch.setenv("NEARDUP_RAY_SHARD_MB", str(16 / 1024))


@pytest.mark.parametrize("args", [
    [],
    ["--keep", "longest", "--measure", "containment", "--threshold", "0.6"],
    ["--keep", "field:score", "--no-verify", "--bands", "16", "--rows", "4"],
    ["--method", "exact", "--output-format", "parquet"],
    ["--output-shards", "3", "--compression", "gzip", "--no-nfkc", "-k", "3"],
], ids=["default", "longest-containment", "field-noverify-banding", "exact-parquet", "shards-gzip"])
@pytest.mark.ray
def test_a_local_ray_runtime_writes_the_local_engines_files(ray_runtime, small_shards, tmp_path, args):
    path = write_corpus(tmp_path / "corpus.jsonl", corpus_lines())
    local, ray_out = str(tmp_path / "local"), str(tmp_path / "ray")
    assert main(["dedup", path, "-o", local, "-q", *args]) == 0
    assert main(["dedup", path, "-o", ray_out, "-q", "--engine", "ray", *args]) == 0
    names = sorted(os.listdir(local))
    assert sorted(os.listdir(ray_out)) == names  # the work folder is gone
    same_files(local, ray_out, [n for n in names if n != "summary.json"])
    summary = same_counts(local, ray_out)
    assert summary["engine"] == "ray"
    stages = summary["ray"]["stages"]
    assert stages["read_and_sketch"]["run"] > 3  # the corpus was read in several shards
    if "--method" not in args:
        assert summary["near_duplicates"] > 10 and summary["exact_duplicates"] > 5 and summary["skipped"] > 5
        assert stages["bands"]["run"] >= 8 and stages["verify"]["run"] > 1 and stages["components"]["rounds"] >= 2


@pytest.mark.ray
def test_parquet_files_in_a_folder(ray_runtime, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = [json.loads(line) for line in corpus_lines(n=200) if line.startswith(b'{"id":"')]
    folder = tmp_path / "data"
    folder.mkdir()
    for k in range(3):
        part = recs[k::3]
        pq.write_table(pa.table({"id": [r["id"] for r in part], "text": [r["text"] for r in part]}),
                       folder / f"part-{k}.parquet")
    local, ray_out = str(tmp_path / "local"), str(tmp_path / "ray")
    assert main(["dedup", str(folder), "-o", local, "-q"]) == 0
    assert main(["dedup", str(folder), "-o", ray_out, "-q", "--engine", "ray"]) == 0
    same_files(local, ray_out, ["clusters.jsonl", "pairs.jsonl", "kept.parquet"])
    assert same_counts(local, ray_out)["near_duplicates"] > 5


@pytest.mark.ray
def test_a_ray_dataset_gives_the_clusters_of_the_same_records(ray_runtime, tmp_path):
    import neardup.ray

    recs = [json.loads(line) for line in corpus_lines(n=200) if line.startswith(b'{"id":"')]
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"id": r["id"], "text": r["text"]}) + b"\n" for r in recs))
    local = str(tmp_path / "local")
    Deduplicator(DedupConfig(), jobs=2).run([str(path)], local)
    ds = ray_runtime.data.from_items([{"id": r["id"], "text": r["text"]} for r in recs], override_num_blocks=4)
    out = str(tmp_path / "ray")
    summary = neardup.ray.dedup(ds, out)
    same_files(local, out, ["clusters.jsonl", "pairs.jsonl"])
    assert summary["engine"] == "ray" and summary["near_duplicates"] > 5
    import pyarrow.parquet as pq

    kept = pq.read_table(os.path.join(out, "kept.parquet"))
    with open(os.path.join(local, "kept.jsonl"), "rb") as fh:
        assert kept.column("id").to_pylist() == [json.loads(x)["id"] for x in fh]
    assert sorted(os.listdir(out)) == ["clusters.jsonl", "kept.parquet", "pairs.jsonl", "summary.json"]


def url_pages(n: int = 240, seed: int = 7) -> list[bytes]:
    """Web pages (JSONL, ``html`` and ``url``) with every case of URL identity: URLs shared under
    other spellings, canonical links the content confirms (a near copy naming its original), that
    it contradicts (another page), naming the page itself or a URL outside the input, and exact
    copies that carry a URL or a claim of their own (which stand for their first holder)."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    site = "https://pages.example.test/"
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(60, 160))) for _ in range(n)]
    recs = []
    for k, text in enumerate(texts):
        url, canonical = f"{site}p/{k}.html", None
        if k % 9 == 1:  # the same page under another spelling of an earlier URL
            url = f"HTTPS://Pages.Example.TEST:443/p/{k - 1}.html?utm_source=feed#top"
        if k % 7 == 2:  # a near copy of an earlier page names it
            words = texts[k - 2].split()
            words[rng.randrange(len(words))] = "edited"
            text, canonical = " ".join(words), f"/p/{k - 2}.html"
        elif k % 11 == 3:  # names a page it does not resemble
            canonical = f"{site}p/{k - 3}.html"
        elif k % 13 == 4:
            canonical = rng.choice([url, "https://elsewhere.test/x"])
        elif k % 17 == 5:  # an exact copy (case, spacing) with a URL and a claim of its own
            text, canonical = "  ".join(texts[k - 5].split()).upper(), f"{site}p/{k - 1}.html"
        elif k % 19 == 6:  # an exact copy under its original's URL
            text, url = texts[k - 6], f"{site}p/{k - 6}.html"
        head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
        recs.append({"id": f"page-{k}", "url": url,
                     "html": f"<html><head>{head}</head><body><main><p>{text}</p></main></body></html>"})
    return [orjson.dumps(r) for r in recs]


@pytest.mark.parametrize("args", [[], ["--keep", "longest"], ["--method", "exact"]], ids=["default", "longest", "exact"])
@pytest.mark.ray
def test_url_identity_gives_the_local_engines_files(ray_runtime, small_shards, tmp_path, args):
    """``--url-field``: the Ray driver calls the local engine's URL stage (stages/urls.py) over
    records read in several shards, with the same files and the same claims' figures."""
    path = write_corpus(tmp_path / "pages.jsonl", url_pages())
    common = ["--content", "html", "--text-field", "html", "--url-field", "url", *args]
    local, ray_out = str(tmp_path / "local"), str(tmp_path / "ray")
    assert main(["dedup", path, "-o", local, "-q", *common]) == 0
    assert main(["dedup", path, "-o", ray_out, "-q", "--engine", "ray", *common]) == 0
    same_files(local, ray_out)
    summary = same_counts(local, ray_out)
    ls = json.load(open(os.path.join(local, "summary.json")))
    for key in ("url_duplicates", "canonical_duplicates", "canonical_claims", "url_groups", "chained_members"):
        assert summary[key] == ls[key], key
    assert summary["ray"]["stages"]["read_and_sketch"]["run"] > 3
    claims = summary["canonical_claims"]
    assert summary["url_duplicates"] > 5 and summary["url_groups"] > 5
    assert claims["contradicted"] > 3 and claims["outside_input"] > 0
    if "exact" in args:  # only an exact copy agrees; the near copies' claims are not followed
        assert summary["canonical_duplicates"] == claims["followed"] == 0
    else:
        assert claims["followed"] > 5 and summary["canonical_duplicates"] > 5


# -- a killed run, started again ---------------------------------------------------------------

#: The stages a run is killed in, with the files in the work folder that mark a finished shard.
KILL_POINTS = [("read_and_sketch", "sketch", ".cols.arrow"), ("bands", "bands", ".npz"),
               ("verify", "verify", ".npz"), ("components", "components", "S-")]


def finished(work: str, folder: str, mark: str) -> int:
    path = os.path.join(work, folder)
    if not os.path.isdir(path):
        return 0
    return sum(1 for name in os.listdir(path) if mark in name and ".part-" not in name)


def ray_env(**extra) -> dict:
    env = dict(os.environ)
    env.update(extra)
    return env


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group this test started (the CLI and the Ray runtime it started)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.skipif(not HAS_RAY, reason="needs ray: pip install 'neardup[ray]'")
def test_a_run_killed_in_each_stage_resumes_from_its_finished_shards(tmp_path):
    path = write_corpus(tmp_path / "corpus.jsonl", corpus_lines(n=900))
    local = str(tmp_path / "local")
    assert main(["dedup", path, "-o", local, "-q"]) == 0
    out = str(tmp_path / "ray")
    work = os.path.join(out, ".neardup-ray-work")
    cmd = [sys.executable, "-m", "neardup", "dedup", path, "-o", out, "-q", "--engine", "ray", "--jobs", "2"]
    env = ray_env(NEARDUP_RAY_SHARD_MB=str(12 / 1024))
    at_kill = {}
    for stage, folder, mark in KILL_POINTS:
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        before = finished(work, folder, mark)
        # waits on the run itself, not on a clock: it either finishes a shard or ends
        while finished(work, folder, mark) == before:
            assert proc.poll() is None, f"the run ended before a shard of {stage} was finished"
            time.sleep(0.02)
        kill_group(proc)  # a real kill: the driver and its runtime, mid-stage
        assert not os.path.exists(os.path.join(out, "summary.json"))
        at_kill[stage] = finished(work, folder, mark)
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    same_files(local, out)
    summary = same_counts(local, out)
    assert summary["ray"]["resumed"]
    stages = summary["ray"]["stages"]
    for stage, folder, mark in KILL_POINTS:
        total = stages[stage]["run"] + stages[stage]["done_before"]
        if stage == "components":  # files per step; the steps left are what the last run ran
            assert 0 < at_kill[stage] and stages[stage]["done_before"] > 0, stages[stage]
            continue
        # killed mid-stage: some shards were finished and none of them was done again
        assert 0 < at_kill[stage] < total, (stage, at_kill[stage], total)
    # the last run found every shard of the stages before components finished
    for stage in ("read_and_sketch", "bands", "verify"):
        assert stages[stage]["run"] == 0, (stage, stages[stage])


# -- a two-node cluster on loopback ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_node_cluster(tmp_path_factory):
    """``ray start --head`` and a second ``ray start --address`` on loopback, one CPU each, each in
    a process group of its own (``--block``), stopped by signalling those groups; yields the
    address and the two processes."""
    if not HAS_RAY:
        pytest.skip("needs ray: pip install 'neardup[ray]'")
    import secrets

    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    # the cluster's own token (Ray's token authentication), given to both nodes and the driver
    os.environ["RAY_AUTH_MODE"], os.environ["RAY_AUTH_TOKEN"] = "token", secrets.token_hex(32)
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus", "1", "--block", "--disable-usage-stats"]
    procs = [subprocess.Popen([ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                               "--include-dashboard", "false", *common], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        while True:  # the head's GCS answers, or the head has ended (no clock: a slow machine waits)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert procs[0].poll() is None, f"the Ray head ended with status {procs[0].returncode}"
            time.sleep(0.5)
        procs.append(subprocess.Popen([ray_cli, "start", "--address", address, "--node-ip-address", "127.0.0.1",
                                       *common], start_new_session=True, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        yield address, procs
    finally:
        del os.environ["RAY_AUTH_MODE"], os.environ["RAY_AUTH_TOKEN"]
        for proc in reversed(procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in reversed(procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def cluster_nodes(address: str) -> int:
    """The live nodes the cluster at ``address`` counts."""
    code = ("import ray; ray.init(address=%r, log_to_driver=False); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))" % address)
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    return int(got.stdout.decode().strip().splitlines()[-1]) if got.returncode == 0 else 0


@pytest.mark.slow
@pytest.mark.ray
def test_a_two_node_cluster_on_loopback_writes_the_local_engines_files(two_node_cluster, tmp_path):
    address, procs = two_node_cluster
    while cluster_nodes(address) < 2:  # the second node joins, or one of the nodes has ended
        assert all(p.poll() is None for p in procs), [p.returncode for p in procs]
        time.sleep(1)
    path = write_corpus(tmp_path / "corpus.jsonl", corpus_lines())
    local, ray_out = str(tmp_path / "local"), str(tmp_path / "ray")
    assert main(["dedup", path, "-o", local, "-q"]) == 0
    cmd = [sys.executable, "-m", "neardup", "dedup", path, "-o", ray_out, "-q", "--engine", "ray",
           "--ray-address", address]
    done = subprocess.run(cmd, env=ray_env(NEARDUP_RAY_SHARD_MB=str(16 / 1024)), capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    same_files(local, ray_out)
    summary = same_counts(local, ray_out)
    assert summary["ray"]["nodes"] == 2 and summary["ray"]["cpus"] == 2


# -- refusals and the missing extra (no Ray needed) --------------------------------------------


@pytest.mark.parametrize("args,named", [
    (["--in-memory-mb", "10"], "--in-memory-mb"),
    (["--on-error", "skip"], "--on-error skip"),
    (["--method", "simhash"], "--method simhash"),
    (["--keep", "source:a"], "--keep source:"),
    (["--spark-master", "local[2]"], "--spark-master"),
    (["--jobs", "2", "--ray-address", "127.0.0.1:1"], "--jobs"),
    (["--format", "text"], "--format text"),
])
def test_options_the_ray_engine_does_not_honour_are_refused_in_one_line(args, named, tmp_path, capsys):
    path = write_corpus(tmp_path / "c.jsonl", corpus_lines(n=10))
    out = tmp_path / "out"
    code = main(["dedup", path, "-o", str(out), "-q", "--engine", "ray", *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and err.count(named) >= 1 and "Ray engine" in err, err
    assert not out.exists() or not (out / "summary.json").exists()


def test_ray_address_without_the_ray_engine_is_refused(tmp_path, capsys):
    path = write_corpus(tmp_path / "c.jsonl", corpus_lines(n=10))
    code = main(["dedup", path, "-o", str(tmp_path / "out"), "-q", "--ray-address", "127.0.0.1:1"])
    assert code == 2 and "--ray-address is not supported by the local engine" in capsys.readouterr().err


def test_without_ray_the_engine_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    path = write_corpus(tmp_path / "c.jsonl", corpus_lines(n=10))
    code = main(["dedup", path, "-o", str(tmp_path / "out"), "-q", "--engine", "ray"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "pip install 'neardup[ray]'" in err, err
