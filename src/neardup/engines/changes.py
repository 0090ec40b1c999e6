"""Change detection between two crawls: what became of every canonical URL from OLD to NEW.

One dedup of the union and a join. Both crawls are read with the run's read options and sketched
by the dedup stages (:func:`neardup.stages.sketch.sketch_texts`: shingle ids, MinHash signatures,
main-content fingerprints); each record is known by its canonical URL (:mod:`neardup.urls`).
Then, per URL:

- in both crawls: ``unchanged`` when the main content has the same exact fingerprint and so has
  the whole page; ``template`` when the main content is the same but the whole page is not (only
  navigation, ads or footers moved); otherwise ``changed``, with the exact resemblance of the two
  main contents (``similarity``) and their containment both ways (``containment_old_in_new`` is 1
  when text was only appended), measured by the verify stage
  (:func:`neardup.stages.verify.pair_similarities`);
- only in OLD: ``moved`` when its main content is found under a URL only in NEW at ``threshold``
  (LSH candidates among these pages, :func:`neardup.stages.candidates.band_candidates`, verified
  exactly by :func:`neardup.stages.verify.verify_pairs` with the run's measure); the line names
  the new URL as ``new_url``, and that URL has no line of its own. A gone page is matched to at
  most one new page and back, best similarity first. Otherwise ``gone``;
- only in NEW (and not the target of a move): ``new``.

A record's URL is the ``url_field`` of its record (default: the WARC target URI, else a ``url``
field), in canonical form; a record without one (an HTML file of its own) is known by its path
below the input folder, so that two folders of the same site's files line up. When a crawl holds
one URL more than once, its first record counts and the others are counted as
``duplicate_urls``. The whole-page fingerprint of each HTML record
(:func:`neardup.text.html_pages.page_fingerprint`: its visible text as the markup scan reads it)
comes from the same read as its main content (``page_fingerprints`` of
:func:`neardup.io.read_documents`: the scan that precedes the parse computes it; each page is read
and parsed once); plain-text inputs have no page around their content, so ``template`` never
occurs there.

Outputs, in ``output``: ``changes.jsonl`` (one line per URL, in SURT order of the URL),
``summary.json`` (counts per status, the most-changed pages, the configuration) and
``changes.html`` (the most-changed pages as word diffs). Deterministic: no clock in any of them.
"""

from __future__ import annotations

import difflib
import html as _html
import os
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import orjson

from ..config import DedupConfig
from ..io import Document, read_documents
from ..io.write.outputs import write_atomic
from ..stages.candidates import band_candidates, band_keys
from ..stages.sketch import sketch_texts, submit_batch
from ..stages.verify import pair_similarities, verify_pairs
from ..urls import DEFAULT_RULES, UrlRules, surt, url_key

__all__ = ["STATUSES", "detect_changes", "lines_bytes", "CHANGES_FILE", "SUMMARY_FILE", "REPORT_FILE"]

STATUSES = ("new", "gone", "unchanged", "template", "changed", "moved")
CHANGES_FILE = "changes.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "changes.html"
_BATCH = 2048
#: Lines of changes.jsonl serialized at a time (:func:`lines_bytes`)
_LINES_A_PIECE = 4096
_WORK = ".neardup-changes-work"


@dataclass
class _Crawl:
    """One crawl as read and sketched: per record kept (the first of each URL), in input order."""

    urls: list = field(default_factory=list)
    ids: list = field(default_factory=list)
    fingerprints: list = field(default_factory=list)  # uint64 arrays, one per batch
    band_keys: list = field(default_factory=list)  # (n, bands) uint64 arrays, one per batch
    id_parts: list = field(default_factory=list)  # shingle ids, one array per batch
    n_shingles: list = field(default_factory=list)
    text_spans: list = field(default_factory=list)  # (offset, length) in the text spill
    records: int = 0
    skipped: Counter = field(default_factory=Counter)
    duplicate_urls: int = 0
    signatures: list = field(default_factory=list)  # (n, num_perm) arrays, one per batch, when kept
    #: per record, its whole-page fingerprint (unsigned; None: none), when read with them
    page_fingerprints: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.urls)

    def whole_pages(self) -> list:
        """Per record, in order, its whole-page fingerprint, or None where it has none."""
        return self.page_fingerprints or [None] * len(self.urls)


