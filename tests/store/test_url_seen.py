""""URL seen?" beside "content seen?": the canonical URL each document of a schema 7 index keeps
(``docs.url_hash``), through small writes (``docs_url``) and bulk writes (URL runs), its rules
recorded in the configuration, and files made before URLs (schema 6) answering ``url_seen`` null."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from neardup.errors import IncompatibleSketchError, InputError
from neardup.store import SeenIndex
from neardup.store import schema
from neardup.urls import UrlRules

DATA = Path(__file__).resolve().parent.parent / "data" / "index"
VOCAB = [f"w{i}" for i in range(2000)]

# One page under the spellings a crawler meets (each rule of neardup.urls once), and pages that
# are other pages (the path's case, another parameter value, http against https).
PAGE = "https://www.debian.org/doc/manuals/debian-faq/basic-defs.en.html?lang=en&x=1"
SAME = [
    "HTTPS://WWW.Debian.ORG:443/doc/manuals/debian-faq/basic-defs.en.html?x=1&lang=en",
    "https://www.debian.org/doc/manuals/./debian-faq/../debian-faq/basic-defs.en.html?lang=en&x=1#s-what",
    "https://www.debian.org/doc/manuals/debian-faq/basic-defs.en.html?utm_source=feed&lang=en&fbclid=abc&x=1",
    "https://www.debian.org./doc/manuals/debian-faq/basic%2Ddefs.en.html?lang=en&x=1",
]
OTHER = [
    "https://www.debian.org/doc/manuals/debian-faq/Basic-Defs.en.html?lang=en&x=1",
    "https://www.debian.org/doc/manuals/debian-faq/basic-defs.en.html?lang=de&x=1",
    "http://www.debian.org/doc/manuals/debian-faq/basic-defs.en.html?lang=en&x=1",
    "https://debian.org/doc/manuals/debian-faq/basic-defs.en.html?lang=en&x=1",
]


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCAB) for _ in range(40)) for _ in range(n)]


@pytest.mark.parametrize("bulk", [False, True], ids=["small", "bulk"])
def test_url_seen_under_every_spelling_of_one_page_and_not_of_other_pages(tmp_path, bulk):
    body = texts(1201, 1)
    with SeenIndex(tmp_path / "seen.db") as index:
        docs = [("faq", body[0], None, PAGE)]
        if bulk:  # past ROWS_BELOW: the URL goes to a URL run, not to docs_url
            docs += [(f"p{i}", body[i], None, f"https://example.org/p{i}") for i in range(1, 1201)]
        index.add_many(docs)
        for url in SAME + [PAGE]:
            answer = index.query("a text the index has not seen", url=url)
            assert (answer["url_seen"], answer["url_match"]) == (True, "faq"), url
            assert answer["exact"] == []
        for url in OTHER:
            assert index.query(body[0], url=url)["url_seen"] is False, url
        # the same content under another URL: content seen, URL not
        answer = index.query(body[0], url=OTHER[0])
        assert answer["exact"] == ["faq"] and answer["url_match"] is None
        # no URL given: the answer has no URL keys (answers without URLs are as they were)
        assert "url_seen" not in index.query(body[0]) and "url_match" not in index.query(body[0])
    conn = sqlite3.connect(tmp_path / "seen.db")
    in_runs = conn.execute("SELECT count(*) FROM posting_runs WHERE kind = 4").fetchone()[0]
    in_index = conn.execute("SELECT count(*) FROM docs INDEXED BY docs_url WHERE url_hash IS NOT NULL "
                            "AND id_key IS NOT NULL").fetchone()[0]
    assert (in_runs > 0, in_index) == ((True, 0) if bulk else (False, 1))
    # the canonical URL's text where it is not the id (neardup changes names gone pages by it)
    assert conn.execute("SELECT url FROM docs WHERE id = 'faq'").fetchone()[0] == PAGE
    conn.close()
    with SeenIndex(tmp_path / "seen.db") as index:
        index.add("https://example.org/same", body[0], url="https://example.org/same")
    conn = sqlite3.connect(tmp_path / "seen.db")
    assert conn.execute("SELECT url, url_hash IS NOT NULL FROM docs WHERE url_hash IS NOT NULL AND url IS NULL"
                        ).fetchall() == [(None, 1)]
    conn.close()


@pytest.mark.parametrize("bulk", [False, True], ids=["small", "bulk"])
def test_the_first_stored_document_is_the_match_and_removal_and_replacement_follow(tmp_path, bulk):
    body = texts(1300, 2)
    extra = [(f"p{i}", body[i], None, f"https://example.org/p{i}") for i in range(100, 1300)] if bulk else []
    with SeenIndex(tmp_path / "seen.db") as index:
        index.add_many([("old", body[0], None, PAGE)] + extra)
        index.add_many([("recrawl", body[1], None, SAME[0])] + ([] if not bulk else
                        [(f"q{i}", body[i], None, f"https://example.org/q{i}") for i in range(100, 1300)]))
        assert index.query("x", url=PAGE)["url_match"] == "old"
        assert index.remove("old")
        assert index.query("x", url=PAGE)["url_match"] == "recrawl"
        index.add("recrawl", body[1], url="https://www.debian.org/other.html")  # same id, another URL
        assert index.query("x", url=PAGE)["url_seen"] is False
        assert index.query("x", url="https://www.debian.org/other.html#top")["url_match"] == "recrawl"


def test_check_and_add_answers_url_seen_and_the_content_decides_added(tmp_path):
    body = texts(3, 3)
    with SeenIndex(tmp_path / "seen.db") as index:
        first = index.check_and_add("a", body[0], url=PAGE)
        assert (first["added"], first["url_seen"], first["url_match"]) == (True, False, None)
        # a re-crawl of the URL with new content: URL seen, content new, stored
        again = index.check_and_add("b", body[1], url=SAME[2])
        assert (again["added"], again["url_seen"], again["url_match"]) == (True, True, "a")
        # the same content under a new URL: content seen, not stored
        copy = index.check_and_add("c", body[0], url=OTHER[1])
        assert (copy["added"], copy["exact"], copy["url_seen"]) == (False, ["a"], False)
        # within one batch, a document sees the ones before it
        answers = index.check_and_add_many([("d", body[2], None, "https://example.org/new"),
                                            ("e", body[2] + " more words here", None, "https://EXAMPLE.org/new")])
        assert [a["url_match"] for a in answers] == [None, "d"]
        with pytest.raises(InputError, match="url"):
            index.add("f", body[0], url="   ")


def test_url_rules_are_recorded_and_checked(tmp_path):
    path = tmp_path / "seen.db"
    rules = UrlRules(fold_www=True, drop_params=("lang",))
    with SeenIndex(path, url_rules=rules) as index:
        index.add("faq", texts(1, 4)[0], url=PAGE)
        assert index.query("x", url=OTHER[3].replace("lang=en&", ""))["url_match"] == "faq"  # www. and lang
        assert index.stats()["config"]["urls"]["rules"] == rules.as_dict()
    with SeenIndex(path, create=False) as index:  # the recorded rules, not the defaults
        assert index.config.urls == rules
    with pytest.raises(IncompatibleSketchError, match="urls.rules.fold_www"):
        SeenIndex(path, url_rules=UrlRules())
    other = dict(SeenIndex.stored_config(path))
    other["urls"] = {**other["urls"], "rules": {**other["urls"]["rules"], "version": 99}}
    with pytest.raises(IncompatibleSketchError, match="URL rules of version 99"):
        schema.IndexConfig.from_dict(other)


def test_a_schema_6_file_answers_url_seen_null_and_keeps_working(tmp_path):
    """Written by schema 6 (make_schema6.py): no url_hash column; queries with a URL answer null."""
    path = tmp_path / "old6.db"
    shutil.copy(DATA / "schema6-lean.db", path)
    with SeenIndex(path, create=False) as old:
        assert old.config.urls is None
        answer = old.query("anything at all", url=PAGE)
        assert (answer["url_seen"], answer["url_match"]) == (None, None)
        added = old.check_and_add("https://example.org/new/x", "words never stored before here", url=PAGE)
        assert added["added"] and added["url_seen"] is None
        assert "https://example.org/new/x" in old and old.stats()["schema_version"] == 6
        assert old.integrity_check() == "ok"
    conn = sqlite3.connect(path)
    assert "url_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(docs)")}
    conn.close()


def test_command_line_url_field(tmp_path, capsys):
    import json

    from neardup.cli import main

    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text("".join(json.dumps({"id": f"p{i}", "url": url, "text": text}) + "\n"
                             for i, (url, text) in enumerate(zip([PAGE, OTHER[0]], texts(2, 5)))))
    probe = tmp_path / "probe.jsonl"
    probe.write_text(json.dumps({"id": "q", "url": SAME[1], "text": "a page not seen before at all"}) + "\n"
                     + json.dumps({"id": "r", "text": "no url in this record"}) + "\n")
    db = tmp_path / "seen.db"
    assert main(["index", "add", "--db", str(db), str(crawl), "--url-field", "url"]) == 0
    capsys.readouterr()
    assert main(["index", "query", "--db", str(db), str(probe), "--url-field", "url", "--json"]) == 0
    answers = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (answers[0]["url_seen"], answers[0]["url_match"]) == (True, "p0") and "url_seen" not in answers[1]
    with SeenIndex(db, create=False) as index:
        assert index.get("p0")["meta"] is None  # the URL is kept as its canonical form, not in meta
    old = tmp_path / "old6.db"
    shutil.copy(DATA / "schema6-lean.db", old)
    assert main(["index", "add", "--db", str(old), str(crawl), "--url-field", "url"]) == 2
    assert "stores no URLs (schema version 6" in capsys.readouterr().err


def test_signatures_are_the_stored_ones_in_the_order_asked(tmp_path):
    """SeenIndex.signatures: each number's stored signature (as a query narrows its own to the
    stored width), in the order asked, repeats included; zeros for a page without shingles and a
    number the index does not hold."""
    texts = ["the first page of the site has these words on it", "and the second page has other words in it",
             "!!!"]
    with SeenIndex(tmp_path / "s.db") as index:
        index.add_many([(f"p{k}", text, None, f"https://example.test/{k}") for k, text in enumerate(texts)])
        num = {doc_id: n for n, doc_id, *_ in index.url_pages()}
        assert index.config.signature_width == 2
        own = [sk.signature & 0xFFFF for sk in index._sketch_many(texts[:2])]
        got = index.signatures([num["p1"], num["p0"], num["p1"], num["p2"], 10**6])
        assert index.signatures([]).shape == (0, index.config.minhash.num_perm)
    assert got.dtype == np.dtype("<u2") and got.shape == (5, index.config.minhash.num_perm)
    assert (got[0] == own[1]).all() and (got[1] == own[0]).all() and (got[2] == own[1]).all()
    assert not got[3].any() and not got[4].any()
