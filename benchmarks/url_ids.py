"""Rewrites a JSONL file of ``scale.py``'s generated documents (ids ``d123``, ``d123-copy``) with
URL ids, in a shuffled order (seed 17), for ``index add`` with ids as a crawl has them.

Usage:
    python benchmarks/url_ids.py IN.jsonl OUT.jsonl shared|unique

``shared``: ``https://site{n % 1000}.example.org/news/2026/{n % 12 + 1:02d}/story-{n}.html``
(3,000 directories, each shared by many ids); ``unique``: a random 48-bit directory per id
(``.../news/2026/2bb16719e161/story-{n}.html``), no directory shared.
"""
import random
import sys

import orjson


def main() -> None:
    src, dst, style = sys.argv[1:4]
    if style not in ("shared", "unique"):
        sys.exit("the third argument must be 'shared' or 'unique'")
    rng = random.Random(17)
    with open(src, "rb") as fh:
        lines = fh.read().splitlines()
    rng.shuffle(lines)
    with open(dst, "wb") as out:
        for line in lines:
            record = orjson.loads(line)
            digits = record["id"][1:].split("-")[0]
            n, tail = int(digits), record["id"][1 + len(digits):]
            if style == "unique":
                folder = f"{rng.getrandbits(48):012x}"
            else:
                folder = f"{n % 12 + 1:02d}"
            record["id"] = f"https://site{n % 1000}.example.org/news/2026/{folder}/story-{n}{tail}.html"
            out.write(orjson.dumps(record) + b"\n")


if __name__ == "__main__":
    main()
