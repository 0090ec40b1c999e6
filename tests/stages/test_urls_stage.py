"""The URL-identity stage on small hand-made runs: groups, followed and contradicted claims, reasons."""

import numpy as np

from neardup.stages.survivors import choose_survivors, components
from neardup.stages.urls import claim_key, record_key, relabel, url_links


def agree_on(fingerprints):
    return lambda a, b: np.asarray(fingerprints)[a] == np.asarray(fingerprints)[b]


def test_keys_and_claims_are_canonical():
    assert record_key("HTTPS://WWW.Debian.org:443/doc/?utm_source=x#top") == "https://www.debian.org/doc/"
    assert record_key(None) is None and record_key("  ") is None
    assert claim_key({"og_url": "https://www.debian.org/doc/#x"}) == "https://www.debian.org/doc/"
    assert claim_key({"canonical": "https://a.example/1", "og_url": "https://a.example/2"}) == "https://a.example/1"
    assert claim_key({"canonical": "../relative"}) is None and claim_key({}) is None


def test_groups_claims_and_reasons():
    # 0 and 2 share a URL; 3 claims 1's URL with the same content (followed); 4 claims 1's URL with
    # other content (contradicted); 5 claims itself; 6 claims a URL outside the input
    urls = ["https://s.example/a", "https://s.example/b", "https://S.example/a?utm_source=x",
            "https://s.example/b?print=1", "https://s.example/c", "https://s.example/d", "https://s.example/e"]
    keys = [record_key(u) for u in urls]
    claims = [None, None, None, "https://s.example/b", "https://s.example/b", "https://s.example/d",
              "https://elsewhere.example/"]
    fps = [10, 20, 11, 20, 30, 40, 50]
    links = url_links(keys, claims, agree_on(fps), ids=[f"r{k}" for k in range(7)])
    assert sorted(zip(links.i.tolist(), links.j.tolist())) == [(0, 2), (3, 1)]
    assert links.stats == {"claims": 4, "followed": 1, "contradicted": 1, "outside_input": 1, "url_groups": 1,
                           "contradicted_examples": [{"id": "r4", "url": "https://s.example/c",
                                                      "claims": "https://s.example/b", "claimed_id": "r1"}]}
    assert links.priority.tolist() == [1, 0, 1, 1, 1, 1, 1]

    # keep="longest" would choose 3 over 1 and 2 over 0: the claim overrides it, the URL group follows it
    n = len(keys)
    sk = np.arange(n, dtype=np.int64)
    lengths = np.array([5, 5, 9, 9, 1, 1, 1])
    comp = components(n, links.i, links.j)
    survivor = choose_survivors(comp, sk, "longest", lengths, priority=links.priority)
    assert survivor.tolist() == [2, 1, 2, 1, 4, 5, 6]
    reason = np.array([""] * n, dtype=object)
    relabel(reason, sk, survivor, links)
    assert reason.tolist() == ["url", "", "", "canonical", "", "", ""]


def test_nothing_to_link():
    links = url_links([None, "https://a.example/"], [None, None], agree_on([1, 2]))
    assert links.empty and links.priority is None
    reason = np.array(["", ""], dtype=object)
    relabel(reason, np.arange(2), np.arange(2), links)
    assert reason.tolist() == ["", ""]
