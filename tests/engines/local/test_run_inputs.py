"""A ``neardup dedup`` run lists its inputs and sniffs their files' formats once: the command
line's plan (which its configuration reads) is the one the disk check samples, the read pass
reads (each input's part in turn, when the records carry their input as their source) and the
kept corpus reads again."""

from collections import Counter

import orjson

import neardup.engines.local.run as local_run
import neardup.io.read.inputs as inputs_planning
from neardup.cli import main


def _write(path, prefix, n=300):
    with open(path, "wb") as fh:
        for i in range(n):
            text = " ".join(f"w{(i * 7 + j * (3 if i % 5 else 13)) % 200}" for j in range(40))
            fh.write(orjson.dumps({"id": f"{prefix}{i}", "text": text}) + b"\n")


def test_every_file_is_sniffed_once_in_a_run_of_several_inputs(tmp_path, monkeypatch):
    folder = tmp_path / "folder"
    folder.mkdir()
    inputs = [tmp_path / "a.jsonl", folder / "part-0.jsonl", folder / "part-1.jsonl"]
    for k, path in enumerate(inputs):
        _write(path, f"r{k}-")
    probed = Counter()
    real_probe = inputs_planning.probe_file

    def probe(path):
        probed[str(path)] += 1
        return real_probe(path)

    monkeypatch.setattr(inputs_planning, "probe_file", probe)
    # the disk check samples the inputs (its cheap bound gives none): it reads the run's plan too
    monkeypatch.setattr(local_run, "work_disk_bound", lambda paths, config: None)
    sampled = []
    real_estimate = local_run.work_disk_estimate

    def estimate(plan, config):
        sampled.append(plan)
        return real_estimate(plan, config)

    monkeypatch.setattr(local_run, "work_disk_estimate", estimate)
    out = tmp_path / "out"
    assert main(["dedup", str(inputs[0]), str(folder), "-o", str(out), "--quiet"]) == 0
    assert probed == Counter({str(p): 1 for p in inputs})
    assert len(sampled) == 1 and isinstance(sampled[0], local_run.RunInputs)
    # each record with its input as source, every record in the kept corpus or a cluster
    lines = [orjson.loads(x) for x in (out / "clusters.jsonl").read_bytes().splitlines()]
    assert len(lines) == 900 and {x["source"] for x in lines} == {str(inputs[0]), str(folder)}
    kept = (out / "kept.jsonl").read_bytes().splitlines()
    assert len(kept) == sum(x["kept"] for x in lines) > 0


def test_a_run_without_an_index_imports_no_index_module(tmp_path):
    """The index (SQLite and its store) is imported by a run that saves or reads one, not by
    every dedup: its import costs a plain run's start tens of milliseconds."""
    import subprocess
    import sys

    path = tmp_path / "in.jsonl"
    path.write_text("".join(f'{{"id": "{i}", "text": "word{i} and some shared words here"}}\n' for i in range(20)))
    code = ("import sys\nfrom neardup.cli import main\n"
            f"assert main(['dedup', {str(path)!r}, '-o', {str(tmp_path / 'out')!r}, '--quiet']) == 0\n"
            "print(sorted(m for m in sys.modules if m == 'sqlite3' or m.startswith('neardup.store')))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "[]", got.stdout
