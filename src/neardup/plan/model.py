"""The planner's model: pairs scaled by the exponent their two sample counts show, memory by
its parts (see :mod:`neardup.plan`, step 3)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..config import DedupConfig
from ..stages.exact import FingerprintTable
from ..stages.grouping import BYTES_PER_RECORD
from .engine import EngineRules
from .measure import MIB

__all__ = ["AnonymousModel", "FileBackedModel", "fit_line", "scale_pairs"]


def fit_line(n1: float, y1: float, n2: float, y2: float) -> tuple[float, float]:
    """``(intercept, slope)`` of the line through the two runs, both 0 or more (where noise made
    the larger run cheaper, no trend to trust: proportion to the larger run)."""
    if n2 > n1 and y2 >= y1:
        slope = (y2 - y1) / (n2 - n1)
        intercept = y1 - slope * n1
        if intercept >= 0:
            return intercept, slope
    return 0.0, (y2 / n2 if n2 else 0.0)


def _exponent(f1: float, p1: float, f2: float, p2: float) -> float:
    """The exponent ``e`` of ``pairs(f) ~ f**e`` through the two runs, kept within [1, 2]."""
    if p2 <= 0 or f2 <= f1:
        return 1.0
    if p1 <= 0:
        return 2.0
    return min(2.0, max(1.0, math.log(p2 / p1) / math.log(f2 / f1)))


def scale_pairs(f1: float, p1: int, f2: float, p2: int) -> dict:
    """Pairs of the whole corpus from ``p1`` and ``p2`` found in nested samples of fractions
    ``f1 < f2`` of it.

    Copies next to each other in the input (both in one sampled piece) are found in proportion
    to ``f``; copies spread over the corpus in proportion to ``f**2``. The exponent ``e`` of
    ``pairs(f) ~ f**e`` is read from the two counts (``log(p2/p1) / log(f2/f1)``, kept within
    [1, 2]) and the larger count scaled by ``(1/f2)**e``. A mix of both kinds scales between the
    two; the single exponent then under-predicts somewhat (it fits the mix at ``f2``), which the
    range covers when the counts are small. Returns ``predicted``, ``low`` and ``high`` (the
    counts' Poisson error, two standard deviations, carried through the exponent; a count of 0
    stands for up to 3, the "rule of three"), ``exponent`` and ``exponent_sd``.
    """
    if f2 >= 1.0:
        return {"predicted": float(p2), "low": float(p2), "high": float(p2), "exponent": None, "exponent_sd": None}
    e = _exponent(f1, p1, f2, p2)
    sd = (math.sqrt(1 / p1 + 1 / p2) / math.log(f2 / f1)) if p1 > 0 and p2 > 0 and f2 > f1 else 0.5
    up = 1 / f2
    low = max(0.0, p2 - 2 * math.sqrt(p2)) * up ** max(1.0, e - 2 * sd)
    high = (p2 + 2 * math.sqrt(p2) + (3 if p2 == 0 else 0)) * up ** min(2.0, e + 2 * sd if p2 else 2.0)
    predicted = p2 * up**e
    return {"predicted": predicted, "low": min(low, predicted), "high": max(high, predicted), "exponent": e,
            "exponent_sd": sd}


@dataclass
class AnonymousModel:
    """A run's peak anonymous memory by its parts, calibrated on one of the sample's runs:

    ``fixed`` (the interpreter, the engine, batches in flight: the run's peak less its parts)
    + the per-record arrays (the engine's ``record_array_bytes``) + the sketches held
    within the budget (``held_per_record`` each, from the run with nothing held: all of it
    spilled) + the largest of what the candidate stage holds at one time (minhash): the exact
    pass's fingerprint table at its last growth
    (:meth:`~neardup.stages.exact.FingerprintTable.peak_bytes_for`, let go before the
    candidates), the band keys made a slice of ``band_rows`` signatures at a time (the slice
    widened to 64-bit values when the engine keeps 32-bit ones, and its keys: ``band_row_bytes``
    a row) beside the keys held so far (within half the grouping's budget), and the band keys
    grouped within the grouping's budget.

    The band-key slice is the part a spilling run's memory grows by until its records reach
    ``band_rows``: without it, the model calibrated on a 16,000-record sample said 75-83 MB
    for an 80,000-record run with nothing held that took 136, and its advice, from a line
    through the run with nothing held, said 235 MB for a run that took 136."""

    engine: EngineRules
    fixed: float
    held_per_record: float
    id_bytes: float
    bands: int
    band_row_bytes: float

    @classmethod
    def of(cls, engine: EngineRules, run: dict, unheld: dict, config: DedupConfig) -> "AnonymousModel":
        """The model with its ``fixed`` cost from ``run`` (a sample run's measurements)."""
        held = unheld["spill_bytes"] / unheld["records"] if unheld["records"] else 0.0
        id_bytes = run.get("id_bytes_per_record")
        bands = config.banding().bands if config.method == "minhash" else 0
        widened = 8 * config.minhash.num_perm if bands and engine.signature_value_bytes(config) < 8 else 0
        model = cls(engine, 0.0, held, 16.0 if id_bytes is None else float(id_bytes), bands,
                    float(widened + 8 * bands))
        return model.calibrated_on(run)

    def calibrated_on(self, run: dict) -> "AnonymousModel":
        """This model with its ``fixed`` cost from ``run``: its peak less its parts."""
        fixed = max(0.0, run["peak_anonymous_bytes"] - self.parts(run["records"], run["in_memory_mb"]))
        return dataclasses.replace(self, fixed=fixed)

    def parts(self, n: int, budget_mb: float) -> float:
        budget = budget_mb * MIB
        grouping_budget = max(budget_mb, self.engine.grouping_min_mb) * MIB
        grouping = min(grouping_budget, BYTES_PER_RECORD * self.bands * n)
        band_slice = (min(n, self.engine.band_rows) * self.band_row_bytes
                      + min(8 * self.bands * n, grouping_budget / 2)) if self.bands else 0.0
        return (self.engine.record_array_bytes(n, self.id_bytes) + min(budget, self.held_per_record * n)
                + max(FingerprintTable.peak_bytes_for(n), band_slice, grouping))

    def at(self, n: int, budget_mb: float) -> float:
        return self.fixed + self.parts(n, budget_mb)

    def array_bytes_per_record(self, n: int) -> float:
        return self.engine.record_array_bytes(n, self.id_bytes) / n if n else 0.0

    def describe(self, n: int, budget_mb: float) -> str:
        return (f"by parts: {self.fixed / MIB:.0f} MB fixed (the whole sample's run less its parts) + "
                f"{self.array_bytes_per_record(n):,.0f} bytes/record of arrays + {self.held_per_record:,.0f} "
                f"bytes/record of sketches within {budget_mb} MB + the largest of the fingerprint table, the band keys "
                f"made a slice of {self.engine.band_rows:,} signatures at a time ({self.band_row_bytes:,.0f} "
                f"bytes a row) and the band-key grouping; the rest of the resident memory is file-backed pages")


@dataclass
class FileBackedModel:
    """A run's file-backed resident pages at their most: ``fixed`` (the interpreter's and the
    libraries' mapped code, from the smallest sample run less its own mapped spill) + the
    sketches spilled past the budget (``held_per_record`` each, as in :class:`AnonymousModel`),
    of which the engine holds at most the engine's ``mapped_resident_bound`` resident
    (rows of ``held_per_record`` bytes: a signature and shingle ids)."""

    engine: EngineRules
    fixed: float
    held_per_record: float

    @classmethod
    def of(cls, engine: EngineRules, smallest: dict, budget_mb: float, held_per_record: float) -> "FileBackedModel":
        model = cls(engine, 0.0, held_per_record)
        file_backed = max(0.0, smallest["peak_bytes"] - smallest["peak_anonymous_bytes"])
        model.fixed = max(0.0, file_backed - model.mapped(smallest["records"], budget_mb))
        return model

    def bound(self) -> int:
        return self.engine.mapped_resident_bound(self.held_per_record)

    def mapped(self, n: int, budget_mb: float) -> float:
        return min(max(0.0, self.held_per_record * n - budget_mb * MIB), self.bound())

    def at(self, n: int, budget_mb: float) -> float:
        return self.fixed + self.mapped(n, budget_mb)

    def describe(self, n: int, budget_mb: float) -> str:
        return (f"the peak anonymous memory + {self.fixed / MIB:.0f} MB of libraries + the spilled sketches "
                f"mapped at once ({self.mapped(n, budget_mb) / MIB:,.0f} MB: what spills past {budget_mb} MB, "
                f"at most {self.bound() / MIB:,.0f} MB, the engine's stretch); an upper bound")
