"""Change detection between two crawls of real pages (Debian documentation, tests/data/html/debian)
edited by hand in known places: every status appears, and each edit gets exactly its status."""

import json
import shutil
from pathlib import Path

import orjson
import pytest

from neardup.cli import main
from neardup.config import DedupConfig
from neardup.engines.changes import STATUSES, detect_changes, lines_bytes, word_diff
from neardup.text.html import extract_text

DEBIAN = Path(__file__).resolve().parents[1] / "data" / "html" / "debian"
SITE = "https://docs.debian.test/"


def page(name: str) -> str:
    return (DEBIAN / name).read_text(encoding="utf-8")


def edited(name: str, old: str, new: str) -> str:
    html = page(name)
    assert html.count(old) >= 1, f"the edit's anchor is not in {name}"
    return html.replace(old, new)


APPENDED = ("<p>Translations are maintained by volunteers of each language community, and their state varies "
            "from one chapter to the next; check the date of the last update before relying on them.</p>\n")
CHANGED_PARAGRAPH = ("<p>Read a property of the test into a variable. When the property was never set, the "
                     "variable holds the empty string and no error is raised, whatever")


def crawls():
    """(old, new, expected): two crawls as lists of records, and the status of every URL."""
    old = {
        "cmake/block.html": page("sphinx-0000.html"),
        "cmake/get_directory_property.html": page("sphinx-0001.html"),
        "cmake/get_test_property.html": page("sphinx-0002.html"),
        "rust/book/translation.html": page("mdbook-0000.html"),
        "libstdc++/bitmap_allocator.html": page("docbook-0000.html"),
        "libstdc++/configure.html": page("docbook-0001.html"),
        "glib/GAppInfoMonitor.html": page("gtkdoc-0003.html"),
    }
    new = {
        # the same page, under another spelling of its URL
        "CMAKE_UPPER": page("sphinx-0000.html"),
        # only the navigation: the version in the breadcrumbs
        "cmake/get_directory_property.html": edited("sphinx-0001.html", "3.25.1 Documentation", "3.25.2 Documentation"),
        # one paragraph rewritten
        "cmake/get_test_property.html": edited("sphinx-0002.html",
                                               "<p>Get a property from the test.  The value of the property is stored in",
                                               CHANGED_PARAGRAPH),
        # text appended at the end of the main content
        "rust/book/translation.html": edited("mdbook-0000.html", "\n                    </main>", APPENDED + "</main>"),
        "libstdc++/bitmap_allocator.html": page("docbook-0000.html"),
        # renamed
        "libstdc++/manual/configure.html": page("docbook-0001.html"),
        # glib/GAppInfoMonitor.html removed; a page added
        "java/BufferOverflowException-use.html": page("javadoc-0026.html"),
    }
    expected = {
        SITE + "cmake/block.html": "unchanged",
        SITE + "cmake/get_directory_property.html": "template",
        SITE + "cmake/get_test_property.html": "changed",
        SITE + "rust/book/translation.html": "changed",
        SITE + "libstdc++/bitmap_allocator.html": "unchanged",
        SITE + "libstdc++/configure.html": "moved",
        SITE + "glib/GAppInfoMonitor.html": "gone",
        SITE + "java/BufferOverflowException-use.html": "new",
    }

    def records(pages, tag):
        out = []
        for k, (path, html) in enumerate(pages.items()):
            url = (SITE + path) if path != "CMAKE_UPPER" else "HTTPS://Docs.Debian.TEST:443/cmake/block.html?utm_source=rss#top"
            out.append({"id": f"{tag}-{k}", "url": url, "html": html})
        return out

    return records(old, "old"), records(new, "new"), expected


def write_jsonl(path: Path, rows) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("changes")
    old, new, expected = crawls()
    out = tmp / "out"
    config = DedupConfig(content="html", text_field="html")
    summary = detect_changes([write_jsonl(tmp / "old.jsonl", old)], [write_jsonl(tmp / "new.jsonl", new)], str(out),
                             config, jobs=1)
    lines = [json.loads(x) for x in (out / "changes.jsonl").read_text().splitlines()]
    return summary, lines, expected, out


def test_each_edit_gets_its_status(result):
    summary, lines, expected, _ = result
    assert {line["url"]: line["status"] for line in lines} == expected
    assert set(STATUSES) == set(expected.values())  # every status appears
    assert summary["counts"] == {"new": 1, "gone": 1, "unchanged": 2, "template": 1, "changed": 2, "moved": 1}


