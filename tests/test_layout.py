"""The shape of ``src/neardup``, checked from its source with :mod:`ast` (nothing is imported):

- no import cycle, counting the imports inside functions (an import moved into a function to
  break a cycle only hides it) and leaving out ``if TYPE_CHECKING:`` blocks, which never run;
  ``from pkg import submodule`` is an import of the submodule;
- the compiled kernel imported by ``neardup._native`` only, the one bridge to it;
- no private name (``_x``) imported from outside the package it belongs to;
- every import of a name of the package finds its module (one moved under its importer is caught
  here, not when the import runs);
- no module over 700 lines outside ``_vendor/``.

What still breaks a rule is named in an allow-list below, each with why; an entry that no longer
applies fails its own test, so that the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 700

#: Import cycles that remain, as the set of modules in each, with why.
ALLOWED_CYCLES: dict = {}

#: Private names imported across packages, as (importer, imported name), with why.
ALLOWED_PRIVATE_IMPORTS: dict = {}

#: Modules over MAX_LINES, with why they still are.
ALLOWED_LONG_MODULES: dict = {}


# -- reading the source --------------------------------------------------------------------------

def modules_of(src: Path, top: str = "neardup", *, vendored: bool = False) -> dict[str, Path]:
    """Every module of package ``top`` under ``src`` (``_vendor`` left out unless ``vendored``), by
    dotted name."""
    out = {}
    for path in sorted((src / top).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if "_vendor" in parts and not vendored:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_in(tree: ast.AST):
    """The import statements of a module wherever they are (functions, classes, ``try``), but
    not those in the body of an ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:
                yield from imports_in(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from imports_in(node)


def imported_names(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute dotted names an import statement of ``module`` names: ``import a.b`` gives
    ``a.b``; ``from a import b`` gives ``a.b`` (a submodule, or a name defined in ``a``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"] or [base]


class Source:
    """The modules of a package and what each imports."""

    def __init__(self, src: Path, top: str = "neardup"):
        self.paths = modules_of(src, top)
        #: with the vendored modules, which may be imported but are not checked
        self.existing = set(modules_of(src, top, vendored=True))
        self.text = {m: p.read_text(encoding="utf-8") for m, p in self.paths.items()}
        #: (importer, absolute imported name, line) for every import statement's every name
        self.imports = []
        for module, path in self.paths.items():
            tree = ast.parse(self.text[module], filename=str(path))
            for node in imports_in(tree):
                for name in imported_names(module, path.name == "__init__.py", node):
                    self.imports.append((module, name, node.lineno))

    def is_package(self, module: str) -> bool:
        return module in self.paths and self.paths[module].name == "__init__.py"

    def target(self, name: str) -> str | None:
        """The module of this package an imported name loads: the name itself when it is a
        module, else the module it is defined in; None for a name outside the package."""
        if name in self.paths:
            return name
        owner = name.rpartition(".")[0]
        return owner if owner in self.paths else None

    def graph(self) -> dict[str, set[str]]:
        edges = {m: set() for m in self.paths}
        for importer, name, _ in self.imports:
            target = self.target(name)
            if target is not None and target != importer:
                edges[importer].add(target)
                # importing a.b.c first runs the __init__ of a.b: an edge too, unless the importer
                # lives inside a.b (its package is then being initialised already); the top package
                # is always initialised first
                parts = target.split(".")
                for i in range(2, len(parts)):
                    parent = ".".join(parts[:i])
                    if self.is_package(parent) and not importer.startswith(parent + "."):
                        edges[importer].add(parent)
        return edges

    def lines(self, module: str) -> int:
        return len(self.text[module].splitlines())


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module, as the list
    of modules along it (the first repeated at the end), in a deterministic order."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):  # Tarjan's algorithm, iterative so that a deep graph needs no recursion limit
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        components.append(set(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted((_path_around(edges, c) for c in components), key=lambda path: path[0])


def _path_around(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, found breadth-first inside it."""
    start = min(component)
    came_from = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for w in sorted(edges[node] & component):
                if w == start:
                    path = [node]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = node
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def private_imports(source: Source) -> list[tuple[str, str, int]]:
    """(importer, name, line) of each import of a private name (a part ``_x``, not ``__x__``)
    from outside the package that holds it: a private module is its package's, a private name in
    a module is the module's package's."""
    found = []
    for importer, name, line in source.imports:
        parts = name.split(".")
        if parts[0] != "neardup":
            continue
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                holder = ".".join(parts[:i])
                package = holder if source.is_package(holder) else holder.rpartition(".")[0]
                if importer != package and not importer.startswith(package + "."):
                    found.append((importer, name, line))
                    break
    return found


def kernel_imports(source: Source) -> list[tuple[str, str, int]]:
    return [(importer, name, line) for importer, name, line in source.imports
            if (name == "neardup._kernel" or name.startswith("neardup._kernel.")) and importer != "neardup._native"]


def missing_modules(source: Source) -> list[tuple[str, str, int]]:
    """(importer, name, line) of each import of a name of the package whose module is not there
    (neither the name nor the module holding it): a module moved or renamed under its importer.
    A compiled extension is imported from its package (``from .. import _kernel``), which is."""
    return [(importer, name, line) for importer, name, line in source.imports
            if name.split(".")[0] == "neardup" and name not in source.existing
            and name.rpartition(".")[0] not in source.existing]


@pytest.fixture(scope="module")
def source():
    return Source(SRC)


# -- the rules -----------------------------------------------------------------------------------

def test_no_import_cycle(source):
    found = [c for c in cycles(source.graph()) if frozenset(c) not in ALLOWED_CYCLES]
    assert not found, "import cycles (imports inside functions count):\n" + \
        "\n".join("  " + " -> ".join(c) for c in found)


def test_only_the_bridge_imports_the_kernel(source):
    found = kernel_imports(source)
    assert not found, "the compiled kernel is imported past neardup._native:\n" + \
        "\n".join(f"  {m} line {line}: {name}" for m, name, line in found)


def test_no_private_name_imported_across_packages(source):
    found = [f for f in private_imports(source) if f[:2] not in ALLOWED_PRIVATE_IMPORTS]
    assert not found, "private names imported from another package:\n" + \
        "\n".join(f"  {m} line {line}: {name}" for m, name, line in found)


def test_every_import_of_the_package_names_a_module_that_is_there(source):
    found = missing_modules(source)
    assert not found, "imports of modules that do not exist (moved or renamed?):\n" + \
        "\n".join(f"  {m} line {line}: {name}" for m, name, line in found)


def test_no_module_over_700_lines(source):
    found = sorted((m, source.lines(m)) for m in source.paths
                   if source.lines(m) > MAX_LINES and m not in ALLOWED_LONG_MODULES)
    assert not found, f"modules over {MAX_LINES} lines: split them by concern:\n" + \
        "\n".join(f"  {m}: {n} lines" for m, n in found)


def test_allow_lists_name_only_what_still_breaks_a_rule(source):
    """An entry whose module was fixed is removed with the fix, so that it cannot let the same
    fault back in unnoticed."""
    cycle_sets = {frozenset(c) for c in cycles(source.graph())}
    private = {f[:2] for f in private_imports(source)}
    stale = [f"cycle {sorted(c)}" for c in ALLOWED_CYCLES if c not in cycle_sets]
    stale += [f"private import {p}" for p in ALLOWED_PRIVATE_IMPORTS if p not in private]
    stale += [f"long module {m}" for m in ALLOWED_LONG_MODULES
              if m not in source.paths or source.lines(m) <= MAX_LINES]
    assert not stale, "allow-list entries that no longer apply (remove them):\n" + "\n".join("  " + s for s in stale)


# -- the checks themselves, on a package made for them -----------------------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Source:
    for name, text in files.items():
        path = tmp_path / "neardup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Source(tmp_path)


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    source = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .sub.c import g\n    return g\n",
        "sub/__init__.py": "",
        "sub/c.py": "import neardup.a\n\ndef g():\n    pass\n",
        "d.py": "from .sub import c\n",  # the submodule, not the package: no cycle through sub
    })
    assert cycles(source.graph()) == [["neardup.a", "neardup.b", "neardup.sub.c", "neardup.a"]]


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    # a imports io.read.x, which first runs io/__init__, which imports io.write, which imports a
    source = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .io.read.x import f\n",
        "io/__init__.py": "from . import write\n",
        "io/write.py": "from ..a import f\n",
        "io/read/__init__.py": "",
        "io/read/x.py": "def f():\n    pass\n",
    })
    assert cycles(source.graph()) == [["neardup.a", "neardup.io", "neardup.io.write", "neardup.a"]]


def test_type_checking_imports_make_no_cycle(tmp_path):
    source = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import a\n"
                 "else:\n    import json\n"),
    })
    assert cycles(source.graph()) == []
    assert ("neardup.b", "json", 6) in source.imports


def test_private_names_are_checked_by_the_package_that_holds_them(tmp_path):
    source = _package(tmp_path, {
        "__init__.py": "",
        "_native.py": "from . import _kernel\n",
        "io/__init__.py": "",
        "io/read.py": "from .._native import encode\nfrom ..text._tables import CASE\nfrom ..text.html import _extract\n",
        "io/write.py": "from ._common import open_out\nfrom .read import _helper\n",
        "io/_common.py": "",
        "text/__init__.py": "",
        "text/_tables.py": "",
        "text/html.py": "from .. import _kernel\n",
    })
    assert private_imports(source) == [("neardup.io.read", "neardup.text._tables.CASE", 2),
                                       ("neardup.io.read", "neardup.text.html._extract", 3)]
    assert kernel_imports(source) == [("neardup.text.html", "neardup._kernel", 1)]


def test_an_import_of_a_module_that_moved_is_found(tmp_path):
    source = _package(tmp_path, {
        "__init__.py": "",
        "_native.py": "from . import _kernel\n",
        "io/__init__.py": "",
        "io/write/__init__.py": "",
        "io/write/shards.py": "class KeptLayout:\n    pass\n",
        "cli.py": "def run():\n    from .io.shards import KeptLayout\n    from .io.write.shards import KeptLayout\n",
    })
    assert missing_modules(source) == [("neardup.cli", "neardup.io.shards.KeptLayout", 2)]


def test_a_long_module_is_counted_by_its_lines(tmp_path):
    source = _package(tmp_path, {"__init__.py": "", "long.py": "x = 1\n" * (MAX_LINES + 1)})
    assert source.lines("neardup.long") == MAX_LINES + 1


def test_test_modules_have_unique_names():
    """The test folders are not packages (pytest imports each test file by its base name, with
    ``tests`` on the path), so two test files of one name stop the whole collection."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, list[str]] = {}
    for path in sorted(tests.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert not {name: where for name, where in seen.items() if len(where) > 1}
