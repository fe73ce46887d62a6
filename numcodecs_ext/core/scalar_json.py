"""Scalars of zarr v3 data types as JSON: fill values and codec parameters.

Every codec uses this for its parameters (``offset``, ``scale``, ``scalar_map`` entries) and for
fill values, so a value means the same thing everywhere. The types and their names are
:mod:`.dtypes`'; rounding a number to a narrow ml_dtypes float uses the cast of
:mod:`.cast_value` (one correct rounding).

Scalar JSON follows the zarr v3 core specification:

* integers are JSON numbers, converted exactly (an int64 never passes through float64);
* floats are JSON numbers (rounded once to the nearest representable value), ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``, or ``"0x…"``, the bit pattern as an unsigned integer in hex,
  which is the only way to write a NaN with another payload. ``"+Infinity"`` is accepted when
  reading (the cast_value spec uses it) but never written;
* complex numbers are ``[real, imag]`` pairs of float JSON;
* ``bool`` is a JSON boolean; ``r<N>`` is a list of N/8 integers in [0, 255].

Examples
--------
>>> import numpy as np
>>> from numcodecs_ext.core.scalar_json import scalar_from_json, scalar_to_json
>>> x = scalar_from_json("0x7fc00001", "float32")
>>> hex(int(np.asarray(x).view(np.uint32)))
'0x7fc00001'
>>> scalar_to_json(x, "float32"), scalar_to_json(float("nan"), "float32")
('0x7fc00001', 'NaN')
>>> int(scalar_from_json(2**63 - 1, "int64")) == 2**63 - 1
True
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .cast_value import CastError, cast_scalar
from .dtypes import HEX_PATTERN, DTypeLike, uint_view, dtype_kind, dtype_name, finfo, int_range, is_nan
from .dtypes import numeric_info, parse_dtype, show

__all__ = [
    "check_numeric_json",
    "number_to_json",
    "parameter_to_json",
    "scalar_from_json",
    "scalar_to_json",
]

JSON = Any


def _float_from_json(data: JSON, dtype: np.dtype, what: str) -> np.ndarray:
    """A 0-d array of float dtype from float JSON."""
    name = dtype_name(dtype)
    if isinstance(data, str):
        if data == "NaN":
            if not numeric_info(dtype).has_nan:
                raise ValueError(f"{what}: {name} has no NaN, so 'NaN' is not a valid value")
            return np.array(np.nan).astype(dtype)
        if data in ("Infinity", "+Infinity", "-Infinity"):
            if not numeric_info(dtype).has_inf:
                raise ValueError(f"{what}: {name} has no infinity, so {show(data)} is not a valid value")
            return np.array(-np.inf if data[0] == "-" else np.inf).astype(dtype)
        if HEX_PATTERN.match(data):
            bits = int(data, 16)
            if bits >= 1 << (8 * dtype.itemsize):
                raise ValueError(
                    f"{what}: hex value {show(data)} does not fit the {dtype.itemsize * 8} bits of {name}"
                )
            if len(data) != 2 + 2 * dtype.itemsize:  # "0x10" would silently be a subnormal
                example = "0x" + "7f" + "c0" + "00" * (dtype.itemsize - 2) if dtype.itemsize >= 2 else "0x7f"
                raise ValueError(
                    f"{what}: hex value {show(data)} must give all {dtype.itemsize * 8} bits of {name} "
                    f"as {2 * dtype.itemsize} hex digits, e.g. {example!r}"
                )
            return np.array(bits, dtype=uint_view(dtype)).view(dtype)
        raise ValueError(
            f"{what}: {show(data)} is not a valid {name} value; use a JSON number, 'NaN', 'Infinity', "
            "'-Infinity' or a hex bit pattern like '0x7fc00000'"
        )
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise ValueError(f"{what}: {show(data)} is not a valid {name} value (expected a number or string)")
    return _round_number(data, dtype, what)


def _round_number(data: int | float, dtype: np.dtype, what: str = "value") -> np.ndarray:
    """A JSON number rounded once to the nearest ``dtype`` value (ties to even), as a 0-d array.

    A finite number beyond the type's finite range is an error, not a silent ±Infinity, NaN or
    clamp (write ``"Infinity"`` to mean infinity); so is 0 or a negative number for
    ``float8_e8m0fnu``, which has neither.
    """
    name = dtype_name(dtype)
    try:
        f = float(data)
    except OverflowError:  # an integer beyond float64
        raise ValueError(f"{what}: {show(data)} is beyond the finite range of {name}") from None
    if not math.isfinite(f):  # only float("inf")/nan given as a Python float, not JSON numbers
        return np.array(f).astype(dtype)
    if dtype.type in (np.float16, np.float32, np.float64):
        if isinstance(data, int) and abs(data) > 2**53 and dtype != np.float64:
            result = _nearest_float(data, dtype)
        else:
            with np.errstate(over="ignore"):
                result = np.array(f).astype(dtype)  # numpy rounds float64 to these types once
        if not np.isfinite(result):
            raise ValueError(
                f"{what}: {show(data)} is beyond the finite range of {name} (largest "
                f"{float(finfo(dtype).max)!r}); write 'Infinity' or '-Infinity' to mean infinity"
            )
        return result
    # ml_dtypes converts float64 through float32 (rounding twice); the cast core rounds once.
    try:
        return np.asarray(cast_scalar(f, np.float64, dtype, rounding="nearest-even"))
    except CastError as exc:
        raise ValueError(f"{what}: {show(data)} is not representable in {name} ({exc.reason})") from None


def _nearest_float(value: int, dtype: np.dtype) -> np.ndarray:
    """Round a large integer once to the nearest ``dtype`` value (ties to even bit pattern).

    Going through float64 first could round twice; checking the neighbours exactly cannot.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.array(float(value)).astype(dtype)
    if not np.isfinite(first.astype(np.float64)):
        return first
    bits = int(first.view(uint_view(dtype)))
    candidates = []
    for b in (bits - 1, bits, bits + 1):
        if 0 <= b < 1 << (8 * dtype.itemsize):
            c = np.array(b, dtype=uint_view(dtype)).view(dtype)
            f = float(c.astype(np.float64))
            if math.isfinite(f):
                candidates.append((abs(Fraction(f) - value), b & 1, c))
    return min(candidates, key=lambda t: (t[0], t[1]))[2]


