"""``report.json`` (every number) and ``report.html`` (the same numbers for people) from one metrics dict.

The HTML page is self-contained: figures are inline SVG data URIs, the style and the few lines of
script that sort the tables are inline, and a Content-Security-Policy forbids loading anything
else, so the page reads the same from a file, a mail attachment or a server.
"""

from __future__ import annotations

import base64
import json
import math
import os
from html import escape

from .metrics import public

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem;color:#222}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .55rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f4f4f4}table.sortable th{cursor:pointer;user-select:none}
table.sortable th:after{content:" \\2195";color:#aaa}
table.sortable th[data-order=asc]:after{content:" \\2191";color:#333}
table.sortable th[data-order=desc]:after{content:" \\2193";color:#333}
figure{margin:1rem 0 2rem}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#444;font-size:.9rem;max-width:48rem}
.ids{max-width:40rem;word-break:break-all}.note{color:#666;font-size:.9rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(30rem,1fr));gap:0 2rem}
code{background:#f4f4f4;padding:0 .2rem}
"""

SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var asc = th.dataset.order !== "asc";
    table.querySelectorAll("th").forEach(function (h) { delete h.dataset.order; });
    th.dataset.order = asc ? "asc" : "desc";
    function key(row) {
      var cell = row.cells[col], v = cell.hasAttribute("data-value") ? cell.dataset.value : cell.textContent;
      var x = parseFloat(v); return isNaN(x) ? [1, v.toLowerCase()] : [0, x];
    }
    var rows = Array.prototype.slice.call(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b), c = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def _f(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}f}"


def _cell(value, digits=3, *, numeric=None) -> str:
    """One ``<td>``: numbers are right-aligned and carry their exact value for sorting."""
    if numeric is None:
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if numeric:
        raw = "" if value is None else repr(value)
        return f'<td class="n" data-value="{escape(raw)}">{escape(_f(value, digits))}</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    return f"<td>{escape('' if value is None else str(value))}</td>"


def _table(table_id: str, headers, rows, *, sortable=True, caption=None) -> str:
    cls = ' class="sortable"' if sortable else ""
    head = "".join(f'<th class="n">{escape(h[1:])}</th>' if h.startswith("#") else f"<th>{escape(h)}</th>"
                   for h in headers)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table id="{escape(table_id)}"{cls}>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _figure(saved) -> str:
    svg = saved.svg
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (f'<figure data-figure="{escape(saved.name)}"><img alt="{escape(saved.title)}" '
            f'src="data:image/svg+xml;base64,{data}"><figcaption><b>{escape(saved.title)}.</b> '
            f"{escape(saved.caption)}</figcaption></figure>")


def _ids(ids) -> str:
    return f'<td class="ids">{escape(", ".join(ids))}</td>'


def _site_section(m: dict, figures) -> str:
    cfg = m["config"]
    parts = []
    n, groups = m["pages"], m["exact_duplicate_groups"]
    dup_text = (f"No two of the {n:,} pages had the same exact fingerprint of their main content."
                if not groups else
                f"{len(groups):,} group{'s' if len(groups) != 1 else ''} of pages "
                f"({sum(len(g) for g in groups):,} pages) had the same exact fingerprint of their main content.")
    sample_text = (f"For all {m['sampled_pairs']:,} pairs of pages" if m["all_pairs"] else
                   f"For {m['sampled_pairs']:,} randomly sampled pairs of pages, out of {m['total_pairs']:,} possible,")
    parts.append(f"<h2 id=\"duplicates\">Duplicates on this site</h2><p>{escape(dup_text)} {escape(sample_text)} "
                 f"the {cfg['k']}-shingle Jaccard coefficient was:</p>")
    rows = []
    for label, key in (("Whole page, including navigation and footer", "whole_page"), ("Main content only", "main_content")):
        s = m[key]
        rows.append([_cell(label), _cell(s["mean"]), _cell(s["median"]), _cell(s["max"]),
                     *(_cell(s["above"][lv]) for lv in ("0.5", "0.8", "0.9"))])
    parts.append(_table("pair-summary", ["Text compared", "#Mean", "#Median", "#Maximum", "#≥ 0.5", "#≥ 0.8", "#≥ 0.9"],
                        rows, sortable=False))
    inf = m["inflation"]
    if inf["mean_whole_minus_main"] is not None:
        ratio = f", {inf['ratio_of_means']:.2f} times the main-content mean" if inf["ratio_of_means"] else ""
        parts.append(f"<p>Whole-page similarity exceeds main-content similarity by {inf['mean_whole_minus_main']:.3f} "
                     f"on average{escape(ratio)}; the whole page is the more similar text in "
                     f"{inf['pairs_whole_higher']:,} of {m['sampled_pairs']:,} pairs. On average a page has "
                     f"{_f(m['shingles_per_page']['whole_page']['mean'], 0)} distinct shingles on the whole page and "
                     f"{_f(m['shingles_per_page']['main_content']['mean'], 0)} in its main content.</p>")
    if m["top_pairs"]:
        t = m["top_pairs"][0]
        est = ("" if t["minhash_estimate"] is None else
               f" A {cfg['num_perm']}-value MinHash sketch estimated it as {t['minhash_estimate']:.3f}, against an "
               f"expected error of about {t['expected_error']:.3f}.")
        parts.append(f"<p>The most similar pair was <b>{escape(t['a'])}</b> and <b>{escape(t['b'])}</b>. Their exact "
                     f"coefficient on main content was {t['jaccard_main']:.3f} ({t['jaccard_whole']:.3f} on the whole "
                     f"page).{escape(est)}</p>")
    sampled_top = next((t for t in m["top_pairs"] if t["sampled"]), None)
    if sampled_top is not None and m["top_pairs"] and sampled_top is not m["top_pairs"][0]:
        t = sampled_top
        parts.append(f"<p>The most similar sampled pair was <b>{escape(t['a'])}</b> and <b>{escape(t['b'])}</b>: "
                     f"{t['jaccard_main']:.3f} on main content, {t['jaccard_whole']:.3f} on the whole page"
                     + ("" if t["minhash_estimate"] is None else
                        f", MinHash estimate {t['minhash_estimate']:.3f} (expected error {t['expected_error']:.3f})")
                     + ".</p>")
    f1 = m["figure1"]
    if m["top_pairs"] and f1["pair"] != [m["top_pairs"][0]["a"], m["top_pairs"][0]["b"]]:
        parts.append(f"<p>Figure 1 follows the most similar pair that is not an exact copy, <b>{escape(f1['pair'][0])}"
                     f"</b> and <b>{escape(f1['pair'][1])}</b> (J = {f1['jaccard']:.3f} on "
                     f"{escape(f1['text'].replace('_', ' '))}).</p>")
    bp = m["boilerplate_share"]
    parts.append(f"<p>Boilerplate: {bp['shingles']:,} distinct shingles occur on more than {bp['fraction']:.0%} of the "
                 f"pages (at least {bp['min_pages']:,}); they are {_f(bp['mean'])} of a page's shingles on average "
                 f"(median {_f(bp['median'])}, max {_f(bp['max'])}) and {_f(bp['main_content']['mean'])} of its main "
                 f"content.</p>")

    parts.append('<h2 id="figures">Figures</h2><div class="grid">' + "".join(_figure(f) for f in figures) + "</div>")

    parts.append('<h2 id="top">Most similar pairs</h2><p class="note">Sampled pairs, verified candidate pairs at '
                 "the threshold and exact copies, by main-content Jaccard. Expected error is sqrt(J(1-J)/m) at the "
                 "exact J; Hamming distances are of 64-bit simhashes. Click a heading to sort.</p>")
    rows = [[_cell(t["a"]), _cell(t["b"]), _cell(t["jaccard_whole"]), _cell(t["jaccard_main"]),
             _cell(t["minhash_estimate"], numeric=True), _cell(t["expected_error"]), _cell(t["hamming"], numeric=True),
             _cell(t["hamming_whole"]), _cell(t["sampled"])] for t in m["top_pairs"]]
    parts.append(_table("top-pairs", ["Page a", "Page b", "#J whole", "#J main", "#MinHash", "#Expected error",
                                      "#Hamming main", "#Hamming whole", "Sampled"], rows))

    cand = m["candidates"]
    how = ("all pairs were compared exactly" if cand["method"] == "all_pairs" else
           f"candidates from MinHash LSH ({cand['bands']} bands of {cand['rows']} rows) and the sampled pairs, "
           "verified exactly")
    parts.append(f'<h2 id="clusters">Near-duplicate clusters</h2><p>Pages joined by exact Jaccard at or above '
                 f"{cfg['threshold']:g} on main content ({escape(how)}; {cand['verified_main_content']:,} pairs "
                 f"verified): {len(m['clusters']):,} cluster{'s' if len(m['clusters']) != 1 else ''}. On whole pages: "
                 f"{len(m['whole_page_clusters']):,}.</p>")
    for table_id, title, groups in (("clusters-main", "Main content", m["clusters"]),
                                    ("clusters-whole", "Whole page", m["whole_page_clusters"]),
                                    ("exact-groups", "Exact duplicates (main content)", m["exact_duplicate_groups"]),
                                    ("exact-groups-whole", "Exact duplicates (whole page)",
                                     m["whole_page_exact_duplicate_groups"])):
        rows = [[_cell(i + 1), _cell(len(g)), _ids(g)] for i, g in enumerate(groups)]
        parts.append(f"<h3>{escape(title)}</h3>" + (_table(table_id, ["#Cluster", "#Pages", "Ids"], rows)
                                                    if rows else f'<p id="{table_id}" class="note">None.</p>'))

    per_page = sorted(bp["per_page"], key=lambda r: (-r["whole_page"], r["id"]))
    shown = per_page[:200]
    rows = [[_cell(r["id"]), _cell(r["whole_page"]), _cell(r["main_content"], numeric=True)] for r in shown]
    note = "" if len(per_page) <= len(shown) else f" The {len(shown)} pages with the highest share; all are in report.json."
    parts.append(f'<h2 id="boilerplate">Boilerplate share per page</h2><p class="note">Share of each page\'s distinct '
                 f"shingles that occur on more than {bp['fraction']:.0%} of the pages.{escape(note)}</p>")
    parts.append(_table("boilerplate", ["Page", "#Whole page", "#Main content"], rows))

    sim = m["simhash"]
    rows = [[_cell(label), _cell(s["mean"], 1), _cell(s["median"], 1), _cell(s["min"], 0, numeric=True),
             _cell(s["within_3"])] for label, s in (("Whole page", sim["whole_page"]), ("Main content", sim["main_content"]))]
    parts.append('<h2 id="simhash">Simhash distances of the sampled pairs</h2>')
    parts.append(_table("simhash", ["Text", "#Mean", "#Median", "#Minimum", "#≤ 3 bits"], rows, sortable=False))

    if m["skipped"] or m["main_content_empty"]:
        parts.append('<h2 id="skipped">Pages left out</h2>')
        rows = [[_cell(s["id"]), _cell(s["reason"])] for s in m["skipped"]]
        rows += [[_cell(pid), _cell("no main content (kept for whole-page measures)")] for pid in m["main_content_empty"]]
        parts.append(_table("left-out", ["Page", "Reason"], rows))
    return "".join(parts)


def _seed_section(s: dict, figures) -> str:
    parts = ['<h2 id="seed">The seed\'s worked examples, recomputed</h2>']
    sent = s["sentences"]
    parts.append("<ul>" + "".join(f"<li><i>{k}</i> = {escape(v)}</li>" for k, v in sent.items()) + "</ul>")
    t = s["shingle_table"]
    parts.append(f"<h3>The {t['union']} distinct 3-shingles</h3><p>{t['words_d1']} words and {t['shingles_d1']} "
                 f"3-shingles each; shared {t['shared']}, union {t['union']}, J(d1, d2) = {t['shared']}/{t['union']} = "
                 f"{t['jaccard']:.3f}.</p>")
    rows = [[_cell(r["number"]), _cell(r["shingle"]), _cell("yes" if r["in_d1"] else ""),
             _cell("yes" if r["in_d2"] else "")] for r in t["rows"]]
    parts.append(_table("seed-shingles", ["##", "Shingle", "In d1", "In d2"], rows))
    c = s["choice_of_k"]
    parts.append(f"<p>The choice of k: d3 has {c['k3']['d3']} distinct 3-shingles and d4 has {c['k3']['d4']}; they "
                 f"share {c['k3']['shared']} of {c['k3']['union']}, J = {c['k3']['jaccard']:.2f}; with k = 2, "
                 f"J = {c['k2']['jaccard']:.2f}. The 4-shingles of d3: {escape(', '.join(c['rose_4_shingles']))}.</p>")
    b = s["by_hand_minhash"]
    parts.append(f"<h3>MinHash by hand, h(x) = (a x + b) mod {b['prime']}</h3>")
    rows = [[_cell(r["a"]), _cell(r["b"]), _cell(f"{r['min_d1']} ({r['shingle_d1']})"),
             _cell(f"{r['min_d2']} ({r['shingle_d2']})"), _cell("yes" if r["agree"] else "no")] for r in b["rows"]]
    parts.append(_table("seed-by-hand", ["#a", "#b", "Min over d1 (shingle)", "Min over d2 (shingle)", "Agree?"], rows))
    parts.append(f"<p>{b['agreements']} of {len(b['rows'])} agree: estimate {b['estimate']:.2f} for a true value of "
                 f"{b['true_jaccard']:.3f}.</p>")
    rows = [[_cell(e["m"]), _cell(e["stderr"])] for e in s["standard_errors"]]
    parts.append("<h3>Standard error sqrt(J(1-J)/m) at J = 1/3</h3>" + _table("seed-stderr", ["#m", "#Standard error"], rows))
    last = s["figure1"]["at"][-1]
    parts.append(f"<p>At m = {last['m']}, the median estimate over the {s['figure1']['runs']} runs was "
                 f"{last['median']:.3f} and the middle half of the runs lay between {last['q25']:.3f} and "
                 f"{last['q75']:.3f}.</p>")
    parts.append('<div class="grid">' + "".join(_figure(f) for f in figures) + "</div>")
    rows = [[_cell(p["bands"]), _cell(p["rows"]), _cell(p["jaccard"]), _cell(p["probability"], 4)]
            for p in s["banding_probabilities"]]
    rows += [[_cell(c["bands"]), _cell(c["rows"]), _cell("threshold (1/b)^(1/r)"), _cell(c["threshold"], 2)]
             for c in s["figure2"]["configs"] if not c["used"]]
    parts.append("<h3>Banding</h3>" + _table("seed-banding", ["#Bands", "#Rows", "J", "#Probability / threshold"], rows))
    sh = s["simhash"]
    parts.append("<h3>Simhash of d1 by hand (MD5 of each word, weight 1)</h3>")
    rows = [[_cell(r["word"]), _cell(r["bits"])] for r in sh["rows"]]
    rows.append([_cell("total"), _cell(" ".join(f"{x:+d}".replace("-", "−") for x in sh["totals"]))])
    rows.append([_cell("simhash bits"), _cell(" ".join(sh["bits"]))])
    parts.append(_table("seed-simhash", ["Word", "Bits 1 to 8"], rows, sortable=False))
    a = s["angles"]
    parts.append(f"<p>d1 = <code>{sh['d1']}</code>, d2 = <code>{sh['d2']}</code>: they differ in "
                 f"{sh['hamming_d1_d2']} of 64 bits ({sh['agree_d1_d2']}/64 = {sh['agree_fraction_d1_d2']:.3f} agree). "
                 f"Cosine {a['cosine']:.3f}, angle {a['angle_degrees']:.1f} degrees, predicted agreement "
                 f"{a['predicted_agreement']:.3f} (standard deviation {a['stddev']:.3f}). d3 differs from d1 in "
                 f"{sh['hamming_d1_d3']} bits, {sh['agree_d1_d3']} of 64 agree ({sh['agree_fraction_d1_d3']:.2f}). "
                 f"Manku et al.'s 3 bits of 64: {s['manku']['angle_degrees']:.1f} degrees, cosine "
                 f"{s['manku']['cosine']:.2f}.</p>")
    return "".join(parts)


def _config_section(cfg: dict) -> str:
    rows = [[_cell(k), _cell(json.dumps(v) if isinstance(v, (dict, list)) else v, numeric=False)]
            for k, v in cfg.items()]
    return '<h2 id="config">Configuration</h2>' + _table("config", ["Setting", "Value"], rows, sortable=False)


def render_html(metrics: dict | None, site_figures, seed: dict | None, seed_figures, config: dict) -> str:
    title = f"neardup report: {config.get('site') or 'seed examples'}"
    body = [f"<h1>{escape(title)}</h1>",
            f"<p class=\"sub\">neardup {escape(str(config.get('version', '')))} · {config['k']}-{config['unit']} "
            f"shingles · {config['num_perm']}-value MinHash ({escape(config['family'])}, seed {config['seed']}) · "
            f"threshold {config['threshold']:g}</p>"]
    if metrics is not None:
        body.append(_site_section(metrics, site_figures))
    if seed is not None:
        body.append(_seed_section(seed, seed_figures))
    body.append(_config_section(config))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            + "".join(body) + f"<script>{SCRIPT}</script></body></html>\n")


def _figure_files(figures, out_dir):
    return {f.name: {"png": os.path.relpath(f.png_path, out_dir), "svg": os.path.relpath(f.svg_path, out_dir),
                     "title": f.title} for f in figures if f.png_path}


def write_report(out_dir: str, metrics: dict | None, site_figures, seed: dict | None, seed_figures,
                 config: dict) -> dict:
    """Write ``report.json`` and ``report.html``; returns the JSON document."""
    os.makedirs(out_dir, exist_ok=True)
    doc = dict(public(metrics)) if metrics is not None else {}
    doc["config"] = public(config)
    if seed is not None:
        doc["seed_examples"] = public(seed)
    doc["figures"] = _figure_files(list(site_figures) + list(seed_figures), out_dir)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, ensure_ascii=False, indent=2, allow_nan=False)
        fh.write("\n")
    with open(os.path.join(out_dir, "report.html"), "w", encoding="utf-8") as fh:
        fh.write(render_html(metrics, site_figures, seed, seed_figures, config))
    return doc
