"""Train the block classifier of the main-content extraction (``src/neardup/text/blocks.json``) on
WCXB's dev split, and measure it against the rules alone by two-fold cross-validation.

Every dev page is extracted by the rules (``neardup.text.html``, classifier off); the blocks the
classifier would score (see ``_blocks`` in html.py) are collected with their features. A block's
label is whether most of its word trigrams are trigrams of the page's annotated main content (WCXB's
tokenizer); its weight is the square root of its word count (the score is word F1: a big block
matters more, but a page of one huge block should not decide the model alone). The model is an
L2-regularised logistic regression fitted by Newton's method in float64 numpy: deterministic,
no random start.

Cross-validation: the dev pages are split in two by a CRC-32 of their domain (a site never on
both sides); a model fitted on one half extracts the other, and the pages' word F1 (WCXB's
``evaluate.py``) is compared with the rules alone on the same pages. The shipped model is then
fitted on all of dev.

Usage::

    python benchmarks/train_blocks.py --wcxb /work/data/wcxb [--write src/neardup/text/blocks.json]
        [--json benchmarks/results/blocks-cv.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import wcxb  # noqa: E402

L2 = 1.0


def _grams(words):
    """The word trigrams of a text (its words when it has fewer than three): a block of common
    words ("the", "and") is not content because its words are, its phrases must be."""
    if len(words) < 3:
        return [tuple(words)] if words else []
    return [tuple(words[k:k + 3]) for k in range(len(words) - 2)]


def collect(pages, gts, ev):
    """Feature rows, labels and weights of every page's blocks, and the page of each row."""
    from neardup.text import html as H
    from neardup.text import html_blocks as B
    from neardup.text.html_scan import lines

    rows, labels, weights, page_of = [], [], [], []
    state = {}

    def capture(root):
        nodes, feats = B.blocks(root)
        truth = state["truth"]
        for node, f in zip(nodes, feats):
            words = ev.tokenize(lines(node.text_lexbor()))
            if not words:
                continue
            grams = _grams(words)
            inside = sum(1 for g in grams if g in truth)
            rows.append(f)
            labels.append(1.0 if 2 * inside >= len(grams) else 0.0)
            weights.append(len(words) ** 0.5)
            page_of.append(state["page"])
        return False

    saved, B.classify_blocks = B.classify_blocks, capture
    saved_flag, H.USE_CLASSIFIER = H.USE_CLASSIFIER, True
    try:
        for k, (data, gt) in enumerate(zip(pages, gts)):
            state["truth"] = set(_grams(ev.tokenize(gt["main_content"])))
            state["page"] = k
            H.extract_text(data, "main")
    finally:
        B.classify_blocks, H.USE_CLASSIFIER = saved, saved_flag
    return np.asarray(rows, dtype=np.float64), np.asarray(labels), np.asarray(weights), np.asarray(page_of)


def fit(X, y, w, l2=L2, iterations=30):
    """Weighted logistic regression by Newton's method (the bias is not regularised)."""
    beta = np.zeros(X.shape[1])
    reg = np.full(X.shape[1], l2)
    reg[0] = 0.0
    for _ in range(iterations):
        z = X @ beta
        p = 1.0 / (1.0 + np.exp(-z))
        g = X.T @ (w * (p - y)) + reg * beta
        h = (X * (w * p * (1 - p))[:, None]).T @ X + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def f1_with(model, pages, gts, ev):
    from neardup.text import html as H
    from neardup.text import html_blocks as B

    saved = (B._model, H.USE_CLASSIFIER)
    B._model, H.USE_CLASSIFIER = model, model is not None
    try:
        texts = [H.extract_text(d, "main") for d in pages]
    finally:
        B._model, H.USE_CLASSIFIER = saved
    return texts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wcxb", default="/work/data/wcxb")
    ap.add_argument("--write", default=None, help="write the model fitted on all of dev here")
    ap.add_argument("--json", default=None)
    ap.add_argument("--thresholds", default="-1.0,-0.5,0.0,0.5")
    args = ap.parse_args(argv)
    root = Path(args.wcxb)
    ids, pages, gt, ev = wcxb.load_split(root, "dev")
    meta = json.loads((root / "metadata.json").read_text())["files"]
    fold = np.asarray([zlib.crc32(meta[i]["domain"].encode()) & 1 for i in ids])
    gts = [gt[i] for i in ids]
    t0 = time.time()
    X, y, w, page_of = collect(pages, gts, ev)
    print(f"{len(y)} blocks from {len(ids)} pages, {y.mean():.3f} content, {time.time() - t0:.0f} s", flush=True)
    from neardup.text.html_blocks import BLOCK_FEATURES

    result = {"blocks": int(len(y)), "pages": len(ids), "features": list(BLOCK_FEATURES), "cv": {}}
    base = f1_with(None, pages, gts, ev)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    cv_texts = {t: [None] * len(ids) for t in thresholds}
    for k in (0, 1):
        train = fold[page_of] != k
        beta = fit(X[train], y[train], w[train])
        held = [j for j in range(len(ids)) if fold[j] == k]
        for t in thresholds:
            texts = f1_with((beta, t), [pages[j] for j in held], [gts[j] for j in held], ev)
            for j, text in zip(held, texts):
                cv_texts[t][j] = text
    result["cv"]["rules"] = wcxb.score(ids, base, gt, ev)
    print("rules      ", {k: v["f1"] for k, v in result["cv"]["rules"].items()})
    for t in thresholds:
        s = wcxb.score(ids, cv_texts[t], gt, ev)
        result["cv"][f"classifier_threshold_{t}"] = s
        print(f"thr {t:+.1f}   ", {k: v["f1"] for k, v in s.items()}, flush=True)
    best = max(thresholds, key=lambda t: result["cv"][f"classifier_threshold_{t}"]["all"]["f1"])
    beta = fit(X, y, w)
    result["chosen_threshold"] = best
    if args.write:
        spec = {"about": "Block classifier of neardup's main-content extraction: logistic regression, "
                         "fitted by benchmarks/train_blocks.py on WCXB's dev split (CC-BY-4.0)",
                "features": list(BLOCK_FEATURES), "weights": [round(float(b), 6) for b in beta],
                "threshold": best, "l2": L2, "blocks": int(len(y)), "pages": len(ids)}
        Path(args.write).write_text(json.dumps(spec, indent=1) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