def _int_from_json(data: JSON, dtype: np.dtype, what: str) -> np.ndarray:
    name = dtype_name(dtype)
    if isinstance(data, float) and data.is_integer():
        data = int(data)
    if isinstance(data, bool) or not isinstance(data, int):
        raise ValueError(f"{what}: {show(data)} is not a valid {name} value (expected a JSON integer)")
    lo, hi = int_range(dtype)
    if not lo <= data <= hi:
        raise ValueError(f"{what}: {data} is outside the range of {name} [{lo}, {hi}]")
    if dtype.kind in "iu":
        return np.array(data, dtype=dtype)
    return np.array(data, dtype=np.int8).astype(dtype)


def number_to_json(value: Any, *, what: str = "value") -> JSON:
    """A number given in Python (int, float, numpy scalar) or as JSON, as dtype-free scalar JSON.

    For parameters whose dtype is not known yet (``offset``, ``scale``, ``scalar_map`` entries):
    NaN and infinities become their strings (a numpy NaN with a payload its hex bit pattern),
    integers stay exact, strings pass unchanged except ``"+Infinity"``, written ``"Infinity"``.

    >>> number_to_json(float("nan")), number_to_json(np.float32("-inf")), number_to_json(np.int64(7))
    ('NaN', '-Infinity', 7)
    >>> number_to_json("+Infinity"), number_to_json(0.1)
    ('Infinity', 0.1)
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {show(value)} must be a number, not a bool")
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.generic) and dtype_kind(value.dtype) == "float":
        if is_nan(value):
            return scalar_to_json(value, value.dtype)  # "NaN", or hex for another payload
        value = float(value.astype(np.float64))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return "Infinity" if value == "+Infinity" else value
    raise TypeError(
        f"{what} must be a number or string, got {show(value)} (a JSON scalar: a number, 'NaN', "
        "'Infinity', '-Infinity' or a hex bit pattern such as '0x7fc00000')"
    )


_SPECIAL_FLOATS = ("NaN", "Infinity", "+Infinity", "-Infinity")


def parameter_to_json(value: Any, *, what: str = "value") -> JSON:
    """A codec parameter (``offset``, ``scale``, a ``scalar_map`` entry) as spec JSON.

    Besides what :func:`number_to_json` takes, it reads every form zarr-python 3.2-3.4 writes
    for these parameters, with the value zarr gives them: numeric strings (``"0.5"``,
    ``"1e-3"``, ``" 2 "``: an integer string is read exactly, anything else as Python's
    ``float()`` reads it) and booleans (as 1 and 0). The result is written back as numbers.

    >>> parameter_to_json("0.5"), parameter_to_json(" 2 "), parameter_to_json("1e-3")
    (0.5, 2, 0.001)
    >>> parameter_to_json("nan"), parameter_to_json(True), parameter_to_json("0x3f800000")
    ('NaN', 1, '0x3f800000')
    >>> parameter_to_json("1e999")
    Traceback (most recent call last):
    ...
    ValueError: value: '1e999' is beyond the range of every supported type (it reads as infinity)
    """
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not isinstance(value, str) or value in _SPECIAL_FLOATS or HEX_PATTERN.match(value):
        return number_to_json(value, what=what)
    try:
        integer = int(value)
    except ValueError:
        pass
    else:
        # "-0" is -0.0 to a float type, as float("-0") is; integer types read it as 0
        return -0.0 if integer == 0 and value.strip().startswith("-") else integer
    try:
        f = float(value)
    except ValueError:
        raise ValueError(
            f"{what}: {show(value)} is not a number, 'NaN', 'Infinity', '-Infinity' or a hex bit "
            "pattern like '0x7fc00000'"
        ) from None
    if math.isinf(f) and value.strip().lstrip("+-").lower() not in ("inf", "infinity"):
        raise ValueError(
            f"{what}: {show(value)} is beyond the range of every supported type (it reads as infinity)"
        )
    return number_to_json(f, what=what)


def check_numeric_json(data: JSON, *, what: str = "value", finite: bool = False) -> None:
    """Check that ``data`` is fill-value JSON for *some* integer or float type (dtype unknown yet).

    Numbers, ``"NaN"``, ``"Infinity"``, ``"+Infinity"``, ``"-Infinity"`` and hex bit patterns of
    at most 64 bits; with ``finite=True`` the names of non-finite values are refused too.

    >>> check_numeric_json("0x7fc00000"); check_numeric_json(2.5, finite=True)
    >>> check_numeric_json("abc", what="offset")
    Traceback (most recent call last):
    ...
    ValueError: offset: 'abc' is not a number, 'NaN', 'Infinity', '-Infinity' or a hex bit pattern like '0x7fc00000'
    """
    if isinstance(data, bool) or not isinstance(data, (int, float, str)):
        raise ValueError(f"{what}: {show(data)} is not a number (or a string such as 'NaN' or '0x7fc00000')")
    if isinstance(data, str):
        if data in ("NaN", "Infinity", "+Infinity", "-Infinity"):
            if finite:
                raise ValueError(f"{what}: {show(data)} is not valid here; it must be a finite number")
            return
        if not HEX_PATTERN.match(data):
            raise ValueError(
                f"{what}: {show(data)} is not a number, 'NaN', 'Infinity', '-Infinity' or a hex bit "
                "pattern like '0x7fc00000'"
            )
        if int(data, 16) >= 1 << 64:
            raise ValueError(f"{what}: hex value {show(data)} is wider than any supported type (64 bits)")
    elif finite and isinstance(data, float) and not math.isfinite(data):
        raise ValueError(f"{what}: {show(data)} is not valid here; it must be a finite number")


def scalar_from_json(data: JSON, dtype: DTypeLike, *, what: str = "value") -> np.generic:
    """Decode zarr v3 fill-value JSON into a numpy scalar of exactly ``dtype``.

    Parameters
    ----------
    data
        The JSON value.
    dtype
        The data type (name or numpy spelling).
    what
        How error messages name the value, e.g. ``"fill_value"`` or ``"offset"``.

    Raises
    ------
    ValueError
        If ``data`` is not a valid value of ``dtype``.

    Examples
    --------
    >>> scalar_from_json("-Infinity", "float16")
    np.float16(-inf)
    >>> scalar_from_json([1, "NaN"], "complex64")
    np.complex64(1+nanj)
    >>> scalar_from_json(18446744073709551615, "uint64")
    np.uint64(18446744073709551615)
    """
    dt = parse_dtype(dtype)
    kind = dtype_kind(dt)
    if kind == "bool":
        if not isinstance(data, bool):
            raise ValueError(f"{what}: {show(data)} is not a valid bool value (expected true or false)")
        return np.bool_(data)
    if kind in ("int", "uint"):
        return _int_from_json(data, dt, what)[()]
    if kind == "float":
        return _float_from_json(data, dt, what)[()]
    if kind == "complex":
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError(
                f"{what}: {show(data)} is not a valid {dtype_name(dt)} value (expected [real, imag])"
            )
        part = np.dtype(f"f{dt.itemsize // 2}")
        out = np.empty((), dtype=dt)
        out.real = _float_from_json(data[0], part, what)
        out.imag = _float_from_json(data[1], part, what)
        return out[()]
    # raw bytes
    if (
        not isinstance(data, (list, tuple))
        or len(data) != dt.itemsize
        or not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in data)
    ):
        raise ValueError(
            f"{what}: {show(data)} is not a valid {dtype_name(dt)} value "
            f"(expected a list of {dt.itemsize} integers in [0, 255])"
        )
    return np.frombuffer(bytes(data), dtype=dt)[0]


def _float_to_json(value: np.ndarray, dtype: np.dtype) -> JSON:
    with np.errstate(invalid="ignore"):  # a signalling NaN warns when widened; its bits are kept below
        f = float(value.astype(np.float64))
    if math.isnan(f):
        canonical = np.array(np.nan).astype(dtype).view(uint_view(dtype))
        bits = value.view(uint_view(dtype))
        if bits == canonical:
            return "NaN"
        return f"0x{int(bits):0{2 * dtype.itemsize}x}"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    # Python's repr of the exact float64 value: reads back to the same value of any float type.
    return int(f) if f.is_integer() and abs(f) < 2**53 and not (f == 0 and math.copysign(1, f) < 0) else f


def scalar_to_json(value: Any, dtype: DTypeLike) -> JSON:
    """Encode a scalar of ``dtype`` as zarr v3 fill-value JSON.

    NaN with the type's canonical bit pattern is written ``"NaN"``; any other NaN as its hex bit
    pattern, so payloads survive. Integral floats are written as JSON integers, ``-0.0`` as ``-0.0``.

    Examples
    --------
    >>> scalar_to_json(np.float32("inf"), "float32"), scalar_to_json(2.5, "float64")
    ('Infinity', 2.5)
    >>> scalar_to_json(np.uint64(2**64 - 1), "uint64")
    18446744073709551615
    """
    dt = parse_dtype(dtype)
    kind = dtype_kind(dt)
    arr = np.asarray(value)
    if arr.dtype != dt:
        if kind in ("int", "uint") and arr.dtype.kind in "iu":
            lo, hi = int_range(dt)
            if not lo <= int(arr) <= hi:
                raise ValueError(f"value {int(arr)} is outside the range of {dtype_name(dt)}")
        if kind == "float" and isinstance(value, (float, int)) and not isinstance(value, bool):
            arr = _round_number(value, dt)
        else:
            arr = arr.astype(dt)
    if kind == "bool":
        return bool(arr)
    if kind in ("int", "uint"):
        return int(arr.astype(np.int64 if kind == "int" else np.uint64))
    if kind == "float":
        return _float_to_json(arr, dt)
    if kind == "complex":
        part = np.dtype(f"f{dt.itemsize // 2}")
        return [_float_to_json(np.asarray(arr.real, dtype=part), part),
                _float_to_json(np.asarray(arr.imag, dtype=part), part)]
    return list(arr.tobytes())
