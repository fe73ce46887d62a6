"""How migrate and normalize put values, regions and foreign error messages into words: plain
numbers, never a numpy repr.

Examples
--------
>>> import numpy as np
>>> number(np.float64(-100000.0)), number(np.float32("nan")), number(np.uint16(7)), number(0.1)
('-100000', 'NaN', '7', '0.1')
>>> number(np.float32(905.35)), number(np.float32(260.0))
('905.35', '260')
>>> counted(1, "array"), counted(3, "array"), counted(0, "run of chunks", "runs of chunks")
('1 array', '3 arrays', '0 runs of chunks')
>>> region((slice(0, 7), slice(10, 20)))
'[0:7, 10:20]'
>>> plain("the fill value np.float64(-100000.0) cannot be cast to np.dtype('uint16')")
'the fill value -100000.0 cannot be cast to uint16'
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

__all__ = ["counted", "error", "number", "plain", "region"]

_NUMPY_REPR = re.compile(r"\bnp\.(?:dtype\(|[a-z_]+[0-9]*\()('?)([^()']*)\1\)")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it takes: ``1 array``, ``2 arrays`` (``plural`` where
    adding an s does not make it)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def number(value: Any) -> str:
    """``value`` (a Python or numpy number) as a person writes it: ``NaN``, ``Infinity``,
    integral floats without ``.0``, others in their shortest exact form."""
    if isinstance(value, np.floating) and value.dtype.itemsize < 8 and np.isfinite(value):
        text = str(value)  # the shortest form that reads back as the same float32/float16
        return text[:-2] if text.endswith(".0") else text
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    if isinstance(value, complex):
        return f"{number(value.real)}{'+' if value.imag >= 0 else '-'}{number(abs(value.imag))}j"
    return str(value)


def region(sel: tuple[slice, ...]) -> str:
    """A chunk-aligned selection as ``[start:stop, ...]`` (``[]`` for a 0-d array)."""
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in sel) + "]"


def plain(text: str) -> str:
    """``text`` (an error message from zarr, numcodecs or numpy) with numpy reprs such as
    ``np.float64(1.5)`` or ``np.dtype('uint16')`` unwrapped to their values."""
    previous = None
    while previous != text:  # nested reprs unwrap from the inside out
        previous, text = text, _NUMPY_REPR.sub(lambda m: m.group(2), text)
    return text


def error(e: BaseException) -> str:
    """An exception met while reading or writing, in words: its message (plain), with the type
    only where the message alone would say nothing."""
    message = plain(str(e)).strip()
    if not message or isinstance(e, (KeyError, IndexError)):
        return f"{type(e).__name__}: {message}" if message else type(e).__name__
    return message