def test_the_nav_edit_leaves_the_main_content_alone():
    before, after = page("sphinx-0001.html"), edited("sphinx-0001.html", "3.25.1 Documentation", "3.25.2 Documentation")
    assert extract_text(before, "main") == extract_text(after, "main")
    assert extract_text(before, "whole") != extract_text(after, "whole")


def test_line_contents(result):
    _, lines, _, _ = result
    by = {line["url"].removeprefix(SITE): line for line in lines}
    appended = by["rust/book/translation.html"]
    assert appended["containment_old_in_new"] == 1.0  # everything of the old page is still there
    assert appended["containment_new_in_old"] < 1.0
    assert 0 < appended["similarity"] < 1
    rewritten = by["cmake/get_test_property.html"]
    assert rewritten["containment_old_in_new"] < 1.0 and rewritten["containment_new_in_old"] < 1.0
    moved = by["libstdc++/configure.html"]
    assert moved["new_url"] == SITE + "libstdc++/manual/configure.html"
    assert (moved["old_id"], moved["new_id"], moved["similarity"]) == ("old-5", "new-5", 1.0)
    assert by["cmake/block.html"]["new_id"] == "new-0"  # joined through the canonical URL
    assert by["glib/GAppInfoMonitor.html"]["new_id"] is None
    assert by["java/BufferOverflowException-use.html"]["old_id"] is None
    # one line per URL, the moved page's new URL has none of its own, in SURT order
    assert SITE + "libstdc++/manual/configure.html" not in {line["url"] for line in lines}
    assert [line["url"] for line in lines] == sorted(line["url"] for line in lines)


def test_summary_and_report(result):
    summary, _, _, out = result
    # least similar first: appending doubled the small page, the rewrite touched a third of the other
    assert [m["url"].removeprefix(SITE) for m in summary["most_changed"]] == [
        "rust/book/translation.html", "cmake/get_test_property.html"]
    sims = [m["similarity"] for m in summary["most_changed"]]
    assert sims == sorted(sims)
    assert summary["old"]["pages"] == 7 and summary["new"]["pages"] == 7
    report = (out / "changes.html").read_text()
    assert "<ins>Translations are maintained by volunteers" in report
    assert "<del>Get</del> <ins>Read</ins> a property <del>from the test." in report
    assert "<ins>was never set, the variable holds the empty string" in report
    assert not (out / ".neardup-changes-work").exists()


