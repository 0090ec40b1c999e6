"""The same signatures in separate processes and under any PYTHONHASHSEED."""

import json
import os
import subprocess
import sys

from conftest import real_texts

SCRIPT = r"""
import json
from neardup import MinHash, MinHashParams, ShingleParams, SimHash, BottomS, fingerprint
text = open(0).read()
out = {}
for fam in ("affine61", "mulshift64", "mulshift32"):
    out[fam] = MinHash.from_text(text, ShingleParams(k=5), MinHashParams(num_perm=64, seed=7, family=fam)).hashvalues.tolist()
out["bottom"] = BottomS.from_text(text, 32).values.tolist()
out["simhash"] = SimHash.from_text(text).hex()
out["fp"] = fingerprint(text)
print(json.dumps(out))
"""


def run(seed):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    text = "\n".join(t for _, t in real_texts(limit=3, min_bytes=8000))  # real text, the same everywhere
    out = subprocess.run([sys.executable, "-c", SCRIPT], input=text, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_same_signatures_across_processes_and_hash_seeds():
    first, second = run(0), run(12345)
    assert first == second
    assert len(set(first["affine61"])) > 60
