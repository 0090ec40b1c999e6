"""Configuration fingerprints: one function (:func:`neardup.params.config_fingerprint`) behind all
of them, and the values that saved indexes and run folders already hold."""

import json
import sqlite3
from pathlib import Path

import pytest

import dataclasses

from neardup.config import DedupConfig, ReadOptions
from neardup.errors import ConfigError
from neardup.params import MinHashParams, ShingleParams, config_fingerprint
from neardup.store.schema import IndexConfig

SAVED_INDEXES = sorted((Path(__file__).resolve().parent / "data" / "index").glob("*.db"))


@pytest.mark.parametrize("path", SAVED_INDEXES, ids=lambda p: p.name)
def test_indexes_saved_by_earlier_versions_keep_their_fingerprint(path):
    with sqlite3.connect(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    stored = json.loads(meta["config"])
    assert config_fingerprint(stored) == int(meta["config_fingerprint"], 16)
    config = IndexConfig.from_dict(stored)
    assert config.fingerprint() == config_fingerprint(config.as_dict())


# Values the released versions wrote into summary.json and run.json (DedupConfig) and into sketch
# files (the parameters): a change here makes saved run folders and sketches unreadable.
RELEASED = [
    (lambda: DedupConfig().fingerprint(), "64895fc59e07249e"),
    (lambda: DedupConfig(threshold=0.7, method="exact").fingerprint(), "19caa377655d2198"),
    (lambda: DedupConfig(shingle=ShingleParams(k=3, unit="char")).fingerprint(), "8f24acf1fef13ad9"),
    # (the read options, once declared in DedupConfig itself, now inherited from ReadOptions:
    # computed at 120a50d, before that move)
    (lambda: DedupConfig(format="jsonl", content="html", html="whole").fingerprint(), "94340b90b06be119"),
    (lambda: DedupConfig(id_field="doc", text_field="body", max_bytes=None).fingerprint(), "46385039a24fc941"),
    (lambda: DedupConfig(format="warc", html="article", max_bytes=1000, method="simhash").fingerprint(),
     "7b9c6a2c929425d2"),
    (lambda: ShingleParams(k=5).fingerprint(), 15996233647226438188),
    (lambda: MinHashParams().fingerprint(), 4862339301967432303),
    (lambda: MinHashParams(num_perm=64, seed=7, family="mulshift32").fingerprint(), 3953354505863399541),
]


@pytest.mark.parametrize("compute, released", RELEASED)
def test_fingerprints_keep_their_released_values(compute, released):
    assert compute() == released


def test_the_run_config_fingerprint_is_the_one_function_in_hex():
    config = DedupConfig(method="simhash", max_distance=4)
    assert config.fingerprint() == f"{config_fingerprint(config.as_dict()):016x}"
    assert config.fingerprint() != DedupConfig(method="simhash", max_distance=3).fingerprint()


def test_the_read_options_are_declared_once_and_a_run_takes_them_as_keywords():
    read = [f.name for f in dataclasses.fields(ReadOptions)]
    assert read == ["format", "id_field", "text_field", "content", "html", "max_bytes"]
    # a run's configuration holds them as its own fields, with the same defaults, declared by ReadOptions only
    assert {f.name: f.default for f in dataclasses.fields(DedupConfig) if f.name in read} == \
        {f.name: f.default for f in dataclasses.fields(ReadOptions)}
    assert not set(read) & set(DedupConfig.__dict__["__annotations__"])
    given = dict(format="jsonl", id_field="doc", text_field="body", content="html", html="whole", max_bytes=None)
    config = DedupConfig(**given, threshold=0.7)
    assert config.read_options() == ReadOptions(**given).read_options() == ReadOptions(**given).as_dict() == given
    assert config.as_dict()["read"] == given and config != ReadOptions(**given)
    with pytest.raises(ConfigError) as caught:  # checked by ReadOptions, as before
        DedupConfig(html="body")
    assert (caught.value.owner, caught.value.parameter) == ("ReadOptions", "html")