def test_threshold_decides_moved(tmp_path):
    """A renamed page whose text was also half rewritten is moved at a low threshold only."""
    old = [{"id": "a", "url": SITE + "a.html", "html": page("docbook-0001.html")}]
    text = extract_text(page("docbook-0001.html"), "main").split()
    half = " ".join(text[: len(text) // 2] + ["rewritten"] * (len(text) - len(text) // 2))
    new = [{"id": "b", "url": SITE + "b.html", "html": f"<html><body><main><p>{half}</p></main></body></html>"}]
    o, n = write_jsonl(tmp_path / "o.jsonl", old), write_jsonl(tmp_path / "n.jsonl", new)
    config = DedupConfig(content="html", text_field="html")
    assert detect_changes([o], [n], str(tmp_path / "x"), config)["counts"]["moved"] == 0
    low = DedupConfig(content="html", text_field="html", threshold=0.3, measure="containment")
    assert detect_changes([o], [n], str(tmp_path / "y"), low)["counts"]["moved"] == 1


def test_folders_of_files_line_up_by_path(tmp_path):
    for crawl, names in (("mon", ["sphinx-0000.html", "sphinx-0003.html"]), ("tue", ["sphinx-0000.html"])):
        (tmp_path / crawl / "cmake").mkdir(parents=True)
        for name in names:
            (tmp_path / crawl / "cmake" / name).write_text(page(name), encoding="utf-8")
    summary = detect_changes([str(tmp_path / "mon")], [str(tmp_path / "tue")], str(tmp_path / "out"))
    lines = [json.loads(x) for x in (tmp_path / "out" / "changes.jsonl").read_text().splitlines()]
    assert [(x["url"], x["status"]) for x in lines] == [("cmake/sphinx-0000.html", "unchanged"),
                                                         ("cmake/sphinx-0003.html", "gone")]
    assert summary["counts"]["template"] == 0


def test_command_line_is_deterministic(tmp_path):
    old, new, expected = crawls()
    o, n = write_jsonl(tmp_path / "o.jsonl", old), write_jsonl(tmp_path / "n.jsonl", new)
    outs = []
    for k, jobs in enumerate(("1", "2")):
        out = tmp_path / f"out{k}"
        assert main(["changes", o, n, "--output", str(out), "--content", "html", "--text-field", "html",
                     "--jobs", jobs, "--quiet"]) == 0
        outs.append([(out / f).read_bytes() for f in ("changes.jsonl", "summary.json", "changes.html")])
    assert outs[0] == outs[1]
    statuses = {json.loads(x)["url"]: json.loads(x)["status"] for x in outs[0][0].decode().splitlines()}
    assert statuses == expected


def test_word_diff():
    assert word_diff("a b c", "a x c") == "a <del>b</del> <ins>x</ins> c"
    long = " ".join(f"w{i}" for i in range(40))
    diff = word_diff(long + " end", long + " tail")
    assert diff.startswith("&hellip; w32 w33") and diff.endswith("<del>end</del> <ins>tail</ins>")


@pytest.fixture(scope="module")
def against_index(tmp_path_factory):
    """The same two crawls, OLD saved as an index by 'neardup index add --url-field url' (profile
    default) and compared without its records."""
    tmp = tmp_path_factory.mktemp("changes-index")
    old, new, expected = crawls()
    o, n = write_jsonl(tmp / "old.jsonl", old), write_jsonl(tmp / "new.jsonl", new)
    db = tmp / "old.db"
    assert main(["index", "add", "--db", str(db), o, "--content", "html", "--text-field", "html",
                 "--url-field", "url"]) == 0
    (tmp / "old.jsonl").unlink()  # not read again
    out = tmp / "out"
    assert main(["changes", str(db), n, "--output", str(out), "--content", "html", "--text-field", "html",
                 "--quiet"]) == 0
    lines = [json.loads(x) for x in (out / "changes.jsonl").read_text().splitlines()]
    return json.loads((out / "summary.json").read_text()), lines, expected, out, tmp


def test_an_index_as_old_gives_every_status(against_index, result):
    summary, lines, expected, out, _ = against_index
    # the nav-only edit too: index add kept each page's whole-page fingerprint
    assert {line["url"]: line["status"] for line in lines} == expected
    assert summary["estimates"]["pages_without_whole_page"] == 0
    assert summary["old"]["pages"] == 7 and summary["old"]["index"].endswith("old.db")
    # the same lines as from the crawl's files, but for the estimated similarities of changed pages
    from_files = {line["url"]: line for line in result[1]}
    for line in lines:
        other = from_files[line["url"]]
        assert (line["old_id"], line["new_id"], line.get("new_url")) == (other["old_id"], other["new_id"],
                                                                          other.get("new_url"))
        if line["status"] == "changed":
            # 128 values: the estimate's standard error is below 0.045 at these resemblances
            assert abs(line["similarity"] - other["similarity"]) < 0.15
            assert abs(line["containment_old_in_new"] - other["containment_old_in_new"]) < 0.15
    appended = next(x for x in lines if x["url"] == SITE + "rust/book/translation.html")
    assert appended["containment_old_in_new"] > appended["containment_new_in_old"]
    assert "no word diff" in (out / "changes.html").read_text()


def test_an_index_as_old_names_gone_pages_by_their_canonical_url(tmp_path):
    db = tmp_path / "seen.db"
    from neardup.store import SeenIndex

    with SeenIndex(db) as index:
        index.add("https://docs.debian.test/a.html", extract_text(page("sphinx-0000.html"), "main"),
                  url="https://docs.debian.test/a.html")  # the id is the URL: docs.url is NULL
        index.add("old-b", extract_text(page("sphinx-0001.html"), "main"),
                  url="HTTPS://docs.debian.test:443/b.html?utm_medium=x")
        index.add("no-url", extract_text(page("sphinx-0002.html"), "main"))
    new = write_jsonl(tmp_path / "n.jsonl", [{"id": "n", "url": SITE + "c.html", "text": "unrelated words " * 20}])
    from neardup.engines.changes_index import detect_changes_since_index

    summary = detect_changes_since_index(str(db), [new], str(tmp_path / "out"))
    lines = [json.loads(x) for x in (tmp_path / "out" / "changes.jsonl").read_text().splitlines()]
    assert [(x["url"], x["status"], x["old_id"]) for x in lines] == [
        (SITE + "a.html", "gone", "https://docs.debian.test/a.html"), (SITE + "b.html", "gone", "old-b"),
        (SITE + "c.html", "new", None)]
    assert summary["old"]["skipped_by_reason"] == {"no_url": 1}
    assert summary["estimates"]["pages_without_whole_page"] == 2


def test_an_index_without_whole_pages_calls_a_template_edit_unchanged(tmp_path):
    """Pages added with their main text only (no page_text): the nav-only edit is unchanged, the
    summary counting the pages stored without their whole page."""
    old, new, expected = crawls()
    db = tmp_path / "old.db"
    from neardup.store import SeenIndex

    with SeenIndex(db) as index:
        index.add_many([(r["id"], extract_text(r["html"], "main"), None, r["url"]) for r in old])
    out = tmp_path / "out"
    assert main(["changes", str(db), write_jsonl(tmp_path / "n.jsonl", new), "--output", str(out), "--content",
                 "html", "--text-field", "html", "--quiet"]) == 0
    got = {json.loads(x)["url"]: json.loads(x)["status"] for x in (out / "changes.jsonl").read_text().splitlines()}
    assert got == {**expected, SITE + "cmake/get_directory_property.html": "unchanged"}
    assert json.loads((out / "summary.json").read_text())["estimates"]["pages_without_whole_page"] == 7


def test_an_index_that_cannot_answer_is_refused_in_one_line(tmp_path, capsys):
    import sqlite3

    from neardup.store import SeenIndex

    new = write_jsonl(tmp_path / "n.jsonl", [{"id": "a", "url": SITE + "a", "text": "some words of text here"}])
    db = tmp_path / "other.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    assert main(["changes", str(db), new, "--output", str(tmp_path / "out")]) == 2
    assert "not a neardup index" in capsys.readouterr().err
    lean = tmp_path / "lean.db"
    SeenIndex(lean, profile="lean").close()
    assert main(["changes", str(lean), new, "--output", str(tmp_path / "out")]) == 2
    assert "stores no MinHash signatures (profile lean)" in capsys.readouterr().err
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "index" / "schema6-lean.db", tmp_path / "old6.db")
    assert main(["changes", str(tmp_path / "old6.db"), new, "--output", str(tmp_path / "out")]) == 2
    assert "stores no URLs" in capsys.readouterr().err
    assert main(["changes", new, str(lean), "--output", str(tmp_path / "out")]) == 2
    assert "NEW must be a crawl's records" in capsys.readouterr().err
    plain = tmp_path / "plain.db"
    with SeenIndex(plain) as index:
        index.add("a", "some words of text here")  # no URL
    assert main(["changes", str(plain), new, "--output", str(tmp_path / "out")]) == 2
    assert "no page of" in capsys.readouterr().err
    assert main(["changes", str(plain), new, "--output", str(tmp_path / "out"), "--fold-www"]) == 2
    assert "URL rules given differ" in capsys.readouterr().err


def test_an_index_of_earlier_whole_page_fingerprints_counts_them_absent(tmp_path):
    """An index whose configuration records no definition of its whole-page fingerprints (made
    before they were the markup scan's) is never compared with NEW's: its fingerprints count as
    absent (the nav-only edit reads unchanged, the summary says why), and pages added to it keep
    none, so that the two definitions never mix in one file."""
    import sqlite3

    from neardup.params import config_fingerprint
    from neardup.text.html_scan import PAGE_FINGERPRINT_VERSION

    old, new, expected = crawls()
    o, n = write_jsonl(tmp_path / "old.jsonl", old), write_jsonl(tmp_path / "new.jsonl", new)
    db = tmp_path / "old.db"
    add = ["--content", "html", "--text-field", "html", "--url-field", "url"]
    assert main(["index", "add", "--db", str(db), o, *add]) == 0
    with sqlite3.connect(db) as conn:
        config = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
        assert config["page_fingerprints"]["version"] == PAGE_FINGERPRINT_VERSION
        assert conn.execute("SELECT count(*) FROM docs WHERE page_fingerprint IS NOT NULL").fetchone()[0] == 7
        # the file as the version before recorded it
        del config["page_fingerprints"]
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config, sort_keys=True),))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config_fingerprint'",
                     (f"{config_fingerprint(config):016x}",))
    out = tmp_path / "out"
    assert main(["changes", str(db), n, "--output", str(out), "--content", "html", "--text-field", "html",
                 "--quiet"]) == 0
    got = {json.loads(x)["url"]: json.loads(x)["status"] for x in (out / "changes.jsonl").read_text().splitlines()}
    assert got == {**expected, SITE + "cmake/get_directory_property.html": "unchanged"}
    estimates = json.loads((out / "summary.json").read_text())["estimates"]
    assert estimates["pages_without_whole_page"] == 7
    assert "earlier definition" in estimates["whole_page_fingerprints"]
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "more", "url": SITE + "more.html",
                                                  "html": page("javadoc-0026.html")}])
    assert main(["index", "add", "--db", str(db), more, *add]) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT page_fingerprint FROM docs WHERE id = 'more'").fetchone() == (None,)


