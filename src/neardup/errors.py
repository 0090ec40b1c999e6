"""The exceptions neardup raises.

    NeardupError
    ├── ConfigError(ValueError)             a parameter out of range or of the wrong kind
    ├── IncompatibleSketchError(ValueError) sketches or stores made with other parameters
    ├── FormatError(ValueError)             a truncated, corrupt or foreign binary/file
    ├── InputError(ValueError)              a document or file that cannot be read
    ├── StoreError                          the persistent index cannot do what was asked
    ├── OutputError(OSError)                the output cannot be written (full disk, read-only, size limit)
    ├── RunMemoryError(MemoryError)         the run reached the memory limit; names the --in-memory-mb to use
    └── MissingDependencyError(ImportError) an optional extra is not installed

Each subclasses the builtin where one fits, so ``except ValueError`` still works.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class ConfigError(NeardupError, ValueError):
    """A parameter is out of range or of the wrong type.

    Raised by a configuration's own check (:mod:`neardup._validate`), it also names what was
    checked: ``owner`` and ``parameter`` (the class and its field), ``value`` and ``requirement``
    (what the value must be, e.g. ``"at least 1"``), so that the command line can say the same
    of the option that set the field (``--num-perm must be at least 1, got 0``). They are None
    for the errors that no single parameter explains.
    """

    def __init__(self, message: str, *, owner: str | None = None, parameter: str | None = None,
                 value=None, requirement: str | None = None) -> None:
        super().__init__(message)
        self.owner = owner
        self.parameter = parameter
        self.value = value
        self.requirement = requirement


class IncompatibleSketchError(NeardupError, ValueError):
    """Two sketches, or a sketch and a store, were made with different parameters."""


class FormatError(NeardupError, ValueError):
    """A serialized sketch, index or file is truncated, corrupt or of another format."""


class InputError(NeardupError, ValueError):
    """An input file or record cannot be read."""


class StoreError(NeardupError):
    """The persistent index cannot carry out the request."""


class OutputError(NeardupError, OSError):
    """An output (or the run's work folder) cannot be written: a full disk, a read-only filesystem,
    a file-size limit. The message names the path; no output looks complete."""


class RunMemoryError(NeardupError, MemoryError):
    """A run reached the memory limit; the message names the ``--in-memory-mb`` to use instead."""


class MissingDependencyError(NeardupError, ImportError):
    """An optional dependency is missing; the message names the pip command."""


def require(module: str, extra: str):
    """Import an optional module or raise MissingDependencyError naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module} is required for this feature: pip install 'neardup[{extra}]'"
        ) from exc
