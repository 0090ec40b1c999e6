"""Where the main-content extraction's time goes, in instructions a page (valgrind's callgrind).

Elapsed and CPU times on a shared machine move by tens of percent from one run to the next; the
number of instructions a page takes does not (it is a property of the code and the pages), so
this is how two versions of the extraction are compared part by part. For each source tree given
(``--src``, default the installed neardup), ``extract_text`` runs over every ``--step``-th page
of the labelled set (raw bytes, decoding included) under ``valgrind --tool=callgrind``, once with
the pages and once without (start-up, imports); the difference over the pages is split by the
functions below (inclusive counts). Instructions are not time (cache misses and branches differ
by part), but the parts' shares and a change's effect are read off reliably.

Usage::

    python benchmarks/html_instructions.py [--src OLD/src --src NEW/src] [--step 4] [--out results/x.txt]

Needs valgrind (``apt-get install valgrind``) and the compiled extensions of each tree.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent

# (part, the functions whose inclusive counts make it)
PARTS = [
    ("scan of the markup (neardup._htmlscan.scan)", ["py_scan"]),
    ("lexbor's parse (LexborHTMLParser())", ["__pyx_pw_10selectolax_6lexbor_16LexborHTMLParser_1__init__"]),
    ("CSS queries (node.css)", ["__pyx_pw_10selectolax_6lexbor_10LexborNode_13css"]),
    ("subtree texts (text() / text_lexbor())", ["__pyx_pw_10selectolax_6lexbor_10LexborNode_11text",
                                                 "__pyx_pw_10selectolax_6lexbor_10LexborNode_9text_lexbor"]),
    ("lines", ["py_lines"]),
    ("stats (link density)", ["py_stats"]),
    ("UTF-8 check (is_utf8)", ["py_is_utf8"]),
    ("decoding to str (bytes.decode)", ["bytes_decode"]),
    ("tree freed", ["__pyx_tp_dealloc_10selectolax_6lexbor_LexborHTMLParser"]),
]

LOOP = r'''
import sys
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from html_quality import load_set, page_path
from neardup.text.html import extract_text
from neardup.text import html_scan
assert html_scan.compiled()
root = Path(sys.argv[4])
labels, _ = load_set(root)
raw = [page_path(root, r).read_bytes() for r in labels][::int(sys.argv[2])]
extract_text(raw[0])
if sys.argv[1] == "1":
    for b in raw:
        extract_text(b)
print(len(raw))
'''


def _inclusive(path: str) -> tuple[dict[str, int], int]:
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(\S+) \[", line)
        if m:
            counts.setdefault(m.group(2), int(m.group(1).replace(",", "")))
    total = re.search(r"([\d,]+) \([^)]*\)\s+PROGRAM TOTALS", out)
    return counts, int(total.group(1).replace(",", ""))


def measure(src: str | None, step: int, root: str, tmp: str) -> list[str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    runs = []
    for with_pages in ("0", "1"):
        out = os.path.join(tmp, f"cg-{with_pages}")
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", LOOP,
                            with_pages, str(step), str(HERE), root], env=env, capture_output=True, text=True, check=True)
        pages = int(r.stdout.split()[-1])
        runs.append(_inclusive(out))
    (base, base_total), (full, full_total) = runs
    per_page = (full_total - base_total) / pages
    lines = [f"{src or 'installed neardup'}: {per_page / 1e6:.2f} M instructions a page ({pages} pages)"]
    rest = per_page
    for part, fns in PARTS:
        v = sum(full.get(f, 0) - base.get(f, 0) for f in fns) / pages
        rest -= v
        lines.append(f"  {part:46s} {v / 1e3:7.0f} K  {v / per_page * 100:5.1f} %")
    lines.append(f"  {'the rest (Python, charset sniffing, removals)':46s} {rest / 1e3:7.0f} K  {rest / per_page * 100:5.1f} %")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", action="append", help="a source tree's src/ folder (repeat to compare)")
    ap.add_argument("--set", default=str(HERE / "data" / "html_set"))
    ap.add_argument("--step", type=int, default=4)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    report = []
    with tempfile.TemporaryDirectory(prefix="html-instructions-") as tmp:
        for src in args.src or [None]:
            report += measure(src, args.step, args.set, tmp)
    text = "\n".join(report) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
