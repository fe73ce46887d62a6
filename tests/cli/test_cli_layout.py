"""The command line lives in ``numcodecs_ext/cli`` alone: no other module imports argparse or
names an exit status (``EXIT_*``), and no library module imports the cli package; each command
is a module there with ``add_arguments`` and ``run``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import numcodecs_ext
from numcodecs_ext.cli import COMMANDS

PACKAGE = Path(numcodecs_ext.__file__).resolve().parent


def _library_modules() -> list[Path]:
    """Every module but the cli package's and ``python -m numcodecs_ext``'s (which runs it)."""
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "cli" not in p.relative_to(PACKAGE).parts and p != PACKAGE / "__main__.py")


def _offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "argparse" or a.name.startswith("numcodecs_ext.cli")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] == "argparse" or module == "cli" or module.startswith("cli.") \
                    or module.startswith("numcodecs_ext.cli"):
                found.append(f"from {'.' * node.level}{module} import ...")
            found += [f"imports {a.name}" for a in node.names if a.name.startswith("EXIT_")
                      or (a.name == "cli" and (module == "numcodecs_ext" or (node.level and not module)))]
        elif isinstance(node, ast.Name) and node.id.startswith("EXIT_"):
            found.append(f"names {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("EXIT_"):
            found.append(f"names .{node.attr}")
    return found


def test_no_library_module_holds_command_line_code() -> None:
    modules = _library_modules()
    assert len(modules) > 50 and any(p.name == "v2.py" for p in modules)  # the scan sees the library
    assert [f"{p.relative_to(PACKAGE.parent)}: {o}" for p in modules for o in _offences(p.read_text())] == []


def test_the_scan_finds_what_it_looks_for() -> None:
    """The scan itself: each kind of offence in a module is found."""
    found = _offences("import argparse\nfrom ..cli import main\nfrom .errors import EXIT_OK\n"
                      "status = EXIT_USAGE\nfrom numcodecs_ext import cli\ncli.EXIT_FAILED\n")
    assert sorted(found) == sorted([
        "import argparse", "from ..cli import ...", "imports EXIT_OK", "names EXIT_USAGE", "imports cli",
        "names .EXIT_FAILED"])


def test_every_command_is_a_module_of_the_cli_package() -> None:
    for name, (module_name, _) in COMMANDS.items():
        assert module_name == f"numcodecs_ext.cli.{name}"
        module = importlib.import_module(module_name)
        assert callable(module.add_arguments) and callable(module.run), name
        assert isinstance(module.HELP, str) and module.HELP.strip(), name
