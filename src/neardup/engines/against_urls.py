"""URL identity against an index: ``neardup dedup NEW --against INDEX --url-field NAME``.

The new records' canonical URLs and canonical claims (:mod:`neardup.stages.urls`) are looked up
in the index in one batch (:meth:`neardup.store.queries.Queries.url_numbers`: the URL hashes
joined with the index's URL index and read from its URL runs, never every stored URL), and the
first indexed document of each URL found joins the run as :class:`~neardup.engines.against.Against`
joins the documents its band keys found. Then :func:`~neardup.stages.urls.url_links` runs over
the indexed documents (first, as a run over the indexed records and then the new ones has them)
and the new records, as in a run without an index:

- a new record whose canonical URL the index holds is joined to that document (reason ``url``);
- a new page whose canonical claim names a URL the index holds is a duplicate of that document
  when their contents agree (measured on the shingle ids, at the run's threshold; reason
  ``canonical``), and the claim is reported as contradicted when they do not;
- the new records' own URL groups and claims among themselves, as in a run without an index.

The indexed documents keep no claims (an index stores none): an indexed page's claim naming a
new record is not followed, so that the indexed documents always survive.
"""

from __future__ import annotations

import numpy as np

from ..stages.columns import take_values
from ..stages.urls import UrlLinks, copy_aliases, url_links
from ..stages.verify import pair_similarities, score_of
from ..store.schema import url_hash_of

__all__ = ["IndexedUrls", "survivor_priority"]


class IndexedUrls:
    """The new records' canonical URLs and claims (``url_keys``, ``claim_keys``: by the run's
    ordinal) and the indexed documents that hold them."""

    def __init__(self, url_keys: dict, claim_keys: dict):
        self.url_keys = url_keys
        self.claim_keys = claim_keys
        # (sorted: the look-up and what it finds never depend on a set's order)
        texts = sorted(set(url_keys.values()) | set(claim_keys.values()))
        self._text_of = {url_hash_of(t): t for t in texts}
        #: index number -> the canonical URL it is the first stored document of (:meth:`look_up`)
        self.numbers: dict = {}

    def look_up(self, index, conn) -> list:
        """Find the first stored document of each URL, in one batch; returns their numbers (sorted),
        for the caller to read with the documents its band keys found."""
        found = index.url_numbers(conn, list(self._text_of))
        self.numbers = {num: self._text_of[h] for h, num in found.items()}
        return sorted(self.numbers)

    @property
    def stats(self) -> dict:
        return {"against_urls_looked_up": len(self._text_of), "against_urls_found": len(self.numbers)}

    def links(self, *, nums: np.ndarray, sk: np.ndarray, sk_all: np.ndarray, exact_all: dict, names,
              shingles, offsets: np.ndarray, counts: np.ndarray, config, jobs: int) -> UrlLinks:
        """URL identity over the indexed documents read (local indices ``0..n_a-1``, index numbers
        ``nums``) and the new sketched records after them (ordinals ``sk`` of the run): the
        combined run's local indices, ordinals ``sk_all``, copies ``exact_all`` (combined
        ordinal -> combined ordinal of the first holder), ``names`` by combined ordinal and the
        shingle ids by local index, as :meth:`~neardup.engines.against.Against.resolve` holds them."""
        n_a = nums.size
        url_keys, claim_keys = self.url_keys, self.claim_keys
        ords = sk.tolist()
        keys = [self.numbers.get(num) for num in nums.tolist()] + [url_keys.get(o) for o in ords]
        claims = [None] * n_a + [claim_keys.get(o) for o in ords]
        aliases, alias_claims = [], []
        if exact_all:
            copies = np.fromiter(exact_all.keys(), np.int64, len(exact_all))
            holders = np.fromiter(exact_all.values(), np.int64, len(exact_all))
            local_of = np.full(int(max(sk_all.max(initial=-1), holders.max())) + 1, -1, dtype=np.int64)
            local_of[sk_all] = np.arange(sk_all.size)
            local = {h: int(local_of[h]) for h in np.unique(holders).tolist() if local_of[h] >= 0}
            aliases, alias_claims = copy_aliases(copies, holders, lambda o: url_keys.get(o - n_a),
                                                 lambda o: claim_keys.get(o - n_a), local)

        def agree(a, b):
            return score_of(pair_similarities(shingles, offsets, counts, a, b, jobs=jobs),
                            config.measure) >= config.threshold

        return url_links(keys, claims, agree, ids=take_values(names, sk_all), aliases=aliases,
                         alias_claims=alias_claims)


def survivor_priority(index_priority: np.ndarray, links: UrlLinks) -> np.ndarray:
    """The survivors' priority against an index with URL identity (lower first): the indexed
    documents before the new records whatever the claims (an indexed document is never removed),
    then, within each, a claimed record first (it survives its claimants whatever the keep
    policy), then, among the indexed, the recorded survivors before their members.
    ``index_priority``: 0 for an indexed survivor, 1 for another indexed document, 2 for a new
    record."""
    claim = links.priority if links.priority is not None else np.ones(index_priority.size, dtype=np.int64)
    return (index_priority == 2) * 4 + claim * 2 + np.minimum(index_priority, 1)
