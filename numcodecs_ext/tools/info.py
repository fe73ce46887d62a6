"""``numcodecs-ext info``: the versions in use, the registered codecs and the implementation zarr
uses for each codec name, with the reason.

Examples::

    numcodecs-ext info
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

__all__ = ["add_arguments", "info_lines", "run"]


def info_lines() -> list[str]:
    """What ``numcodecs-ext info`` prints, line by line."""
    import numcodecs
    import zarr

    from .. import __version__
    from .._registry import NUMCODECS, ZARR, zarr_choice
    from ..core import _libzfp, _native

    lines = [f"numcodecs_ext {__version__}",
             f"numpy {np.__version__}, numcodecs {numcodecs.__version__}, zarr {zarr.__version__}"]
    try:
        import ml_dtypes

        lines.append(f"ml_dtypes {ml_dtypes.__version__}")
    except ImportError:
        lines.append("ml_dtypes: not installed (bfloat16/float8/int4 unavailable)")
    lines.append(f"kernels (scale_offset, cast_value, transpose, zfp checks, bitround): {_native.status()}")
    try:
        lines.append(f"libzfp: {_libzfp.load()!r}")
    except ImportError as exc:
        lines.append(f"libzfp: unavailable ({exc})")
    lines.append("numcodecs ids: " + ", ".join(NUMCODECS))
    lines.append("zarr v3 names: " + ", ".join(ZARR))
    lines.append("implementation zarr uses for each name:")
    for name in (n for n in ZARR if not n.startswith("numcodecs.")):
        chosen, why = zarr_choice(name)
        lines.append(f"  {name:13} {chosen}  ({why})")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``numcodecs-ext info`` takes no arguments."""


def run(args: Any = None) -> int:
    """Print :func:`info_lines`."""
    for line in info_lines():
        print(line)
    return 0
