"""The package's layers, held against its imports: every import, lazy ones inside functions
included, runs down a layer or stays in its own, and no modules import each other in a loop.

The layers, bottom up (docs/contributing.md explains each):

========  =====================================================================================
core      numpy kernels and C, the dtype model: no numcodecs, no zarr
codecs    the numcodecs classes
zarr3     the zarr v3 classes
package   ``numcodecs_ext`` itself and its registration with numcodecs and zarr
store     locations, staging, parallel runs, the journal, progress, the tools' errors
cf        CF netCDF: convert, suggest, the xarray helper   (independent of migrate)
migrate   zarr v2 -> v3: migrate, normalize                 (independent of cf)
tools     the reporting tools: inspect, info, demo
cli       the ``numcodecs-ext`` command: the only argparse and exit statuses
========  =====================================================================================
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "numcodecs_ext"

#: layer of each module, by its first name under numcodecs_ext (module name -> rank)
LAYERS: dict[str, int] = {
    "_command": 0,  # the command's Ctrl-C guard: standard library only, imported first of all
    "core": 1,
    "codecs": 2,
    "zarr3": 3,
    "": 4, "_registry": 4, "dtypes": 4,  # the package itself, its registration, 0.1 aliases
    "store": 5,
    "cf": 6, "migrate": 6,
    "tools": 7,
    "cli": 8, "__main__": 8,
}
#: layers of equal rank that must not import each other
INDEPENDENT = [("cf", "migrate")]
#: the only places argparse may be imported
ARGPARSE = ("cli",)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _absolute(here: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, relative ones resolved from the package ``here``."""
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str) -> list[tuple[str, int]]:
    """(module imported, line) for every import in the module, wherever it stands."""
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    here = name if _is_package(name) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(here, node)
            found.append((target, node.lineno))
            # `from pkg import submodule` imports the submodule too
            found += [(f"{target}.{a.name}", node.lineno) for a in node.names if f"{target}.{a.name}" in MODULES]
    return [(t, line) for t, line in found if t == "numcodecs_ext" or t.startswith("numcodecs_ext.")]


def _resolve(target: str) -> str | None:
    """The module of ours that an import names (the longest known prefix)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


GRAPH = {name: sorted({m for t, _ in _imports(name) if (m := _resolve(t)) and m != name}) for name in MODULES}


def _layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_has_a_layer() -> None:
    unknown = sorted({_layer(m) for m in MODULES} - set(LAYERS))
    assert not unknown, f"modules outside every layer: {unknown}; add their folder to LAYERS"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_run_down(name: str) -> None:
    mine = _layer(name)
    upward = []
    for target, line in _imports(name):
        module = _resolve(target)
        if module is None or module == name:
            continue
        theirs = _layer(module)
        if theirs == "" and _is_package(module) and module != "numcodecs_ext":
            continue
        if LAYERS[theirs] > LAYERS[mine] or (theirs != mine and {mine, theirs} in map(set, INDEPENDENT)):
            upward.append(f"line {line}: {module} ({theirs or 'package'})")
    assert not upward, f"{name} ({mine or 'package'}) imports up or across: {upward}"


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def test_no_circles() -> None:
    circles = []
    for group in _circles():
        # a module and the package it belongs to (pkg/__init__ importing pkg.mod, pkg.mod naming
        # pkg) is how Python packages work, not a circle of design
        inner = [m for m in group if not (_is_package(m) and all(g == m or g.startswith(m + ".") for g in group))]
        if len(inner) > 1:
            circles.append(group)
    assert not circles, f"modules that import each other in a loop: {circles}"


def _is_module(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module (Python, or compiled: ``core._kernels``)."""
    folder = ROOT.joinpath(*package.split("."))
    return f"{package}.{name}" in MODULES or (folder / f"{name}.c").exists()


#: the most lines a module may have: a module longer than this holds more than one concern
MAX_LINES = 500


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_small(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines (at most {MAX_LINES}): split it by responsibility"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_is_borrowed(name: str) -> None:
    """A name another module uses is public there: ``from .x import _y`` hides a dependency (a
    module of the package, such as ``core._native``, may be private: it is a module, not a name)."""
    tree = ast.parse(MODULES[name].read_text())
    here = name if _is_package(name) else name.rpartition(".")[0]
    borrowed = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("numcodecs_ext")):
            continue
        target = _absolute(here, node)
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and not _is_module(target, alias.name):
                borrowed.append(f"line {node.lineno}: {target}.{alias.name}")
    assert not borrowed, f"{name} imports private names of other modules: {borrowed}"


def test_the_graph_is_read() -> None:
    # a check that reads nothing would pass on anything: the graph must hold the known edges
    assert "numcodecs_ext.core.transpose" in GRAPH["numcodecs_ext.codecs.transpose"]
    assert sum(map(len, GRAPH.values())) > 100
