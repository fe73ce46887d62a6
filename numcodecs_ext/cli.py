"""The ``numcodecs-ext`` command: one parser, one subcommand per tool, one exit-code convention.

Without a command it runs the demonstration (``demo``). Each tool is a Python function first; its
module gives the command line (``add_arguments(parser)``) and runs it (``run(args)``), raising
:class:`~numcodecs_ext.tools.errors.UsageError` or
:class:`~numcodecs_ext.tools.errors.ToolError`. This module turns those into messages and exit
statuses (0 done, 1 the work failed, 2 the command cannot run as given), ends quietly when the
reader of its output goes away (``numcodecs-ext info | head -n 1``), and never prints a traceback
(set ``NUMCODECS_EXT_TRACEBACK=1`` to see one for an unexpected error).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from collections.abc import Sequence

from .tools.errors import EXIT_FAILED, EXIT_USAGE, ToolError, UsageError

__all__ = ["COMMANDS", "main"]

PROG = "numcodecs-ext"

#: command -> (module with ``add_arguments`` and ``run``, one line of help). Modules are imported
#: only when their command runs, so each tool's optional dependencies stay optional.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("numcodecs_ext.tools.demo", "every codec pipeline on an embedded sample field (the default)"),
    "info": ("numcodecs_ext.tools.info", "versions, registered codecs, the implementation zarr uses for each"),
    "convert": ("numcodecs_ext.cf.convert", "a CF-packed netCDF file to a zarr store with the spec codecs"),
    "suggest": ("numcodecs_ext.cf.suggest", "a packing with a guaranteed error for the float arrays of a store or file"),
    "migrate": ("numcodecs_ext.migrate.v2", "a zarr v2 store to zarr v3, chunks kept where they stay valid"),
    "normalize": ("numcodecs_ext.migrate.normalize", "numcodecs.fixedscaleoffset/astype in a v3 store to the spec codecs"),
    "inspect": ("numcodecs_ext.tools.inspect", "what a zarr store holds: arrays, codecs in words, who reads them"),
}

DESCRIPTION = """Spec-exact array codecs for zarr and numcodecs, and the tools around them.

Without a command: write an embedded temperature field through every codec pipeline, read it back,
check it, and print compression ratio, error and speed (the same as `numcodecs-ext demo`)."""

EPILOG = """exit status: 0 done (and verified, where the command verifies); 1 the work failed
(unreadable or corrupt data, a failed verification, an interruption); 2 the command cannot run
as given (an invalid argument, a missing or wrong path).

`numcodecs-ext COMMAND --help` describes each command."""


def _plain(text: str) -> str:
    """A docstring paragraph as terminal text: reStructuredText roles and literals unwrapped."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "`").replace("::\n", ":\n")


def _help_text(module: object) -> tuple[str, str | None]:
    """(description, examples) for a tool's ``--help``, from its module docstring: the first
    paragraph, and the ``Examples::`` block if there is one."""
    doc = (getattr(module, "__doc__", None) or "").strip()
    first = _plain(doc.split("\n\n")[0])
    match = re.search(r"Examples::\n\n((?:    .*\n?|\n)+)", doc + "\n")
    examples = "examples:\n" + match.group(1).rstrip() if match else None
    return first, examples


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The one parser; only ``command``'s own arguments are filled in (its module imported)."""
    from . import __version__

    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (module_name, summary) in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=summary, description=summary)
            continue
        module = importlib.import_module(module_name)
        description, examples = _help_text(module)
        p = sub.add_parser(name, help=summary, description=description, epilog=examples,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None) if argv else None


def _report(command: str, message: str) -> None:
    print(f"{PROG} {command}: {message}", file=sys.stderr)


def _run(argv: list[str]) -> int:
    # no command, only options (numcodecs-ext --out DIR): the demo
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["demo", *argv]
    command = _command_of(argv)
    parser = _parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)  # argparse exits 2 itself on a usage error
    try:
        status = args._run(args)
    except UsageError as e:
        _report(args.command, str(e))
        return EXIT_USAGE
    except (ToolError, ValueError, OSError) as e:
        _report(args.command, str(e) or type(e).__name__)
        return EXIT_FAILED
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:  # noqa: BLE001 - never a traceback: say what happened and that it is ours
        if os.environ.get("NUMCODECS_EXT_TRACEBACK"):
            traceback.print_exc()
        _report(args.command, f"unexpected {type(e).__name__}: {e}\n(this is a bug in numcodecs_ext: "
                              "please report it with the command; NUMCODECS_EXT_TRACEBACK=1 shows where)")
        return EXIT_FAILED
    return int(status or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``numcodecs-ext`` with ``argv`` (default: the process's arguments); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _run(argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # the reader went away (| head): stop quietly, and keep Python from complaining at exit
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; anything being written was left incomplete and does not "
              "open as complete", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
