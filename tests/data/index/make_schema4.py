"""Writes tests/data/index/schema4-default.db with the code of schema 4 (for
tests/store/test_runs.py::test_a_schema_4_file_opens_answers_and_keeps_its_layout). Run it with a
checkout of schema 4 (commit 3585d3d, built) first on sys.path:
    git worktree add /tmp/old4 3585d3d && (cd /tmp/old4 && pip install -e . --no-build-isolation)
    python tests/data/index/make_schema4.py tests/data/index/schema4-default.db
"""
import sys, random
sys.path.insert(0, "/tmp/old4/src")
import neardup; assert neardup.__file__.startswith("/tmp/old4"), neardup.__file__
from neardup.store import SeenIndex, SCHEMA_VERSION
assert SCHEMA_VERSION == 4
rng = random.Random(4)
words = [f"w{i}" for i in range(3000)]
def text(n): return " ".join(rng.choice(words) for _ in range(n))
docs = [(f"b{i}", text(30)) for i in range(1000)]
docs += [(f"c{i}", docs[i][1]) for i in range(0, 50)]   # exact copies inside the bulk write
out = sys.argv[1]
with SeenIndex(out) as ix:
    ix.add_many(docs)                                  # one bulk write: runs
    ix.add_many([(f"s{i}", docs[i][1]) for i in range(5)] + [("s5", text(40))])  # small: rows
    ix.remove("b7")
    ix.checkpoint()
print(len(docs))
