"""``neardup compare``, ``neardup simhash`` and ``neardup lsh``."""

from __future__ import annotations

import math

from ..params import MinHashParams, ShingleParams
from ._common import (add_minhash_options, add_shingle_options, minhash_params_from, positive_int, print_json,
                      read_text, shingle_params_from, unit_float)


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare two documents: shingles, Jaccard, containment, MinHash, simhash",
                       description="Compare two documents exactly and with sketches. A and B are files, or '-' "
                                   "for standard input; with --text they are the texts themselves.")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--text", action="store_true", help="A and B are texts, not file names")
    # the Python API's defaults: ShingleParams() and MinHashParams()
    parts = {"shingle": ShingleParams(), "minhash": MinHashParams()}
    add_shingle_options(p, parts)
    add_minhash_options(p, parts)
    p.add_argument("--feature-hash", choices=["xxh3", "md5", "sha1"], default="xxh3",
                   help="hash of simhash features (default xxh3; md5 reproduces the seed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=compare_command)

    p = sub.add_parser("simhash", help="64-bit simhash fingerprints of files (words weighted by count)")
    p.add_argument("files", nargs="+", metavar="FILE", help="files, or '-' for standard input")
    p.add_argument("--feature-hash", choices=["xxh3", "md5", "sha1"], default="xxh3",
                   help="hash of the word features (default xxh3)")
    p.add_argument("--json", action="store_true", help='print [{"path": ..., "simhash": ...}, ...]')
    p.set_defaults(handler=simhash_command)

    p = sub.add_parser("lsh", help="banding math: probability that a pair is compared, choice of bands",
                       description="Show what banding a sketch into b bands of r rows does: the probability "
                                   "1-(1-J^r)^b that a pair of resemblance J becomes a candidate, and the "
                                   "threshold (1/b)^(1/r). With --threshold, choose b and r.")
    p.add_argument("--num-perm", type=positive_int("--num-perm"), required=True, help="values per sketch")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--bands", type=positive_int("--bands"), help="number of bands (must divide --num-perm)")
    g.add_argument("--threshold", type=unit_float("--threshold", open_high=True),
                   help="target resemblance; bands and rows are chosen for it")
    p.add_argument("--jaccard", nargs="+", default=None, metavar="J",
                   help="resemblances to give probabilities for (default 0.1 0.2 ... 0.9 0.95)")
    p.add_argument("--fp-weight", type=unit_float("--fp-weight", open_low=False), default=0.5)
    p.add_argument("--fn-weight", type=unit_float("--fn-weight", open_low=False), default=0.5)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=lsh_command)

    p = sub.add_parser("simhash-plan", help="layout of the simhash Hamming index for N fingerprints",
                       description="Show the permuted-table layouts (blocks, tables, prefix bits, memory, expected "
                                   "probes per query) that the simhash index considers for N fingerprints at "
                                   "Hamming distance K, and the one it chooses.")
    p.add_argument("--fingerprints", type=positive_int("--fingerprints"), required=True, metavar="N")
    p.add_argument("--max-distance", type=int, required=True, metavar="K", help="0 to 7")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=simhash_plan_command)


def compare_texts(text_a: str, text_b: str, shingle_params, minhash_params, feature_hash: str = "xxh3") -> dict:
    """Every measure of two texts, with the keys of ``neardup compare --json``."""
    from ..exact.similarity import cosine, jaccard_sorted
    from ..shingle import shingle_ids
    from ..sketch.estimate import binomial_stderr
    from ..sketch.minhash import MinHash
    from ..sketch.simhash import SimHash
    from ..text.tokenize import words

    ids_a, ids_b = shingle_ids(text_a, shingle_params), shingle_ids(text_b, shingle_params)
    import numpy as np

    shared = int(np.intersect1d(ids_a, ids_b, assume_unique=True).size)
    union = int(ids_a.size + ids_b.size - shared)
    j, c_ab, c_ba = jaccard_sorted(ids_a, ids_b)
    ma = MinHash(minhash_params, hash=shingle_params.hash)
    ma.update_ids(ids_a)
    mb = MinHash(minhash_params, hash=shingle_params.hash)
    mb.update_ids(ids_b)
    est = ma.jaccard(mb)
    sa = SimHash.from_text(text_a, hash=feature_hash, normalize=shingle_params.normalize)
    sb = SimHash.from_text(text_b, hash=feature_hash, normalize=shingle_params.normalize)
    return {
        "shingles_a": int(ids_a.size),
        "shingles_b": int(ids_b.size),
        "shared": shared,
        "union": union,
        "jaccard": j,
        "containment_a_in_b": c_ab,
        "containment_b_in_a": c_ba,
        "cosine": cosine(words(text_a, shingle_params.normalize), words(text_b, shingle_params.normalize)),
        "minhash_jaccard": est.value,
        # compare knows the exact J, so it reports the sketch's error at the truth (the seed's figures).
        "minhash_stderr": binomial_stderr(j, minhash_params.num_perm),
        "minhash_lower": est.lower,
        "minhash_upper": est.upper,
        "simhash_a": sa.hex(),
        "simhash_b": sb.hex(),
        "hamming": sa.distance(sb),
    }


