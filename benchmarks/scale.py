#!/usr/bin/env python3
"""neardup dedup at scale: a generated corpus with planted near-duplicates.

Documents are random word sequences over a Zipf-distributed vocabulary of 50,000 words (so that
common words repeat as in real text), 40 to 240 words long. A fraction of them get a planted
near-copy: the same text with about one word in a hundred replaced. After the run, every planted
pair's exact 5-shingle resemblance is computed and recall is reported for the pairs at or above
the threshold.

Usage: python benchmarks/scale.py [--docs 2000000] [--planted 0.05] [--seed 1] [--keep-data]
                                 [--zstd] [--plan] [--in-memory-mb MB]
``--zstd`` writes the corpus zstd-compressed (the 10M and 30M runs: the input is then read as a
stream, not through the page cache of a 6-30 GB file); ``--plan`` runs ``neardup plan`` first and
puts its predictions beside the measured figures. The run's memory (resident, anonymous) and its
output folder's size on disk (the work folder: the spill) are sampled from outside.
Writes benchmarks/results/scale-<docs>-<date>.json with the machine's facts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from neardup.io.write.outputs import folder_bytes

HERE = Path(__file__).resolve().parent


def generate(path: Path, docs: int, planted: float, seed: int, *, zstd: bool = False) -> list[tuple[str, str]]:
    """Write the corpus (JSONL, or zstd-compressed JSONL with ``zstd``); returns the planted pairs.
    Each line is what ``orjson.dumps({"id": ..., "text": ...})`` gives (ids and words need no
    escaping), gathered from a table of tokens in whole-array steps: the same bytes, from the same
    random draws, as the loop that joined words one document at a time, several times faster."""
    rng = np.random.default_rng(seed)  # test data only
    vocab_size = 50_000
    # tokens: every word with the space after it
    vocab = [f"w{i:x} ".encode() for i in range(vocab_size)]
    weights = 1.0 / np.arange(1, vocab_size + 1) ** 1.05
    weights /= weights.sum()
    pairs = []
    n_orig = int(docs / (1 + planted))
    raw = open(path, "wb")
    if zstd:
        import zstandard

        fh = zstandard.ZstdCompressor(level=3, threads=-1).stream_writer(raw, closefd=True)
    else:
        fh = raw
    with fh:
        written = 0
        chunk = 20_000
        while written < n_orig:
            m = min(chunk, n_orig - written)
            lengths = rng.integers(40, 241, size=m)
            words = rng.choice(vocab_size, size=int(lengths.sum()), p=weights)
            plant = rng.random(m) < planted
            starts = np.concatenate(([0], np.cumsum(lengths))).tolist()
            pos_plants = []
            for k in np.flatnonzero(plant).tolist():
                if written + k + len(pairs) + len(pos_plants) < docs:
                    w = words[starts[k] : starts[k + 1]]
                    edited = w.copy()
                    n_edits = max(1, int(round(len(w) / 100)))
                    at = rng.choice(len(w), size=n_edits, replace=False)
                    edited[at] = rng.integers(0, vocab_size, size=n_edits)
                    pos_plants.append((k, edited))
            # the stream of lines: every document, each planted one followed by its copy
            heads = []
            plants = dict(pos_plants)
            bodies = np.split(words, starts[1:-1])
            for k in range(m):
                doc_id = f"d{written + k}"
                heads.append(b'{"id":"%s","text":"' % doc_id.encode())
                if k in plants:
                    heads.append(b'{"id":"%s-copy","text":"' % doc_id.encode())
                    pairs.append((doc_id, f"{doc_id}-copy"))
            for k in sorted(plants, reverse=True):  # each copy right after its document
                bodies.insert(k + 1, plants[k])
            fh.write(_lines_of(heads, bodies, vocab))
            written += m
    return pairs


def _lines_of(heads: list[bytes], bodies: list[np.ndarray], vocab: list[bytes]) -> bytes:
    """``head + words joined by spaces + '"}\\n'`` for each line, gathered in whole-array steps:
    tokens are the vocabulary (each word with a space after it), then the heads, then the tail;
    the last word's space becomes the closing quote."""
    table = vocab + heads + [b'}\n']
    v, n = len(vocab), len(heads)
    blob = np.frombuffer(b"".join(table), dtype=np.uint8)
    tlen = np.fromiter(map(len, table), np.int64, len(table))
    tstart = np.concatenate(([0], np.cumsum(tlen)[:-1]))
    counts = np.fromiter(map(len, bodies), np.int64, n)
    # per line: head, words, tail
    seq = np.empty(int(counts.sum()) + 2 * n, dtype=np.int64)
    line_at = np.concatenate(([0], np.cumsum(counts + 2)[:-1]))
    seq[line_at] = v + np.arange(n)
    seq[line_at + counts + 1] = v + n
    word_pos = np.ones(seq.size, dtype=bool)
    word_pos[line_at] = False
    word_pos[line_at + counts + 1] = False
    seq[word_pos] = np.concatenate(bodies)
    lens = tlen[seq]
    ends = np.cumsum(lens)
    offs = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - lens, lens)
    out = blob[np.repeat(tstart[seq], lens) + offs]
    out[ends[line_at + counts] - 1] = ord('"')  # the last word's space
    return out.tobytes()


