"""The optional compiled kernels (``_kernels.c``), and the switch that turns them off.

``pip install`` compiles them when a C compiler is present and goes on without them when not.
They only accelerate: every result they give is the numpy kernels' result bit for bit (the tests
check this on both paths), and where an element would be an error they hand the work back to the
numpy kernels, which raise it. Set the environment variable ``NUMCODECS_EXT_PURE_NUMPY=1`` to use
the numpy kernels only (or set :data:`ENABLED` to False at run time).

Examples
--------
>>> status()  # doctest: +SKIP
'compiled kernels in use'
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["ENABLED", "ENV_VAR", "kernels", "status"]

ENV_VAR = "NUMCODECS_EXT_PURE_NUMPY"

try:
    from . import _kernels as _compiled
except ImportError as exc:  # not built (no compiler at install), or its self-test failed
    _compiled = None
    _REASON = str(exc)
else:
    _REASON = ""

#: use the compiled kernels when they are built (read once from the environment at import)
ENABLED: bool = os.environ.get(ENV_VAR, "").strip().lower() in ("", "0", "false", "no")


def kernels() -> ModuleType | None:
    """The compiled kernels module, or None (not built, or switched off)."""
    return _compiled if ENABLED else None


def status() -> str:
    """One line for ``numcodecs-ext info``: which kernels run, and why."""
    if _compiled is None:
        return f"numpy kernels only (compiled kernels not built: {_REASON})"
    if not ENABLED:
        return f"numpy kernels only (compiled kernels switched off by {ENV_VAR})"
    return "compiled kernels in use"
