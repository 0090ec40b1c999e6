#!/usr/bin/env python3
"""A full disk at several points of a ``neardup dedup`` run: its output on a small tmpfs.

The output folder (and so the run's work folder) is on a tmpfs; a filler file leaves
less and less of it free, so that the disk fills while the run writes its work folder, its
stages' results, its output files or while it publishes them. For each fill level: the exit
status, the one-line message and the file it names, whether anything looks complete
(summary.json), whether the input changed. Then the tmpfs is enlarged and the same command
resumes; its outputs are compared with a run on a roomy disk.

Needs root (mount). Usage: flock /work/bench.lock python benchmarks/faults.py [--docs 20000]
Writes benchmarks/results/faults-enospc-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from dedup_runs import dedup, file_sha, folder_digest, write_corpus  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--size-mb", type=int, default=8, help="the tmpfs's smallest size (it is made 1.25 times "
                    "what the run holds at its peak when that is more)")
    ap.add_argument("--levels", type=int, default=10, help="fill levels, evenly from 0 to the run's need")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("benchmarks/faults.py mounts a tmpfs: run it as root")
    root = Path(tempfile.mkdtemp(prefix="neardup-faults-"))
    corpus = write_corpus(root / "in.jsonl", docs=args.docs)
    sha = file_sha(corpus)
    options = ("--output-shards", 4)
    ref = root / "ref"
    dedup(corpus, "-o", ref, *options, check=True)
    want = folder_digest(ref)
    mnt = root / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size_mb}M", "tmpfs", str(mnt)], check=True)
    trials = []
    try:
        # what a run holds at its peak on that disk: measured by one run that fits
        probe = mnt / "probe"
        subprocess.run(["mount", "-o", f"remount,size={args.size_mb * 8}M", str(mnt)], check=True)
        trace = root / "trace.txt"
        peak = 0
        proc = subprocess.Popen([sys.executable, "-m", "neardup", "dedup", corpus, "-o", str(probe), *map(str, options),
                                 "--quiet"], env=dict(os.environ, NEARDUP_TEST_TRACE=str(trace)))
        while proc.poll() is None:
            st = os.statvfs(mnt)
            peak = max(peak, (st.f_blocks - st.f_bfree) * st.f_frsize)
        shutil.rmtree(probe)
        # the disk itself: room for the whole run and a little more, so that every level below is a
        # disk holding that much free space
        size_kb = max(args.size_mb * 1024, int(peak * 1.25) // 1024 + 1024)
        subprocess.run(["mount", "-o", f"remount,size={size_kb}k", str(mnt)], check=True)
        for k in range(args.levels):
            free = int(peak * k / args.levels)
            out = mnt / "out"
            shutil.rmtree(out, ignore_errors=True)
            filler = mnt / "filler"
            filler.unlink(missing_ok=True)
            st = os.statvfs(mnt)
            with open(filler, "wb") as fh:
                fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - free))
            res = dedup(corpus, "-o", out, *options)
            line = res.stderr.strip().splitlines()
            trial = {"free_bytes": free, "exit_status": res.returncode, "stderr_lines": len(line),
                     "message": line[-1] if line else "",
                     "file": line[-1].split(" writing ", 1)[1].split(":", 1)[0].replace(str(mnt), "MNT")
                     if line and " writing " in line[-1] else None,
                     "summary_json_present": (out / "summary.json").exists(),
                     "input_unchanged": file_sha(corpus) == sha}
            # room again: the same command resumes
            subprocess.run(["mount", "-o", f"remount,size={size_kb * 4}k", str(mnt)], check=True)
            filler.unlink()
            again = dedup(corpus, "-o", out, *options)
            s = json.loads((out / "summary.json").read_text()) if again.returncode == 0 else {}
            trial.update(resume_exit_status=again.returncode, resumed_from=s.get("resumed_from"),
                         resumed_identical=again.returncode == 0 and folder_digest(out) == want)
            subprocess.run(["mount", "-o", f"remount,size={size_kb}k", str(mnt)], check=True)
            trial["message"] = trial["message"].replace(str(mnt), "MNT")
            trials.append(trial)
            print(json.dumps(trial), flush=True)
    finally:
        subprocess.run(["umount", "-l", str(mnt)])
    result = {
        "date": str(dt.datetime.now()), "docs": args.docs, "corpus_bytes": os.path.getsize(corpus),
        "tmpfs_kb": size_kb, "peak_bytes_on_disk": peak, "options": list(map(str, options)),
        "python": sys.version.split()[0], "load_average_end": os.getloadavg(),
        "all_failed_cleanly": all(t["exit_status"] == 4 and t["stderr_lines"] == 1 and not t["summary_json_present"]
                                  and t["input_unchanged"] for t in trials if t["free_bytes"] < peak),
        "all_resumed_identical": all(t["resumed_identical"] for t in trials),
        "distinct_files_hit": sorted({t["file"] for t in trials if t["file"]}),
        "trials": trials,
    }
    dest = HERE / "results" / f"faults-enospc-{dt.date.today()}.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"clean failures: {result['all_failed_cleanly']}; resumed identical: {result['all_resumed_identical']}; "
          f"files: {result['distinct_files_hit']} -> {dest}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