def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def run_sampled(cmd: list[str], every: float = 0.2, folder: Path | None = None) -> dict:
    """Run ``cmd``, sampling its resident memory split into anonymous memory (the process's own
    state) and file-backed pages (the memory-mapped spill files, which the kernel can drop and
    re-read at will); returns the peaks in MB. With ``folder``, also the largest size of that
    folder on disk (sampled once a second)."""
    proc = subprocess.Popen(cmd)
    peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    at_peak_total = {}
    peak_disk, last_disk = 0, 0.0
    while proc.poll() is None:
        if folder is not None and time.monotonic() - last_disk >= 1.0:
            peak_disk, last_disk = max(peak_disk, folder_bytes(str(folder))), time.monotonic()
        st = _status_kb(proc.pid)
        for key in peak:
            peak[key] = max(peak[key], st.get(key, 0))
        if st.get("VmRSS", 0) >= peak["VmRSS"]:
            at_peak_total = st
        time.sleep(every)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    mb = lambda kb: round(kb / 1024, 1)  # noqa: E731
    return {"peak_rss_mb": mb(peak["VmRSS"]), "peak_anonymous_mb": mb(peak["RssAnon"]),
            "peak_file_backed_mb": mb(peak["RssFile"]),
            "at_peak_rss": {"anonymous_mb": mb(at_peak_total.get("RssAnon", 0)),
                            "file_backed_mb": mb(at_peak_total.get("RssFile", 0))},
            "sampled_every_s": every,
            **({"peak_output_folder_mb": round(peak_disk / (1 << 20), 1)} if folder is not None else {})}


def _id_of(line: bytes) -> bytes:
    """The id of a line written by :func:`generate` or of a clusters.jsonl line (``{"id":"...",``)."""
    return line[7 : line.index(b'"', 7)]


