"""The zarr v3 data-type model: names, numpy dtypes and fill-value JSON.

This is the one place in numcodecs_ext that knows how a zarr v3 data type is named and how a scalar
of it is written as JSON. Every codec uses it for its parameters (``offset``, ``scale``,
``scalar_map`` entries) and for fill values, so a value means the same thing everywhere.

It covers the core zarr v3 types (``bool``, ``int8`` … ``uint64``, ``float16/32/64``,
``complex64/128``, ``r*``) and, when :mod:`ml_dtypes` is installed, the registered extension types
``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn``, ``int2``, ``int4``, ``uint2`` and
``uint4``. The zarr v3 name of each ml_dtypes type equals its ml_dtypes name.

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
>>> from numcodecs_ext.dtypes import parse_dtype, dtype_name, scalar_from_json, scalar_to_json
>>> parse_dtype("uint8"), parse_dtype(">f8"), dtype_name(np.dtype("<i2"))
(dtype('uint8'), dtype('float64'), 'int16')
>>> x = scalar_from_json("0x7fc00001", "float32")
>>> hex(int(np.asarray(x).view(np.uint32)))
'0x7fc00001'
>>> scalar_to_json(x, "float32"), scalar_to_json(float("nan"), "float32")
('0x7fc00001', 'NaN')
>>> int(scalar_from_json(2**63 - 1, "int64")) == 2**63 - 1
True
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, Union

import numpy as np

try:  # optional: bfloat16, float8/6/4 and 2/4-bit integers
    import ml_dtypes
except ImportError:  # pragma: no cover - exercised in environments without ml_dtypes
    ml_dtypes = None

__all__ = [
    "DTypeLike",
    "Kind",
    "NumericInfo",
    "check_numeric_json",
    "number_to_json",
    "parameter_to_json",
    "dtype_kind",
    "dtype_name",
    "finfo",
    "int_range",
    "is_nan",
    "numeric_info",
    "parse_dtype",
    "scalar_from_json",
    "scalar_to_json",
    "supported_dtype_names",
    "v3_dtype_from_json",
]

Kind = Literal["bool", "int", "uint", "float", "complex", "raw"]
DTypeLike = Union[str, np.dtype, type]
JSON = Any

_CORE: dict[str, tuple[str, Kind]] = {
    "bool": ("bool", "bool"),
    "int8": ("i1", "int"),
    "int16": ("i2", "int"),
    "int32": ("i4", "int"),
    "int64": ("i8", "int"),
    "uint8": ("u1", "uint"),
    "uint16": ("u2", "uint"),
    "uint32": ("u4", "uint"),
    "uint64": ("u8", "uint"),
    "float16": ("f2", "float"),
    "float32": ("f4", "float"),
    "float64": ("f8", "float"),
    "complex64": ("c8", "complex"),
    "complex128": ("c16", "complex"),
}

# Registered zarr v3 extension types provided by ml_dtypes (zarr-extensions/data-types/*).
_ML_FLOATS = (
    "bfloat16",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
)
_ML_INTS = {"int2": "int", "int4": "int", "uint2": "uint", "uint4": "uint"}

_NAME_TO_DTYPE: dict[str, np.dtype] = {n: np.dtype(c) for n, (c, _) in _CORE.items()}
_KIND: dict[np.dtype, Kind] = {np.dtype(c): k for c, k in _CORE.values()}
if ml_dtypes is not None:
    for _name in _ML_FLOATS:
        if hasattr(ml_dtypes, _name):
            _NAME_TO_DTYPE[_name] = np.dtype(getattr(ml_dtypes, _name))
            _KIND[_NAME_TO_DTYPE[_name]] = "float"
    for _name, _kind in _ML_INTS.items():
        if hasattr(ml_dtypes, _name):
            _NAME_TO_DTYPE[_name] = np.dtype(getattr(ml_dtypes, _name))
            _KIND[_NAME_TO_DTYPE[_name]] = _kind  # type: ignore[assignment]
_DTYPE_TO_NAME: dict[np.dtype, str] = {d: n for n, d in _NAME_TO_DTYPE.items()}

_RAW_NAME = re.compile(r"^r([1-9][0-9]*)$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")


# --- numeric properties ------------------------------------------------------------------

_ML_INT_NAMES = ("int2", "int4", "uint2", "uint4")


@dataclass(frozen=True)
class NumericInfo:
    """What the casting kernels need to know about a numeric data type.

    Attributes
    ----------
    dtype : numpy.dtype
        Native-byte-order dtype.
    kind : str
        ``"int"``, ``"uint"`` or ``"float"``.
    bits : int
        Width in bits (2 and 4 for the sub-byte ml_dtypes integers).
    lo, hi : int
        Integer range (integers only).
    precision, emin : int
        Significand bits including the implicit one, and the exponent of the smallest normal number
        (floats only).
    max, min_pos : float
        Largest finite value and smallest positive value (floats only).
    has_inf, has_nan, has_negzero, has_zero, signed : bool
        Which special values the float format can hold.
    """

    dtype: np.dtype
    kind: str
    bits: int
    lo: int = 0
    hi: int = 0
    precision: int = 0
    emin: int = 0
    max: float = 0.0
    min_pos: float = 0.0
    has_inf: bool = False
    has_nan: bool = False
    has_negzero: bool = False
    has_zero: bool = True
    signed: bool = True

    @property
    def is_int(self) -> bool:
        return self.kind != "float"

    @property
    def name(self) -> str:
        return str(self.dtype)


@functools.lru_cache(maxsize=None)
def _ml_int_types() -> dict[Any, int]:
    if ml_dtypes is None:
        return {}
    out = {}
    for name in _ML_INT_NAMES:
        t = getattr(ml_dtypes, name, None)
        if t is not None:
            out[np.dtype(t)] = int(name.lstrip("uint"))
    return out


@functools.lru_cache(maxsize=None)
def numeric_info(dtype: Any) -> NumericInfo:
    """Describe ``dtype`` (any byte order) for casting; TypeError for non-numeric types.

    Examples
    --------
    >>> info = numeric_info(np.dtype("float16"))
    >>> info.precision, info.emin, info.max
    (11, -14, 65504.0)
    >>> numeric_info(np.dtype("int8")).hi
    127
    """
    dt = np.dtype(np.dtype(dtype).type)  # the canonical native instance (isbuiltin works)
    ml_ints = _ml_int_types()
    if dt in ml_ints:
        info = ml_dtypes.iinfo(dt)
        kind = "uint" if int(info.min) == 0 else "int"
        return NumericInfo(dt, kind, ml_ints[dt], lo=int(info.min), hi=int(info.max))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        kind = "uint" if dt.kind == "u" else "int"
        return NumericInfo(dt, kind, dt.itemsize * 8, lo=int(info.min), hi=int(info.max))
    if dt.kind == "f" and dt.type in (np.float16, np.float32, np.float64):
        fi = np.finfo(dt)
        return NumericInfo(
            dt, "float", dt.itemsize * 8, precision=int(fi.nmant) + 1, emin=int(fi.minexp),
            max=float(fi.max), min_pos=float(fi.smallest_subnormal),
            has_inf=True, has_nan=True, has_negzero=True,
        )
    if ml_dtypes is not None:
        try:
            fi = ml_dtypes.finfo(dt)
        except (ValueError, TypeError, KeyError):
            fi = None
        if fi is not None and dt.kind in "Vf" and dt.itemsize <= 2:

            def conv(v: float) -> float:
                with np.errstate(all="ignore"):
                    return float(np.array(v, np.float64).astype(dt).astype(np.float64))

            negzero = conv(-0.0)
            return NumericInfo(
                dt, "float", dt.itemsize * 8, precision=int(fi.nmant) + 1, emin=int(fi.minexp),
                max=float(fi.max), min_pos=float(fi.smallest_subnormal),
                has_inf=bool(np.isinf(conv(np.inf))), has_nan=bool(np.isnan(conv(np.nan))),
                has_negzero=bool(negzero == 0 and np.signbit(negzero)),
                has_zero=conv(0.0) == 0.0, signed=conv(-1.0) == -1.0,
            )
    raise TypeError(
        f"data type {dt!s} is not an integer or real floating-point type; cast_value and "
        f"scale_offset only support int2..int64, uint2..uint64, float16/32/64, bfloat16 and the "
        f"ml_dtypes float8/float6/float4 types"
    )


def supported_dtype_names() -> list[str]:
    """Names of every zarr v3 data type this installation supports (``r*`` not listed).

    >>> "float64" in supported_dtype_names()
    True
    """
    return list(_NAME_TO_DTYPE)


def parse_dtype(value: DTypeLike) -> np.dtype:
    """Resolve a zarr v3 data type name or a numpy dtype spelling to a native-order numpy dtype.

    Parameters
    ----------
    value
        A zarr v3 name (``"float64"``, ``"bfloat16"``, ``"r16"``), or anything :func:`numpy.dtype`
        accepts (``"<f8"``, ``np.float32``, ``np.dtype(">i2")``).

    Returns
    -------
    numpy.dtype
        The dtype in native byte order.

    Raises
    ------
    ValueError
        If the value names no supported zarr v3 data type.

    Examples
    --------
    >>> parse_dtype("r16"), parse_dtype("<u2"), parse_dtype("float32")
    (dtype('V2'), dtype('uint16'), dtype('float32'))
    """
    if isinstance(value, np.dtype) and value in _DTYPE_TO_NAME and value.isnative:
        return value  # the common case, first: every JSON scalar of a map entry asks
    if value is None:  # numpy reads None as float64
        raise ValueError("data type None is not a data type; give a zarr v3 name such as 'float64'")
    if isinstance(value, str):
        if value in _NAME_TO_DTYPE:
            return _NAME_TO_DTYPE[value]
        raw = _RAW_NAME.match(value)
        if raw is not None:
            bits = int(raw.group(1))
            if bits % 8:
                raise ValueError(
                    f"data type {value!r}: raw data types need a multiple of 8 bits, e.g. 'r8', 'r16'"
                )
            return np.dtype(f"V{bits // 8}")
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is not None:
        if dtype.byteorder not in ("=", "|"):
            dtype = dtype.newbyteorder("=")
        if dtype in _DTYPE_TO_NAME or _is_raw(dtype):
            return dtype
    raise ValueError(
        f"data type {value!r} is not a supported zarr v3 data type; valid names are "
        f"{', '.join(supported_dtype_names())} and r<bits> (a multiple of 8)"
        + ("" if ml_dtypes is not None else "; install ml_dtypes for bfloat16, float8 and int4 types")
    )


def _is_raw(dtype: np.dtype) -> bool:
    """A plain fixed-size byte blob (numpy ``V<n>``), not structured and not an ml_dtypes type."""
    return (
        type(dtype) is np.dtypes.VoidDType
        and dtype.fields is None
        and dtype.subdtype is None
        and dtype.itemsize > 0
    )


def dtype_name(dtype: DTypeLike) -> str:
    """The zarr v3 name of a data type.

    >>> dtype_name("<f4"), dtype_name(np.dtype("V3"))
    ('float32', 'r24')
    """
    dt = parse_dtype(dtype)
    name = _DTYPE_TO_NAME.get(dt)
    return name if name is not None else f"r{dt.itemsize * 8}"


def dtype_kind(dtype: DTypeLike) -> Kind:
    """The family of a data type: ``bool``, ``int``, ``uint``, ``float``, ``complex`` or ``raw``.

    Works for ml_dtypes types, which numpy reports as kind ``'V'``.

    >>> dtype_kind("uint8"), dtype_kind("float16"), dtype_kind("r8")
    ('uint', 'float', 'raw')
    """
    dt = parse_dtype(dtype)
    return _KIND.get(dt, "raw")


def int_range(dtype: DTypeLike) -> tuple[int, int]:
    """The exact (min, max) of an integer data type as Python ints.

    >>> int_range("uint64")
    (0, 18446744073709551615)
    """
    dt = parse_dtype(dtype)
    if dtype_kind(dt) not in ("int", "uint"):
        raise TypeError(f"data type {dtype_name(dt)!r} is not an integer type")
    info = numeric_info(dt)
    return info.lo, info.hi


def finfo(dtype: DTypeLike) -> Any:
    """Floating-point limits (:class:`numpy.finfo`, or :class:`ml_dtypes.finfo` for its types).

    >>> float(finfo("float16").max)
    65504.0
    """
    dt = parse_dtype(dtype)
    if dtype_kind(dt) != "float":
        raise TypeError(f"data type {dtype_name(dt)!r} is not a floating-point type")
    return np.finfo(dt) if dt.kind == "f" and dt.itemsize > 1 else ml_dtypes.finfo(dt)


def is_nan(value: Any) -> bool:
    """Whether the scalar (or 0-d array) ``value`` of any numeric type is a NaN, signalling NaNs
    included, without the floating-point "invalid" warning that widening one raises.

    >>> x = np.array(0x7F800001, np.uint32).view(np.float32)   # a signalling NaN
    >>> is_nan(x), is_nan(np.float16(1)), is_nan(3)
    (True, False, False)
    """
    a = np.asarray(value)
    if a.dtype.kind in "biu":
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)).any())


def _uint_view(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _has_nan(dtype: np.dtype) -> bool:
    return numeric_info(dtype).has_nan


def _has_inf(dtype: np.dtype) -> bool:
    return numeric_info(dtype).has_inf


def _float_from_json(data: JSON, dtype: np.dtype, what: str) -> np.ndarray:
    """A 0-d array of float dtype from float JSON."""
    name = dtype_name(dtype)
    if isinstance(data, str):
        if data == "NaN":
            if not _has_nan(dtype):
                raise ValueError(f"{what}: {name} has no NaN, so 'NaN' is not a valid value")
            return np.array(np.nan).astype(dtype)
        if data in ("Infinity", "+Infinity", "-Infinity"):
            if not _has_inf(dtype):
                raise ValueError(f"{what}: {name} has no infinity, so {data!r} is not a valid value")
            return np.array(-np.inf if data[0] == "-" else np.inf).astype(dtype)
        if _HEX.match(data):
            bits = int(data, 16)
            if bits >= 1 << (8 * dtype.itemsize):
                raise ValueError(
                    f"{what}: hex value {data!r} does not fit the {dtype.itemsize * 8} bits of {name}"
                )
            if len(data) != 2 + 2 * dtype.itemsize:  # "0x10" would silently be a subnormal
                example = "0x" + "7f" + "c0" + "00" * (dtype.itemsize - 2) if dtype.itemsize >= 2 else "0x7f"
                raise ValueError(
                    f"{what}: hex value {data!r} must give all {dtype.itemsize * 8} bits of {name} "
                    f"as {2 * dtype.itemsize} hex digits, e.g. {example!r}"
                )
            return np.array(bits, dtype=_uint_view(dtype)).view(dtype)
        raise ValueError(
            f"{what}: {data!r} is not a valid {name} value; use a JSON number, 'NaN', 'Infinity', "
            "'-Infinity' or a hex bit pattern like '0x7fc00000'"
        )
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise ValueError(f"{what}: {data!r} is not a valid {name} value (expected a number or string)")
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
        raise ValueError(f"{what}: {data!r} is beyond the finite range of {name}") from None
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
                f"{what}: {data!r} is beyond the finite range of {name} (largest "
                f"{float(finfo(dtype).max)!r}); write 'Infinity' or '-Infinity' to mean infinity"
            )
        return result
    # ml_dtypes converts float64 through float32 (rounding twice); the cast core rounds once.
    from .core.cast_value import cast_scalar

    try:
        return np.asarray(cast_scalar(f, np.float64, dtype, rounding="nearest-even"))
    except ValueError as exc:
        raise ValueError(f"{what}: {data!r} is not representable in {name} ({exc})") from None


def _nearest_float(value: int, dtype: np.dtype) -> np.ndarray:
    """Round a large integer once to the nearest ``dtype`` value (ties to even bit pattern).

    Going through float64 first could round twice; checking the neighbours exactly cannot.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.array(float(value)).astype(dtype)
    if not np.isfinite(first.astype(np.float64)):
        return first
    bits = int(first.view(_uint_view(dtype)))
    candidates = []
    for b in (bits - 1, bits, bits + 1):
        if 0 <= b < 1 << (8 * dtype.itemsize):
            c = np.array(b, dtype=_uint_view(dtype)).view(dtype)
            f = float(c.astype(np.float64))
            if math.isfinite(f):
                candidates.append((abs(Fraction(f) - value), b & 1, c))
    return min(candidates, key=lambda t: (t[0], t[1]))[2]


