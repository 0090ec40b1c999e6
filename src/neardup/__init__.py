"""neardup: find exact copies, near-copies and contained pages in documents and web crawls.

The public API is re-exported here; submodules are private unless documented.
"""

from ._version import __version__
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
from .sketch.permutations import AffineModPrime, MultiplyShift64
from .sketch.samples import BottomS, ModM
from .sketch.simhash import SimHash, hamming
from .text.normalize import normalize
from .text.tokenize import tokenize

__all__ = [
    "AffineModPrime", "Banding", "BottomS", "ConfigError", "Estimate", "ExactIndex", "FormatError",
    "IncompatibleSketchError", "InputError", "MinHash", "MinHashLSH", "MinHashParams", "MissingDependencyError",
    "ModM", "MultiplyShift64", "NeardupError", "NormalizeParams", "ShingleParams", "SimHash", "SimhashIndex", "StoreError",
    "UnionFind", "__version__", "band_keys", "containment", "cosine", "fingerprint", "hamming", "hash64",
    "jaccard", "normalize", "optimal_banding", "probability", "shingle_ids", "shingle_set", "shingles",
    "threshold", "tokenize",
]
