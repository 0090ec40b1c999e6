"""The files to read: the inputs checked, folders walked and every file's format found once
(:func:`plan_inputs`), and what a reading left out (:class:`InputReport`)."""

from __future__ import annotations

import os
from typing import Iterator

from ...errors import ConfigError, InputError
from .sniff import DATA_FORMATS, FORMATS, probe_file
from .sources import exists, is_folder, missing, walk

__all__ = ["InputPlan", "InputReport", "UnreadableInput", "plan_inputs", "input_leaves", "detect_format"]


class InputPlan:
    """The files to read, checked and classified once (:func:`plan_inputs`).

    ``leaves``: ``(path, format, why)`` in reading order, ``why`` not None for a file that
    cannot be read (one ``unreadable_file`` record). ``ignored``: ``{"path", "reason"}`` of the
    files left out of a folder of data files (a README.md beside Parquet shards). ``paths``: the
    inputs as given, which iterating the plan yields, so that a plan stands where a list of paths
    is expected."""

    def __init__(self, paths=()):
        self.paths: list[str] = list(paths)
        self.leaves: list[tuple[str, str, str | None]] = []
        self.ignored: list[dict] = []

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def formats(self) -> set[str]:
        return {fmt for _, fmt, why in self.leaves if why is None}


def _plan_folder(plan: InputPlan, top: str, format: str) -> None:
    """A folder's files: with a format given, all of them in it; with ``auto``, each by its own
    content. A folder holding data files (:data:`DATA_FORMATS`) is a dataset: those are read and
    its other files are ignored (listed in ``plan.ignored``); else a folder holding an HTML file is
    a folder of pages (the other files are Skipped as ``not_html``); else every file is a text."""
    found = []
    for leaf, err in walk(top):
        if err is not None:
            found.append((leaf, "text", err))
        elif format != "auto":
            found.append((leaf, format, None))
        else:
            why, fmt = probe_file(leaf)
            found.append((leaf, fmt, why))
    if format != "auto":
        plan.leaves.extend(found)
        return
    kinds = {fmt for _, fmt, why in found if why is None}
    if kinds & set(DATA_FORMATS):
        for leaf, fmt, why in found:
            if why is not None or fmt in DATA_FORMATS:
                plan.leaves.append((leaf, fmt, why))
            else:
                plan.ignored.append({"path": leaf, "reason": f"a {fmt} file in a folder of data files ({top})"})
    elif "html" in kinds:
        plan.leaves.extend((leaf, fmt if fmt == "html" or why is not None else "not_html", why)
                           for leaf, fmt, why in found)
    else:
        plan.leaves.extend((leaf, "text", why) for leaf, fmt, why in found)


def detect_format(path: str) -> str:
    """The format ``format="auto"`` reads a file or folder as: one of :data:`FORMATS` (for a
    folder: its data files' format if they are of one kind, ``"html"`` or ``"text"``)."""
    path = os.fspath(path)
    if not exists(path):
        raise InputError(f"{path}: {missing(path)}")
    if is_folder(path):
        plan = InputPlan()
        _plan_folder(plan, path, "auto")
        kinds = plan.formats() - {"not_html"}
        return kinds.pop() if len(kinds) == 1 else ("text" if not kinds else "mixed")
    return probe_file(path)[1]


def plan_inputs(paths, format: str) -> InputPlan:
    """Check the inputs up front (a missing one is an InputError) and list every file to read."""
    if isinstance(paths, InputPlan):
        return paths
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    if format != "auto" and format not in FORMATS:
        raise ConfigError(f"The 'format' parameter must be one of 'auto', {', '.join(map(repr, FORMATS))}. Got {format!r} instead.")
    paths = [os.fsdecode(p) for p in paths]
    for p in paths:
        if not exists(p):
            hint = (" (a quoted glob? it matches nothing)" if any(c in p for c in "*?[") else "")
            raise InputError(f"{p}: {missing(p)}{hint}")
    plan = InputPlan(paths)
    for p in paths:
        if is_folder(p):
            _plan_folder(plan, p, format)
        elif format != "auto":
            plan.leaves.append((p, format, None))
        else:
            why, fmt = probe_file(p)
            plan.leaves.append((p, fmt, why))
    return plan


def input_leaves(plan) -> Iterator[tuple[str, str, str | None]]:
    """Every file to read: ``(path, format, None)``; ``(path, format, why)`` for one unreadable
    record; format ``"not_html"`` for a non-HTML file in a folder of HTML files."""
    return iter(plan_inputs(plan, "auto").leaves)


class UnreadableInput(InputError):
    """An input file that cannot be opened or read to its end (``on_error="error"``)."""

    def __init__(self, message: str, *, path: str):
        super().__init__(message)
        self.path = path


class InputReport:
    """What a reading left out, for ``summary.json``: ``skipped_files`` (``{"path", "reason"}`` of
    each file that could not be read, with ``on_error="skip"``) and ``ignored_files`` (files of a
    folder of data files that are not data, like a README.md)."""

    def __init__(self):
        self.skipped_files: list[dict] = []
        self.ignored_files: list[dict] = []

    def as_dict(self) -> dict:
        return {"skipped_files": list(self.skipped_files), "ignored_files": list(self.ignored_files)}
