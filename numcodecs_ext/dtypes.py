"""Deprecated: numcodecs_ext 0.1's ``numcodecs_ext.dtypes``, kept for one release.

Data types now live in the numeric core: names and numeric properties in
:mod:`numcodecs_ext.core.dtypes`, fill-value JSON in :mod:`numcodecs_ext.core.scalar_json`. Every
public name of 0.1 still resolves here, with a DeprecationWarning naming its new home.
"""

from __future__ import annotations

import warnings
from typing import Any

from .core import dtypes as _dtypes
from .core import scalar_json as _scalar_json

__all__ = sorted({*_dtypes.__all__, *_scalar_json.__all__})


def __getattr__(name: str) -> Any:
    for module in (_dtypes, _scalar_json):
        if name in module.__all__:
            warnings.warn(f"numcodecs_ext.dtypes.{name} moved to {module.__name__}.{name}; the old name goes in the "
                          "next release", DeprecationWarning, stacklevel=2)
            return getattr(module, name)
    raise AttributeError(f"module 'numcodecs_ext.dtypes' has no attribute {name!r}")