def _root_of(paths: list[str]) -> list[str]:
    return [os.path.normpath(p) + os.sep for p in paths if os.path.isdir(p)]


def _record_url(doc: Document, url_field: str, roots: list[str], rules: UrlRules, known: dict | None,
                learn: bool) -> str:
    """The record's URL identity; ``known``: URL values already canonicalized in this comparison
    (the earlier crawl's, added when ``learn``), looked up before :func:`~neardup.urls.url_key`
    runs (about 20 µs a URL, and a site recrawled keeps most of its URLs' spellings)."""
    value = doc.meta.get(url_field)
    if isinstance(value, str) and value.strip():
        url = known.get(value) if known is not None else None
        if url is None:
            url = url_key(value, rules)
            if learn:
                known[value] = url
        return url
    ident = doc.id
    for root in roots:  # a file of its own: its path below the folder given
        if ident.startswith(root):
            return ident[len(root):]
    return ident


def _has_pages(paths: list[str], config: DedupConfig) -> bool:
    """Whether any input is read as HTML (then the whole page is a second view of each record)."""
    if config.content == "html":
        return True
    from ..io.read import plan_inputs

    return bool(plan_inputs(paths, config.format).formats() & {"html", "warc"})


def _read_crawl(paths: list[str], config: DedupConfig, *, url_field: str, rules: UrlRules, jobs: int,
                spill, bands: int, rows: int, on_error: str, signature_dtype=None, pages: bool = True,
                known_urls: dict | None = None, learn_urls: bool = False, shingle_ids: bool = True) -> _Crawl:
    """One crawl read and sketched; ``signature_dtype``: keep the MinHash values too, narrowed
    to this type (the width an index stores them in); ``shingle_ids``: keep each page's shingle
    ids (for exact similarities: of 1M pages, gigabytes); ``pages``: the whole-page fingerprints
    too, where the inputs are HTML read for their main content (from the same read);
    ``known_urls``: URL values canonicalized already, this crawl's added to it with ``learn_urls``
    (see :func:`_record_url`)."""
    crawl = _Crawl()
    roots = _root_of(paths)
    seen: set = set()
    pages = pages and config.html != "whole" and _has_pages(paths, config)
    options = {**config.read_options(), "keep_fields": (url_field,), "jobs": jobs, "on_error": on_error,
               "page_fingerprints": pages}
    batch: list[str] = []
    pending: list = []

    def collect():
        submitted, texts = pending.pop(0)
        # (a text the kernel cannot take fails the batch as sketch_texts fails it)
        sig = (sketch_texts(texts, config.shingle, config.minhash, jobs=jobs) if submitted.too_large
               else submitted.result())
        crawl.fingerprints.append(np.asarray(sig.fingerprints, dtype=np.uint64))
        crawl.band_keys.append(band_keys(sig.values, bands, rows))
        if shingle_ids:
            crawl.id_parts.append(np.concatenate(sig.id_parts) if sig.id_parts else np.empty(0, dtype=np.uint64))
        crawl.n_shingles.append(np.asarray(sig.n_shingles, dtype=np.int64))
        if signature_dtype is not None:
            crawl.signatures.append(sig.values.astype(signature_dtype))
        # the batch's texts in one write, each found again by its (offset, length)
        data = [text.encode("utf-8", "surrogatepass") for text in texts]
        offset = spill.tell()
        for chunk in data:
            crawl.text_spans.append((offset, len(chunk)))
            offset += len(chunk)
        spill.write(b"".join(data))

    # A batch is sketched on ``jobs`` threads while the next one is read, as dedup's are
    # (:func:`neardup.stages.sketch.submit_batch`: its chunks queued before the previous batch's
    # result is taken, so no thread waits for a batch's last chunk); the reading keeps the HTML
    # worker processes fed instead of leaving them idle while a batch is sketched.
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-changes-sketch") as sketcher:
        def flush():
            texts = batch[:]
            submitted = submit_batch(sketcher, [texts], config.shingle, config.minhash, jobs=jobs)
            pending.append((submitted, texts))
            batch.clear()
            while len(pending) > 1:  # at most one batch sketching while the next is read
                collect()

        for rec in read_documents(paths, **options):
            crawl.records += 1
            if type(rec) is not Document:
                crawl.skipped[rec.reason] += 1
                continue
            url = _record_url(rec, url_field, roots, rules, known_urls, learn_urls)
            if url in seen:
                crawl.duplicate_urls += 1
                continue
            seen.add(url)
            crawl.urls.append(url)
            crawl.ids.append(rec.id)
            batch.append(rec.text)
            if pages:
                crawl.page_fingerprints.append(rec.page_fingerprint)
            if len(batch) >= _BATCH:
                flush()
        if batch:
            flush()
        while pending:
            collect()
    return crawl


