"""neardup: find exact copies, near-copies and contained pages in documents and web crawls.

The public API is re-exported here and listed, name by name, in ``docs/api.md`` (a test keeps
the two equal); submodules are private unless documented. Names are imported on first use
(PEP 562), so that ``import neardup`` is cheap and the command line can configure the process
(numpy's thread pools) before numpy is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

#: public name -> the module that defines it
_EXPORTS = {
    # a whole dedup, in process and on files
    "dedup": ".api", "DedupResult": ".api",
    "DedupConfig": ".config",
    "Deduplicator": ".engines.local.run",
    "signature_matrix": ".stages.sketch",
    # the persistent "seen before?" index
    "SeenIndex": ".store.sqlite",
    # configuration
    "MinHashParams": ".params", "NormalizeParams": ".params", "ShingleParams": ".params",
    # text to shingles
    "normalize": ".text.normalize", "tokenize": ".text.tokenize",
    "shingles": ".shingle", "shingle_ids": ".shingle", "hash64": ".hashing",
    # exact measures and fingerprints
    "fingerprint": ".exact.fingerprint",
    "jaccard": ".exact.similarity", "containment": ".exact.similarity", "cosine": ".exact.similarity",
    # sketches and their estimates
    "MinHash": ".sketch.minhash", "BottomS": ".sketch.samples", "ModM": ".sketch.samples",
    "SimHash": ".sketch.simhash", "hamming": ".sketch.simhash", "Estimate": ".sketch.estimate",
    # banding and in-memory indexes
    "Banding": ".lsh.params", "optimal_banding": ".lsh.params", "probability": ".lsh.params",
    "band_keys": ".lsh.banding",
    "MinHashLSH": ".index", "ExactIndex": ".index", "SimhashIndex": ".index",
    "UnionFind": ".cluster.unionfind",
    # errors
    "NeardupError": ".errors", "ConfigError": ".errors", "InputError": ".errors", "FormatError": ".errors",
    "IncompatibleSketchError": ".errors", "MissingDependencyError": ".errors", "StoreError": ".errors",
}

#: names exported before 0.2, still importable with a DeprecationWarning naming their home
_MOVED = {
    "threshold": ("neardup.lsh.params", "threshold", "Banding.threshold"),
    "shingle_set": ("neardup.shingle", "shingle_set", None),
    "AffineModPrime": ("neardup.sketch.permutations", "AffineModPrime", "MinHashParams(family='affine61')"),
    "MultiplyShift32": ("neardup.sketch.permutations", "MultiplyShift32", "MinHashParams(family='mulshift32')"),
    "MultiplyShift64": ("neardup.sketch.permutations", "MultiplyShift64", "MinHashParams(family='mulshift64')"),
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        if name in _MOVED:
            import warnings

            home, attr, instead = _MOVED[name]
            warnings.warn(f"neardup.{name} is no longer exported: import it from {home}"
                          + (f", or use {instead}" if instead else ""), DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(home), attr)
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from .api import DedupResult, dedup
    from .cluster.unionfind import UnionFind
    from .config import DedupConfig
    from .errors import (ConfigError, FormatError, IncompatibleSketchError, InputError, MissingDependencyError,
                         NeardupError, StoreError)
    from .exact.fingerprint import fingerprint
    from .exact.similarity import containment, cosine, jaccard
    from .hashing import hash64
    from .index import ExactIndex, MinHashLSH, SimhashIndex
    from .lsh.banding import band_keys
    from .lsh.params import Banding, optimal_banding, probability
    from .params import MinHashParams, NormalizeParams, ShingleParams
    from .engines.local.run import Deduplicator
    from .shingle import shingle_ids, shingles
    from .sketch.estimate import Estimate
    from .sketch.minhash import MinHash
    from .sketch.samples import BottomS, ModM
    from .sketch.simhash import SimHash, hamming
    from .stages.sketch import signature_matrix
    from .store.sqlite import SeenIndex
    from .text.normalize import normalize
    from .text.tokenize import tokenize
