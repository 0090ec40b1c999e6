"""URL identity on the Spark engine (``--url-field``): the local stage (:mod:`neardup.stages.urls`)
run by the driver over the records' canonical URLs and claims, which the executors read with the
records (:class:`~neardup.engines.spark.rows.Recs`), the claims' agreement with the content
measured on the executors, where the shingle ids are."""

from __future__ import annotations

import numpy as np

from ...config import DedupConfig
from ...stages.urls import UrlLinks, copy_aliases, no_agreement, url_links
from .executors import scores_on_executors


def spark_url_links(spark, sketched, sk: np.ndarray, url_keys: dict, claim_keys: dict, exact_of: dict, ids: list,
                    config: DedupConfig) -> UrlLinks:
    """:func:`~neardup.stages.urls.url_links` over the sketched records ``sk`` (ordinals, sorted), as
    the local engine calls it: ``url_keys`` and ``claim_keys`` by ordinal; an exact copy's URL and
    claim (``exact_of``: copy -> first holder, in input order) stand for its first holder; a claim
    agrees with the content when the pair's similarity (the run's measure; never with
    ``method="exact"``) is at the threshold. ``sketched``: the (ordinal, ids) of ``sk``."""
    ords = sk.tolist()
    keys = [url_keys.get(o) for o in ords]
    claims = [claim_keys.get(o) for o in ords]
    aliases, alias_claims = [], []
    if url_keys or claim_keys:
        copies = np.fromiter(exact_of.keys(), np.int64, len(exact_of))
        holders = np.fromiter(exact_of.values(), np.int64, len(exact_of))
        aliases, alias_claims = copy_aliases(copies, holders, url_keys.get, claim_keys.get,
                                             {o: k for k, o in enumerate(ords)})

    def measured(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return scores_on_executors(spark, sketched, sk[a], sk[b], config.measure) >= config.threshold

    agree = no_agreement if config.method == "exact" else measured

    return url_links(keys, claims, agree, ids=[ids[o] for o in ords], aliases=aliases, alias_claims=alias_claims)
