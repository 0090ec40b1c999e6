"""What the planner needs of the engine it predicts, handed to it by the engine's caller.

The planner runs the engine on samples and scales what it measured by the engine's own rules
for memory; it imports no engine itself (the engine imports the planner's sampling for its disk
check), so the caller passes them in as :class:`EngineRules`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..config import DedupConfig

__all__ = ["EngineRules"]


@dataclass(frozen=True)
class EngineRules:
    """The engine's run and its memory rules. Every callable is a module-level function (or a
    class), so that the rules pickle by name into the process a sample run takes place in.

    ``run(paths, output, config, *, jobs, in_memory_mb, work_dir, write_kept)``: one dedup run,
    its ``summary.json`` as a dict. ``record_array_bytes(records, id_bytes)``: the bytes of the
    per-record arrays after ``records`` records with ids of ``id_bytes`` bytes (they grow with
    every record whatever the budget). ``grouping_min_mb``: the least memory the band-key
    grouping is given, whatever the budget. ``mapped_resident_bound(row_bytes)``: the most
    bytes of spilled sketches the engine keeps mapped at once, for rows of ``row_bytes``.
    ``band_rows``: the signatures the engine turns into band keys at a time.
    ``signature_value_bytes(config)``: the bytes the engine keeps a signature value in."""

    run: Callable[..., dict]
    record_array_bytes: Callable[[int, float], int]
    grouping_min_mb: float
    mapped_resident_bound: Callable[[float], int]
    band_rows: int
    signature_value_bytes: Callable[[DedupConfig], int]
