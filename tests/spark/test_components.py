"""Connected components inside Spark (neardup.spark.components) against union-find.

Needs pyspark and Java (``pip install 'neardup[spark]'``); skipped otherwise. One local[2]
SparkSession for the whole module.
"""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import pytest

from neardup.cluster.unionfind import UnionFind

HAVE_PYSPARK = importlib.util.find_spec("pyspark") is not None

# pyspark 4.x warns about pandas 3 on every toPandas(); not what these tests are about.
pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")


def expected_components(edges, nodes=None):
    """{node: smallest node of its component} by union-find over the sorted node ids."""
    ids = set(nodes or ())
    for a, b in edges:
        if a is not None:
            ids.add(a)
        if b is not None:
            ids.add(b)
    order = sorted(ids)
    index = {x: i for i, x in enumerate(order)}
    uf = UnionFind(len(order))
    for a, b in edges:
        if a is not None and b is not None:
            uf.union(index[a], index[b])
    smallest = uf.components()  # smallest index = smallest id, as the ids are sorted
    return {x: order[int(smallest[i])] for i, x in enumerate(order)}


def as_dict(result_df):
    pdf = result_df.toPandas()
    assert list(pdf.columns) == ["node", "component"]
    assert not pdf["node"].duplicated().any()
    return dict(zip(pdf["node"].tolist(), pdf["component"].tolist()))


@pytest.fixture(scope="module")
def spark():
    if not HAVE_PYSPARK:
        pytest.skip("pyspark is not installed: pip install 'neardup[spark]'")
    from neardup.spark import get_session

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": "2g",
    }
    session = get_session("local[2]", app_name="neardup-tests", conf=conf)
    yield session
    session.stop()


# -- no Spark needed ---------------------------------------------------------------------------


def test_package_import_is_light():
    code = "import sys, neardup.spark; assert 'pyspark' not in sys.modules, 'pyspark imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": SRC})


def test_missing_pyspark_names_the_extra():
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import neardup.spark\n"
        "from neardup.errors import MissingDependencyError\n"
        "try:\n"
        "    neardup.spark.get_session()\n"
        "except MissingDependencyError as exc:\n"
        "    assert \"pip install 'neardup[spark]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": SRC})


# -- Spark -------------------------------------------------------------------------------------


def _cc(edges_df, **kwargs):
    from neardup.spark.components import connected_components

    return connected_components(edges_df, **kwargs)


@pytest.mark.spark
@pytest.mark.skipif(not HAVE_PYSPARK, reason="pyspark is not installed: pip install 'neardup[spark]'")
class TestConnectedComponents:
    def test_small_graph_with_self_loops_duplicates_and_nulls(self, spark):
        edges = [(1, 2), (2, 1), (2, 3), (3, 3), (5, 4), (4, 5), (4, 5), (7, 7), (9, None), (None, None)]
        df = spark.createDataFrame(edges, "a long, b long")
        got = as_dict(_cc(df))
        assert got == {1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 7: 7, 9: 9}

    def test_empty(self, spark):
        df = spark.createDataFrame([], "a long, b long")
        assert _cc(df).count() == 0

    def test_column_names_and_types(self, spark):
        from neardup.errors import ConfigError

        df = spark.createDataFrame([(1, 2), (3, 2)], "left int, right long")
        out = _cc(df, src="left", dst="right")
        assert [f.dataType.simpleString() for f in out.schema.fields] == ["bigint", "bigint"]
        assert as_dict(out) == {1: 1, 2: 1, 3: 1}
        with pytest.raises(ConfigError):
            _cc(spark.createDataFrame([("x", 1)], "a string, b long"))
        with pytest.raises(ConfigError):
            _cc(df)  # no columns a/b
        with pytest.raises(ConfigError):
            _cc(df, src="left", dst="right", checkpoint_every=0)

    def test_chain_of_100000(self, spark):
        n = 100_000
        df = spark.range(n - 1).selectExpr("id AS a", "id + 1 AS b")
        got = as_dict(_cc(df, checkpoint_every=3))
        assert len(got) == n
        assert set(got.values()) == {0}
        assert got == expected_components([(i, i + 1) for i in range(n - 1)])

    def test_star_of_100000(self, spark):
        n = 100_000
        centre = 54_321  # not the smallest id, so the whole star is relabelled
        df = spark.range(n).where(f"id != {centre}").selectExpr(f"CAST({centre} AS BIGINT) AS a", "id AS b")
        got = as_dict(_cc(df))
        assert len(got) == n
        assert got == expected_components([(centre, i) for i in range(n) if i != centre])

    @pytest.mark.parametrize("seed", [1, 2])
    def test_random_graphs_match_union_find(self, spark, seed):
        rng = random.Random(seed)
        n = rng.choice([300, 2000, 5000])
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(int(n * rng.uniform(0.3, 0.9)))]
        edges += [(x, x) for x in rng.sample(range(n), 20)]  # self-loops (some isolated nodes)
        edges += rng.sample(edges, 50)  # duplicates
        edges += [(b, a) for a, b in rng.sample(edges, 50)]  # both orientations
        df = spark.createDataFrame(edges, "a long, b long")
        want = expected_components(edges)
        assert len(set(want.values())) > 5  # several components
        assert as_dict(_cc(df)) == want

    def test_string_ids_use_string_order(self, spark):
        rng = random.Random(7)
        ids = [f"doc-{rng.randrange(10**6)}" for _ in range(1500)]  # "doc-9" > "doc-10"
        edges = [(rng.choice(ids), rng.choice(ids)) for _ in range(1200)]
        df = spark.createDataFrame(edges, "a string, b string")
        assert as_dict(_cc(df)) == expected_components(edges)

    def test_same_result_for_different_partitionings(self, spark):
        rng = random.Random(11)
        n = 3000
        # Paths of shuffled ids inside components make it take several rounds.
        perm = list(range(n))
        rng.shuffle(perm)
        edges = [(perm[i], perm[i + 1]) for i in range(n - 1) if i % 100 != 99]
        edges += [(rng.randrange(n), rng.randrange(n)) for _ in range(20)]
        base = spark.createDataFrame(edges, "a long, b long")
        previous = spark.conf.get("spark.sql.shuffle.partitions")
        results = []
        try:
            for parts, shuffle, how, every in ((1, "1", "local", 1), (7, "5", "auto", 2)):
                spark.conf.set("spark.sql.shuffle.partitions", shuffle)
                results.append(
                    _cc(base.repartition(parts), checkpoint=how, checkpoint_every=every)
                    .orderBy("node")
                    .toPandas()
                )
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", previous)
        assert results[0].equals(results[1])
        assert dict(zip(results[0]["node"], results[0]["component"])) == expected_components(edges)
