"""The store layer's own layout: imports within it run one way (no circle, lazy imports
included), none reaches up into the tools above it, none borrows another module's private
names, and every module stays small."""

from __future__ import annotations

import ast
from pathlib import Path

import numcodecs_ext.store

STORE = Path(numcodecs_ext.store.__file__).parent
MODULES = sorted(p.stem for p in STORE.glob("*.py") if p.stem != "__init__")


def _imports(name: str) -> list[tuple[str, list[str], int]]:
    """``(module, names, level)`` of every import in a store module, at any depth."""
    tree = ast.parse((STORE / f"{name}.py").read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append((node.module or "", [a.name for a in node.names], node.level))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], 0) for a in node.names)
    return found


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name in MODULES:
        for module, _, level in _imports(name):
            if level == 1 and module.split(".")[0] in edges:
                edges[name].add(module.split(".")[0])
            elif module.startswith("numcodecs_ext.store."):
                edges[name].add(module.split(".")[2])
    return edges


def test_the_store_modules_import_one_way():
    edges = _edges()
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        assert state.get(name) != "open", f"an import circle: {' -> '.join([*path, name])}"
        if state.get(name) == "done":
            return
        state[name] = "open"
        for other in sorted(edges[name]):
            visit(other, [*path, name])
        state[name] = "done"
        order.append(name)

    for name in MODULES:
        visit(name, [])
    assert set(order) == set(MODULES)
    # the layers the package docstring names, bottom up
    assert edges["base"] == set() and "storage" not in edges["backends"] | edges["zarrstores"]
    assert "staging" not in edges["storage"] and "storage" in edges["staging"]


def test_no_store_module_imports_a_layer_above_it_or_a_private_name():
    above = ("cf", "migrate", "tools", "cli")
    for name in MODULES:
        for module, names, level in _imports(name):
            assert not (level == 2 and module.split(".")[0] in above), (name, module)
            assert not any(module.startswith(f"numcodecs_ext.{a}") for a in above), (name, module)
            if level == 1 or module.startswith("numcodecs_ext."):
                private = [n for n in names if n.startswith("_")]
                assert not private, f"{name} imports {private} from {module}"


def test_every_store_module_is_under_500_lines():
    sizes = {name: len((STORE / f"{name}.py").read_text().splitlines()) for name in MODULES}
    assert max(sizes.values()) < 500, sizes
