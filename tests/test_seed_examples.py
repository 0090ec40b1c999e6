"""Every worked number of the seed documents, reproduced exactly."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from neardup import MinHash, MinHashParams, ShingleParams, SimHash, cosine, jaccard, probability, shingles
from neardup.lsh.params import threshold
from neardup.shingle import shingle_set
from neardup.sketch.permutations import AffineModPrime
from neardup.sketch.estimate import binomial_stderr
from neardup.sketch.simhash import bit_totals
from neardup.text.tokenize import words

from conftest import D1, D2, D3, D4

K3 = ShingleParams(k=3)

TABLE = [  # the seed's 15 shingles in alphabetical order, in d1?, in d2?
    ("and follows its", True, True),
    ("crawler fetches each", True, False),
    ("crawler fetches every", False, True),
    ("each page and", True, False),
    ("every page and", False, True),
    ("fetches each page", True, False),
    ("fetches every page", False, True),
    ("follows its links", True, True),
    ("its links to", True, True),
    ("links to new", True, False),
    ("links to other", False, True),
    ("page and follows", True, True),
    ("the crawler fetches", True, True),
    ("to new pages", True, False),
    ("to other pages", False, True),
]


def test_fifteen_shingle_table():
    s1, s2 = shingle_set(D1, K3), shingle_set(D2, K3)
    assert len(words(D1)) == len(words(D2)) == 12
    assert len(shingles(D1, K3)) == len(shingles(D2, K3)) == 10
    assert sorted(s1 | s2) == [row[0] for row in TABLE]
    for text, in1, in2 in TABLE:
        assert (text in s1, text in s2) == (in1, in2)
    assert len(s1 & s2) == 5 and len(s1 | s2) == 15
    assert jaccard(s1, s2) == pytest.approx(5 / 15, abs=0)


def test_rose_has_three_distinct_4_shingles():
    assert shingle_set(D3, ShingleParams(k=4)) == {"a rose is a", "rose is a rose", "is a rose is"}


def test_choice_of_k():
    s3, s4 = shingle_set(D3, K3), shingle_set(D4, K3)
    assert (len(s3), len(s4), len(s3 & s4), len(s3 | s4)) == (3, 7, 3, 7)
    assert jaccard(s3, s4) == 3 / 7
    k2 = ShingleParams(k=2)
    assert jaccard(shingle_set(D3, k2), shingle_set(D4, k2)) == 0.5


BY_HAND = [  # a, b, min over d1 (shingle), min over d2 (shingle), agree?
    (1, 0, 0, 0, 0, 0, True),
    (3, 5, 3, 5, 0, 4, False),
    (5, 2, 0, 3, 1, 10, False),
    (7, 11, 0, 13, 2, 6, False),
    (11, 3, 0, 9, 1, 6, False),
    (13, 8, 4, 1, 0, 2, False),
]


def test_by_hand_minhash_table():
    numbers = {text: i for i, (text, _, _) in enumerate(TABLE)}
    n1 = np.array(sorted(numbers[s] for s in shingle_set(D1, K3)), dtype=np.uint64)
    n2 = np.array(sorted(numbers[s] for s in shingle_set(D2, K3)), dtype=np.uint64)
    family = AffineModPrime(a=tuple(r[0] for r in BY_HAND), b=tuple(r[1] for r in BY_HAND), prime=17, name="by-hand")
    params = MinHashParams(num_perm=6)
    m1 = MinHash(params, family=family)
    m1.update_ids(n1)
    m2 = MinHash(params, family=family)
    m2.update_ids(n2)
    assert m1.hashvalues.tolist() == [r[2] for r in BY_HAND]
    assert m2.hashvalues.tolist() == [r[4] for r in BY_HAND]
    # the shingle that attains each minimum
    perm = family.apply(np.arange(15, dtype=np.uint64))
    for i, row in enumerate(BY_HAND):
        assert n1[np.argmin(perm[i][n1.astype(int)])] == row[3]
        assert n2[np.argmin(perm[i][n2.astype(int)])] == row[5]
    # each function is a reordering of the 15 shingles
    for i in range(6):
        assert len(set(perm[i].tolist())) == 15
    est = m1.jaccard(m2)
    assert est.value == pytest.approx(1 / 6)
    assert [a == b for a, b in zip(m1.hashvalues, m2.hashvalues)] == [r[6] for r in BY_HAND]


@pytest.mark.parametrize("m, expected", [(10, 0.149), (100, 0.047), (200, 0.033)])
def test_standard_errors(m, expected):
    assert round(binomial_stderr(1 / 3, m), 3) == expected


def test_simhash_by_hand():
    from collections import Counter

    totals = bit_totals(Counter(words(D1)), "md5")
    assert totals[:8].tolist() == [4, -2, -2, 2, -2, -4, 2, 2]
    s1, s2, s3 = (SimHash.from_text(t, hash="md5") for t in (D1, D2, D3))
    assert s1.hex() == "93264c674404019d"
    assert s2.hex() == "91060e274484039d"
    assert s1.distance(s2) == 7
    assert s1.distance(s3) == 37
    assert 64 - s1.distance(s3) == 27


def test_cosine_and_angle():
    c = cosine(words(D1), words(D2))
    assert c == pytest.approx(10 / 12)
    angle = math.degrees(math.acos(c))
    assert round(angle, 1) == 33.6
    assert round(1 - angle / 180, 3) == 0.814
    assert round(57 / 64, 3) == 0.891
    assert round(math.sqrt(0.814 * (1 - 0.814) / 64), 3) == 0.049
    assert cosine(words(D1), words(D3)) == 0.0


def test_banding_numbers():
    assert round(probability(0.9, 20, 10), 4) == 0.9998
    assert round(probability(0.5, 20, 10), 3) == 0.019
    assert round(probability(1 / 3, 20, 10), 4) == 0.0003
    assert round(threshold(40, 5), 2) == 0.48
    assert round(threshold(20, 10), 2) == 0.74
    assert round(threshold(10, 20), 2) == 0.89


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "neardup", *args], input=stdin, capture_output=True, text=True)


def test_cli_compare_reproduces_the_seed(tmp_path):
    a, b = tmp_path / "d1.txt", tmp_path / "d2.txt"
    a.write_text(D1)
    b.write_text(D2)
    out = run_cli("compare", str(a), str(b), "-k", "3", "--num-perm", "200", "--feature-hash", "md5", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert (r["shingles_a"], r["shingles_b"], r["shared"], r["union"]) == (10, 10, 5, 15)
    assert r["jaccard"] == pytest.approx(1 / 3)
    assert r["containment_a_in_b"] == r["containment_b_in_a"] == 0.5
    assert r["cosine"] == pytest.approx(10 / 12)
    assert round(r["minhash_stderr"], 3) == 0.033
    assert r["minhash_lower"] <= r["minhash_jaccard"] <= r["minhash_upper"]
    assert (r["simhash_a"], r["simhash_b"], r["hamming"]) == ("93264c674404019d", "91060e274484039d", 7)
    expected_keys = ["shingles_a", "shingles_b", "shared", "union", "jaccard", "containment_a_in_b",
                     "containment_b_in_a", "cosine", "minhash_jaccard", "minhash_stderr", "minhash_lower",
                     "minhash_upper", "simhash_a", "simhash_b", "hamming"]
    assert list(r) == expected_keys


def test_cli_compare_stdin_and_k2(tmp_path):
    b = tmp_path / "d4.txt"
    b.write_text(D4)
    out = run_cli("compare", "-", str(b), "-k", "2", "--json", stdin=D3)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jaccard"] == 0.5


def test_cli_simhash(tmp_path):
    paths = []
    for name, text in (("d1", D1), ("d2", D2), ("d3", D3)):
        p = tmp_path / f"{name}.txt"
        p.write_text(text)
        paths.append(str(p))
    out = run_cli("simhash", *paths, "--feature-hash", "md5", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["path"] for r in rows] == paths
    assert [r["simhash"] for r in rows][:2] == ["93264c674404019d", "91060e274484039d"]


def test_cli_lsh_bands():
    out = run_cli("lsh", "--num-perm", "200", "--bands", "20", "--jaccard", "0.9", "0.5", "0.3333", "--json")
    r = json.loads(out.stdout)
    assert (r["bands"], r["rows"]) == (20, 10)
    assert round(r["threshold"], 2) == 0.74
    assert round(r["probabilities"]["0.9"], 4) == 0.9998
    assert round(r["probabilities"]["0.5"], 3) == 0.019
    assert round(r["probabilities"]["0.3333"], 4) == 0.0003
    assert "false_positive_area" not in r
    for bands, t in ((40, 0.48), (10, 0.89)):
        r = json.loads(run_cli("lsh", "--num-perm", "200", "--bands", str(bands), "--json").stdout)
        assert round(r["threshold"], 2) == t


def test_cli_lsh_threshold_reports_areas():
    r = json.loads(run_cli("lsh", "--num-perm", "128", "--threshold", "0.8", "--json").stdout)
    assert r["bands"] * r["rows"] <= 128
    assert 0 < r["false_positive_area"] < 0.2 and 0 < r["false_negative_area"] < 0.2


@pytest.mark.parametrize("args, needle", [
    (("compare", "/no/such/file", os.path.abspath(__file__)), "no such file"),  # a file every checkout has
    (("compare", "a", "b", "--text", "-k", "0"), "-k must be at least 1"),
    (("lsh", "--num-perm", "128", "--bands", "20"), "do not divide"),
    (("lsh", "--num-perm", "128", "--threshold", "1.5"), "--threshold"),
    (("lsh", "--num-perm", "128", "--bands", "16", "--jaccard", "x"), "--jaccard"),
])
def test_cli_errors_are_one_line(args, needle):
    out = run_cli(*args)
    assert out.returncode != 0
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_simhash_plan():
    out = run_cli("simhash-plan", "--fingerprints", "1000000", "--max-distance", "3", "--json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan
    bad = run_cli("simhash-plan", "--fingerprints", "10", "--max-distance", "8")
    assert bad.returncode != 0 and "between 0 and 7" in bad.stderr
