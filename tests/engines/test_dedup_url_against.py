"""`neardup dedup NEW --against IDX --url-field url`, IDX saved by `dedup OLD --url-field url
--save-index IDX`: for NEW's records the lines of `dedup OLD NEW --url-field url --keep first` (a run
over the indexed records first, whose survivors are the first records of their clusters: what a
run against an index keeps, since it never removes an indexed document). Real pages (the Debian
documentation set) under real URL spellings, with canonical claims that agree and that lie, new
records joining the index's URLs, claiming them, and forming URL groups among themselves."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import orjson
import pytest

from neardup.cli import main
from neardup.config import DedupConfig
from neardup.engines.against import Against
from neardup.engines.common import RunOptions
from neardup.engines.local.run import Deduplicator
from neardup.engines.ray import refusals as ray_refusals
from neardup.engines.spark import refusals as spark_refusals
from neardup.store import SeenIndex
from neardup.text.html import extractor_id

from test_against import layout  # noqa: F401 - the fixture: the index's posting layouts
from test_dedup_urls import SITE, page

HTML = ["--content", "html", "--text-field", "html", "--url-field", "url", "-q"]

OLD = [
    {"id": "o0", "url": SITE + "cmake/block.html", "html": page("sphinx-0000.html")},
    {"id": "o1", "url": SITE + "libstdc++/bitmap_allocator.html", "html": page("docbook-0000.html")},
    {"id": "o2", "url": SITE + "rust/translation.html", "html": page("mdbook-0000.html")},
    # a near copy of o1 under its own URL: a member of o1's cluster in the index
    {"id": "o3", "url": SITE + "mirror/bitmap_allocator.html", "html": page("docbook-0000.html", extra="Mirror copy.")},
    {"id": "o4", "url": SITE + "java/a.html", "html": page("javadoc-0026.html")},
]

NEW = [
    # o0's URL, spelled otherwise, and another content (the page edited since): url, of o0
    {"id": "n0", "url": "HTTPS://Docs.Debian.TEST:443/cmake/block.html?utm_source=feed#top",
     "html": page("sphinx-0003.html")},
    # names o3 (a member in the index) as canonical, and agrees: canonical, o3 now leads its cluster
    {"id": "n1", "url": SITE + "print/bitmap_allocator.html",
     "html": page("docbook-0000.html", canonical="/mirror/bitmap_allocator.html", extra="Printed copy.")},
    # names o1 as canonical, but holds another page: the claim is contradicted, not followed
    {"id": "n2", "url": SITE + "glib/lies.html",
     "html": page("gtkdoc-0003.html", canonical=SITE + "libstdc++/bitmap_allocator.html")},
    # a URL group among the new records (a tracking parameter and a host's case)
    {"id": "n3", "url": SITE + "doxygen/a.html", "html": page("doxygen-0000.html")},
    {"id": "n4", "url": "https://DOCS.debian.test/doxygen/a.html?fbclid=1", "html": page("doxygen-0001.html")},
    # a claim among the new records: n6 survives although later
    {"id": "n5", "url": SITE + "print/b.html", "html": page("asciidoc-0001.html", canonical="/boost/b.html",
                                                           extra="Print version.")},
    {"id": "n6", "url": SITE + "boost/b.html", "html": page("asciidoc-0001.html")},
    # a claim naming a URL neither the index nor the input has
    {"id": "n7", "url": SITE + "boost/c.html", "html": page("boostbook-0000.html", canonical="https://elsewhere.test/")},
    # o2's URL with a fragment, and o0's main content: joins o2's and o0's clusters (o0 leads: first)
    {"id": "n8", "url": SITE + "rust/translation.html#x", "html": page("sphinx-0000.html", extra="Edited.")},
    # an exact copy of o4 under a URL of its own
    {"id": "n9", "url": SITE + "java/b.html", "html": page("javadoc-0026.html")},
]

#: A third crawl, against the index once NEW was added to it (--update-index).
THIRD = [
    # a URL only NEW had, and a claim naming another (both stored by --update-index)
    {"id": "t0", "url": "https://docs.debian.test:443/doxygen/a.html?utm_medium=x", "html": page("doxygen-0002.html")},
    {"id": "t1", "url": SITE + "print/c.html", "html": page("asciidoc-0001.html", canonical=SITE + "boost/b.html",
                                                           extra="Another print.")},
    # a near copy of the cluster that n1's claim now has led by o3
    {"id": "t2", "url": SITE + "other/bitmap.html", "html": page("docbook-0000.html", extra="Third copy.")},
    {"id": "t3", "url": SITE + "new/page.html", "html": page("javadoc-0027.html")},
    # the URL of n9, an exact copy of an indexed page (stored with that page's sketch)
    {"id": "t4", "url": SITE + "java/b.html?utm_campaign=z", "html": page("gtkdoc-0005.html")},
]


def write(path, rows) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return str(path)


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def of_source(path, source: str) -> list[dict]:
    return [r for r in lines(path) if r["source"] == source]


@pytest.fixture
def crawls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # sources are the inputs as given: short relative names
    return write(tmp_path / "old.jsonl", OLD), write(tmp_path / "new.jsonl", NEW), write(tmp_path / "third.jsonl", THIRD)


def test_against_with_urls_equals_the_joint_run(crawls, tmp_path, layout):  # noqa: F811
    old, new, _ = crawls
    assert main(["dedup", old, "-o", "saved", "--save-index", "old.db", *HTML]) == 0
    assert main(["dedup", new, "-o", "against", "--against", "old.db", *HTML]) == 0
    assert main(["dedup", old, new, "-o", "joint", "--keep", "first", *HTML]) == 0
    mine = lines(tmp_path / "against" / "clusters.jsonl")
    assert mine == of_source(tmp_path / "joint" / "clusters.jsonl", new)
    got = {r["id"]: (r["reason"], r["duplicate_of"], r["duplicate_of_source"]) for r in mine}
    assert got == {
        "n0": ("url", "o0", old), "n1": ("canonical", "o3", old), "n2": ("unique", None, None),
        "n3": ("kept", None, None), "n4": ("url", "n3", new), "n5": ("canonical", "n6", new),
        "n6": ("kept", None, None), "n7": ("unique", None, None),
        # (n8's main content is o0's: an exact copy, of the cluster its URL joined to o2's)
        "n8": ("exact", "o0", old), "n9": ("exact", "o4", old)}
    summary = json.loads((tmp_path / "against" / "summary.json").read_text())
    assert (summary["url_duplicates"], summary["canonical_duplicates"]) == (2, 2)
    claims = summary["canonical_claims"]
    # the new records' claims only: the index keeps none
    assert (claims["claims"], claims["followed"], claims["contradicted"], claims["outside_input"]) == (4, 2, 1, 1)
    assert claims["contradicted_examples"] == [{"id": "n2", "url": SITE + "glib/lies.html",
                                                "claims": SITE + "libstdc++/bitmap_allocator.html",
                                                "claimed_id": "o1"}]
    assert summary["index"]["against_urls_found"] == 4  # o0, o1, o2 and o3's URLs
    # without URL identity the same run finds none of it
    assert main(["dedup", new, "-o", "plain", "--against", "old.db", *HTML[:-3], "-q"]) == 0
    plain = {r["id"]: r["reason"] for r in lines(tmp_path / "plain" / "clusters.jsonl")}
    assert plain["n0"] == "unique" and plain["n1"] == "near" and plain["n5"] == "kept"


def test_update_index_stores_the_urls_then_a_third_crawl_equals_the_joint_run(crawls, tmp_path, layout):  # noqa: F811
    old, new, third = crawls
    assert main(["dedup", old, "-o", "o1", "--save-index", "seen.db", *HTML]) == 0
    assert main(["dedup", new, "-o", "o2", "--against", "seen.db", "--update-index", *HTML]) == 0
    assert main(["dedup", third, "-o", "o3", "--against", "seen.db", *HTML]) == 0
    assert main(["dedup", old, new, third, "-o", "joint", "--keep", "first", *HTML]) == 0
    assert lines(tmp_path / "o3" / "clusters.jsonl") == of_source(tmp_path / "joint" / "clusters.jsonl", third)
    got = {r["id"]: (r["reason"], r["duplicate_of"]) for r in lines(tmp_path / "o3" / "clusters.jsonl")}
    assert got["t0"] == ("url", "n3") and got["t1"] == ("canonical", "n6") and got["t2"][1] == "o3"
    assert got["t4"] == ("url", "o4")
    with SeenIndex(tmp_path / "seen.db", create=False) as index:
        answer = index.query("other words", url="HTTPS://DOCS.DEBIAN.TEST/boost/b.html#top")
        assert (answer["url_seen"], answer["url_match"]) == (True, "n6")
        assert index.integrity_check() == "ok"
    # o3 leads the cluster n1's claim gave it, o1 follows it: the next run sees the joint run's survivor
    with sqlite3.connect(tmp_path / "seen.db") as conn:
        cluster = dict(conn.execute("SELECT d.id, s.id FROM docs d LEFT JOIN docs s ON s.num = d.cluster "
                                    "WHERE d.id IN ('o1', 'o3', 'n1')"))
        # the new records' URLs stored with their whole pages' fingerprints, as --save-index stores OLD's
        stored = conn.execute("SELECT count(*), count(url_hash), count(page_fingerprint) FROM docs "
                              "WHERE id LIKE 'n%'").fetchone()
    assert cluster == {"o1": "o3", "o3": None, "n1": "o3"}
    assert stored[0] > 0 and stored[0] == stored[1] == stored[2]


def test_an_index_saved_without_urls_is_refused_in_one_line(crawls, tmp_path, capsys):
    old, new, _ = crawls
    assert main(["dedup", old, "-o", "saved", "--save-index", "plain.db", *HTML[:-3], "-q"]) == 0
    capsys.readouterr()
    assert main(["dedup", new, "-o", "out", "--against", "plain.db", *HTML]) == 2
    err = capsys.readouterr().err
    assert "stores no canonical URLs (saved without --url-field)" in err and err.count("\n") == 1
    assert not (tmp_path / "out" / "summary.json").exists()
    # an empty index is no such index: it simply holds nothing to find
    with SeenIndex.for_dedup(tmp_path / "empty.db", DedupConfig(content="html", text_field="html", url_field="url"),
                             store_shingles=True):
        pass
    assert main(["dedup", new, "-o", "empty", "--against", "empty.db", *HTML]) == 0


def test_the_library_gives_the_command_line_answer(crawls, tmp_path):
    old, new, _ = crawls
    assert main(["dedup", old, "-o", "saved", "--save-index", "old.db", *HTML]) == 0
    assert main(["dedup", new, "-o", "cli", "--against", "old.db", *HTML]) == 0
    config = DedupConfig(content="html", text_field="html", url_field="url")
    config = dataclasses.replace(config, extraction=extractor_id(config.html))  # (as the command line names it)
    index = SeenIndex.for_dedup("old.db", config, create=False)
    try:
        summary = Deduplicator(config, against=Against(index, "old.db", urls=True)).run([new], str(tmp_path / "api"))
    finally:
        index.close()
    assert (tmp_path / "api" / "clusters.jsonl").read_bytes() == (tmp_path / "cli" / "clusters.jsonl").read_bytes()
    cli = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert summary["canonical_claims"] == cli["canonical_claims"] and summary["config_fingerprint"] == cli["config_fingerprint"]


@pytest.mark.parametrize("refusal, engine", [(spark_refusals.refusal, "Spark"), (ray_refusals.refusal, "Ray")])
def test_the_distributed_engines_refuse_against_with_urls(refusal, engine):
    """Spark and Ray run no --against at all: with --url-field too, that is what they say."""
    why = refusal(DedupConfig(url_field="url"), RunOptions(inputs=("new.jsonl",), against="old.db"))
    assert why == f"--against is not supported by the {engine} engine (--engine {engine.lower()}): use the local engine"


def test_an_indexed_document_survives_a_claimed_new_record(crawls, tmp_path):
    """Where the joint run and a run against the index part: a new page claimed by another, in
    the cluster of an indexed document. The joint run lets the claimed page lead (the indexed
    one becomes its duplicate); against the index the indexed document is never removed, so it
    leads, and the claim is still followed (the claimant is ``canonical``, of that cluster)."""
    old = write(tmp_path / "one.jsonl", [OLD[1]])
    new = write(tmp_path / "two.jsonl", [
        {"id": "revised", "url": SITE + "new/bitmap_allocator.html", "html": page("docbook-0000.html", extra="Revised.")},
        {"id": "printed", "url": SITE + "print/bitmap_allocator.html",
         "html": page("docbook-0000.html", canonical="/new/bitmap_allocator.html", extra="Printed.")}])
    assert main(["dedup", old, "-o", "saved", "--save-index", "one.db", *HTML]) == 0
    assert main(["dedup", new, "-o", "against", "--against", "one.db", *HTML]) == 0
    assert main(["dedup", old, new, "-o", "joint", *HTML]) == 0
    joint = {r["id"]: (r["reason"], r["duplicate_of"]) for r in lines(tmp_path / "joint" / "clusters.jsonl")}
    assert joint == {"o1": ("near", "revised"), "revised": ("kept", None), "printed": ("canonical", "revised")}
    mine = {r["id"]: (r["reason"], r["duplicate_of"]) for r in lines(tmp_path / "against" / "clusters.jsonl")}
    assert mine == {"revised": ("near", "o1"), "printed": ("canonical", "o1")}
    assert json.loads((tmp_path / "against" / "summary.json").read_text())["canonical_claims"]["followed"] == 1


def test_url_numbers_looked_up_or_scanned_are_the_first_stored_of_each_url(crawls, tmp_path, layout,  # noqa: F811
                                                                           monkeypatch):
    """SeenIndex.url_numbers, the batch the run looks its URLs up with: the bucket look-ups in the
    URL runs and the scan of them both give, for every stored hash, its first document (and
    nothing for a hash not stored), over two writes (the save and an update)."""
    from neardup.store import queries

    old, new, _ = crawls
    assert main(["dedup", old, "-o", "o1", "--save-index", "seen.db", *HTML]) == 0
    assert main(["dedup", new, "-o", "o2", "--against", "seen.db", "--update-index", *HTML]) == 0
    with sqlite3.connect(tmp_path / "seen.db") as conn:
        truth = dict(conn.execute("SELECT url_hash, min(num) FROM docs WHERE url_hash IS NOT NULL GROUP BY url_hash"))
    # OLD's 5 URLs and NEW's 7 others (n0 and n8 have OLD's, n4 has n3's; n9, an exact copy of an
    # indexed page, stored for its URL)
    assert len(truth) == 12
    with SeenIndex(tmp_path / "seen.db", create=False) as index, index._read() as conn:
        for scan_cost in (0.0, float("inf")):  # scanned, looked up
            monkeypatch.setattr(queries, "URL_SCAN_SECONDS_A_POSTING", scan_cost)
            assert index.url_numbers(conn, [*truth, 12345, -6789]) == truth
