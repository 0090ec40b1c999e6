"""Estimates with their error: every estimator returns bounds, not a bare float."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def binomial_stderr(p: float, n: int) -> float:
    """Standard error of a proportion estimated from ``n`` independent trials: sqrt(p(1-p)/n)."""
    if n <= 0:
        return float("nan")
    return math.sqrt(max(p * (1 - p), 0.0) / n)


def wilson_interval(successes: float, n: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; stays inside [0, 1] and is sensible at 0 and 1."""
    if n <= 0:
        return 0.0, 1.0
    z = z_for(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Estimate:
    """An estimate with its standard error and a confidence interval.

    ``samples`` is the number of independent trials the estimate is a proportion of (the sketch
    size for k-mins and bottom-s, the sample size for mod-m).
    """

    value: float
    stderr: float
    lower: float
    upper: float
    confidence: float
    samples: int

    @classmethod
    def from_proportion(cls, successes: float, n: int, confidence: float = 0.95) -> "Estimate":
        value = successes / n if n else 0.0
        lo, hi = wilson_interval(successes, n, confidence)
        return cls(value, binomial_stderr(value, n), lo, hi, confidence, n)

    def __float__(self) -> float:
        return self.value

    def as_dict(self) -> dict:
        return {"value": self.value, "stderr": self.stderr, "lower": self.lower, "upper": self.upper,
                "confidence": self.confidence, "samples": self.samples}
