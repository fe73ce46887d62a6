"""Shared test helpers: ``from tests.helpers import s3server`` / ``from tests.helpers.common import ...``.

The modules here are imported by the tests (pytest puts the repository root on the path, since
``tests/`` is a package); a few also run as scripts in child processes (``forked_cli.py``,
``corpus_check.py``, ``killpoints.py`` through ``python -c``), from the repository root.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the repository root, its stored fixtures, and this folder (for the helpers run as scripts)
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
HELPERS = Path(__file__).resolve().parent

#: ``NUMCODECS_EXT_FULL=1`` (CI sets it) runs the long matrices too: the tests marked ``full``
#: (SIGKILL at every point, S3 server faults, dask clusters, the whole netCDF corpus ...) and
#: the long hypothesis runs. Without it the suite keeps a representative case of each.
FULL = os.environ.get("NUMCODECS_EXT_FULL", "").strip().lower() not in ("", "0", "false", "no")


def examples(full: int, quick: int | None = None) -> int:
    """A hypothesis test's number of examples: ``full`` with the switch, else ``quick``
    (by default an eighth of it, at least 10)."""
    return full if FULL else (quick if quick is not None else max(10, full // 8))
