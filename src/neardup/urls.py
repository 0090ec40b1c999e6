"""URL identity: the canonical form of a URL, under which one page reached by several URLs is one page.

:func:`canonical_url` applies, in this order:

1. w3lib's :func:`w3lib.url.canonicalize_url` (a well-kept library, the one Scrapy's duplicate
   filter uses): lower-cased scheme and host, IDNA hosts (``bücher.de`` -> ``xn--bcher-kva.de``),
   percent-encoding normalized (unreserved characters decoded, ``%7e`` -> ``~``; hex digits upper
   case; non-ASCII characters encoded as UTF-8), dot segments resolved (``/a/./b/../c`` ->
   ``/a/c``), an empty path made ``/``, the fragment dropped, query parameters sorted (by name,
   then value; blank values kept as ``name=``; ``+`` and ``%20`` in a query are the same space);
2. (before 1, on the URL as given) the tracking and session parameters of
   :attr:`UrlRules.drop_params` dropped from the query, and Java's ``;jsessionid=...`` path
   parameter from the path;
3. the default port of the scheme dropped (``:80`` for http, ``:443`` for https, ``:21`` for ftp)
   and a host's trailing dot (``example.com.``);
4. optionally (off by default, since they are not always the same page): ``www.`` folded away
   (:attr:`UrlRules.fold_www`) and the trailing slash of a path other than ``/`` folded away
   (:attr:`UrlRules.fold_trailing_slash`).

Deliberately not applied: the path's case (``/A`` and ``/a`` are different resources on most
servers), ``index.html`` folding, the user information, ``http`` against ``https`` (both exist
and can differ), the order of repeated values of one parameter in the result (they are sorted),
and parameters not on the list (``sid``, ``ref``, ``page`` name content on too many sites).

The rules are deterministic, and :data:`URL_RULES_VERSION` with :meth:`UrlRules.as_dict` goes into
a run's configuration fingerprint, as the HTML extractor's id does: other rules, other groups.

:func:`surt` gives the Sort-friendly URI Reordering Transform of a canonical URL
(``https://www.example.com/a?b=1`` -> ``com,example,www)/a?b=1``), under which the pages of one
site, and of one site's subdomains, sort together. It reorders the canonical form and loses
nothing more (unlike the ``surt`` package, which also lower-cases the path and drops ``www.``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from ._validate import check_bool
from .errors import ConfigError

__all__ = ["URL_RULES_VERSION", "TRACKING_PARAMS", "UrlRules", "DEFAULT_RULES", "canonical_url", "url_key", "surt"]

#: Raised whenever a rule changes what :func:`canonical_url` returns for some URL.
URL_RULES_VERSION = 1

#: Query parameters dropped by default, matched case-insensitively (``*`` is a wildcard): the
#: campaign tags of analytics and ad platforms, click ids, and the session ids of common web
#: frameworks. None of them chooses what a page shows.
TRACKING_PARAMS = (
    # Google Analytics campaign tags (utm_source, utm_medium, utm_campaign, utm_term, utm_content, utm_id...)
    "utm_*",
    # click ids: Google Ads (gclid, gbraid, wbraid, dclid), Facebook, Microsoft Ads, Yandex, Twitter, TikTok
    "gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "yclid", "twclid", "ttclid",
    # Google Analytics cross-domain linking, Mailchimp, HubSpot, Marketo, Instagram, Olytics
    "_ga", "_gl", "mc_cid", "mc_eid", "_hsenc", "_hsmi", "__hstc", "__hssc", "__hsfp", "mkt_tok", "igshid",
    "oly_anon_id", "oly_enc_id",
    # session ids: PHP, Java servlets, ASP, ColdFusion, generic
    "phpsessid", "jsessionid", "aspsessionid*", "cfid", "cftoken", "sessionid", "session_id",
)

_DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"}
_JSESSIONID = re.compile(r";jsessionid=[^/?#]*", re.IGNORECASE)
#: A URL that every rule leaves as it is (:func:`canonical_url` returns it unchanged, tested on
#: the rules' cases and on generated crawls): http or https in lower case, a host of lower-case
#: ASCII labels (no IDNA label, no port, no user information), a path of unreserved characters
#: only (no percent escape, no path parameter), no query and no fragment. Most URLs of a crawl
#: are so, and are known canonical in about a microsecond instead of w3lib's twenty.
_PLAIN = re.compile(r"(?:https?)://((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)"
                    r"(/[A-Za-z0-9._~/-]*)")


@dataclass(frozen=True)
class UrlRules:
    """The configurable part of URL identity.

    ``drop_params``: query parameters dropped (case-insensitive names, ``*`` wildcards; default
    :data:`TRACKING_PARAMS`; ``()`` keeps every parameter). ``fold_www``: ``www.example.com`` is
    ``example.com``. ``fold_trailing_slash``: ``/docs/`` is ``/docs``.
    """

    drop_params: tuple = TRACKING_PARAMS
    fold_www: bool = False
    fold_trailing_slash: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.drop_params, str):
            raise ConfigError("The 'drop_params' parameter of UrlRules must be a sequence of names, not a str",
                              owner="UrlRules", parameter="drop_params", value=self.drop_params,
                              requirement="names separated by commas")
        names = tuple(str(p).lower() for p in self.drop_params)
        if any(not p for p in names):
            raise ConfigError("The 'drop_params' parameter of UrlRules holds an empty name", owner="UrlRules",
                              parameter="drop_params", value=self.drop_params, requirement="non-empty names")
        check_bool("fold_www", self.fold_www, owner="UrlRules")
        check_bool("fold_trailing_slash", self.fold_trailing_slash, owner="UrlRules")
        object.__setattr__(self, "drop_params", names)
        exact = frozenset(p for p in names if not any(c in p for c in "*?["))
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_patterns", tuple(p for p in names if p not in exact))

    def drops(self, name: str) -> bool:
        """True when the query parameter ``name`` is dropped."""
        low = name.lower()
        return low in self._exact or any(fnmatch.fnmatchcase(low, p) for p in self._patterns)

    def as_dict(self) -> dict:
        """What goes into a configuration fingerprint."""
        return {"version": URL_RULES_VERSION, "drop_params": list(self.drop_params), "fold_www": self.fold_www,
                "fold_trailing_slash": self.fold_trailing_slash}


DEFAULT_RULES = UrlRules()


def canonical_url(url: str, rules: UrlRules = DEFAULT_RULES) -> str | None:
    """The canonical form of an absolute URL (see the module's documentation), or None when
    ``url`` is not one (no scheme and host: a relative URL, a file path, an id)."""
    plain = _PLAIN.fullmatch(url)
    if plain is not None and _plain_canonical(plain.group(1), plain.group(2), rules):
        return url
    return _canonical_url_by_rules(url, rules)


def _canonical_url_by_rules(url: str, rules: UrlRules) -> str | None:
    """:func:`canonical_url` without the shortcut of :data:`_PLAIN`: every rule applied."""
    from w3lib.url import canonicalize_url

    url = url.strip()
    head = urlsplit(url)
    if not head.scheme or not head.netloc:
        return None
    path, query = head.path, head.query
    if ";" in path and "jsessionid" in path.lower():
        path = _JSESSIONID.sub("", path)
    if query and rules.drop_params:
        # dropped on the raw query, before w3lib encodes it, so that a URL with tracking
        # parameters and the same URL without them go through one and the same encoding
        query = "&".join(p for p in query.split("&") if p and not rules.drops(unquote_plus(p.split("=", 1)[0])))
    if (path, query) != (head.path, head.query):
        url = urlunsplit(head._replace(path=path, query=query))
    try:
        parts = urlsplit(canonicalize_url(url, keep_fragments=False))
        port = parts.port
    except ValueError:  # a port that is not a number, a malformed IPv6 host
        return None
    host = (parts.hostname or "").rstrip(".")
    if rules.fold_www and host.startswith("www.") and host.count(".") >= 2:
        host = host[4:]
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if port is not None and str(port) != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    netloc = parts.netloc.rpartition("@")[0] + "@" + host if "@" in parts.netloc else host
    path = parts.path or "/"
    if rules.fold_trailing_slash and len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return urlunsplit((parts.scheme, netloc, path, parts.query, ""))


def _plain_canonical(host: str, path: str, rules: UrlRules) -> bool:
    """Whether a URL :data:`_PLAIN` matched is in canonical form: no dot segment or empty
    segment in its path, no IDNA-like label, and nothing the options fold."""
    segments = path + "/"
    if "/./" in segments or "/../" in segments or "//" in path or "--" in host or len(host) > 253:
        return False
    if rules.fold_www and host.startswith("www.") and host.count(".") >= 2:
        return False
    return not (rules.fold_trailing_slash and len(path) > 1 and path.endswith("/"))


def url_key(value: str, rules: UrlRules = DEFAULT_RULES) -> str:
    """The identity of a record's URL: its canonical form, or the value itself (stripped) when
    it is not an absolute URL (a path or an id stands for itself)."""
    return canonical_url(value, rules) or value.strip()


def surt(canonical: str) -> str:
    """The SURT form of a canonical URL (from :func:`canonical_url`): the host's labels reversed
    and joined by commas, the port after a colon, then ``)`` and the path and query; the scheme
    is left out, as the SURTs of web archives do, so that http and https pages sort together.
    A value that is not an absolute URL is returned as it is."""
    plain = _PLAIN.fullmatch(canonical)
    if plain is not None:  # (no port, no query: the host reversed and the path)
        return ",".join(reversed(plain.group(1).split("."))) + ")" + plain.group(2)
    parts = urlsplit(canonical)
    if not parts.scheme or not parts.netloc:
        return canonical
    host = parts.hostname or ""
    key = f"[{host}]" if ":" in host else ",".join(reversed(host.split(".")))  # an IPv6 address is not reversed
    if parts.port is not None:
        key += f":{parts.port}"
    rest = parts.path or "/"
    if parts.query:
        rest += "?" + parts.query
    return f"{key}){rest}"
