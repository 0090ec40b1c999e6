"""Writes tests/data/index/schema5-default.db and schema5-lean.db with the code of schema 5 (ids
unique through the ``UNIQUE (id, source)`` index; for tests/store/test_id_keys.py). Run it with a
checkout of schema 5 (commit fab08c3, built) first on sys.path (or its src folder in OLD5):
    git worktree add /tmp/old5 fab08c3 && (cd /tmp/old5 && pip install -e . --no-build-isolation)
    python tests/data/index/make_schema5.py tests/data/index
"""
import os, sys, random
sys.path.insert(0, os.environ.get("OLD5", "/tmp/old5/src"))
import neardup
from neardup.store import SeenIndex, SCHEMA_VERSION
assert SCHEMA_VERSION == 5, neardup.__file__
rng = random.Random(5)
words = [f"w{i}" for i in range(3000)]
def text(n): return " ".join(rng.choice(words) for _ in range(n))
docs = [(f"https://example.org/pages/b{i}.html", text(30)) for i in range(1000)]
docs += [(f"https://example.org/copies/c{i}.html", docs[i][1]) for i in range(0, 50)]
for profile in ("default", "lean"):
    with SeenIndex(os.path.join(sys.argv[1], f"schema5-{profile}.db"), profile=profile) as ix:
        ix.add_many(docs)                                  # one bulk write: runs
        ix.add_many([(f"s{i}", docs[i][1]) for i in range(5)] + [("s5", text(40))])  # small
        ix.remove("https://example.org/pages/b7.html")
        ix.checkpoint()
print(len(docs))
