"""neardup: find exact copies, near-copies and contained pages in documents and web crawls.

The public API is re-exported here; submodules are private unless documented. Names are
imported on first use (PEP 562), so that ``import neardup`` is cheap and the command line can
configure the process (numpy's thread pools) before numpy is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

#: public name -> the module that defines it
_EXPORTS = {
    "UnionFind": ".cluster.unionfind",
    "ConfigError": ".errors", "FormatError": ".errors", "IncompatibleSketchError": ".errors",
    "InputError": ".errors", "MissingDependencyError": ".errors", "NeardupError": ".errors",
    "StoreError": ".errors",
    "ExactIndex": ".exact.fingerprint", "fingerprint": ".exact.fingerprint",
    "containment": ".exact.similarity", "cosine": ".exact.similarity", "jaccard": ".exact.similarity",
    "hash64": ".hashing",
    "MinHashLSH": ".lsh.banding", "band_keys": ".lsh.banding",
    "SimhashIndex": ".lsh.hamming",
    "Banding": ".lsh.params", "optimal_banding": ".lsh.params", "probability": ".lsh.params",
    "threshold": ".lsh.params",
    "MinHashParams": ".params", "NormalizeParams": ".params", "ShingleParams": ".params",
    "shingle_ids": ".shingle", "shingle_set": ".shingle", "shingles": ".shingle",
    "Estimate": ".sketch.estimate",
    "MinHash": ".sketch.minhash",
    "AffineModPrime": ".sketch.permutations", "MultiplyShift32": ".sketch.permutations",
    "MultiplyShift64": ".sketch.permutations",
    "BottomS": ".sketch.samples", "ModM": ".sketch.samples",
    "SimHash": ".sketch.simhash", "hamming": ".sketch.simhash",
    "normalize": ".text.normalize",
    "tokenize": ".text.tokenize",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from .cluster.unionfind import UnionFind
    from .errors import (ConfigError, FormatError, IncompatibleSketchError, InputError, MissingDependencyError,
                         NeardupError, StoreError)
    from .exact.fingerprint import ExactIndex, fingerprint
    from .exact.similarity import containment, cosine, jaccard
    from .hashing import hash64
    from .lsh.banding import MinHashLSH, band_keys
    from .lsh.hamming import SimhashIndex
    from .lsh.params import Banding, optimal_banding, probability, threshold
    from .params import MinHashParams, NormalizeParams, ShingleParams
    from .shingle import shingle_ids, shingle_set, shingles
    from .sketch.estimate import Estimate
    from .sketch.minhash import MinHash
    from .sketch.permutations import AffineModPrime, MultiplyShift32, MultiplyShift64
    from .sketch.samples import BottomS, ModM
    from .sketch.simhash import SimHash, hamming
    from .text.normalize import normalize
    from .text.tokenize import tokenize
