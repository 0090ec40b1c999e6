"""The seed's worked examples, recomputed with the library: its shingle table, the choice of ``k``,
MinHash by hand, the standard errors, its two figures, simhash by hand and the angles (``neardup
report --seed-examples``)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..exact.fingerprint import fingerprint
from ..exact.similarity import cosine, jaccard
from ..hashing import hash64
from ..lsh.params import probability
from ..params import MinHashParams, ShingleParams
from ..shingle import shingle_ids, shingle_set, shingles
from ..sketch.estimate import binomial_stderr
from ..sketch.minhash import MinHash
from ..sketch.permutations import AffineModPrime
from ..sketch.simhash import SimHash, bit_totals
from ..text.tokenize import words
from .metrics import ReportConfig, banding_curves, convergence

__all__ = ["SEED_D1", "SEED_D2", "SEED_D3", "SEED_D4", "BY_HAND_FUNCTIONS", "BY_HAND_PRIME", "seed_examples"]


SEED_D1 = "the crawler fetches each page and follows its links to new pages"
SEED_D2 = "the crawler fetches every page and follows its links to other pages"
SEED_D3 = "a rose is a rose is a rose"
SEED_D4 = "a rose is a flower which is a rose"
#: The six hash functions (a, b) of the seed's by-hand table, h(x) = (a x + b) mod 17: inputs of
#: the example, not results.
BY_HAND_FUNCTIONS = ((1, 0), (3, 5), (5, 2), (7, 11), (11, 3), (13, 8))
BY_HAND_PRIME = 17


def seed_examples(cfg: ReportConfig) -> dict:
    """The seed's tables and figures from its example sentences (k = 3 as in the seed)."""
    k3 = ShingleParams(k=3, normalize=cfg.shingle.normalize)
    s1, s2 = shingle_set(SEED_D1, k3), shingle_set(SEED_D2, k3)
    union = sorted(s1 | s2)
    number = {s: i for i, s in enumerate(union)}
    table = {
        "k": 3, "words_d1": len(words(SEED_D1)), "words_d2": len(words(SEED_D2)),
        "shingles_d1": len(shingles(SEED_D1, k3)), "shingles_d2": len(shingles(SEED_D2, k3)),
        "rows": [{"number": i, "shingle": s, "in_d1": s in s1, "in_d2": s in s2} for i, s in enumerate(union)],
        "shared": len(s1 & s2), "union": len(union), "jaccard": jaccard(s1, s2),
    }

    s3, s4 = shingle_set(SEED_D3, k3), shingle_set(SEED_D4, k3)
    k2 = ShingleParams(k=2, normalize=cfg.shingle.normalize)
    choice_of_k = {
        "rose_4_shingles": sorted(shingle_set(SEED_D3, ShingleParams(k=4, normalize=cfg.shingle.normalize))),
        "k3": {"d3": len(s3), "d4": len(s4), "shared": len(s3 & s4), "union": len(s3 | s4), "jaccard": jaccard(s3, s4)},
        "k2": {"jaccard": jaccard(shingle_set(SEED_D3, k2), shingle_set(SEED_D4, k2))},
    }

    # by hand: the shingle numbers hashed with (a x + b) mod 17
    n1 = np.array(sorted(number[s] for s in s1), dtype=np.uint64)
    n2 = np.array(sorted(number[s] for s in s2), dtype=np.uint64)
    fam = AffineModPrime(a=tuple(a for a, _ in BY_HAND_FUNCTIONS), b=tuple(b for _, b in BY_HAND_FUNCTIONS),
                         prime=BY_HAND_PRIME, name="by-hand")
    hp = MinHashParams(num_perm=len(BY_HAND_FUNCTIONS))
    m1, m2 = MinHash(hp, family=fam), MinHash(hp, family=fam)
    m1.update_ids(n1)
    m2.update_ids(n2)
    perm = fam.apply(np.arange(len(union), dtype=np.uint64))
    rows = []
    for f, (a, b) in enumerate(BY_HAND_FUNCTIONS):
        arg1 = int(n1[np.argmin(perm[f][n1.astype(np.int64)])])
        arg2 = int(n2[np.argmin(perm[f][n2.astype(np.int64)])])
        rows.append({"a": a, "b": b, "min_d1": int(m1.hashvalues[f]), "shingle_d1": arg1,
                     "min_d2": int(m2.hashvalues[f]), "shingle_d2": arg2,
                     "agree": bool(m1.hashvalues[f] == m2.hashvalues[f])})
    est = m1.jaccard(m2)
    by_hand = {"prime": BY_HAND_PRIME, "rows": rows, "agreements": sum(r["agree"] for r in rows),
               "estimate": est.value, "true_jaccard": table["jaccard"],
               "bijective": all(len(set(perm[f].tolist())) == len(union) for f in range(len(rows)))}

    j = table["jaccard"]
    errors = [{"m": m, "stderr": binomial_stderr(j, m)} for m in (10, 100, 200)]

    ids1, ids2 = shingle_ids(SEED_D1, k3), shingle_ids(SEED_D2, k3)
    fig1 = convergence(ids1, ids2, cfg, label="report-seed-figure1")
    fig1["pair"] = ["d1", "d2"]
    fig1["text"] = "seed sentences, 3-shingles"

    fig2 = banding_curves(cfg.num_perm, cfg.threshold)
    banding_probs = [{"bands": 20, "rows": 10, "jaccard": jj, "probability": probability(jj, 20, 10)}
                     for jj in (0.9, 0.5, j)]

    # simhash by hand: MD5 of each word of d1, weight 1
    d1_words = words(SEED_D1)
    counts = Counter(d1_words)
    bit_rows = [{"word": w, "bits": format(hash64(w, "md5") >> 56, "08b")} for w in sorted(counts)]
    totals = bit_totals(counts, "md5")
    sh = {name: SimHash.from_text(t, hash="md5", normalize=cfg.shingle.normalize)
          for name, t in (("d1", SEED_D1), ("d2", SEED_D2), ("d3", SEED_D3))}
    simhash_table = {
        "hash": "md5", "rows": bit_rows, "totals": [int(x) for x in totals[:8]],
        "bits": "".join("1" if x > 0 else "0" for x in totals[:8]),
        "d1": sh["d1"].hex(), "d2": sh["d2"].hex(), "d3": sh["d3"].hex(),
        "hamming_d1_d2": sh["d1"].distance(sh["d2"]), "agree_d1_d2": 64 - sh["d1"].distance(sh["d2"]),
        "hamming_d1_d3": sh["d1"].distance(sh["d3"]), "agree_d1_d3": 64 - sh["d1"].distance(sh["d3"]),
    }
    simhash_table["agree_fraction_d1_d2"] = simhash_table["agree_d1_d2"] / 64
    simhash_table["agree_fraction_d1_d3"] = simhash_table["agree_d1_d3"] / 64

    cos = cosine(words(SEED_D1), words(SEED_D2))
    angle = math.degrees(math.acos(cos))
    predicted = 1 - angle / 180
    angles = {"cosine": cos, "angle_degrees": angle, "predicted_agreement": predicted,
              "observed_agreement": simhash_table["agree_fraction_d1_d2"],
              "stddev": math.sqrt(predicted * (1 - predicted) / 64),
              "cosine_d1_d3": cosine(words(SEED_D1), words(SEED_D3))}
    manku_angle = 3 / 64 * 180
    manku = {"bits": 3, "angle_degrees": manku_angle, "cosine": math.cos(math.radians(manku_angle))}

    return {
        "sentences": {"d1": SEED_D1, "d2": SEED_D2, "d3": SEED_D3, "d4": SEED_D4},
        "exact_fingerprints": {"d1": f"{fingerprint(SEED_D1):016x}", "d2": f"{fingerprint(SEED_D2):016x}"},
        "shingle_table": table,
        "choice_of_k": choice_of_k,
        "by_hand_minhash": by_hand,
        "standard_errors": errors,
        "figure1": fig1,
        "figure2": fig2,
        "banding_probabilities": banding_probs,
        "simhash": simhash_table,
        "angles": angles,
        "manku": manku,
    }
