"""The array's namespace, and the checks every device kernel shares: the dtypes the kernels
take, declining to the host path, subnormals a device may flush, bit reinterpretation."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["FLUSHED", "ModuleNamespace", "any_true", "copied", "declines", "is_dtype", "namespace", "numpy_dtype",
           "subnormal", "view", "xp_dtype"]

#: the data types of the array API standard that the kernels take
_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


class ModuleNamespace:
    """A numpy-like library's module as the namespace the kernels use: the few names of the
    standard that such a module spells otherwise are mapped (older cupy has neither
    ``__array_namespace__`` nor ``permute_dims``, ``concat`` or ``astype``)."""

    _ALIASES = {"permute_dims": "transpose", "concat": "concatenate",
                "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}

    def __init__(self, module: Any) -> None:
        self._module = module

    @staticmethod
    def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
        return x.astype(dtype, copy=copy)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._module, name, None)
        if found is None and name in self._ALIASES:
            found = getattr(self._module, self._ALIASES[name], None)
        if found is None:
            raise AttributeError(name)
        return found


def namespace(arr: Any) -> Any:
    """The array API namespace of a non-numpy array, or None (a numpy array): the array's
    ``__array_namespace__()``; else ``array_api_compat``'s wrapper where that is installed;
    else, for a cupy array, the cupy module through :class:`ModuleNamespace`. An array none of
    these covers gets None too, and the host path."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return None
    get = getattr(arr, "__array_namespace__", None)
    if get is not None:
        try:
            return get()
        except Exception:  # an API version the library does not offer, for example
            pass
    try:
        import array_api_compat
    except ImportError:  # (optional: not a dependency)
        pass
    else:
        try:
            return array_api_compat.array_namespace(arr)
        except TypeError:
            pass
    root = type(arr).__module__.partition(".")[0]
    if root == "cupy":
        import sys

        return ModuleNamespace(sys.modules["cupy"])
    return None


def numpy_dtype(xp: Any, dtype: Any) -> np.dtype | None:
    """The numpy dtype of a namespace's dtype, or None for one the kernels do not take."""
    for name in _NAMES:
        if getattr(xp, name, None) == dtype:
            return np.dtype(name)
    return None


def declines(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function the namespace does not have, or does not take these arguments to, declines,
    as does anything else a library refuses (a device mismatch, an index form): the host path
    is the authority, a kernel only a faster way to its result. (numpy's own namespace warns of
    the overflows the kernels detect and decline for.)"""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        except (AttributeError, IndexError, NotImplementedError, OverflowError, TypeError,
                ValueError):
            return None
    return wrapper


def xp_dtype(xp: Any, dtype: np.dtype) -> Any:
    if dtype.name not in _NAMES or not dtype.isnative:
        raise NotImplementedError(dtype.name)
    return getattr(xp, dtype.name)


def is_dtype(xp: Any, arr: Any, dtype: np.dtype) -> bool:
    return bool(arr.dtype == xp_dtype(xp, dtype))


def any_true(xp: Any, mask: Any) -> bool:
    return bool(xp.any(mask))


def copied(xp: Any, arr: Any) -> Any:
    try:
        return xp.asarray(arr, copy=True)
    except TypeError:  # a namespace without asarray(copy=)
        return arr.copy()


#: the float types whose subnormal values devices may flush to zero: cupy does so for float32 in
#: arithmetic, comparisons and conversions (seen on an H200 with cupy 14.2), the CPU never does
FLUSHED = (np.float32, np.float64)


def subnormal(xp: Any, arr: Any, dtype: np.dtype) -> bool:
    """Whether a chunk of a :data:`FLUSHED` type holds a subnormal value (read from its bits
    where the array has ``view``: a flushing device compares them as zero)."""
    if dtype.type not in FLUSHED:
        return False
    fi = np.finfo(dtype)
    if getattr(arr, "view", None) is not None:
        u = view(arr, np.dtype(f"u{dtype.itemsize}"))
        frac = (1 << fi.nmant) - 1
        magnitude = (1 << (8 * dtype.itemsize - 1)) - 1
        # subnormal: 0 < |bits| <= frac; unsigned arithmetic wraps |bits| = 0 to the top, so one
        # subtraction and one comparison per element (two passes fewer over the chunk)
        return any_true(xp, ((u & magnitude) - 1) < frac)
    return any_true(xp, (arr != 0) & (xp.abs(arr) < float(fi.tiny)))


def view(arr: Any, dtype: np.dtype) -> Any:
    view = getattr(arr, "view", None)
    if view is None:
        raise NotImplementedError("no bit reinterpretation")
    return view(dtype)
