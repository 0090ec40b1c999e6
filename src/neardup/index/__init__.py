"""In-memory indexes: what users add documents to and query one at a time.

- :class:`MinHashLSH` (:mod:`.minhash_lsh`): band tables of MinHash sketches;
- :class:`ExactIndex` (:mod:`.exact`): content fingerprints, "content seen?";
- :class:`SimhashIndex` (:mod:`.simhash`): Manku-style permuted tables of 64-bit simhashes, with
  its layouts and planner in :mod:`.simhash_layout` and its file format in :mod:`.simhash_file`.

The persistent SQLite index for crawlers is :mod:`neardup.store`; banding theory is :mod:`neardup.lsh`.
"""

from .exact import ExactIndex
from .minhash_lsh import MinHashLSH
from .simhash import SimhashIndex, brute_force_pairs
from .simhash_file import SimhashIndexFormatError
from .simhash_layout import format_plan, plan_layout

__all__ = ["ExactIndex", "MinHashLSH", "SimhashIndex", "SimhashIndexFormatError", "brute_force_pairs",
           "format_plan", "plan_layout"]