@pytest.mark.parametrize("layout", ["rows", "runs", "shingles"])
def test_moved_pages_against_an_index_are_its_near_answers(tmp_path, layout):
    """The moved pages found in one pass over the index's band postings are, by definition, those
    that a near query of each page under a new URL answers: stored pages gone from NEW whose
    answer reaches --threshold, matched once each way, best first. Pages rewritten more and more,
    so that some answers fall below the threshold; the index's postings as rows (small writes),
    as runs, and with its shingle ids stored (its threshold then decided on the exact resemblance)."""
    import random

    from neardup.engines.changes_index import detect_changes_since_index
    from neardup.store import SeenIndex

    rng = random.Random(39)
    words = [f"w{k}" for k in range(300)]
    texts = [" ".join(rng.choice(words) for _ in range(200)) for _ in range(48)]
    old = [(f"old-{k}", text, None, f"{SITE}p{k}.html") for k, text in enumerate(texts)]
    new = []
    for k, text in enumerate(texts):
        if k % 3 == 2:
            continue  # gone, or moved below
        tokens = text.split()
        for at in rng.sample(range(len(tokens)), k // 3):  # a few more words rewritten each page
            tokens[at] = rng.choice(words)
        url = f"{SITE}moved/p{k}.html" if k % 3 == 1 else f"{SITE}p{k}.html"
        new.append({"id": f"new-{k}", "url": url, "text": " ".join(tokens)})
    # a near copy of a gone page's text under a new URL twice: one of them takes it
    new.append({"id": "new-copy", "url": SITE + "copy.html", "text": new[1]["text"]})
    options = {"runs": {"rows_below": 0}, "rows": {}, "shingles": {"store_shingles": True}}[layout]
    db = tmp_path / "old.db"
    with SeenIndex(db, threshold=0.6, **options) as index:
        index.add_many(old)
        added = [r for r in new if not r["url"].startswith(f"{SITE}p")]
        answers = index.near_many([r["text"] for r in added], limit=None)
    threshold = 0.8  # (above the index's: its answers below it are not moves)
    stored = {doc_id: url for doc_id, _, _, url in old}
    gone = set(stored.values()) - {r["url"] for r in new}
    edges = sorted((-near["jaccard"], stored[near["id"]], r["url"], near["jaccard"], r["id"], near["id"])
                   for r, found in zip(added, answers) for near in found
                   if stored[near["id"]] in gone and near["jaccard"] >= threshold)
    expected, taken = {}, set()
    for _, old_url, new_url, sim, new_id, old_id in edges:
        if old_url not in expected and new_url not in taken:
            expected[old_url] = (new_url, round(sim, 6), old_id, new_id)
            taken.add(new_url)
    assert 3 <= len(expected) < len(gone)  # some pages moved, some below the threshold
    detect_changes_since_index(str(db), [write_jsonl(tmp_path / "new.jsonl", new)], str(tmp_path / "out"),
                               DedupConfig(threshold=threshold))
    lines = [json.loads(x) for x in (tmp_path / "out" / "changes.jsonl").read_text().splitlines()]
    assert {x["url"]: (x["new_url"], x["similarity"], x["old_id"], x["new_id"])
            for x in lines if x["status"] == "moved"} == expected


def test_lines_bytes_are_every_line_once_in_order():
    """changes.jsonl's bytes, serialized a piece at a time, are the lines' one after the other
    (a count of lines that is not a whole number of pieces; none)."""
    lines = [{"url": f"{SITE}p{k}.html", "status": STATUSES[k % len(STATUSES)], "similarity": k / 7}
             for k in range(10_001)]
    body = lines_bytes(lines)
    assert [orjson.loads(x) for x in body.splitlines()] == lines and body.endswith(b"\n")
    assert lines_bytes([]) == b""