def _int_from_json(data: JSON, dtype: np.dtype, what: str) -> np.ndarray:
    name = dtype_name(dtype)
    if isinstance(data, float) and data.is_integer():
        data = int(data)
    if isinstance(data, bool) or not isinstance(data, int):
        raise ValueError(f"{what}: {data!r} is not a valid {name} value (expected a JSON integer)")
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
        raise TypeError(f"{what}: {value!r} must be a number, not a bool")
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
        f"{what} must be a number or string, got {value!r} (a JSON scalar: a number, 'NaN', "
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
    if not isinstance(value, str) or value in _SPECIAL_FLOATS or _HEX.match(value):
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
            f"{what}: {value!r} is not a number, 'NaN', 'Infinity', '-Infinity' or a hex bit "
            "pattern like '0x7fc00000'"
        ) from None
    if math.isinf(f) and value.strip().lstrip("+-").lower() not in ("inf", "infinity"):
        raise ValueError(
            f"{what}: {value!r} is beyond the range of every supported type (it reads as infinity)"
        )
    return number_to_json(f, what=what)


def v3_dtype_from_json(value: Any, *, what: str = "data_type") -> np.dtype:
    """zarr v3 data type metadata (a name, or ``{"name": ...}`` with an empty configuration)
    as a native numpy dtype; numpy spellings (``"<u2"``), ``None`` and unknown names are
    errors.

    >>> v3_dtype_from_json("uint8"), v3_dtype_from_json({"name": "float32"})
    (dtype('uint8'), dtype('float32'))
    >>> v3_dtype_from_json("<u2")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: data_type: '<u2' is not zarr v3 data type metadata; use a zarr v3 name such as 'uint8',
    'float32' or 'bfloat16' (numpy spellings such as '<u2' are not zarr v3 names)
    """
    name = value
    if isinstance(value, Mapping) and set(value) <= {"name", "configuration"} and \
            value.get("configuration", {}) == {}:
        name = value.get("name")
    if isinstance(name, str) and (name in _NAME_TO_DTYPE or _RAW_NAME.match(name)):
        return parse_dtype(name)
    raise ValueError(
        f"{what}: {value!r} is not zarr v3 data type metadata; use a zarr v3 name such as "
        "'uint8', 'float32' or 'bfloat16' (numpy spellings such as '<u2' are not zarr v3 names)"
        + ("" if ml_dtypes is not None else "; bfloat16, float8 and int4 types need ml_dtypes")
    )


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
        raise ValueError(f"{what}: {data!r} is not a number (or a string such as 'NaN' or '0x7fc00000')")
    if isinstance(data, str):
        if data in ("NaN", "Infinity", "+Infinity", "-Infinity"):
            if finite:
                raise ValueError(f"{what}: {data!r} is not valid here; it must be a finite number")
            return
        if not _HEX.match(data):
            raise ValueError(
                f"{what}: {data!r} is not a number, 'NaN', 'Infinity', '-Infinity' or a hex bit "
                "pattern like '0x7fc00000'"
            )
        if int(data, 16) >= 1 << 64:
            raise ValueError(f"{what}: hex value {data!r} is wider than any supported type (64 bits)")
    elif finite and isinstance(data, float) and not math.isfinite(data):
        raise ValueError(f"{what}: {data!r} is not valid here; it must be a finite number")


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
            raise ValueError(f"{what}: {data!r} is not a valid bool value (expected true or false)")
        return np.bool_(data)
    if kind in ("int", "uint"):
        return _int_from_json(data, dt, what)[()]
    if kind == "float":
        return _float_from_json(data, dt, what)[()]
    if kind == "complex":
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError(
                f"{what}: {data!r} is not a valid {dtype_name(dt)} value (expected [real, imag])"
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
            f"{what}: {data!r} is not a valid {dtype_name(dt)} value "
            f"(expected a list of {dt.itemsize} integers in [0, 255])"
        )
    return np.frombuffer(bytes(data), dtype=dt)[0]


def _float_to_json(value: np.ndarray, dtype: np.dtype) -> JSON:
    with np.errstate(invalid="ignore"):  # a signalling NaN warns when widened; its bits are kept below
        f = float(value.astype(np.float64))
    if math.isnan(f):
        canonical = np.array(np.nan).astype(dtype).view(_uint_view(dtype))
        bits = value.view(_uint_view(dtype))
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
