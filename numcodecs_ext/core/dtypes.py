"""The zarr v3 data-type model: names and numpy dtypes.

This is the one place in numcodecs_ext that knows how a zarr v3 data type is named and which numpy
dtype it is; :mod:`.scalar_json` writes and reads scalars of these types as JSON (fill values,
codec parameters). Pure numpy (plus ml_dtypes for the narrow types).

It covers the core zarr v3 types (``bool``, ``int8`` … ``uint64``, ``float16/32/64``,
``complex64/128``, ``r*``) and, when :mod:`ml_dtypes` is installed, the registered extension types
``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn``, ``int2``, ``int4``, ``uint2`` and
``uint4``. The zarr v3 name of each ml_dtypes type equals its ml_dtypes name.

Examples
--------
>>> import numpy as np
>>> from numcodecs_ext.core.dtypes import parse_dtype, dtype_name
>>> parse_dtype("uint8"), parse_dtype(">f8"), dtype_name(np.dtype("<i2"))
(dtype('uint8'), dtype('float64'), 'int16')
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
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
    "dtype_kind",
    "dtype_name",
    "finfo",
    "int_range",
    "is_nan",
    "numeric_info",
    "parse_dtype",
    "scalar_text",
    "show",
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
HEX_PATTERN = re.compile(r"^0x[0-9a-fA-F]+$")


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
        "scale_offset support int2..uint64, float16/32/64, bfloat16 and float8/6/4 types"
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
                    f"data type {show(value)}: raw data types need a multiple of 8 bits, e.g. 'r8', 'r16'"
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
        f"data type {show(value)} is not a supported zarr v3 data type; valid names are bool, int8, "
        "float32, ..., r16 (docs/guarantees.md)" + ("" if ml_dtypes is not None else "; bfloat16 needs ml_dtypes")
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


def uint_view(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def show(value: Any) -> str:
    """``repr(value)`` for a message, with numpy scalars and arrays as the Python values they
    hold: ``-20000.0``, not ``np.float64(-20000.0)`` (ml_dtypes scalars as their float or int).

    >>> show([np.float32(0.5), np.int64(3), {"a": np.True_}]), show(np.float64(-2e4))
    ("[0.5, 3, {'a': True}]", '-20000.0')
    """
    if isinstance(value, np.generic):
        kind = value.dtype.kind
        if kind in "biufc":
            return repr(value.item())
        family = _KIND.get(value.dtype)
        if family == "float":
            return repr(float(value))
        if family in ("int", "uint"):
            return repr(int(value))
        return repr(str(value))
    if isinstance(value, np.dtype):
        return repr(dtype_name(value) if value in _DTYPE_TO_NAME else value.str)
    if type(value).__repr__ is object.__repr__:  # (no address: the same in every process)
        return f"<{type(value).__name__} object>"
    if isinstance(value, np.ndarray):
        return show(value.tolist()) if value.dtype.kind in "biufc" else show(list(value.reshape(-1)))
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in value.items()) + "}"
    return repr(value)


def scalar_text(value: Any, dtype: DTypeLike) -> str:
    """A scalar of a numeric ``dtype`` for a message, as its fill-value JSON writes it (``1000``,
    ``2.5``, ``NaN``, ``-Infinity``, ``0x7fc00001`` for a NaN with another payload); never a numpy
    repr. Anything that is not such a scalar is shown as :func:`show` shows it.

    >>> scalar_text(np.float32(1000), "float32"), scalar_text(np.nan, "float16")
    ('1000', 'NaN')
    """
    try:
        dt = parse_dtype(dtype)
        kind = dtype_kind(dt)
        with np.errstate(all="ignore"):
            a = np.asarray(value).astype(dt)
        if a.ndim or kind not in ("int", "uint", "float"):
            return show(value)
        if kind != "float":
            return str(int(a.astype(np.int64 if kind == "int" else np.uint64)))
        with np.errstate(invalid="ignore"):
            f = float(a.astype(np.float64))
    except (TypeError, ValueError, OverflowError):
        return show(value)
    if math.isnan(f):
        bits = int(a.view(uint_view(dt)))
        canonical = int(np.array(np.nan).astype(dt).view(uint_view(dt)))
        return "NaN" if bits == canonical else f"0x{bits:0{2 * dt.itemsize}x}"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if f.is_integer() and abs(f) < 2**53 and not (f == 0 and math.copysign(1, f) < 0):
        return str(int(f))
    return repr(f)


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
        f"{what}: {show(value)} is not zarr v3 data type metadata; use a zarr v3 name such as "
        "'uint8', 'float32' or 'bfloat16' (numpy spellings such as '<u2' are not zarr v3 names)"
        + ("" if ml_dtypes is not None else "; bfloat16, float8 and int4 types need ml_dtypes")
    )
