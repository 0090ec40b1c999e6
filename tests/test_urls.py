"""URL identity: every rule of neardup.urls on real URLs, and the rules deliberately not applied."""

import pytest

from neardup.errors import ConfigError
from neardup.urls import DEFAULT_RULES, TRACKING_PARAMS, URL_RULES_VERSION, UrlRules, canonical_url, surt, url_key

FOLD = UrlRules(fold_www=True, fold_trailing_slash=True)

APPLIED = [
    # scheme and host lower-cased
    ("HTTPS://www.Debian.ORG/doc/", "https://www.debian.org/doc/"),
    # default ports dropped, other ports kept
    ("https://www.debian.org:443/News/", "https://www.debian.org/News/"),
    ("http://deb.debian.org:80/debian/", "http://deb.debian.org/debian/"),
    ("http://localhost:8080/status", "http://localhost:8080/status"),
    ("http://[2001:db8::1]:80/a", "http://[2001:db8::1]/a"),
    # IDNA hosts
    ("https://bücher.de/kategorie/romane", "https://xn--bcher-kva.de/kategorie/romane"),
    ("https://münchen.de/rathaus/", "https://xn--mnchen-3ya.de/rathaus/"),
    # percent-encoding: unreserved decoded, hex upper case, non-ASCII encoded as UTF-8
    ("https://people.debian.org/%7ebap/", "https://people.debian.org/~bap/"),
    ("https://fr.wikipedia.org/wiki/Caf%c3%a9", "https://fr.wikipedia.org/wiki/Caf%C3%A9"),
    ("https://fr.wikipedia.org/wiki/Café", "https://fr.wikipedia.org/wiki/Caf%C3%A9"),
    ("https://www.python.org/search/?q=a+b", "https://www.python.org/search/?q=a+b"),
    ("https://www.python.org/search/?q=a%20b", "https://www.python.org/search/?q=a+b"),
    # dot segments
    ("https://docs.python.org/3/library/./os.html", "https://docs.python.org/3/library/os.html"),
    ("https://docs.python.org/3/tutorial/../library/os.html", "https://docs.python.org/3/library/os.html"),
    # empty path is /
    ("https://www.debian.org", "https://www.debian.org/"),
    # fragments dropped
    ("https://docs.python.org/3/library/os.html#os.walk", "https://docs.python.org/3/library/os.html"),
    # query parameters sorted, empty query dropped
    ("https://www.google.com/search?q=neardup&hl=en", "https://www.google.com/search?hl=en&q=neardup"),
    ("https://lists.debian.org/debian-devel/?", "https://lists.debian.org/debian-devel/"),
    # tracking and session parameters dropped
    ("https://www.nytimes.com/2024/01/01/world/story.html?utm_source=twitter&utm_medium=social",
     "https://www.nytimes.com/2024/01/01/world/story.html"),
    ("https://www.theguardian.com/world/2024/jan/01/story?CMP=share&fbclid=IwAR0abc",
     "https://www.theguardian.com/world/2024/jan/01/story?CMP=share"),
    ("https://shop.example.com/item?id=7&gclid=Cj0KCQ&PHPSESSID=9f8e", "https://shop.example.com/item?id=7"),
    ("https://shop.example.com/cart;jsessionid=1A2B3C?step=2", "https://shop.example.com/cart?step=2"),
    ("https://example.com/a?UTM_Campaign=x&ASPSESSIONIDQQ=1&b=2", "https://example.com/a?b=2"),
    # the issue's own example
    ("https://Example.com:443/a?utm_source=x&b=2&a=1#top", "https://example.com/a?a=1&b=2"),
]

NOT_APPLIED = [
    # path case: /A and /a are different resources on most servers
    ("https://en.wikipedia.org/wiki/Apple", "https://en.wikipedia.org/wiki/apple"),
    # http and https
    ("http://www.debian.org/", "https://www.debian.org/"),
    # www. and the trailing slash, unless asked for
    ("https://www.debian.org/doc/", "https://debian.org/doc/"),
    ("https://www.debian.org/doc/", "https://www.debian.org/doc"),
    # index.html
    ("https://www.debian.org/index.html", "https://www.debian.org/"),
    # parameters not on the list name content
    ("https://forum.example.org/viewtopic.php?t=1&sid=5", "https://forum.example.org/viewtopic.php?t=1"),
    ("https://example.com/list?page=2", "https://example.com/list"),
    # a port that is not the default
    ("https://example.com:8443/a", "https://example.com/a"),
]


@pytest.mark.parametrize("url, want", APPLIED)
def test_each_rule(url, want):
    assert canonical_url(url) == want
    assert canonical_url(want) == want  # canonical forms are fixed points


@pytest.mark.parametrize("a, b", NOT_APPLIED)
def test_rules_not_applied(a, b):
    assert canonical_url(a) != canonical_url(b)


