"""Web pages end to end: `neardup dedup` of raw HTML against resiliparse's extraction alone, side by side.

The pages of the labelled set (``benchmarks/build_html_set.py``, ``benchmarks/data/html_set``)
are written three ways: a JSONL of HTML (``{"id", "html"}``, read with ``--content html
--text-field html``), a folder of ``.html`` files and a ``.warc.gz`` (one gzip member per
record, as crawlers write them). Then, in one run, taking turns:

- ``neardup dedup`` of each, whole command (a child process, ``--jobs`` = all the cores this
  process may use, kept corpus written), with the extraction in worker processes (the default)
  and in threads (``NEARDUP_EXTRACT_WORKERS=threads``): wall time, CPU time (threads only: the
  forkserver's workers are not the command's children, so their time cannot be read), the pages/s
  that CPU time gives on free cores (CPU time / cores), and where the time goes
  (``summary.json``'s ``seconds``: read and sketch, cluster, write...);
- resiliparse 2.0's ``extract_plain_text(HTMLTree.parse(html), main_content=True)`` alone on one
  core, over the same pages, decoded beforehand (the least it takes to get the text);
- neardup's extraction alone on one core (``extract_text`` on the raw bytes, decoding included);
- reading the ``.warc.gz`` with FastWARC and with warcio (records and payloads, no extraction).

Each figure is the median of ``--rounds`` runs. The machine is shared: run it under
``flock /work/bench.lock``; the load average before and after is recorded. neardup's modules are
byte-compiled first (``compileall``), as an installed package is: with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__``, every command would compile its ~60
modules again (a quarter of a second of each run here).

Usage::

    python benchmarks/html_speed.py [--set benchmarks/data/html_set] [--rounds 3] [--json results/html_speed.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent


def write_inputs(root: Path, labels, out: Path) -> dict[str, str]:
    sys.path.insert(0, str(HERE))
    from html_quality import page_path
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    import orjson

    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "pages.jsonl"
    folder = out / "site"
    warc = out / "pages.warc.gz"
    folder.mkdir(exist_ok=True)
    with open(jsonl, "wb") as fj, open(warc, "wb") as fw:
        w = WARCWriter(fw, gzip=True)
        for rec in labels:
            data = page_path(root, rec).read_bytes()
            name = rec["id"].replace("/", "-")
            (folder / f"{name}.html").write_bytes(data)
            fj.write(orjson.dumps({"id": rec["id"], "html": data.decode("utf-8", "replace")}) + b"\n")
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"https://docs.example/{rec['id']}.html", "response",
                                                payload=io.BytesIO(data), http_headers=http))
    return {"jsonl": str(jsonl), "folder": str(folder), "warc.gz": str(warc)}


def dedup(path: str, kind: str, out: str, jobs: int, workers: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "neardup", "dedup", path, "-o", out, "--jobs", str(jobs), "--quiet"]
    if kind == "jsonl":
        cmd += ["--content", "html", "--text-field", "html"]
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "NEARDUP_EXTRACT_WORKERS": workers})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # all of its CPU time with threads; with processes the forkserver's workers are not its
    # children, so their time would be missing: not reported
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) if workers == "threads" else None
    summary = json.loads(Path(out, "summary.json").read_text())
    return {"wall_s": wall, "cpu_s": cpu, "seconds": summary.get("seconds", {}), "input": summary["input"],
            "kept": summary["kept"], "kept_output": summary.get("kept_output", {}).get("path", "")}


def median(v):
    return sorted(v)[len(v) // 2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default=str(HERE / "data" / "html_set"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from html_quality import load_set, page_path

    from neardup.cpus import available_cpus
    from neardup.text.html import decode_html, extract_text, extractor_id

    import compileall

    import neardup

    compileall.compile_dir(os.path.dirname(neardup.__file__), quiet=1)  # as `pip install` does
    root = Path(args.set)
    labels, _ = load_set(root)
    raw = [page_path(root, r).read_bytes() for r in labels]
    htmls = [decode_html(b) for b in raw]
    jobs = available_cpus()
    result = {"set": str(root), "pages": len(labels), "bytes": sum(map(len, raw)), "jobs": jobs,
              "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
              "extractor": extractor_id("main"), "load_before": os.getloadavg()}
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    with tempfile.TemporaryDirectory(prefix="html-speed-") as tmp:
        inputs = write_inputs(root, labels, Path(tmp))
        runs: dict[str, list] = {k: [] for k in ("resiliparse", "resiliparse_cpu", "neardup_extract",
                                                 "neardup_extract_cpu", "fastwarc", "warcio")}
        for kind in inputs:
            runs[f"{kind} (processes)"] = []
            runs[f"{kind} (threads)"] = []
        for _ in range(args.rounds):
            start, cpu = time.perf_counter(), time.process_time()
            for h in htmls:
                extract_plain_text(HTMLTree.parse(h), main_content=True)
            runs["resiliparse"].append(len(htmls) / (time.perf_counter() - start))
            runs["resiliparse_cpu"].append(len(htmls) / (time.process_time() - cpu))
            start, cpu = time.perf_counter(), time.process_time()
            for b in raw:
                extract_text(b)
            runs["neardup_extract"].append(len(raw) / (time.perf_counter() - start))
            runs["neardup_extract_cpu"].append(len(raw) / (time.process_time() - cpu))
            for kind, path in inputs.items():
                for workers in ("processes", "threads"):
                    r = dedup(path, kind, os.path.join(tmp, "out-" + kind.replace(".", "-")), jobs, workers)
                    r["pages_per_s"] = len(labels) / r["wall_s"]
                    runs[f"{kind} ({workers})"].append(r)
            from fastwarc.warc import ArchiveIterator as FastIterator
            from warcio.archiveiterator import ArchiveIterator as WarcioIterator

            start = time.perf_counter()
            with open(inputs["warc.gz"], "rb") as fh:
                for rec in FastIterator(fh, parse_http=True, auto_decode="all"):
                    rec.reader.read()
            runs["fastwarc"].append(len(labels) / (time.perf_counter() - start))
            start = time.perf_counter()
            with open(inputs["warc.gz"], "rb") as fh:
                for rec in WarcioIterator(fh):
                    rec.content_stream().read()
            runs["warcio"].append(len(labels) / (time.perf_counter() - start))
    result["load_after"] = os.getloadavg()
    res = round(median(runs["resiliparse"]), 1)
    result["resiliparse_pages_per_s_1core"] = res
    result["neardup_extract_pages_per_s_1core"] = round(median(runs["neardup_extract"]), 1)
    res_cpu = round(median(runs["resiliparse_cpu"]), 1)
    result["resiliparse_pages_per_cpu_s"] = res_cpu
    result["neardup_extract_pages_per_cpu_s"] = round(median(runs["neardup_extract_cpu"]), 1)
    result["fastwarc_records_per_s"] = round(median(runs["fastwarc"]), 1)
    result["warcio_records_per_s"] = round(median(runs["warcio"]), 1)
    result["dedup"] = {}
    print(f"{len(labels)} pages ({result['bytes'] / 1e6:.1f} MB), {jobs} jobs, load {result['load_before'][0]:.1f} "
          f"-> {result['load_after'][0]:.1f}")
    print(f"resiliparse extraction alone, 1 core: {res:,.0f} pages/s; neardup extraction alone, 1 core: "
          f"{result['neardup_extract_pages_per_s_1core']:,.0f} pages/s")
    print(f"reading the .warc.gz: FastWARC {result['fastwarc_records_per_s']:,.0f} records/s, "
          f"warcio {result['warcio_records_per_s']:,.0f} records/s")
    print(f"by CPU time (per core): resiliparse {res_cpu:,.0f} pages per CPU-second, neardup extraction "
          f"{result['neardup_extract_pages_per_cpu_s']:,.0f}")
    print("| input | neardup dedup, whole command (pages/s) | ratio to resiliparse extraction alone | CPU s (all processes) | "
          "pages/s if its CPU time ran on 2 free cores | ratio | read+sketch s | cluster s | write s | total s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in [k for k in runs if k.endswith(("(processes)", "(threads)"))]:
        best = sorted(runs[kind], key=lambda r: r["pages_per_s"])[len(runs[kind]) // 2]
        sec = best["seconds"]
        # its CPU time spread over the cores: what the command would do on free cores
        ideal = len(labels) / max(best["cpu_s"] / jobs, 1e-9) if best["cpu_s"] is not None else None
        result["dedup"][kind] = {"pages_per_s": round(best["pages_per_s"], 1), "wall_s": round(best["wall_s"], 3),
                                 "cpu_s": None if ideal is None else round(best["cpu_s"], 3),
                                 "pages_per_s_cpu_on_free_cores": None if ideal is None else round(ideal, 1),
                                 "ratio_cpu_to_resiliparse_cpu": None if ideal is None else round(ideal / res_cpu, 2),
                                 "ratio_to_resiliparse": round(best["pages_per_s"] / res, 2), "seconds": sec,
                                 "kept": best["kept"], "kept_output": os.path.basename(best["kept_output"]),
                                 "all_rounds_pages_per_s": [round(r["pages_per_s"], 1) for r in runs[kind]]}
        fmt = lambda k: f"{sec[k]:.2f}" if k in sec else "-"  # noqa: E731
        cpu_cols = "- | - | -" if ideal is None else f"{best['cpu_s']:.2f} | {ideal:,.0f} | {ideal / res_cpu:.2f}"
        print(f"| {kind} | {best['pages_per_s']:,.0f} | {best['pages_per_s'] / res:.2f} | {cpu_cols} | {fmt('read_and_sketch')} | "
              f"{fmt('cluster')} | {fmt('write')} | {fmt('total')} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
