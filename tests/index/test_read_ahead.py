"""``neardup index add`` reads its batches on a thread: the order, the reader's errors and an
early exit must be those of a plain loop."""

from __future__ import annotations

import threading

import pytest

from neardup.cli.index import _read_ahead


def test_batches_come_in_order():
    assert list(_read_ahead(iter([[1], [2, 3], [4]]))) == [[1], [2, 3], [4]]
    assert list(_read_ahead(iter([]))) == []


def test_a_reader_error_is_raised_after_the_batches_before_it():
    def batches():
        yield ["a"]
        yield ["b"]
        raise OSError("the second file cannot be read")

    got = []
    with pytest.raises(OSError, match="second file"):
        for batch in _read_ahead(batches()):
            got.append(batch)
    assert got == [["a"], ["b"]]


def test_leaving_early_stops_the_reader():
    produced = []

    def batches():
        for k in range(1000):
            produced.append(k)
            yield [k]

    before = threading.active_count()
    for batch in _read_ahead(batches()):
        if batch == [2]:
            break
    # the reader thread is joined when the loop is left, having read at most one batch ahead
    # (plus the one it was putting when told to stop)
    assert threading.active_count() == before
    assert len(produced) <= 5
