"""The report's figures with matplotlib (Agg, no display), each saved as PNG and SVG.

Figures are built on :class:`matplotlib.figure.Figure` directly, without pyplot, so nothing global
is touched. SVG output is made reproducible (fixed hash salt, no date), so the same report gives
the same files.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

import numpy as np

from ..errors import require
from ..lsh.params import probability

WIDTH, HEIGHT = 7.0, 4.2
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


@dataclass
class SavedFigure:
    name: str
    title: str
    caption: str
    png: bytes
    svg: str
    png_path: str | None = None
    svg_path: str | None = None


def _matplotlib():
    mpl = require("matplotlib", "report")
    mpl.rcParams["svg.hashsalt"] = "neardup-report"
    mpl.rcParams["svg.fonttype"] = "path"  # text as outlines: the SVG needs no font
    from matplotlib.figure import Figure

    return Figure


def _new(width=WIDTH, height=HEIGHT):
    Figure = _matplotlib()
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.add_subplot()


def _save(fig, name: str, title: str, caption: str, out_dir: str | None) -> SavedFigure:
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    saved = SavedFigure(name, title, caption, png.getvalue(), svg.getvalue())
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        saved.png_path = os.path.join(out_dir, f"{name}.png")
        saved.svg_path = os.path.join(out_dir, f"{name}.svg")
        with open(saved.png_path, "wb") as fh:
            fh.write(saved.png)
        with open(saved.svg_path, "w", encoding="utf-8") as fh:
            fh.write(saved.svg)
    return saved


def convergence_figure(fig1: dict, name: str, title: str, out_dir: str | None) -> SavedFigure:
    """The seed's Figure 1: 30 runs of the MinHash estimate as the number of functions m grows."""
    fig, ax = _new()
    s = fig1["series"]
    m = np.asarray(s["m"])
    j = fig1["jaccard"]
    runs = fig1.get("_runs")
    if runs is not None:
        for row in runs:
            ax.plot(m, row, color="#999999", lw=0.4, alpha=0.35, zorder=1)
    ax.fill_between(m, s["q25"], s["q75"], color=COLORS[0], alpha=0.25, lw=0, label="middle half of the runs", zorder=2)
    ax.plot(m, s["median"], color=COLORS[0], lw=1.8, label=f"median of {fig1['runs']} runs", zorder=3)
    err = np.asarray(s["stderr"])
    ax.axhline(j, color="black", lw=1.0, label=f"exact J = {j:.3f}", zorder=3)
    ax.plot(m, j + err, color="black", ls="--", lw=1.0, label="J ± one standard error", zorder=3)
    ax.plot(m, np.clip(j - err, 0, None), color="black", ls="--", lw=1.0, zorder=3)
    ax.set_xscale("log")
    ax.set_xlim(1, m[-1])
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if t <= m[-1]]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("number of hash functions m")
    ax.set_ylabel("MinHash estimate of J")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right" if j > 0.5 else "upper right", fontsize=8, framealpha=0.9)
    ax.grid(alpha=0.3)
    last = fig1["at"][-1]
    caption = (f"{fig1['runs']} runs, each with its own random hash functions, for {fig1['pair'][0]} and "
               f"{fig1['pair'][1]} ({fig1['text'].replace('_', ' ')}). At m = {last['m']} the median estimate is "
               f"{last['median']:.3f} and the middle half of the runs lies between {last['q25']:.3f} and "
               f"{last['q75']:.3f}, around the exact J = {j:.3f} (standard error {last['stderr']:.3f}).")
    return _save(fig, name, title, caption, out_dir)


def scurve_figure(fig2: dict, name: str, out_dir: str | None, title: str = "Figure 2: banding S-curves") -> SavedFigure:
    """The seed's Figure 2: probability that a pair is compared, 1 - (1 - J^r)^b."""
    fig, ax = _new()
    js = np.linspace(0, 1, 501)
    for c, color in zip(fig2["configs"], COLORS):
        p = [probability(x, c["bands"], c["rows"]) for x in js]
        used = c["used"]
        label = (f"{c['bands']} bands of {c['rows']}" + (f" (chosen for {c['target']:g})" if used else "")
                 + f", threshold {c['threshold']:.2f}")
        ax.plot(js, p, color=color, lw=2.4 if used else 1.5, ls="-" if not used else (0, (5, 2)), label=label)
        ax.axvline(c["threshold"], color=color, lw=0.6, ls=":")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("Jaccard coefficient J of a pair")
    ax.set_ylabel("probability that the pair is compared")
    ax.set_title("Banding S-curves: 1 - (1 - J^r)^b", fontsize=10)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    ax.grid(alpha=0.3)
    used = fig2["configs"][-1]
    caption = ("Probability that a pair of pages becomes a candidate, for the seed's three bandings of a "
               f"200-value sketch and for the banding chosen for --threshold {used['target']:g} with "
               f"{used['num_perm']} values ({used['bands']} bands of {used['rows']} rows). Dotted lines: "
               "each curve's threshold (1/b)^(1/r).")
    return _save(fig, name, title, caption, out_dir)