def compare_command(args) -> int:
    if args.text:
        text_a, text_b = args.a, args.b
    else:
        used = [False]
        text_a, text_b = read_text(args.a, stdin_used=used), read_text(args.b, stdin_used=used)
    result = compare_texts(text_a, text_b, shingle_params_from(args), minhash_params_from(args), args.feature_hash)
    if args.json:
        print_json(result)
        return 0
    r = result
    print(f"shingles ({args.k}-{args.unit}): A {r['shingles_a']}, B {r['shingles_b']}, shared {r['shared']}, "
          f"union {r['union']}")
    print(f"Jaccard resemblance      {r['jaccard']:.4f}  ({r['shared']}/{r['union']})")
    print(f"containment A in B       {r['containment_a_in_b']:.4f}")
    print(f"containment B in A       {r['containment_b_in_a']:.4f}")
    print(f"cosine of word counts    {r['cosine']:.4f}")
    print(f"MinHash estimate         {r['minhash_jaccard']:.4f}  (m={args.num_perm}, standard error "
          f"{r['minhash_stderr']:.3f}, 95% interval {r['minhash_lower']:.3f}..{r['minhash_upper']:.3f})")
    print(f"simhash                  A {r['simhash_a']}  B {r['simhash_b']}  Hamming distance {r['hamming']}")
    return 0


def simhash_command(args) -> int:
    from ..sketch.simhash import SimHash

    used = [False]
    rows = []
    for path in args.files:
        text = read_text(path, stdin_used=used)
        rows.append({"path": path, "simhash": SimHash.from_text(text, hash=args.feature_hash).hex()})
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(f"{row['simhash']}  {row['path']}")
    return 0


DEFAULT_JACCARDS = ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.95"]


def lsh_command(args) -> int:
    from ..errors import ConfigError
    from ..lsh.params import banding, optimal_banding

    if args.bands is not None:
        band = banding(args.num_perm, args.bands)
    else:
        band = optimal_banding(args.threshold, args.num_perm, fp_weight=args.fp_weight, fn_weight=args.fn_weight)
    probabilities = {}
    for text in args.jaccard or DEFAULT_JACCARDS:
        try:
            j = float(text)
        except ValueError:
            raise ConfigError(f"--jaccard takes numbers in [0, 1], got {text!r}") from None
        if not 0 <= j <= 1 or math.isnan(j):
            raise ConfigError(f"--jaccard takes numbers in [0, 1], got {text!r}")
        probabilities[text] = band.probability(j)
    result = {"bands": band.bands, "rows": band.rows, "threshold": band.threshold, "probabilities": probabilities}
    if args.threshold is not None:
        result["false_positive_area"] = band.false_positive_area
        result["false_negative_area"] = band.false_negative_area
    if args.json:
        print_json(result)
        return 0
    print(f"{band.bands} bands x {band.rows} rows (uses {band.bands * band.rows} of {args.num_perm} values); "
          f"threshold (1/b)^(1/r) = {band.threshold:.4f}")
    if args.threshold is not None:
        print(f"at target {args.threshold:g}: false-positive area {band.false_positive_area:.4f}, "
              f"false-negative area {band.false_negative_area:.4f}")
    print("    J   P(compared)")
    for text, prob in probabilities.items():
        print(f"{text:>5}   {prob:.4f}")
    return 0


def simhash_plan_command(args) -> int:
    from ..errors import ConfigError
    from ..index.simhash_layout import format_plan, plan_layout

    if not 0 <= args.max_distance <= 7:
        raise ConfigError(f"--max-distance must be between 0 and 7, got {args.max_distance}")
    plan = plan_layout(args.fingerprints, args.max_distance)
    if args.json:
        print_json(plan)
    else:
        print(format_plan(plan))
    return 0
