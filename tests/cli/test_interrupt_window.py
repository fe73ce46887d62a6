"""The window in which a Ctrl-C at the command's start is a KeyboardInterrupt traceback: every
module imported before the guard is in place. ``numcodecs_ext._command`` (which installs it) must
import nothing that Python has not already imported at startup: ``typing`` (about 20 ms of
imports) used to be imported there, and a Ctrl-C during it printed a traceback."""

from __future__ import annotations

import subprocess
import sys


def _children(lines: list[str], name: str) -> list[str]:
    """The modules ``-X importtime`` shows imported by ``name`` (deeper lines just before its own)."""
    rows = [(len(n) - len(n.lstrip()), n.strip()) for n in (line.rsplit("|", 1)[-1] for line in lines)]
    at = next(i for i, (_, n) in enumerate(rows) if n == name)
    depth, out = rows[at][0], []
    for d, n in reversed(rows[:at]):
        if d <= depth:
            break
        out.append(n)
    return out


def test_the_guard_module_imports_nothing_new():
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import numcodecs_ext"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("import time:") and "|" in line]
    assert any(line.rsplit("|", 1)[-1].strip() == "numcodecs_ext._command" for line in lines)
    assert _children(lines, "numcodecs_ext._command") == []
