"""Banding math: how likely a pair is compared, and how to choose bands and rows.

A sketch of ``b * r`` values is cut into ``b`` bands of ``r`` rows; two documents become a
candidate pair when they agree in every row of at least one band. A pair of resemblance J is
compared with probability ``1 - (1 - J**r)**b``; the curve rises steeply near ``(1/b)**(1/r)``.

Choosing (b, r) for a target threshold t minimises
``fp_weight * FP + fn_weight * FN``, where FP is the area under the curve below t (pairs
compared that should not be) and FN the area above the curve beyond t (pairs missed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_float, check_int

_GRID = 2001


def probability(j: float, bands: int, rows: int) -> float:
    """Probability that a pair of resemblance ``j`` agrees in at least one band."""
    return 1.0 - (1.0 - j**rows) ** bands


def threshold(bands: int, rows: int) -> float:
    """The resemblance where the S-curve rises most steeply, about ``(1/b)**(1/r)``."""
    return (1.0 / bands) ** (1.0 / rows)


def error_areas(t: float, bands: int, rows: int) -> tuple[float, float]:
    """(false-positive area below ``t``, false-negative area above ``t``) of the S-curve."""
    lo = np.linspace(0.0, t, _GRID)
    hi = np.linspace(t, 1.0, _GRID)
    fp = np.trapezoid(1.0 - (1.0 - lo**rows) ** bands, lo)
    fn = np.trapezoid((1.0 - hi**rows) ** bands, hi)
    return float(fp), float(fn)


@dataclass(frozen=True, kw_only=True, slots=True)
class Banding:
    """Bands and rows with what they imply at a target threshold."""

    bands: int
    rows: int
    num_perm: int
    target: float | None = None
    false_positive_area: float | None = None
    false_negative_area: float | None = None

    @property
    def threshold(self) -> float:
        return threshold(self.bands, self.rows)

    def probability(self, j: float) -> float:
        return probability(j, self.bands, self.rows)

    def explain(self) -> str:
        lines = [f"{self.bands} bands x {self.rows} rows of a {self.num_perm}-value sketch; "
                 f"S-curve threshold (1/b)^(1/r) = {self.threshold:.3f}"]
        if self.target is not None:
            lines.append(f"target {self.target:g}: false-positive area {self.false_positive_area:.4f}, "
                         f"false-negative area {self.false_negative_area:.4f}")
        lines.append("J:     " + " ".join(f"{j:6.2f}" for j in (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)))
        lines.append("P:     " + " ".join(f"{self.probability(j):6.4f}" for j in (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)))
        return "\n".join(lines)


def banding(num_perm: int, bands: int) -> Banding:
    """The banding with ``bands`` bands of ``num_perm / bands`` rows (bands must divide num_perm)."""
    check_int("num_perm", num_perm, 1, None, owner="banding")
    check_int("bands", bands, 1, num_perm, owner="banding")
    if num_perm % bands:
        from ..errors import ConfigError

        divisors = [d for d in range(1, num_perm + 1) if num_perm % d == 0]
        raise ConfigError(f"{bands} bands do not divide num_perm {num_perm}: use one of {divisors}")
    return Banding(bands=bands, rows=num_perm // bands, num_perm=num_perm)


def optimal_banding(target: float, num_perm: int, *, fp_weight: float = 0.5, fn_weight: float = 0.5) -> Banding:
    """The (b, r) with ``b * r <= num_perm`` minimising the weighted error areas at ``target``.

    Ties are broken towards more rows (fewer candidate pairs), then fewer bands.
    """
    check_float("threshold", target, 0.0, 1.0, owner="optimal_banding", closed="neither")
    check_int("num_perm", num_perm, 1, None, owner="optimal_banding")
    best = None
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp, fn = error_areas(target, b, r)
            cost = fp_weight * fp + fn_weight * fn
            key = (round(cost, 12), -r, b)
            if best is None or key < best[0]:
                best = (key, b, r, fp, fn)
    _, b, r, fp, fn = best
    return Banding(bands=b, rows=r, num_perm=num_perm, target=target, false_positive_area=fp, false_negative_area=fn)


def recall_banding(target: float, num_perm: int, *, min_recall: float = 0.99) -> Banding:
    """The banding with the most rows (fewest false candidates) whose probability at ``target``
    is at least ``min_recall``, using as many bands as fit in ``num_perm``.

    This is the choice when every candidate is verified exactly afterwards: a false candidate
    costs one verification, a missed pair is lost for good.
    """
    check_float("threshold", target, 0.0, 1.0, owner="recall_banding", closed="neither")
    check_int("num_perm", num_perm, 1, None, owner="recall_banding")
    best = None
    for r in range(1, num_perm + 1):
        b = num_perm // r
        if probability(target, b, r) >= min_recall:
            best = (b, r)
    if best is None:
        best = (num_perm, 1)
    b, r = best
    fp, fn = error_areas(target, b, r)
    return Banding(bands=b, rows=r, num_perm=num_perm, target=target, false_positive_area=fp, false_negative_area=fn)
