"""URL identity in a dedup run: records under one canonical URL, and pages' canonical claims.

Two relations join records beside their content, over the sketched records (local indices):

- **URL groups**: records whose URLs have the same canonical form (:func:`neardup.urls.url_key`)
  are one page; each is joined to the group's first record, and the cluster's survivor is
  chosen by the run's keep policy as for content duplicates. A member that shares its URL with
  another record has the reason ``url`` (before ``exact`` or ``near``: the URL says it is the
  same page whatever its content did since).
- **Canonical claims**: a page whose ``<link rel="canonical">`` (else ``og:url``) names, in
  canonical form, the URL of another record of the input is a duplicate of that record *when
  their contents agree*: the same exact fingerprint, or a similarity (the run's measure) at the
  run's threshold. The named record then survives whatever the keep policy (it gets the best
  priority in :func:`neardup.stages.survivors.choose_survivors`), and the claimant has the
  reason ``canonical``. A claim whose content disagrees is not followed: it is counted and a few
  examples are reported (``summary.json``'s ``canonical_claims``). A page naming itself, or a
  URL no record of the input has, is neither.

The engines compute the URL keys and claims as they read, call :func:`url_links` for the edges
and priorities before their components, and :func:`relabel` on the outcome's reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..urls import DEFAULT_RULES, UrlRules, canonical_url, url_key

__all__ = ["URL_REASONS", "UrlLinks", "record_key", "claim_key", "copy_aliases", "no_agreement", "url_links", "relabel",
           "EXAMPLES"]

#: The reasons this stage gives, beside ``exact`` and ``near``.
URL_REASONS = {"url": "the same canonical URL as its survivor (chosen by the keep policy)",
               "canonical": "its page names the survivor's URL as canonical, and their contents agree"}
#: Contradicted claims listed in the summary.
EXAMPLES = 20


def record_key(url, rules: UrlRules = DEFAULT_RULES) -> str | None:
    """A record's URL identity: the canonical form of its URL value (None without one)."""
    if not isinstance(url, str) or not url.strip():
        return None
    return url_key(url, rules)


def claim_key(meta: dict, rules: UrlRules = DEFAULT_RULES) -> str | None:
    """The canonical form of a page's claim about its URL (``canonical``, else ``og_url``), or None."""
    for name in ("canonical", "og_url"):
        value = meta.get(name) if meta else None
        if isinstance(value, str) and value.strip():
            key = canonical_url(value, rules)
            if key is not None:
                return key
    return None


@dataclass
class UrlLinks:
    """What :func:`url_links` found, over ``n`` local indices."""

    i: np.ndarray  # the extra edges (URL groups and followed claims), local indices
    j: np.ndarray
    priority: np.ndarray | None  # by local index: 0 for a claimed record, 1 otherwise (None: no claim followed)
    grouped: np.ndarray  # bool by local index: shares its URL with another record
    claimant: np.ndarray  # bool by local index: a followed claim
    stats: dict = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.i.size


def copy_aliases(copies, holders, url_of, claim_of, local: dict) -> tuple[list, list]:
    """:func:`url_links`' ``aliases`` and ``alias_claims``: the URL and the claim of each exact
    copy (``copies[q]``, an ordinal, whose first holder is ``holders[q]``), standing for its
    holder's local index ``local[holder]``. ``url_of(o)``, ``claim_of(o)``: an ordinal's URL
    identity and claim, or None. Taken in the copies' input order, so that every engine gives
    :func:`url_links` the same sequence whatever order it holds its copies in."""
    copies, holders = np.asarray(copies, dtype=np.int64), np.asarray(holders, dtype=np.int64)
    order = np.argsort(copies, kind="stable")
    aliases, alias_claims = [], []
    for o, h in zip(copies[order].tolist(), holders[order].tolist()):
        k = local.get(h)
        if k is None:
            continue
        key, claim = url_of(o), claim_of(o)
        if key is not None:
            aliases.append((key, k))
        if claim is not None:
            alias_claims.append((claim, k))
    return aliases, alias_claims


