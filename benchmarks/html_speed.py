"""Web pages end to end: `neardup dedup` of raw HTML against resiliparse's extraction alone, side by side.

The pages, either the labelled set (``benchmarks/build_html_set.py``, ``benchmarks/data/html_set``)
or a bigger set that amortises the command's start-up (~1 s: interpreter, imports, workers) as a
crawl does: the ``.html`` files of folders (``--pages DIR``, walked recursively, repeatable;
``--min-bytes`` leaves out stubs such as redirect pages, ``--max-pages`` takes that many spread
evenly over the sorted paths) and the 2,008 real pages of WCXB (``--wcxb DIR``: its
``dev/html/*.html.gz`` and ``test/html/*.html.gz``, decompressed), are written three ways: a
JSONL of HTML (``{"id", "html"}``, read with ``--content html --text-field html``), a folder of
``.html`` files and a ``.warc.gz`` (one gzip member per record, as crawlers write them). Then, in
one run, taking turns:

- ``neardup dedup`` of each, whole command (a child process, ``--jobs`` = all the cores this
  process may use, kept corpus written), with the extraction in worker processes (the default)
  and in threads (``NEARDUP_EXTRACT_WORKERS=threads``): wall time, CPU time of all its processes
  (this process is the subreaper of its descendants, so the forkserver, whose workers are not the
  command's children, is reaped here and its time and its workers' are counted), the pages/s that
  CPU time gives on free cores (CPU time / cores), the pages per CPU-second, and where the time
  goes (``summary.json``'s ``seconds``: read and sketch, cluster, write...);
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
    python benchmarks/html_speed.py --wcxb /work/data/wcxb --pages /usr/share/doc --min-bytes 1024 \\
        --max-pages 30000 [--rounds 3] [--json ...]
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import io
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from html_quality import load_set, page_path  # noqa: E402 - a sibling script, not a package

#: prctl(2)'s option that makes the orphans among a process's descendants its children
PR_SET_CHILD_SUBREAPER = 36


def labelled_pages(root: Path) -> list[tuple[str, bytes]]:
    """(id, bytes) of the pages of the labelled set."""
    labels, _ = load_set(root)
    return [(rec["id"], page_path(root, rec).read_bytes()) for rec in labels]


def folder_pages(folders: list[str], min_bytes: int, max_pages: int | None) -> list[tuple[str, bytes]]:
    """(id, bytes) of the ``.html`` files under ``folders`` of at least ``min_bytes``, in sorted
    order; with ``max_pages``, that many spread evenly over them (every k-th), so that every part
    of the folders is in. The id is the folder's name and the path under it."""
    paths = []
    for top in map(Path, folders):
        for path in sorted(top.rglob("*.html")):
            if path.is_file() and path.stat().st_size >= min_bytes:
                paths.append((f"{top.name}/{path.relative_to(top)}", path))
    if max_pages is not None and len(paths) > max_pages:
        paths = [paths[k * len(paths) // max_pages] for k in range(max_pages)]
    return [(ident, path.read_bytes()) for ident, path in paths]


def wcxb_pages(root: Path) -> list[tuple[str, bytes]]:
    """(id, bytes) of WCXB's pages, both splits."""
    return [(f"wcxb/{split}/{path.name[:-len('.html.gz')]}", gzip.decompress(path.read_bytes()))
            for split in ("dev", "test") for path in sorted((root / split / "html").glob("*.html.gz"))]


def write_inputs(pages: list[tuple[str, bytes]], out: Path) -> dict[str, str]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    import orjson

    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "pages.jsonl"
    folder = out / "site"
    warc = out / "pages.warc.gz"
    folder.mkdir(exist_ok=True)
    names = set()
    with open(jsonl, "wb") as fj, open(warc, "wb") as fw:
        w = WARCWriter(fw, gzip=True)
        for ident, data in pages:
            # one flat folder: neardup's walk leaves out names that start with "_" or "."
            name = ident.replace("/", "-")
            assert name not in names, f"two pages would be {name}.html"
            names.add(name)
            (folder / f"{name}.html").write_bytes(data)
            fj.write(orjson.dumps({"id": ident, "html": data.decode("utf-8", "replace")}) + b"\n")
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"https://docs.example/{quote(ident)}.html", "response",
                                                payload=io.BytesIO(data), http_headers=http))
    return {"jsonl": str(jsonl), "folder": str(folder), "warc.gz": str(warc)}


