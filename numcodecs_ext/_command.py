"""The first lines the ``numcodecs-ext`` command runs: Ctrl-C and a closed pipe end it without a
traceback from the very start, while the package (numcodecs, zarr, xarray ...) is still importing.

Importing numcodecs_ext takes about a second; a Ctrl-C in that time raises KeyboardInterrupt
inside some library's import, before :func:`numcodecs_ext.cli.main` runs. The package's first
statement therefore calls :func:`guard` when this process is the command (the console script
``numcodecs-ext``, or ``python -m numcodecs_ext``): an interruption that escapes to the top is
told in one line, and Python still ends the process by SIGINT after its clean-up (status 130 in
a shell, as for any program that Ctrl-C stops). Only the standard library's ``sys`` and ``os``
are used here, so the guard is in place before anything heavy is imported; a library user's
process (any other program importing numcodecs_ext) is left as it is.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)

if TYPE_CHECKING:  # typing's import takes longer than the rest of this module: a Ctrl-C there was a traceback
    from typing import Any

__all__ = ["guard", "is_command", "reported"]

PROG = "numcodecs-ext"

#: the command's process: whether the hooks are installed; whether the interruption was told
_STATE = {"guarded": False, "reported": False}

#: what the console script is called (pip's launcher on Windows adds .exe; old setuptools -script.py)
_SCRIPT_NAMES = (PROG, f"{PROG}.exe", f"{PROG}-script.py")


def is_command() -> bool:
    """Whether this process runs the ``numcodecs-ext`` command: its console script, or
    ``python -m numcodecs_ext`` (or one of its modules; while ``-m`` imports the package,
    ``sys.argv[0]`` is ``"-m"`` and ``sys.orig_argv`` holds the module's name)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == "-m":
        target = ""
        for i, word in enumerate(getattr(sys, "orig_argv", ())):
            if word == "-m":
                target = sys.orig_argv[i + 1] if i + 1 < len(sys.orig_argv) else ""
                break
            if word.startswith("-m") and not word.startswith("--"):
                target = word[2:]
                break
        return target == "numcodecs_ext" or target.startswith("numcodecs_ext.")
    return os.path.basename(argv0).lower() in _SCRIPT_NAMES


def reported() -> None:
    """The command has told its interruption (the KeyboardInterrupt it raises again is silent)."""
    _STATE["reported"] = True


def _say(text: str) -> None:
    try:
        sys.stderr.write(f"\n{PROG}: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed or gone: nothing to tell it on
        pass


def _quiet(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, (KeyboardInterrupt, BrokenPipeError))


def guard() -> None:
    """Install, once, the hooks that keep an interruption or a closed pipe free of tracebacks.

    ``sys.excepthook``: a KeyboardInterrupt that ends the program is told in one line ("interrupted
    while starting; nothing was written", unless the command already said what it left; with
    ``NUMCODECS_EXT_TRACEBACK=1`` its traceback instead), a BrokenPipeError not at all (the
    reader went away); other exceptions as before.
    ``sys.unraisablehook``: the same two, raised where Python can only report them (an ``atexit``
    callback, a finalizer, the last flush of stdout), are dropped; others as before.
    """
    if _STATE["guarded"]:
        return
    _STATE["guarded"] = True
    previous_excepthook, previous_unraisablehook = sys.excepthook, sys.unraisablehook

    def excepthook(kind: Any, value: Any, tb: Any) -> None:
        if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
            if os.environ.get("NUMCODECS_EXT_TRACEBACK"):  # where it was interrupted, for a bug report
                previous_excepthook(kind, value, tb)
            elif not _STATE["reported"]:
                _say("interrupted while starting; nothing was written")
            return
        if _quiet(kind):
            return
        previous_excepthook(kind, value, tb)

    def unraisablehook(unraisable: Any) -> None:
        if _quiet(getattr(unraisable, "exc_type", None)):
            return
        previous_unraisablehook(unraisable)

    sys.excepthook = excepthook
    sys.unraisablehook = unraisablehook