def test_www_and_trailing_slash_are_options():
    assert canonical_url("https://www.debian.org/doc/", FOLD) == "https://debian.org/doc"
    assert canonical_url("https://debian.org/doc", FOLD) == "https://debian.org/doc"
    assert canonical_url("https://www.debian.org/", FOLD) == "https://debian.org/"  # the root keeps its slash
    # a host that is only www.<tld> keeps it: there is no site left after folding
    assert canonical_url("https://www.com/x", UrlRules(fold_www=True)) == "https://www.com/x"


def test_drop_list_is_configurable():
    keep_all = UrlRules(drop_params=())
    assert canonical_url("https://example.com/a?utm_source=x", keep_all) == "https://example.com/a?utm_source=x"
    own = UrlRules(drop_params=("ref", "src_*"))
    assert canonical_url("https://example.com/a?ref=hn&src_a=1&utm_source=x", own) == \
        "https://example.com/a?utm_source=x"
    assert "utm_*" in TRACKING_PARAMS and "fbclid" in TRACKING_PARAMS
    with pytest.raises(ConfigError):
        UrlRules(drop_params="utm_*")


def test_not_a_url():
    assert canonical_url("/doc/index.html") is None
    assert canonical_url("www.debian.org/doc/") is None
    assert canonical_url("https://example.com:port/a") is None
    assert url_key(" doc-17 ") == "doc-17"
    assert url_key("HTTPS://Example.com") == "https://example.com/"


def test_surt():
    assert surt("https://www.debian.org/doc/?b=1") == "org,debian,www)/doc/?b=1"
    assert surt("http://localhost:8080/a") == "localhost:8080)/a"
    assert surt("http://[2001:db8::1]/a") == "[2001:db8::1])/a"
    assert surt("doc-17") == "doc-17"
    # the pages of one site sort together, subdomains next to it
    urls = ["https://www.debian.org/doc/", "https://bugs.python.org/", "https://lists.debian.org/",
            "https://docs.python.org/3/", "https://www.debian.org/News/"]
    ordered = sorted(surt(canonical_url(u)) for u in urls)
    assert [s.split(")")[0].split(",")[1] for s in ordered] == ["debian", "debian", "debian", "python", "python"]


def test_deterministic_and_versioned():
    assert DEFAULT_RULES.as_dict()["version"] == URL_RULES_VERSION
    assert DEFAULT_RULES.as_dict() != FOLD.as_dict()
    url = "https://Example.com:443/a?utm_source=x&b=2&a=1#top"
    assert len({canonical_url(url) for _ in range(5)}) == 1


# URLs that look canonical and are not, beside ones that are: the shortcut of canonical_url for
# plain URLs must give what every rule gives
LOOKALIKES = [
    "https://example.com/", "https://example.com", "http://localhost/a", "https://10.0.0.1/a", "https://a.b/x/./y",
    "https://a.b/x/../y", "https://a.b//x", "https://a.b/x/.", "https://a.b/x/..", "https://a.b/.hidden",
    "https://a.b/..x/", "https://a.b/x.", "https://xn--bcher-kva.de/a", "https://a--b.de/", "https://-a.de/",
    "https://a-.de/", "https://example.com./a", "https://example.com/~user/", "https://example.com/a_b-c.d/",
    "https://www.debian.org/doc/", "https://www.com/x", "https://debian.org/doc", "https://example.com/A/B",
    "https://example.com/%7Euser", "https://example.com/a;jsessionid=1", "https://example.com/a?b=1",
    "https://example.com/a#top", " https://example.com/a", "https://example.com/a ", "https://Example.com/a",
    "HTTPS://example.com/a", "ftp://example.com/a", "https://example.com:443/a", "https://u@example.com/a",
    "https://" + "a" * 64 + ".com/", "https://" + "a" * 63 + ".com/", "https://" + "a." * 130 + "com/",
]


@pytest.mark.parametrize("rules", [DEFAULT_RULES, FOLD, UrlRules(fold_www=True), UrlRules(fold_trailing_slash=True),
                                   UrlRules(drop_params=())])
def test_plain_urls_take_a_shortcut_to_the_same_form(rules):
    from neardup.urls import _PLAIN, _canonical_url_by_rules

    urls = [u for pair in APPLIED + NOT_APPLIED for u in pair] + LOOKALIKES
    urls += [canonical_url(u) for u in urls if canonical_url(u)]
    assert sum(_PLAIN.fullmatch(u) is not None for u in urls) >= 40  # (the shortcut is tried)
    for url in urls:
        assert canonical_url(url, rules) == _canonical_url_by_rules(url, rules), url
        form = canonical_url(url, rules)
        if form is not None:
            assert surt(form) == _surt_by_parts(form), form


def _surt_by_parts(canonical: str) -> str:
    # surt as its documentation states it, without the shortcut
    from urllib.parse import urlsplit

    parts = urlsplit(canonical)
    key = ",".join(reversed(parts.hostname.split("."))) if ":" not in parts.hostname else f"[{parts.hostname}]"
    key += f":{parts.port}" if parts.port is not None else ""
    return f"{key}){parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")
