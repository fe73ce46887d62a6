"""The ``numcodecs-ext`` command: one parser, one subcommand per tool, one exit-code convention.

Without a command it runs the demonstration (``demo``). Each tool is a Python function first, in
the library; one module per command here (``numcodecs_ext.cli.convert`` ...) gives it its command
line (``add_arguments(parser)``) and runs it (``run(args)``), the library raising
:class:`~numcodecs_ext.store.errors.UsageError` or :class:`~numcodecs_ext.store.errors.ToolError`.
This package alone holds argparse and exit statuses: this module turns those errors into messages
and exit statuses (0 done, 1 the work failed, 2 the command cannot run as given, 130 interrupted),
ends quietly when the reader of its output goes away (``numcodecs-ext info | head -n 1``), and
never prints a traceback (set ``NUMCODECS_EXT_TRACEBACK=1`` to see one for an unexpected error).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import stat
import sys
import traceback
from collections.abc import Sequence

from .. import _command
from ..store.errors import ToolError, UsageError
from .options import add_quiet

__all__ = ["COMMANDS", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "main"]

#: the exit statuses of every command (see :mod:`numcodecs_ext.store.errors` for what raises which)
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a program that Ctrl-C ended

PROG = "numcodecs-ext"

#: command -> (module with ``add_arguments`` and ``run``, one line of help). Modules are imported
#: only when their command runs, so each tool's optional dependencies stay optional.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("numcodecs_ext.cli.demo", "every codec pipeline on an embedded sample field (the default)"),
    "info": ("numcodecs_ext.cli.info", "versions, registered codecs, the implementation zarr uses for each"),
    "convert": ("numcodecs_ext.cli.convert", "a CF-packed netCDF file to a zarr store with the spec codecs"),
    "suggest": ("numcodecs_ext.cli.suggest",
                "a packing with a guaranteed error for the float arrays of a store or file"),
    "migrate": ("numcodecs_ext.cli.migrate", "a zarr v2 store to zarr v3, chunks kept where they stay valid"),
    "normalize": ("numcodecs_ext.cli.normalize",
                  "numcodecs.fixedscaleoffset/astype in a v3 store to the spec codecs"),
    "inspect": ("numcodecs_ext.cli.inspect", "what a zarr store holds: arrays, codecs in words, who reads them"),
}

DESCRIPTION = """Spec-exact array codecs for zarr and numcodecs, and the tools around them.

Without a command: write an embedded temperature field through every codec pipeline, read it back,
check it, and print compression ratio, error and speed (the same as `numcodecs-ext demo`)."""

EPILOG = """exit status (every command):
  0  done (and verified, where the command verifies)
  1  the work failed: unreadable or corrupt data, a failed verification
  2  the command cannot run as given: an invalid argument, a missing or wrong path
  130  interrupted (Ctrl-C): the command ends by SIGINT, which shells report as 130

