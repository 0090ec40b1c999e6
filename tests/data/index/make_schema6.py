"""Writes tests/data/index/schema6-lean.db with the code of schema 6 before id prefixes (ids
stored whole, no ``id_prefix`` column nor ``id_prefixes`` table; for tests/store/test_id_keys.py).
Run it with a checkout of that code (commit a27bb26, built) first on sys.path (or its src folder
in OLD6):
    git worktree add /tmp/old6 a27bb26 && (cd /tmp/old6 && pip install -e . --no-build-isolation)
    python tests/data/index/make_schema6.py tests/data/index
"""
import os, sys, random
sys.path.insert(0, os.environ.get("OLD6", "/tmp/old6/src"))
import neardup
from neardup.store import SeenIndex, SCHEMA_VERSION
from neardup.store import schema
assert SCHEMA_VERSION == 6 and "id_prefixes" not in schema.DEFAULTS, neardup.__file__
rng = random.Random(6)
words = [f"w{i}" for i in range(3000)]
def text(n): return " ".join(rng.choice(words) for _ in range(n))
docs = [(f"https://example.org/pages/b{i}.html", text(30)) for i in range(1000)]
docs += [(f"https://example.org/copies/c{i}.html", docs[i][1]) for i in range(0, 50)]
with SeenIndex(os.path.join(sys.argv[1], "schema6-lean.db"), profile="lean") as ix:
    ix.add_many(docs)                                  # one bulk write: runs
    ix.add_many([(f"https://example.org/small/s{i}", docs[i][1]) for i in range(5)]
                + [("s5", text(40))])                  # a small write: docs_id
    ix.remove("https://example.org/pages/b7.html")
    ix.checkpoint()
print(len(docs))