def adopt_descendants() -> None:
    """Make this process the subreaper of its descendants: the forkserver that a command starts
    outlives it a moment and is then reparented here rather than to init, so that reaping it
    (:func:`reap_orphans`) adds its CPU time, and that of the workers it has reaped, to this
    process's RUSAGE_CHILDREN."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans() -> None:
    """Wait for every descendant left (the forkserver, the resource tracker) to end."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def dedup(path: str, kind: str, out: str, jobs: int, workers: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "neardup", "dedup", path, "-o", out, "--jobs", str(jobs), "--quiet"]
    if kind == "jsonl":
        cmd += ["--content", "html", "--text-field", "html"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "NEARDUP_EXTRACT_WORKERS": workers})
    wall = time.perf_counter() - start
    reap_orphans()  # after the wall time: the command's caller has its answer by then
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(Path(out, "summary.json").read_text())
    return {"wall_s": wall, "cpu_s": cpu, "seconds": summary.get("seconds", {}), "input": summary["input"],
            "kept": summary["kept"], "kept_output": summary.get("kept_output", {}).get("path", "")}


def median(v):
    return sorted(v)[len(v) // 2]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default=str(HERE / "data" / "html_set"),
                    help="the labelled set, when neither --pages nor --wcxb is given")
    ap.add_argument("--pages", action="append", default=[], metavar="DIR",
                    help="a folder of .html files, walked recursively (repeatable)")
    ap.add_argument("--min-bytes", type=int, default=0, help="leave out the --pages files smaller than this")
    ap.add_argument("--max-pages", type=int, help="at most this many --pages files, spread evenly over them")
    ap.add_argument("--wcxb", metavar="DIR", help="WCXB's folder: all its pages (dev and test)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    from neardup.cpus import available_cpus
    from neardup.text.html import decode_html, extract_text, extractor_id

    import compileall

    import neardup

    compileall.compile_dir(os.path.dirname(neardup.__file__), quiet=1)  # as `pip install` does
    if args.pages or args.wcxb:
        pages = folder_pages(args.pages, args.min_bytes, args.max_pages)
        wcxb = wcxb_pages(Path(args.wcxb)) if args.wcxb else []
        the_set = {"folders": args.pages, "min_bytes": args.min_bytes, "max_pages": args.max_pages,
                   "folder_pages": len(pages), "wcxb": args.wcxb, "wcxb_pages": len(wcxb)}
        pages += wcxb
    else:
        pages = labelled_pages(Path(args.set))
        the_set = args.set
    raw = [data for _, data in pages]
    # the least it takes resiliparse to get the text: a str; a page that does not decode is left out
    htmls = [h for h in map(decode_html, raw) if h is not None]
    n = len(pages)
    jobs = available_cpus()
    result = {"set": the_set, "pages": n, "bytes": sum(map(len, raw)), "jobs": jobs,
              "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
              "cpu_model": cpu_model(), "extractor": extractor_id("main"),
              "versions": {name: version(name) for name in ("neardup", "resiliparse", "fastwarc", "warcio")},
              "start_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "load_before": os.getloadavg()}
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    adopt_descendants()
    with tempfile.TemporaryDirectory(prefix="html-speed-") as tmp:
        inputs = write_inputs(pages, Path(tmp))
        del pages
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
                    r["pages_per_s"] = n / r["wall_s"]
                    runs[f"{kind} ({workers})"].append(r)
            from fastwarc.warc import ArchiveIterator as FastIterator
            from warcio.archiveiterator import ArchiveIterator as WarcioIterator

            start = time.perf_counter()
            with open(inputs["warc.gz"], "rb") as fh:
                for rec in FastIterator(fh, parse_http=True, auto_decode="all"):
                    rec.reader.read()
            runs["fastwarc"].append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            with open(inputs["warc.gz"], "rb") as fh:
                for rec in WarcioIterator(fh):
                    rec.content_stream().read()
            runs["warcio"].append(n / (time.perf_counter() - start))
    result["load_after"] = os.getloadavg()
    result["end_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    res = round(median(runs["resiliparse"]), 1)
    result["resiliparse_pages_per_s_1core"] = res
    result["neardup_extract_pages_per_s_1core"] = round(median(runs["neardup_extract"]), 1)
    res_cpu = round(median(runs["resiliparse_cpu"]), 1)
    result["resiliparse_pages_per_cpu_s"] = res_cpu
    result["neardup_extract_pages_per_cpu_s"] = round(median(runs["neardup_extract_cpu"]), 1)
    result["fastwarc_records_per_s"] = round(median(runs["fastwarc"]), 1)
    result["warcio_records_per_s"] = round(median(runs["warcio"]), 1)
    result["dedup"] = {}
    print(f"{n} pages ({result['bytes'] / 1e6:.1f} MB), {jobs} jobs, load {result['load_before'][0]:.1f} "
          f"-> {result['load_after'][0]:.1f}")
    print(f"resiliparse extraction alone, 1 core: {res:,.0f} pages/s; neardup extraction alone, 1 core: "
          f"{result['neardup_extract_pages_per_s_1core']:,.0f} pages/s")
    print(f"reading the .warc.gz: FastWARC {result['fastwarc_records_per_s']:,.0f} records/s, "
          f"warcio {result['warcio_records_per_s']:,.0f} records/s")
    print(f"by CPU time (per core): resiliparse {res_cpu:,.0f} pages per CPU-second, neardup extraction "
          f"{result['neardup_extract_pages_per_cpu_s']:,.0f}")
    print("| input | neardup dedup, whole command (pages/s) | ratio to resiliparse extraction alone | CPU s (all processes) | "
          f"pages per CPU-second | pages/s if its CPU time ran on {jobs} free cores | ratio | read+sketch s | cluster s | "
          "write s | total s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in [k for k in runs if k.endswith(("(processes)", "(threads)"))]:
        best = sorted(runs[kind], key=lambda r: r["pages_per_s"])[len(runs[kind]) // 2]
        sec = best["seconds"]
        per_cpu_s = n / max(best["cpu_s"], 1e-9)
        ideal = per_cpu_s * jobs  # its CPU time spread over the cores: what the command would do on free cores
        result["dedup"][kind] = {"pages_per_s": round(best["pages_per_s"], 1), "wall_s": round(best["wall_s"], 3),
                                 "cpu_s": round(best["cpu_s"], 3), "pages_per_cpu_s": round(per_cpu_s, 1),
                                 "pages_per_s_cpu_on_free_cores": round(ideal, 1),
                                 "ratio_cpu_to_resiliparse_cpu": round(ideal / res_cpu, 2),
                                 "ratio_to_resiliparse": round(best["pages_per_s"] / res, 2), "seconds": sec,
                                 "input": best["input"], "kept": best["kept"],
                                 "kept_output": os.path.basename(best["kept_output"]),
                                 "all_rounds_pages_per_s": [round(r["pages_per_s"], 1) for r in runs[kind]],
                                 "all_rounds_cpu_s": [round(r["cpu_s"], 2) for r in runs[kind]]}
        fmt = lambda k: f"{sec[k]:.2f}" if k in sec else "-"  # noqa: E731
        print(f"| {kind} | {best['pages_per_s']:,.0f} | {best['pages_per_s'] / res:.2f} | {best['cpu_s']:.2f} | "
              f"{per_cpu_s:,.0f} | {ideal:,.0f} | {ideal / res_cpu:.2f} | {fmt('read_and_sketch')} | "
              f"{fmt('cluster')} | {fmt('write')} | {fmt('total')} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