def jaccard_histogram(whole: np.ndarray, main: np.ndarray, name: str, out_dir: str | None) -> SavedFigure:
    """Sampled-pair Jaccard, whole page against main content."""
    fig, ax = _new()
    bins = np.linspace(0, 1, 51)
    ax.hist(whole, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[1], label=f"whole page (mean {np.mean(whole):.3f})")
    ax.hist(main, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[0], label=f"main content (mean {np.mean(main):.3f})")
    ax.hist(whole, bins=bins, histtype="step", color=COLORS[1], lw=1.2)
    ax.hist(main, bins=bins, histtype="step", color=COLORS[0], lw=1.2)
    ax.set_yscale("log")
    ax.set_xlim(0, 1)
    ax.set_xlabel("exact Jaccard coefficient of a sampled pair")
    ax.set_ylabel("pairs (log scale)")
    ax.set_title("Sampled pairs: whole page against main content", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    caption = (f"Exact Jaccard of {len(whole)} sampled pairs. Navigation, sidebars and footers shared by "
               "many pages move the whole-page distribution to the right of the main-content one.")
    return _save(fig, name, "Figure 3: Jaccard of sampled pairs", caption, out_dir)


def hamming_histogram(whole: np.ndarray, main: np.ndarray, name: str, out_dir: str | None) -> SavedFigure:
    """Simhash Hamming distances of the sampled pairs."""
    fig, ax = _new()
    bins = np.arange(0, 66) - 0.5
    ax.hist(whole, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[1], label="whole page")
    if len(main):
        ax.hist(main, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[0], label="main content")
    ax.axvline(3.5, color="black", ls="--", lw=1, label="3 bits (Manku et al.)")
    ax.set_xlim(-0.5, 64.5)
    ax.set_xlabel("simhash Hamming distance (of 64 bits)")
    ax.set_ylabel("pairs")
    ax.set_title("Simhash distances of sampled pairs", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    caption = ("64-bit simhash of word counts; unrelated pages differ in about 32 bits, near-copies in a few. "
               "Pairs left of the dashed line would be near-duplicates under Manku, Jain and Das Sarma's rule.")
    return _save(fig, name, "Figure 4: simhash distances", caption, out_dir)


def boilerplate_histogram(whole: np.ndarray, main: np.ndarray, fraction: float, name: str,
                          out_dir: str | None) -> SavedFigure:
    """Per-page share of shingles that are site boilerplate."""
    fig, ax = _new()
    bins = np.linspace(0, 1, 41)
    ax.hist(whole, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[1], label=f"whole page (mean {np.mean(whole):.3f})")
    if len(main):
        ax.hist(main, bins=bins, histtype="stepfilled", alpha=0.35, color=COLORS[0],
                label=f"main content (mean {np.mean(main):.3f})")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of a page's shingles found on more than {fraction:.0%} of the pages")
    ax.set_ylabel("pages")
    ax.set_title("Boilerplate share per page", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    caption = ("How much of each page is site template: the fraction of its distinct shingles that occur on more "
               f"than {fraction:.0%} of all pages, before and after main-content extraction.")
    return _save(fig, name, "Figure 5: boilerplate share", caption, out_dir)


def site_figures(metrics: dict, out_dir: str | None) -> list[SavedFigure]:
    s = metrics["_series"]
    f1 = metrics["figure1"]
    return [
        convergence_figure(f1, "figure1_minhash_convergence",
                           "Figure 1: MinHash estimates of the most similar pair", out_dir),
        scurve_figure(metrics["figure2"], "figure2_banding_scurves", out_dir),
        jaccard_histogram(s["jaccard_whole"], s["jaccard_main"], "figure3_jaccard_histogram", out_dir),
        hamming_histogram(s["hamming_whole"], s["hamming_main"], "figure4_simhash_histogram", out_dir),
        boilerplate_histogram(s["boilerplate_whole"], s["boilerplate_main"],
                              metrics["boilerplate_share"]["fraction"], "figure5_boilerplate_share", out_dir),
    ]


def seed_figures(seed: dict, out_dir: str | None) -> list[SavedFigure]:
    return [
        convergence_figure(seed["figure1"], "seed_figure1_minhash_convergence",
                           "Seed Figure 1: MinHash estimates of J(d1, d2) = 1/3", out_dir),
        scurve_figure(seed["figure2"], "seed_figure2_banding_scurves", out_dir,
                      title="Seed Figure 2: banding S-curves of a 200-value sketch"),
    ]
