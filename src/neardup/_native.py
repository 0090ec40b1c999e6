"""Bridge to the compiled kernel; pure Python falls back where it is missing."""

from __future__ import annotations


def available() -> bool:
    return False
