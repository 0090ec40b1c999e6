"""`neardup dedup --url-field U --save-index IDX` keeps each page's canonical URL in the index, as
`index add --url-field` does: `neardup changes IDX NEW` then tells what `changes OLD NEW` tells
from the crawls' files, and `index query --url-field` answers "URL seen?" for the saved pages."""

import json
from pathlib import Path

import pytest

from neardup.cli import main

from test_changes import SITE, crawls, page, write_jsonl

HTML = ["--content", "html", "--text-field", "html"]


def old_crawl():
    """The Debian pages' old crawl (tests/engines/test_changes.py) and two records that the index
    must store with care: an exact copy of a page under a URL of its own (the first record of that
    URL, which dedup does not sketch), and a URL crawled twice (its first record is the page)."""
    old, new, expected = crawls()
    old.insert(1, {"id": "old-copy", "url": SITE + "cmake/block-print.html", "html": old[0]["html"]})
    old.append({"id": "old-again", "url": SITE + "cmake/get_test_property.html?utm_source=feed",
                "html": page("doxygen-0002.html")})
    expected[SITE + "cmake/block-print.html"] = "gone"
    return old, new, expected


def statuses(out: Path) -> dict:
    return {x["url"]: (x["status"], x["old_id"], x["new_id"], x.get("new_url"))
            for x in map(json.loads, (out / "changes.jsonl").read_text().splitlines())}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dedup-url-index")
    old, new, expected = old_crawl()
    o, n = write_jsonl(tmp / "old.jsonl", old), write_jsonl(tmp / "new.jsonl", new)
    db = tmp / "old.db"
    assert main(["dedup", o, "-o", str(tmp / "dedup"), *HTML, "--url-field", "url", "--save-index", str(db),
                 "--quiet"]) == 0
    assert main(["changes", o, n, "--output", str(tmp / "from-files"), *HTML, "--quiet"]) == 0
    assert main(["changes", str(db), n, "--output", str(tmp / "from-index"), *HTML, "--quiet"]) == 0
    return tmp, db, expected


def test_changes_against_the_saved_index_match_the_crawls(saved):
    tmp, _, expected = saved
    files, index = statuses(tmp / "from-files"), statuses(tmp / "from-index")
    assert {url: line[0] for url, line in files.items()} == expected
    # every line the same, names included, the navigation-only edit too (template: the index
    # keeps each page's whole page's fingerprint)
    assert index == files
    summary = json.loads((tmp / "from-index" / "summary.json").read_text())
    assert summary["old"]["pages"] == len(expected) - 1  # every URL of OLD but the new one
    assert summary["old"]["duplicate_urls"] == 1  # the URL crawled twice: its first record counts
    assert summary["estimates"]["pages_without_whole_page"] == 0


def test_the_dedup_outcome_is_that_of_a_run_without_the_index(saved, tmp_path):
    tmp, _, _ = saved
    assert main(["dedup", str(tmp / "old.jsonl"), "-o", str(tmp_path / "plain"), *HTML, "--url-field", "url",
                 "--quiet"]) == 0

    def outcomes(path):  # (a run with an index names each record's source too)
        return [(x["id"], x["cluster"], x["duplicate_of"], x["reason"], x["url"])
                for x in map(json.loads, path.read_text().splitlines())]

    assert outcomes(tmp_path / "plain" / "clusters.jsonl") == outcomes(tmp / "dedup" / "clusters.jsonl")
    saved_summary = json.loads((tmp / "dedup" / "summary.json").read_text())
    # the 9 records: one exact copy stored for its URL beside the 8 sketched ones
    assert saved_summary["index"]["documents_saved"] == 9


def test_index_query_answers_url_seen_for_the_saved_pages(saved, tmp_path, capsys):
    _, db, _ = saved
    probe = write_jsonl(tmp_path / "probe.jsonl", [
        {"id": "q1", "url": "HTTPS://DOCS.debian.test:443/libstdc++/./bitmap_allocator.html#top", "text": "other words"},
        {"id": "q2", "url": SITE + "cmake/block-print.html?fbclid=x", "text": "other words"},  # the stored copy
        {"id": "q3", "url": SITE + "never/crawled.html", "text": "other words"},
    ])
    capsys.readouterr()
    assert main(["index", "query", "--db", str(db), probe, "--url-field", "url", "--json"]) == 0
    answers = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(a["url_seen"], a["url_match"]) for a in answers] == [(True, "old-4"), (True, "old-copy"), (False, None)]


def test_refusals(saved, tmp_path, capsys):
    tmp, db, _ = saved
    o = str(tmp / "old.jsonl")
    # (--against with --url-field runs: tests/engines/test_dedup_url_against.py)
    # the index keeps its URLs under the rules it was made with
    assert main(["dedup", o, "-o", str(tmp_path / "b"), *HTML, "--url-field", "url", "--fold-www",
                 "--save-index", str(db)]) == 2
    assert "other URL rules" in capsys.readouterr().err