`numcodecs-ext COMMAND --help` describes each command."""

def _plain(text: str) -> str:
    """reStructuredText as terminal text: roles, literals, emphasis, links and directives unwrapped.

    >>> _plain("Uses :mod:`.plan` and :func:`~numcodecs_ext.cf.convert` on ``x``::")
    'Uses plan and convert on `x`:'
    >>> _plain("**strong** and *emphasis*, `zarr <https://zarr.dev>`_")
    'strong and emphasis, zarr (https://zarr.dev)'
    """
    text = re.sub(r":[a-z:]+:`([^`<]*?)\s*<[^`>]*>`", r"\1", text)  # :role:`Title <target>`
    text = re.sub(r":[a-z:]+:`~[^`]*?\.?([^`.]+)`", r"\1", text)  # :role:`~a.b.c` -> c
    text = re.sub(r":[a-z:]+:`\.?([^`]+)`", r"\1", text)  # :role:`.plan` -> plan
    text = re.sub(r"`([^`<]+?)\s*<([^`>]+)>`_+", r"\1 (\2)", text)  # `text <url>`_
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"^\.\. [a-z-]+::.*\n?", "", text, flags=re.MULTILINE)  # directives
    text = text.replace("``", "`")
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def _help_text(module: object) -> tuple[str, str | None]:
    """(description, examples) for a tool's ``--help``, from the command module's ``HELP`` (the
    docstring of the library module that does the work): the text before its ``Examples::``
    block, and that block."""
    doc = (getattr(module, "HELP", None) or "").strip()
    head, _, tail = doc.partition("Examples::")
    description = _plain(head.strip())
    lines = [line for line in tail.splitlines() if line.strip()]
    examples = "examples:\n" + "\n".join(lines) if lines else None
    return description, examples


class _Parser(argparse.ArgumentParser):
    """argparse, with its error messages (which repeat arguments: "unrecognized arguments:
    ...", "invalid choice: ...") free of the credentials those arguments may hold: a mistyped
    ``--storage_options '{"secret": ...}'``, a URL with ``user:password@`` or a signature."""

    argv: Sequence[str] = ()

    def error(self, message: str):  # type: ignore[override]  # noqa: ANN201 - argparse's signature
        from ..store.faults import argument_secrets, redact

        super().error(redact(message, secrets=argument_secrets(self.argv)))


def _parser(command: str | None, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The one parser; only ``command``'s own arguments are filled in (its module imported)."""
    from .. import __version__

    _Parser.argv = tuple(argv)
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
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
        add_quiet(p)
        p.set_defaults(_run=module.run)
    return parser


def _report(command: str, message: str) -> None:
    print(f"{PROG} {command}: {message}", file=sys.stderr)


def _unknown_command(word: str) -> int:
    from ..store.faults import argument_secrets, redact

    close = difflib.get_close_matches(word, COMMANDS, n=1)
    word = redact(word, secrets=argument_secrets([word]))
    hint = f" (did you mean {close[0]}?)" if close else ""
    print(f"usage: {PROG} [--version] [COMMAND] ...\n{PROG}: unknown command {word!r}{hint}; "
          f"the commands are: {', '.join(COMMANDS)}\n"
          f"`{PROG} --help` describes them all, `{PROG} COMMAND --help` each one", file=sys.stderr)
    return EXIT_USAGE


#: whether the command's tool has started (an interruption before it has written nothing)
_STARTED = {"tool": False}


def _run(argv: list[str]) -> int:
    quiet = []  # numcodecs-ext -q COMMAND ...: the option belongs to the command
    while argv and argv[0] in ("-q", "--quiet"):
        quiet.append(argv.pop(0))
    argv = [argv[0], *quiet, *argv[1:]] if argv and argv[0] in COMMANDS else quiet + argv
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        return _unknown_command(argv[0])
    # no command, only options (numcodecs-ext --out DIR): the demo
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["demo", *argv]
    command = argv[0] if argv[0] in COMMANDS else None
    try:
        parser = _parser(command, argv)
    except ModuleNotFoundError as e:
        _report(command or "", f"needs {e.name or e}, which is not installed: "
                               'pip install "numcodecs_ext[xarray]" installs what every tool needs')
        return EXIT_USAGE
    args = parser.parse_args(argv)  # argparse exits 2 itself on a usage error
    _STARTED["tool"] = True
    try:
        status = args._run(args)
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except UsageError as e:
        _report(args.command, str(e))
        return EXIT_USAGE
    except ModuleNotFoundError as e:  # an optional dependency of this command
        _report(args.command, f"needs {e.name or e}, which is not installed: "
                              'pip install "numcodecs_ext[xarray]" installs what every tool needs')
        return EXIT_USAGE
    except (ToolError, ValueError, OSError) as e:
        _report(args.command, str(e) or type(e).__name__)
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - never a traceback: say what happened and that it is ours
        if os.environ.get("NUMCODECS_EXT_TRACEBACK"):
            traceback.print_exc()
        _report(args.command, f"unexpected {type(e).__name__}: {e}\n(this is a bug in numcodecs_ext: "
                              "please report it with the command; NUMCODECS_EXT_TRACEBACK=1 shows where)")
        return EXIT_FAILED
    return int(status or 0)


def _reader_gone(fd: int) -> bool:
    """Whether ``fd`` is a pipe or socket whose reading end was closed."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) and not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return False
        import select

        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _silence(fd: int) -> None:
    """Point ``fd`` at /dev/null, so that Python's final flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _tolerant_streams() -> None:
    """Names that are not valid in the terminal's encoding (a store's files can be called
    anything) are printed escaped rather than failing the command."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass


def _quiet_shutdown() -> None:
    """No traceback from the libraries' leftovers either: when a store write fails, zarr's and
    the storage clients' pending asyncio tasks are destroyed at exit, and Python reports them
    ("Task was destroyed but it is pending!", "Exception ignored in ..." with a traceback) after
    the command has said what failed. NUMCODECS_EXT_TRACEBACK=1 shows them."""
    if os.environ.get("NUMCODECS_EXT_TRACEBACK"):
        return
    import logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    sys.unraisablehook = lambda unraisable: None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``numcodecs-ext`` with ``argv`` (default: the process's arguments); the exit status.

    A closed pipe ends the command quietly: when the reader of the results (stdout) went away
    (``| head``), the status is 0 (or the command's own, if it had finished); when stderr went
    away while the command worked, 1 (its work is left incomplete, as after any interruption).

    An interruption (Ctrl-C, SIGINT) is told in one line, what was being written left as it is
    (every tool's writes resume or open as incomplete): called with ``argv``, the status is 130;
    as the program itself (no ``argv``), the process ends by SIGINT after Python's clean-up, which
    a shell reports as 130 (128 + 2) and which stops a shell loop or script running it, as Ctrl-C
    stops any program. From then on a second Ctrl-C ends the process at once.
    """
    program = argv is None  # the program itself (not a caller's test of it)
    status = None
    _STARTED["tool"] = False
    try:
        if program:
            _command.guard()  # already done on import when the process is the command
            _quiet_shutdown()
        argv = list(sys.argv[1:] if argv is None else argv)
        _tolerant_streams()
        try:
            status = _run(argv)
        except SystemExit as e:  # argparse's --help, --version and usage errors: flushed below
            if not program:
                raise
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        out_gone, err_gone = _reader_gone(1), _reader_gone(2)
        for fd, gone in ((1, out_gone), (2, err_gone)):
            if gone:
                _silence(fd)
        if status is not None:
            return status
        return EXIT_OK if out_gone and not err_gone else EXIT_FAILED
    except KeyboardInterrupt:
        if program:
            _end_at_next_interrupt()
        told = ("interrupted; anything being written was left incomplete and does not open as complete"
                if _STARTED["tool"] else "interrupted while starting; nothing was written")
        try:
            print(f"\n{PROG}: {told}", file=sys.stderr)
        except (OSError, ValueError):  # stderr gone too
            pass
        if not program:
            return EXIT_INTERRUPTED
        _command.reported()
        raise  # Python ends the process by SIGINT once it has cleaned up; the hook prints nothing
    finally:
        if program:
            _end_at_next_interrupt()


def _end_at_next_interrupt() -> None:
    """A Ctrl-C from now on (the command is ending: Python's clean-up, its threads) ends the
    process by SIGINT at once, with no Python code run and no traceback."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread: Python delivers signals only there anyway
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