def _lines(path: Path):
    if path.suffix == ".zst":
        import io

        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as fh:
            yield from io.BufferedReader(fh, 1 << 20)
    else:
        with open(path, "rb") as fh:
            yield from fh


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2_000_000)
    ap.add_argument("--planted", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep-data", action="store_true")
    ap.add_argument("--zstd", action="store_true", help="write the corpus zstd-compressed")
    ap.add_argument("--plan", action="store_true", help="run neardup plan first; its predictions beside the figures")
    ap.add_argument("--in-memory-mb", type=float, default=None)
    args = ap.parse_args()
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    corpus = data / f"synthetic-{args.docs}.jsonl{'.zst' if args.zstd else ''}"
    pairs_file = data / f"synthetic-{args.docs}.pairs.json"
    t = time.perf_counter()
    if args.keep_data and corpus.exists() and pairs_file.exists():  # kept from an earlier run
        pairs = [tuple(p) for p in json.loads(pairs_file.read_text())]
    else:
        pairs = generate(corpus, args.docs, args.planted, args.seed, zstd=args.zstd)
        if args.keep_data:
            pairs_file.write_text(json.dumps(pairs))
    gen_s = time.perf_counter() - t
    size_mb = corpus.stat().st_size / 1e6
    print(f"generated {corpus} ({size_mb:.0f} MB, {len(pairs):,} planted pairs) in {gen_s:.0f} s", flush=True)
    out = data / f"scale-out-{args.docs}"
    import shutil

    shutil.rmtree(out, ignore_errors=True)  # an earlier run's outputs would count in the folder's size
    extra = ["--in-memory-mb", str(args.in_memory_mb)] if args.in_memory_mb is not None else []
    plan = None
    if args.plan:
        plan_cmd = [sys.executable, "-m", "neardup", "plan", str(corpus), "--json", *extra]
        t = time.perf_counter()
        plan = json.loads(subprocess.run(plan_cmd, check=True, capture_output=True, text=True).stdout)
        plan_s = time.perf_counter() - t
    cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "--output", str(out), "--quiet", *extra]
    load_before = os.getloadavg()
    t = time.perf_counter()
    memory = run_sampled(cmd, folder=out)
    wall = time.perf_counter() - t
    summary = json.load(open(out / "summary.json"))
    # exact resemblance of each planted pair
    from neardup import ShingleParams, jaccard, shingle_ids

    wanted = {x.encode() for p in pairs for x in p}
    cluster = {}
    with open(out / "clusters.jsonl", "rb") as fh:
        for line in fh:
            if _id_of(line) in wanted:
                r = orjson.loads(line)
                cluster[r["id"]] = r["cluster"]
    texts = {}
    for line in _lines(corpus):
        if _id_of(line) in wanted:
            r = orjson.loads(line)
            texts[r["id"]] = r["text"]
    # every record accounted for: one line of clusters.jsonl per input record
    with open(out / "clusters.jsonl", "rb") as fh:
        cluster_lines = sum(1 for _ in fh)
    sp = ShingleParams(k=5)
    sims = np.array([jaccard(shingle_ids(texts[a], sp), shingle_ids(texts[b], sp)) for a, b in pairs])
    found = np.array([cluster[a] == cluster[b] for a, b in pairs])
    at = sims >= summary["config"]["threshold"]
    result = {
        "date": str(dt.datetime.now()), "docs": summary["input"], "corpus_mb": size_mb, "command": " ".join(cmd),
        "wall_seconds": wall, "docs_per_second": summary["input"] / wall, "generate_seconds": gen_s,
        "peak_memory_mb": summary["peak_memory_mb"], "memory": memory,
        "spilled_mb": summary["spilled_mb"], "band_grouping": summary.get("band_grouping"),
        "every_record_accounted": cluster_lines == summary["input"] == (
            summary["kept"] + summary["exact_duplicates"] + summary["near_duplicates"] + summary["skipped"]),
        "load_average_before": load_before, "load_average_end": os.getloadavg(), "stages": summary["seconds"],
        "planted_pairs": len(pairs), "planted_at_or_above_threshold": int(at.sum()),
        "recall_planted_at_or_above_threshold": float(found[at].mean()) if at.any() else None,
        "recall_planted_all": float(found.mean()), "planted_jaccard_median": float(np.median(sims)),
        "kept": summary["kept"], "near_duplicates": summary["near_duplicates"],
        "exact_duplicates": summary["exact_duplicates"], "candidate_pairs": summary["candidate_pairs"],
        "verified_pairs": summary["verified_pairs"], "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
        "nproc": os.cpu_count(),
    }
    if plan is not None:
        measured = {"documents": summary["input"], "candidate_pairs": summary["candidate_pairs"],
                    "peak_memory_mb": memory["peak_rss_mb"], "peak_anonymous_mb": memory["peak_anonymous_mb"],
                    "spill_bytes": int(memory["peak_output_folder_mb"] * (1 << 20)), "seconds": round(wall, 2)}
        result["plan"] = {"command": " ".join(plan_cmd), "wall_seconds": round(plan_s, 2), "warnings": plan["warnings"],
                          "beside": {k: {"predicted": plan.get(k), "range": plan.get("ranges", {}).get(k),
                                         "measured": v} for k, v in measured.items()}}
    print(json.dumps(result, indent=2))
    dest = HERE / "results" / f"scale-{args.docs}-{dt.date.today()}.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    if not args.keep_data:
        corpus.unlink()
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