def _cat(parts: list, dtype, width: int | None = None) -> np.ndarray:
    if parts:
        return np.concatenate(parts)
    return np.empty((0, width) if width else 0, dtype=dtype)


def detect_changes(old: list[str], new: list[str], output: str, config: DedupConfig = DedupConfig(), *,
                   url_field: str | None = None, rules: UrlRules = DEFAULT_RULES, jobs: int = 1, top: int = 20,
                   on_error: str = "error") -> dict:
    """Compare crawl ``old`` with crawl ``new`` (lists of inputs, as ``neardup dedup`` reads them)
    and write ``changes.jsonl``, ``summary.json`` and ``changes.html`` into ``output``; returns
    the summary. ``config``: the read options, the shingles and MinHash, ``threshold`` and
    ``measure`` (of ``moved``). ``top``: the most-changed pages in the summary and the report."""
    os.makedirs(output, exist_ok=True)
    work = os.path.join(output, _WORK)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    band = config.banding()
    field_name = url_field or "url"
    try:
        with open(os.path.join(work, "texts"), "w+b") as spill:
            known: dict = {}  # (OLD's URL values, which NEW mostly repeats)
            crawls = [_read_crawl(paths, config, url_field=field_name, rules=rules, jobs=jobs, spill=spill,
                                  bands=band.bands, rows=band.rows, on_error=on_error, known_urls=known,
                                  learn_urls=paths is old)
                      for paths in (old, new)]
            del known
            spill.flush()
            lines, most = _join(crawls, config, jobs)
            texts = _Texts(spill, crawls)
            summary = _summary(crawls, lines, most[:top], config, field_name, rules)
            report = _report(summary, most[:top], texts)
        write_atomic(os.path.join(output, CHANGES_FILE), lines_bytes(lines))
        write_atomic(os.path.join(output, REPORT_FILE), report.encode("utf-8"))
        write_atomic(os.path.join(output, SUMMARY_FILE), orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary


class _Texts:
    """The main-content texts of the union, read back from the spill by local index."""

    def __init__(self, spill, crawls):
        self.spill = spill
        self.spans = crawls[0].text_spans + crawls[1].text_spans

    def __getitem__(self, local: int) -> str:
        offset, length = self.spans[local]
        self.spill.seek(offset)
        return self.spill.read(length).decode("utf-8", "surrogatepass")


def _join(crawls, config: DedupConfig, jobs: int):
    old, new = crawls
    n_old = len(old)
    counts = np.concatenate([_cat(old.n_shingles, np.int64), _cat(new.n_shingles, np.int64)])
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = old.id_parts + new.id_parts
    fps = np.concatenate([_cat(old.fingerprints, np.uint64), _cat(new.fingerprints, np.uint64)])
    new_at = {url: n_old + k for k, url in enumerate(new.urls)}
    old_pages, new_pages = old.whole_pages(), new.whole_pages()

    lines: dict[str, dict] = {}
    ci, cj = [], []
    gone: list[int] = []
    for i, url in enumerate(old.urls):
        j = new_at.pop(url, None)
        if j is None:
            gone.append(i)
            continue
        if fps[i] == fps[j]:
            same_page = old_pages[i] == new_pages[j - n_old]
            lines[url] = _line(url, "unchanged" if same_page else "template", 1.0, old.ids[i], new.ids[j - n_old])
        else:
            ci.append(i)
            cj.append(j)
    ci_a, cj_a = np.array(ci, dtype=np.int64), np.array(cj, dtype=np.int64)
    sims = pair_similarities(ids, offsets, counts, ci_a, cj_a, jobs=jobs) if ci else None
    for q, (i, j) in enumerate(zip(ci, cj)):
        url = old.urls[i]
        line = _line(url, "changed", float(sims["jaccard"][q]), old.ids[i], new.ids[j - n_old])
        line["containment_old_in_new"] = round(float(sims["containment_a_in_b"][q]), 6)
        line["containment_new_in_old"] = round(float(sims["containment_b_in_a"][q]), 6)
        line["_pair"] = (i, j)
        lines[url] = line

    added = sorted(new_at.values())
    moves = _moves(gone, added, old, new, ids, offsets, counts, config, jobs)
    for i in gone:
        url = old.urls[i]
        if i in moves:
            j, sim = moves[i]
            line = _line(url, "moved", sim, old.ids[i], new.ids[j - n_old])
            line["new_url"] = new.urls[j - n_old]
            lines[url] = line
        else:
            lines[url] = _line(url, "gone", None, old.ids[i], None)
    moved_to = {j for j, _ in moves.values()}
    for j in added:
        if j not in moved_to:
            url = new.urls[j - n_old]
            lines[url] = _line(url, "new", None, None, new.ids[j - n_old])

    ordered = [lines[u] for u in sorted(lines, key=lambda u: (surt(u), u))]
    changed = sorted((line for line in ordered if line["status"] == "changed"),
                     key=lambda line: (line["similarity"], line["url"]))
    most = [dict(line) for line in changed]  # copies that keep their pair, for the report's diffs
    for line in ordered:
        line.pop("_pair", None)
    return ordered, most


def lines_bytes(lines: list) -> bytes:
    """``changes.jsonl``'s bytes: the lines serialized and joined a piece at a time. Each bytes
    object ``orjson.dumps`` returns keeps its whole first buffer (about 4 KB, orjson 3.13), so
    holding every line's at once before one join took 393 MB for 100,000 lines of 129 bytes (4 GB
    for 1M); a piece's are freed once joined."""
    pieces = []
    for start in range(0, len(lines), _LINES_A_PIECE):
        pieces.append(b"".join(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
                               for line in lines[start:start + _LINES_A_PIECE]))
    return b"".join(pieces)


def _line(url, status, similarity, old_id, new_id) -> dict:
    return {"url": url, "status": status, "similarity": None if similarity is None else round(similarity, 6),
            "old_id": old_id, "new_id": new_id}


def _moves(gone, added, old, new, ids, offsets, counts, config: DedupConfig, jobs: int) -> dict:
    """gone local index -> (new local index, similarity): the gone pages whose main content is
    found under a new URL at the threshold, each page matched once, best similarity first."""
    if not gone or not added:
        return {}
    band = config.banding()
    keys_old = _cat(old.band_keys, np.uint64, band.bands)
    keys_new = _cat(new.band_keys, np.uint64, band.bands)
    n_old = len(old)
    members = np.array(gone + added, dtype=np.int64)
    keys = np.concatenate([keys_old[np.array(gone, dtype=np.int64)],
                           keys_new[np.array(added, dtype=np.int64) - n_old]])
    pi, pj, _stats = band_candidates(keys)
    # a pair of the union's candidates counts only across the crawls: a gone page and a new one
    cross = (pi < len(gone)) & (pj >= len(gone))
    ci, cj = members[pi[cross]], members[pj[cross]]
    edges = verify_pairs(ids, offsets, counts, ci, cj, np.zeros(ci.size), measure=config.measure,
                         threshold=config.threshold, jobs=jobs)
    order = sorted(range(len(edges)), key=lambda q: (-float(edges.score[q]), old.urls[int(edges.i[q])],
                                                       new.urls[int(edges.j[q]) - n_old]))
    moves: dict = {}
    taken: set = set()
    for q in order:
        i, j = int(edges.i[q]), int(edges.j[q])
        if i in moves or j in taken:
            continue
        moves[i] = (j, float(edges.jaccard[q]))
        taken.add(j)
    return moves


def _summary(crawls, lines, most, config: DedupConfig, url_field: str, rules: UrlRules) -> dict:
    counts = Counter(line["status"] for line in lines)

    def crawl_dict(c: _Crawl) -> dict:
        return {"records": c.records, "pages": len(c), "duplicate_urls": c.duplicate_urls,
                "skipped": c.records - len(c) - c.duplicate_urls,
                "skipped_by_reason": dict(sorted(c.skipped.items()))}

    return {
        "urls": len(lines),
        "counts": {s: counts.get(s, 0) for s in STATUSES},
        "old": crawl_dict(crawls[0]),
        "new": crawl_dict(crawls[1]),
        "most_changed": [{k: v for k, v in line.items() if k != "_pair"} for line in most],
        "threshold": config.threshold,
        "measure": config.measure,
        "url_field": url_field,
        "url_rules": rules.as_dict(),
        "config": config.as_dict(),
        "config_fingerprint": config.fingerprint(),
    }


def word_diff(old: str, new: str, *, context: int = 8) -> str:
    """HTML of the word diff of two texts: deleted words in ``<del>``, inserted ones in ``<ins>``,
    runs of unchanged words cut to ``context`` words either side of a change."""
    a, b = old.split(), new.split()
    out: list[str] = []
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            words = a[i1:i2]
            head = words[:context] if k > 0 else []
            tail = words[-context:] if k < len(ops) - 1 else []
            if len(words) > len(head) + len(tail):
                out.extend(x for x in (_html.escape(" ".join(head)), "&hellip;", _html.escape(" ".join(tail))) if x)
            else:
                out.append(_html.escape(" ".join(words)))
            continue
        if i2 > i1:
            out.append(f"<del>{_html.escape(' '.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{_html.escape(' '.join(b[j1:j2]))}</ins>")
    return " ".join(x for x in out if x)


def _report(summary: dict, most: list, texts: "_Texts | None") -> str:
    counts = summary["counts"]
    rows = "".join(f"<tr><td>{s}</td><td>{counts[s]:,}</td></tr>" for s in STATUSES)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Changes</title><style>"
        "body{font-family:sans-serif;max-width:60em;margin:auto}del{background:#fdd}ins{background:#dfd}"
        "td{padding:0 1em}.diff{font-family:serif;line-height:1.5}</style></head><body>",
        f"<h1>Changes</h1><p>{summary['old']['pages']:,} pages before, {summary['new']['pages']:,} after, "
        f"{summary['urls']:,} URLs.</p><table>{rows}</table>",
        "<h2>The largest changes</h2>" if most else "<p>No page changed.</p>",
    ]
    for line in most:
        i, j = line["_pair"]
        # (against an index the old text is not at hand: no word diff, texts is None)
        diff = (f"<p class='diff'>{word_diff(texts[i], texts[j])}</p>" if texts is not None
                else "<p>(the earlier crawl is an index, which keeps no text: no word diff)</p>")
        parts.append(
            f"<h3><a href='{_html.escape(line['url'], quote=True)}'>{_html.escape(line['url'])}</a></h3>"
            f"<p>resemblance {line['similarity']:.3f}, old in new {line['containment_old_in_new']:.3f}, "
            f"new in old {line['containment_new_in_old']:.3f}</p>{diff}")
    parts.append("</body></html>\n")
    return "".join(parts)
