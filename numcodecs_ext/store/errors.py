"""The errors every tool raises, and the exit status each one means on the command line.

A tool is a Python function first; the ``numcodecs-ext`` command (:mod:`numcodecs_ext.cli`, which
holds the statuses as ``EXIT_*``) maps what it raises to one convention, the same for every command:

====  =====================================================================================
exit  meaning
====  =====================================================================================
0     the work was done (and verified, where the command verifies)
1     the work failed: unreadable or corrupt data, a verification that did not hold, a
      store or file that cannot be converted (:class:`ToolError`, and any other error a tool
      meets while working)
2     the command cannot run as given: an invalid or out-of-range argument, a path that does
      not exist or is the wrong kind of thing, a destination that exists or overlaps the
      source (:class:`UsageError`, and argparse's own errors)
130   interrupted (Ctrl-C, SIGINT): the command ends by the signal, which a shell reports as
      130 (128 + 2); :func:`numcodecs_ext.cli.main` called with arguments returns 130
====  =====================================================================================

Messages name what is wrong, the value, and what would be valid; they never show a numpy repr or
a credential.

Examples
--------
>>> raise UsageError("--chunk-mib 0: give a size above 0")
Traceback (most recent call last):
...
numcodecs_ext.store.errors.UsageError: --chunk-mib 0: give a size above 0
>>> issubclass(UsageError, ValueError), issubclass(VerificationError, ToolError)
(True, True)
"""

from __future__ import annotations

__all__ = ["ToolError", "UsageError", "VerificationError"]


class UsageError(ValueError):
    """The request cannot be carried out as given (exit status 2): a bad argument or path.

    A ValueError, so that Python callers of the tool functions catch it as they catch any
    invalid argument.
    """


class ToolError(RuntimeError):
    """The work was tried and failed (exit status 1); the message says what the user's data
    or store holds and what was left behind."""


class VerificationError(ToolError):
    """What was written does not read back as the source reads: nothing claims to be complete."""
