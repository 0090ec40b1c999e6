"""URL identity in `neardup dedup --url-field` (local engine): URL groups, canonical claims that the
content confirms (followed, the named record survives) or contradicts (reported, not followed)."""

import json
from pathlib import Path

import orjson

from neardup.cli import main

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"
SITE = "https://docs.debian.test/"


def page(name: str, canonical: str | None = None, extra: str = "") -> str:
    html = (DEBIAN / name).read_text(encoding="utf-8")
    if canonical:
        html = html.replace("<head>", f"<head><link rel=\"canonical\" href=\"{canonical}\">", 1)
    if extra:
        assert "</body>" in html
        html = html.replace("</body>", f"<p>{extra}</p></body>", 1)
    return html


ROWS = [
    # 0, 1: one URL under two spellings, different contents (the page was edited between fetches)
    {"id": "r0", "url": SITE + "cmake/block.html", "html": page("sphinx-0000.html")},
    {"id": "r1", "url": "HTTPS://Docs.Debian.TEST:443/cmake/block.html?utm_source=feed#top",
     "html": page("sphinx-0003.html")},
    # 2 names 3 as canonical, and its content is a near copy of 3's: 3 survives although later
    {"id": "r2", "url": SITE + "print/bitmap_allocator.html",
     "html": page("docbook-0000.html", canonical="/libstdc++/bitmap_allocator.html", extra="Printed copy.")},
    {"id": "r3", "url": SITE + "libstdc++/bitmap_allocator.html", "html": page("docbook-0000.html")},
    # 4 names 3 as canonical but holds another page: the claim is contradicted
    {"id": "r4", "url": SITE + "rust/translation.html",
     "html": page("mdbook-0000.html", canonical=SITE + "libstdc++/bitmap_allocator.html")},
    # 5 names a URL no record has
    {"id": "r5", "url": SITE + "java/x.html", "html": page("javadoc-0026.html", canonical="https://elsewhere.test/")},
]


def run(tmp_path, *extra):
    src = tmp_path / "crawl.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ROWS))
    out = tmp_path / ("out" + "".join(x.strip("-") for x in extra))
    code = main(["dedup", str(src), "-o", str(out), "--content", "html", "--text-field", "html", "--quiet",
                 "--url-field", "url", *extra])
    assert code == 0
    lines = {json.loads(x)["id"]: json.loads(x) for x in (out / "clusters.jsonl").read_text().splitlines()}
    summary = json.loads((out / "summary.json").read_text())
    kept = [json.loads(x)["id"] for x in (out / "kept.jsonl").read_text().splitlines()] if (out / "kept.jsonl").exists() else None
    return lines, summary, kept


def test_url_groups_and_claims(tmp_path):
    lines, summary, kept = run(tmp_path)
    reasons = {k: v["reason"] for k, v in lines.items()}
    assert reasons == {"r0": "kept", "r1": "url", "r2": "canonical", "r3": "kept", "r4": "unique", "r5": "unique"}
    assert lines["r1"]["duplicate_of"] == "r0" and lines["r2"]["duplicate_of"] == "r3"
    assert summary["url_duplicates"] == 1 and summary["canonical_duplicates"] == 1
    claims = summary["canonical_claims"]
    assert (claims["followed"], claims["contradicted"], claims["outside_input"]) == (1, 1, 1)
    assert claims["contradicted_examples"][0]["id"] == "r4"
    assert summary["url_groups"] == 1
    assert summary["config"]["urls"]["field"] == "url"


def test_keep_policy_chooses_in_a_url_group_not_against_a_claim(tmp_path):
    lines, _, _ = run(tmp_path, "--keep", "longest")
    # the longer of the two fetches of one URL survives; the claimed page survives its longer claimant
    texts = {r["id"]: len(r["html"]) for r in ROWS}
    assert texts["r2"] > texts["r3"]
    assert lines["r3"]["reason"] == "kept" and lines["r2"]["reason"] == "canonical"
    assert {lines["r0"]["reason"], lines["r1"]["reason"]} == {"kept", "url"}


def test_without_url_field_nothing_changes(tmp_path):
    src = tmp_path / "crawl.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ROWS))
    out = tmp_path / "plain"
    assert main(["dedup", str(src), "-o", str(out), "--content", "html", "--text-field", "html", "--quiet"]) == 0
    reasons = {json.loads(x)["id"]: json.loads(x)["reason"] for x in (out / "clusters.jsonl").read_text().splitlines()}
    assert reasons["r1"] == "unique" and reasons["r2"] == "kept" and reasons["r3"] == "near"
    summary = json.loads((out / "summary.json").read_text())
    assert "url_duplicates" not in summary and "urls" not in summary["config"]


def test_a_claim_of_an_exact_copy_is_followed(tmp_path):
    """The claimant is an exact copy of an earlier record (removed before the URL stage): its claim
    still picks the survivor of their cluster."""
    rows = [
        {"id": "first", "url": SITE + "mirror/bitmap_allocator.html", "html": page("docbook-0000.html")},
        {"id": "copy", "url": SITE + "print/bitmap_allocator.html",
         "html": page("docbook-0000.html", canonical=SITE + "libstdc++/bitmap_allocator.html")},
        {"id": "named", "url": SITE + "libstdc++/bitmap_allocator.html",
         "html": page("docbook-0000.html", extra="Revised.")},
    ]
    src = tmp_path / "crawl.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out"
    assert main(["dedup", str(src), "-o", str(out), "--content", "html", "--text-field", "html", "--quiet",
                 "--url-field", "url"]) == 0
    lines = {json.loads(x)["id"]: json.loads(x) for x in (out / "clusters.jsonl").read_text().splitlines()}
    # (an exact copy of a near duplicate is near, as in any run)
    assert {k: (v["reason"], v["duplicate_of"]) for k, v in lines.items()} == {
        "first": ("near", "named"), "copy": ("near", "named"), "named": ("kept", None)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["canonical_claims"]["followed"] == 1 and summary["canonical_duplicates"] == 0


def test_a_run_killed_after_its_clusters_resumes_with_the_same_files(tmp_path):
    # the URL groups and claims are decided in the cluster stage: a run killed after it (at
    # "write") resumes from the saved stage, with the same clusters and summary.json
    from dedup_runs import dedup, folder_digest

    src = tmp_path / "crawl.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ROWS))
    options = ("--content", "html", "--text-field", "html", "--url-field", "url")
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    assert dedup(src, "-o", whole, *options).returncode == 0
    assert dedup(src, "-o", resumed, *options, env={"NEARDUP_TEST_KILL_AT": "write"}).returncode == -9
    again = dedup(src, "-o", resumed, *options)
    assert again.returncode == 0, again.stderr
    assert json.loads((resumed / "summary.json").read_text())["resumed_from"] == "cluster"
    assert folder_digest(resumed) == folder_digest(whole)
