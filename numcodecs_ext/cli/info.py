"""``numcodecs-ext info``: the command line of :func:`numcodecs_ext.tools.info.info`."""

from __future__ import annotations

import argparse
import json
import sys

from ..tools.info import format_info, info

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[info.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext info``."""
    parser.add_argument("--json", action="store_true", help="print JSON (for scripts)")


def run(args: argparse.Namespace) -> int:
    """Print :func:`info` (as text, or JSON with ``--json``)."""
    found = info()
    if getattr(args, "json", False):
        print(json.dumps(found, indent=2))
    else:
        print("\n".join(format_info(found)))
    return 0
