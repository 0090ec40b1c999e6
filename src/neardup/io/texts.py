"""The extracted texts of a run's read pass, kept in its work folder for its kept corpus.

When the kept corpus is ``kept.jsonl`` of extracted text (a folder of HTML files; text, CSV or
Arrow read with ``content="html"``; WARC mixed with other formats), each kept page would have to
be extracted a second time, and the extraction is most of the cost of a page. So the read pass
writes every document of those files, as its ``kept.jsonl`` line, in input order, into
``<run>/texts/`` (:class:`TextSpill`, through :func:`neardup.io.read.read_documents`'s
``text_spill``), and :func:`neardup.io.write_kept` copies the kept lines from there
(:class:`SpilledTexts`) instead of reading and extracting the files again. The lines are the
ones the kept writer would make (:func:`document_line`), so the corpus is the same byte for byte.

The folder is complete only once the read pass has reached the end of its input (it is written
as ``texts.partial/`` and renamed then); a run resumed after it reads it as it is, and without it
(an interrupted read pass, another plan of inputs) the kept writer extracts the pages again.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import orjson

__all__ = ["FOLDER", "document_line", "extracts", "needed", "TextSpill", "SpilledTexts"]

FOLDER = "texts"
_LINES = "texts.jsonl"
_INDEX = "index.json"
_ORDINALS = "ordinals.npy"


def document_line(doc) -> bytes:
    """A Document's line in ``kept.jsonl``: ``{"id", "source", "text"}`` and a newline."""
    return orjson.dumps({"id": doc.id, "source": doc.source, "text": doc.text}, option=orjson.OPT_APPEND_NEWLINE)


def extracts(fmt: str, content: str) -> bool:
    """Whether the records of a file of format ``fmt`` are extracted text in ``kept.jsonl``
    (JSONL and Parquet records are copied as they are)."""
    return fmt not in ("jsonl", "parquet", "not_html") and (fmt in ("html", "warc") or content == "html")


def needed(plan, content: str) -> bool:
    """Whether the kept corpus of ``plan`` would extract records again: ``kept.jsonl`` (not
    ``kept.warc.gz``, which copies the records) with files that :func:`extracts` selects."""
    formats = {fmt for _path, fmt, why in plan.leaves if why is None and fmt != "not_html"}
    return formats != {"warc"} and any(extracts(fmt, content) for fmt in formats)


def _leaves(plan) -> list[list[str]]:
    return [[path, fmt] for path, fmt, _why in plan.leaves]


class TextSpill:
    """Writes the documents of the files :func:`extracts` selects, in input order, into
    ``<run_path>/texts.partial/``; :meth:`commit` makes it ``texts/`` once the input has ended."""

    def __init__(self, run_path: str, plan, content: str):
        self.final = os.path.join(run_path, FOLDER)
        self.partial = self.final + ".partial"
        shutil.rmtree(self.partial, ignore_errors=True)
        os.makedirs(self.partial)
        self._fh = open(os.path.join(self.partial, _LINES), "wb", buffering=1 << 20)
        self._content = content
        self._plan = plan
        self._starts: list[int] = []  # the first ordinal of each leaf, as the reader reaches it
        self._spilled: list[bool] = []
        self._ends: list[int] = []
        self._ordinals: list[int] = []
        self._at = -1  # the leaf of the last ordinal seen (ordinals only grow)

    def leaf_started(self, fmt: str, n: int) -> None:
        self._starts.append(n)
        self._spilled.append(extracts(fmt, self._content))

    def leaf_ended(self, n: int) -> None:
        self._ends.append(n)

    def add(self, doc) -> None:
        """Keep ``doc`` if its file is one whose kept records are extracted text."""
        o = doc.ordinal
        starts, k = self._starts, self._at
        while k + 1 < len(starts) and starts[k + 1] <= o:
            k += 1
        self._at = k
        if k >= 0 and self._spilled[k]:
            self._fh.write(document_line(doc))
            self._ordinals.append(o)

    def commit(self) -> None:
        self._fh.close()
        np.save(os.path.join(self.partial, _ORDINALS), np.asarray(self._ordinals, dtype=np.int64))
        index = {"leaves": _leaves(self._plan), "starts": self._starts, "ends": self._ends,
                 "spilled": self._spilled, "content": self._content}
        with open(os.path.join(self.partial, _INDEX), "wb") as fh:
            fh.write(orjson.dumps(index))
        shutil.rmtree(self.final, ignore_errors=True)
        os.replace(self.partial, self.final)

    def discard(self) -> None:
        self._fh.close()
        shutil.rmtree(self.partial, ignore_errors=True)


class SpilledTexts:
    """The texts a read pass kept (:class:`TextSpill`), read back in input order by the kept
    writer, one file after the other."""

    def __init__(self, folder: str, index: dict):
        self._ordinals = np.load(os.path.join(folder, _ORDINALS))
        self._fh = open(os.path.join(folder, _LINES), "rb", buffering=1 << 20)
        self._starts, self._ends, self._spilled = index["starts"], index["ends"], index["spilled"]
        self._i = 0

    @classmethod
    def open(cls, run_path: str | None, plan, content: str) -> "SpilledTexts | None":
        """The texts of ``run_path``'s read pass if it read this plan of inputs to its end, else None."""
        if not run_path:
            return None
        folder = os.path.join(run_path, FOLDER)
        try:
            with open(os.path.join(folder, _INDEX), "rb") as fh:
                index = orjson.loads(fh.read())
        except (OSError, ValueError):
            return None
        leaves = _leaves(plan)
        if (index.get("leaves") != leaves or index.get("content") != content
                or not len(index["starts"]) == len(index["ends"]) == len(leaves)):
            return None
        try:
            return cls(folder, index)
        except (OSError, ValueError):
            return None

    def covers(self, k: int) -> bool:
        """Whether the records of the plan's ``k``-th file are here."""
        return bool(self._spilled[k])

    def kept_lines(self, k: int, n: int, keep):
        """The kept lines of the plan's ``k``-th file, whose first record is ``n`` (ordinals
        where ``keep(ordinal)``); returns the ordinal after its last record."""
        if n != self._starts[k]:
            raise ValueError(f"the kept writer is at record {n}, the read pass began this file at {self._starts[k]}")
        end = self._ends[k]
        ords, i, fh = self._ordinals, self._i, self._fh
        while i < len(ords) and ords[i] < end:
            line = fh.readline()
            if keep(int(ords[i])):
                yield line
            i += 1
        self._i = i
        return end

    def close(self) -> None:
        self._fh.close()