def no_agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``agree`` for ``--method exact``, where contents agree only as exact copies: the exact pass
    has already folded those into their first holder (whose claims :func:`copy_aliases` carries),
    so two sketched records never do, and no shingles need measuring."""
    return np.zeros(len(a), dtype=bool)


def url_links(keys: list, claims: list, agree, *, ids=None, aliases=(), alias_claims=()) -> UrlLinks:
    """The edges and survivor priorities of URL identity over sketched records.

    ``keys[k]``, ``claims[k]``: local record k's URL identity and its claim's canonical form
    (None for none). ``agree(a, b)``: for int64 arrays of local pairs, a bool array, True where
    the contents agree (same fingerprint, or a similarity at the threshold). ``ids``: a sequence
    of record names by local index, for the examples of contradicted claims. ``aliases``:
    ``(key, k)`` for records that are not sketched (an engine's exact copies) whose URL ``key``
    stands for local record k (their first holder): a record with that URL, or a claim naming
    it, is joined to k. ``alias_claims``: ``(claim, k)`` for the claims of such records: checked
    and followed as k's own (the claimed record then survives k's cluster), but k keeps its
    reason (the claimant, an exact copy of k, is ``exact``)."""
    n = len(keys)
    first_of: dict = {}
    gi, gj = [], []
    grouped = np.zeros(n, dtype=bool)
    for k, key in enumerate(keys):
        if key is None:
            continue
        head = first_of.setdefault(key, k)
        if head != k:
            gi.append(head)
            gj.append(k)
            grouped[head] = grouped[k] = True
    for key, k in aliases:
        head = first_of.setdefault(key, k)
        if head != k:
            gi.append(head)
            gj.append(k)
            grouped[head if keys[head] == key else k] = True  # the record that has the URL itself
    ca, cb, own = [], [], []  # claimant, claimed (the first record of the claimed URL), its own claim
    outside = selves = 0
    for k, claim, mine in [(k, c, True) for k, c in enumerate(claims)] + [(k, c, False) for c, k in alias_claims]:
        if claim is None:
            continue
        target = first_of.get(claim)
        if claim == keys[k] or target == k:
            selves += 1
            continue
        if target is None:
            outside += 1
            continue
        ca.append(k)
        cb.append(target)
        own.append(mine)
    claimant = np.zeros(n, dtype=bool)
    priority = None
    contradicted: list = []
    followed = 0
    if ca:
        a, b = np.array(ca, dtype=np.int64), np.array(cb, dtype=np.int64)
        ok = np.asarray(agree(a, b), dtype=bool)
        followed = int(ok.sum())
        claimant[a[ok & np.array(own, dtype=bool)]] = True
        if followed:
            priority = np.ones(n, dtype=np.int64)
            priority[b[ok]] = 0
        bad = np.flatnonzero(~ok)
        for q in bad[:EXAMPLES].tolist():
            contradicted.append({"id": None if ids is None else ids[int(a[q])], "url": keys[int(a[q])],
                                 "claims": claims[int(a[q])],
                                 "claimed_id": None if ids is None else ids[int(b[q])]})
        gi.extend(a[ok].tolist())
        gj.extend(b[ok].tolist())
    stats = {"claims": len(ca) + outside + selves,
             "followed": followed, "contradicted": len(ca) - followed, "contradicted_examples": contradicted,
             "outside_input": outside, "url_groups": sum(1 for k, key in enumerate(keys)
                                                         if key is not None and first_of[key] == k and grouped[k])}
    return UrlLinks(np.array(gi, dtype=np.int64), np.array(gj, dtype=np.int64), priority, grouped, claimant, stats)


def relabel(reason, sk: np.ndarray, survivor_local: np.ndarray, links: UrlLinks) -> np.ndarray:
    """Give the members joined by URL identity their reason, in ``reason`` (by ordinal), before
    any content reason: ``canonical`` for a followed claimant, else ``url`` for a record that
    shares its canonical URL with another record (its cluster's survivor is then chosen among
    them by the keep policy). Survivors keep their reason; exact copies (not sketched) stay
    ``exact``. Returns the ordinals relabelled."""
    if links.empty:
        return np.empty(0, dtype=np.int64)
    member = survivor_local != np.arange(survivor_local.size)
    canonical = member & links.claimant
    by_url = member & links.grouped & ~links.claimant
    if canonical.any():
        reason[sk[canonical]] = "canonical"
    if by_url.any():
        reason[sk[by_url]] = "url"
    return sk[canonical | by_url]
