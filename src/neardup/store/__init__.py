"""The persistent "seen before?" index: :class:`SeenIndex` on one SQLite file.

See :mod:`neardup.store.sqlite` for the answer shape and ``docs/store.md`` for the file format.
"""

from .sqlite import SCHEMA_VERSION, SeenIndex

__all__ = ["SCHEMA_VERSION", "SeenIndex"]
