"""Rebuilds debian-copyright.jsonl.gz from the machine's /usr/share/doc/*/copyright files.

Run only to refresh the shipped data on purpose; the tests never read the machine's own files.
"""
import glob
import gzip
import json
import os

LIMIT, MIN_BYTES, MAX_CHARS = 420, 200, 16000


def main() -> None:
    records = []
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        with open(path, "rb") as fh:
            data = fh.read()
        if len(data) < MIN_BYTES:
            continue
        text = data.decode("utf-8", "replace")
        if len(text) > MAX_CHARS:  # cut at a line end: whole lines of real text only
            text = text[: text.rfind("\n", 0, MAX_CHARS) + 1]
        records.append({"path": path, "text": text})
        if len(records) >= LIMIT:
            break
    raw = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records).encode()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "debian-copyright.jsonl.gz")
    with open(out, "wb") as fh:
        fh.write(gzip.compress(raw, 9, mtime=0))
    print(f"{len(records)} texts, {len(raw):,} bytes, written to {out}")


if __name__ == "__main__":
    main()
