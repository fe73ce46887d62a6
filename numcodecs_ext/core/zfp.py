"""zfp compression of whole arrays, bit-compatible with zarrs' ``zfp`` codec.

Pure functions over numpy arrays (no numcodecs or zarr here): :func:`compress` turns a 0- to 4-D
array into a headerless zfp stream and :func:`decompress` turns such a stream back into an array
of a known shape and dtype. The bytes are those of zarrs, the reference implementation of the zarr
``zfp`` codec (formerly ``zarrs.zfp``):

* the zfp field is the C-order array: 1-D ``[nx]``, 2-D ``[ny, nx]``, 3-D ``[nz, ny, nx]``,
  4-D ``[nw, nz, ny, nx]``; a 0-d array is a 1-D field with ``nx = 1``; no zfp header; the stream
  ends on a 64-bit word boundary (``zfp_compress`` flushes);
* ``fixed_rate`` always calls ``zfp_stream_set_rate(rate, type, 3, 0)``, as zarrs does, whatever
  the array's dimensionality: a d-dimensional array really gets ``rate * 4**(3 - d)`` bits per value;
* int8/uint8/int16/uint16 are promoted to int32 like ``zfp_promote_*`` (``int N: v << (31 - N)``,
  ``uint N: (v - 2**(N-1)) << (31 - N)``) and demoted with a clamp like ``zfp_demote_*``;
* uint32/uint64 are compressed as int32/int64. zarrs clamps values >= 2**31 / 2**63 to the signed
  maximum, losing them even in reversible mode; we produce the same bytes where no value is clamped
  and raise :class:`ValueError` otherwise. Decoding maps negative values to 0, as zarrs does;
* ``fixed_accuracy`` is refused for integer data, as zarrs does.

Our own choices (the spec allows them or zarrs misbehaves there):

* float16 and bfloat16 are compressed as float32 (exact), and decoded by rounding float32 to the
  nearest value; datetime64 and timedelta64 are compressed as int64;
* lossy modes refuse NaN and infinities (zarrs encodes them and they decode as garbage);
  ``reversible`` keeps them bit for bit;
* zero-size arrays encode to zero bytes; more than 4 dimensions is an error;
* decoding never reads outside the given bytes, and raises :class:`ValueError` if the stream is
  truncated, has bytes after its end, or is longer than any valid stream could be.

Each array is one libzfp session (:mod:`._zfpsession`): one compiled call with the GIL given up
once where the kernels are built, the same libzfp calls through ctypes where not. Codecs, which
call these for chunk after chunk of one shape, use :func:`chunk_encoder` and
:func:`chunk_decoder`, which validate and set up once.

Examples
--------
>>> import numpy as np
>>> a = np.linspace(0, 1, 24, dtype="f4").reshape(4, 6)
>>> buf = compress(a, "reversible")
>>> len(buf) % 8, bool((decompress(buf, (4, 6), "float32", "reversible") == a).all())
(0, True)
>>> b = decompress(compress(a, "fixed_accuracy", tolerance=1e-3), a.shape, a.dtype,
...                "fixed_accuracy", tolerance=1e-3)
>>> bool(np.abs(b - a).max() <= 1e-3)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _zfpsession
from ._libzfp import (
    ZFP_MAX_BITS,
    ZFP_MAX_PREC,
    ZFP_MIN_EXP,
    ZFP_TYPE_DOUBLE,
    ZFP_TYPE_FLOAT,
    ZFP_TYPE_INT32,
    ZFP_TYPE_INT64,
)
from ._native import kernels

try:
    import ml_dtypes as _ml_dtypes

    _BFLOAT16: Optional[np.dtype] = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is optional
    _BFLOAT16 = None

__all__ = [
    "MODES",
    "check_chunk",
    "check_config",
    "check_encode",
    "check_dtype",
    "chunk_decoder",
    "chunk_encoder",
    "compress",
    "decompress",
    "max_compressed_size",
    "settings",
]

#: The parameters each mode requires (and allows).
MODES: dict[str, tuple[str, ...]] = {
    "reversible": (),
    "fixed_accuracy": ("tolerance",),
    "fixed_rate": ("rate",),
    "fixed_precision": ("precision",),
    "expert": ("minbits", "maxbits", "maxprec", "minexp"),
}

_UINT32_MAX = 2**32 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# zfp_stream_set_rate(rate, type, 3, 0) gives every block floor(64 * rate + 0.5) bits, and pads
# each block to exactly that many. No block can use more than ZFP_MAX_BITS (a 4-D float64 block,
# all bit planes, with its header), so larger rates (or minbits) only pad blocks with zeros:
# a 16-byte array with rate 67108863 would become 512 MB.
_RATE_MAX = ZFP_MAX_BITS / 64


# --------------------------------------------------------------------------------------------
# configuration


def _number(cfg: Mapping[str, Any], key: str, mode: str) -> float:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"zfp mode {mode!r}: {key!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"zfp mode {mode!r}: {key!r} must be finite, got {value!r}")
    return value


def _integer(cfg: Mapping[str, Any], key: str, mode: str, lo: int, hi: int, what: str) -> int:
    value = cfg[key]
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"zfp mode {mode!r}: {key!r} must be an integer, got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"zfp mode {mode!r}: {key!r} = {value} is out of range; {what}")
    return value


def check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a zfp codec configuration and return it normalized.

    Parameters
    ----------
    config
        The spec configuration: ``{"mode": ..., <that mode's parameters>}``.

    Returns
    -------
    dict
        ``mode`` first, then the mode's parameters in spec order; integers as ``int``, ``rate`` and
        ``tolerance`` as ``float`` (an integral number stays ``int`` so JSON stays as written).

    Raises
    ------
    ValueError, TypeError
        Unknown mode, a missing or unexpected key, or a value of the wrong type or out of range.
        The message names the key, the value and what is valid.

    Examples
    --------
    >>> check_config({"mode": "fixed_rate", "rate": 8})
    {'mode': 'fixed_rate', 'rate': 8}
    >>> check_config({"mode": "fixed_rate"})
    Traceback (most recent call last):
    ...
    ValueError: zfp mode 'fixed_rate' needs the key(s) 'rate'
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"zfp configuration must be a mapping, got {config!r}")
    if "mode" not in config:
        raise ValueError(
            f"zfp configuration {dict(config)!r} has no 'mode'; valid modes: {', '.join(MODES)}"
        )
    mode = config["mode"]
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"zfp 'mode' = {mode!r} is not a zfp mode; valid modes: {', '.join(MODES)}")
    keys = MODES[mode]
    missing = [k for k in keys if k not in config]
    if missing:
        raise ValueError(f"zfp mode {mode!r} needs the key(s) {', '.join(map(repr, missing))}")
    extra = sorted(k for k in config if k != "mode" and k not in keys)
    if extra:
        allowed = ", ".join(map(repr, keys)) if keys else "no parameters"
        raise ValueError(
            f"zfp mode {mode!r} does not take the key(s) {', '.join(map(repr, extra))}; "
            f"it takes {allowed}"
        )
    out: dict[str, Any] = {"mode": mode}
    if mode == "fixed_rate":
        rate = _number(config, "rate", mode)
        if not 0 < rate <= _RATE_MAX:
            raise ValueError(
                f"zfp mode 'fixed_rate': 'rate' = {config['rate']!r} is out of range; it must be "
                f"> 0 and at most {_RATE_MAX} (= {ZFP_MAX_BITS} / 64: the rate gives each block "
                f"64 * rate bits, and no zfp block can use more than {ZFP_MAX_BITS})"
            )
        out["rate"] = _keep_int(config["rate"], rate)
    elif mode == "fixed_accuracy":
        tol = _number(config, "tolerance", mode)
        if tol < 0:
            raise ValueError(
                f"zfp mode 'fixed_accuracy': 'tolerance' = {config['tolerance']!r} is out of range;"
                " it must be >= 0 (the largest absolute error allowed)"
            )
        out["tolerance"] = _keep_int(config["tolerance"], tol)
    elif mode == "fixed_precision":
        out["precision"] = _integer(
            config, "precision", mode, 1, ZFP_MAX_PREC, "it must be in [1, 64] (bit planes kept)"
        )
    elif mode == "expert":
        minbits = _integer(
            config, "minbits", mode, 0, ZFP_MAX_BITS,
            f"it must be in [0, {ZFP_MAX_BITS}] (no zfp block can use more than {ZFP_MAX_BITS} "
            "bits; a larger minimum only pads every block with zeros)",
        )
        maxbits = _integer(config, "maxbits", mode, 1, _UINT32_MAX, "it must be in [1, 2**32-1]")
        maxprec = _integer(config, "maxprec", mode, 1, ZFP_MAX_PREC, "it must be in [1, 64]")
        minexp = _integer(
            config, "minexp", mode, _INT32_MIN, _INT32_MAX, "it must be a 32-bit signed integer"
        )
        if minbits > maxbits:
            raise ValueError(
                f"zfp mode 'expert': 'minbits' = {minbits} must not exceed 'maxbits' = {maxbits}"
            )
        out.update(minbits=minbits, maxbits=maxbits, maxprec=maxprec, minexp=minexp)
    return out


def _keep_int(raw: Any, value: float) -> Any:
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        return int(raw)
    return value


class _Mode(NamedTuple):
    """Hashable normalized configuration used internally."""

    name: str
    a: float = 0.0
    b: int = 0
    c: int = 0
    d: int = 0

    @classmethod
    def from_params(cls, mode: str, params: Mapping[str, Any]) -> _Mode:
        """The validated mode; memoised, since codecs call this with the same values per chunk."""
        try:  # the types are part of the key: rate=True must still be refused after rate=1
            key = (mode, tuple(sorted((k, type(v), v) for k, v in params.items())))
            return _mode_of(key)
        except TypeError:  # an unhashable value: validate, which words the error
            return cls._validated(mode, params)

    @classmethod
    def _validated(cls, mode: str, params: Mapping[str, Any]) -> _Mode:
        cfg = check_config({"mode": mode, **params})
        if mode == "fixed_rate":
            return cls(mode, float(cfg["rate"]))
        if mode == "fixed_accuracy":
            return cls(mode, float(cfg["tolerance"]))
        if mode == "fixed_precision":
            return cls(mode, 0.0, cfg["precision"])
        if mode == "expert":
            # (a, b, c, d) = (maxprec, minbits, maxbits, minexp)
            return cls(mode, float(cfg["maxprec"]), cfg["minbits"], cfg["maxbits"], cfg["minexp"])
        return cls(mode)

    @property
    def lossless(self) -> bool:
        """Whether zfp runs its reversible algorithm with no bit budget (non-finite values safe)."""
        if self.name == "reversible":
            return True
        return (
            self.name == "expert"
            and self.d < ZFP_MIN_EXP
            and int(self.a) == ZFP_MAX_PREC
            and self.c >= ZFP_MAX_BITS
        )


@lru_cache(maxsize=256)
def _mode_of(key: tuple[Any, ...]) -> _Mode:
    mode, items = key
    return _Mode._validated(mode, {k: v for k, _, v in items})


# --------------------------------------------------------------------------------------------
# data types


class _Plan(NamedTuple):
    """How one dtype goes through zfp."""

    dtype: np.dtype  # the native-order dtype of the array
    work: np.dtype  # the dtype handed to libzfp
    ztype: int  # zfp_type
    kind: str  # "direct", "promote", "uint", "float"
    bits: int  # bits of the array's integer type (promote/uint)


#: the largest finite value of the types compressed through float32
_FLOAT_MAX = {np.dtype("float16"): np.float32(np.finfo(np.float16).max)}
if _BFLOAT16 is not None:
    _FLOAT_MAX[_BFLOAT16] = np.float32(_ml_dtypes.finfo(_BFLOAT16).max)

_ZTYPE = {
    np.dtype("int32"): ZFP_TYPE_INT32,
    np.dtype("int64"): ZFP_TYPE_INT64,
    np.dtype("float32"): ZFP_TYPE_FLOAT,
    np.dtype("float64"): ZFP_TYPE_DOUBLE,
}

SUPPORTED_DTYPES = (
    "int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, "
    "float64, datetime64, timedelta64"
)


def _native(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.byteorder not in ("=", "|"):
        dt = dt.newbyteorder("=")
    return dt


@lru_cache(maxsize=256)
def _plan(dtype: np.dtype) -> _Plan:
    dt = _native(dtype)
    if dt in _ZTYPE:
        return _Plan(dt, dt, _ZTYPE[dt], "direct", dt.itemsize * 8)
    if dt.kind in "iu" and dt.itemsize in (1, 2):
        return _Plan(dt, np.dtype("int32"), ZFP_TYPE_INT32, "promote", dt.itemsize * 8)
    if dt.kind == "u" and dt.itemsize in (4, 8):
        work = np.dtype(f"int{dt.itemsize * 8}")
        return _Plan(dt, work, _ZTYPE[work], "uint", dt.itemsize * 8)
    if dt.kind in "mM":
        return _Plan(dt, np.dtype("int64"), ZFP_TYPE_INT64, "direct", 64)
    if dt == np.dtype("float16") or (_BFLOAT16 is not None and dt == _BFLOAT16):
        return _Plan(dt, np.dtype("float32"), ZFP_TYPE_FLOAT, "float", 32)
    raise TypeError(f"zfp cannot compress data type {str(dt)!r}; supported: {SUPPORTED_DTYPES}")


def _header_bits(ztype: int, reversible: bool) -> int:
    """Bits libzfp reads per block before honouring the block's bit budget (see zfp_stream_maximum_size)."""
    if ztype == ZFP_TYPE_INT32:
        return 5 if reversible else 0
    if ztype == ZFP_TYPE_INT64:
        return 6 if reversible else 0
    if ztype == ZFP_TYPE_FLOAT:
        return 1 + 1 + 8 + 5 if reversible else 1 + 8
    return 1 + 1 + 11 + 6 if reversible else 1 + 11


@lru_cache(maxsize=1024)
def _check(dtype: np.dtype, mode: _Mode) -> _Plan:
    plan = _plan(dtype)
    is_int = plan.ztype in (ZFP_TYPE_INT32, ZFP_TYPE_INT64)
    name = _dtype_label(plan.dtype)
    if mode.name == "fixed_accuracy" and is_int:
        raise TypeError(
            f"zfp mode 'fixed_accuracy' needs floating-point data, but the data type is {name}; "
            "use 'fixed_precision', 'fixed_rate', 'expert' or 'reversible' for integers"
        )
    if mode.name == "fixed_rate" and is_int and math.floor(64 * mode.a + 0.5) == 0:
        raise ValueError(
            f"zfp mode 'fixed_rate': 'rate' = {mode.a!r} gives 0 bits per block for integer data "
            f"({name}); zfp needs rate >= 1/128 for integers"
        )
    if mode.name == "expert":
        header = _header_bits(plan.ztype, mode.d < ZFP_MIN_EXP)
        if mode.c < max(header, 1):
            raise ValueError(
                f"zfp mode 'expert': 'maxbits' = {mode.c} is too small for {name}"
                f"{' in reversible mode (minexp < -1074)' if mode.d < ZFP_MIN_EXP else ''}; "
                f"libzfp needs at least {max(header, 1)} bits per block"
            )
    return plan


@lru_cache(maxsize=256)
def _dtype_label(dt: np.dtype) -> str:
    return "bfloat16" if _BFLOAT16 is not None and dt == _BFLOAT16 else str(dt)


def check_dtype(dtype: Any, mode: str, **params: Any) -> np.dtype:
    """Check that arrays of ``dtype`` can be compressed with this mode; return the native dtype.

    Raises
    ------
    TypeError
        If zfp cannot handle the data type in this mode (e.g. integers with ``fixed_accuracy``).
    ValueError
        If the mode's parameters cannot work for this data type (e.g. a ``fixed_rate`` giving
        integer blocks zero bits, or an ``expert`` ``maxbits`` below the block header's size).

    Examples
    --------
    >>> check_dtype(">f8", "reversible")
    dtype('float64')
    >>> check_dtype("int32", "fixed_accuracy", tolerance=0.1)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: zfp mode 'fixed_accuracy' needs floating-point data, but the data type is int32; use
    'fixed_precision', 'fixed_rate', 'expert' or 'reversible' for integers
    """
    return _check(_native(dtype), _Mode.from_params(mode, params)).dtype


# --------------------------------------------------------------------------------------------
# libzfp calls


def _check_shape(shape: tuple[int, ...]) -> None:
    if len(shape) > 4:
        raise ValueError(
            f"zfp handles arrays of at most 4 dimensions, got shape {shape} ({len(shape)}-D); "
            "drop singleton dimensions first (e.g. with a squeeze/reshape) or chunk differently"
        )
    if any(n < 0 for n in shape):
        raise ValueError(f"invalid shape {shape}")


@lru_cache(maxsize=256)
def _checked_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` as Python ints, checked (remembered: decoders pass the same shape per chunk)."""
    shape = tuple(int(n) for n in shape)
    _check_shape(shape)
    return shape


def settings(mode: str, **params: Any) -> _Mode:
    """The mode and its parameters, validated once: pass the result as ``mode`` (and no
    parameters) to :func:`compress` and :func:`decompress`, which then skip validating them
    again, as codecs do for every chunk.

    >>> fast = settings("fixed_rate", rate=8)
    >>> compress(np.zeros(4), fast) == compress(np.zeros(4), "fixed_rate", rate=8)
    True
    """
    return _Mode.from_params(mode, params)


def _mode_arg(mode: Any, params: Mapping[str, Any]) -> _Mode:
    if isinstance(mode, _Mode):
        if params:
            raise TypeError(f"mode {mode} from settings() takes no more parameters, got {sorted(params)}")
        return mode
    return _Mode.from_params(mode, params)


def max_compressed_size(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> int:
    """The largest stream :func:`compress` can produce for this shape, dtype and mode (bytes).

    >>> max_compressed_size((4, 4), "float64", "fixed_rate", rate=16)
    152
    """
    shape = tuple(int(n) for n in shape)
    _check_shape(shape)
    zmode = _Mode.from_params(mode, params)
    plan = _check(_native(dtype), zmode)
    if math.prod(shape) == 0:
        return 0
    return _zfpsession.max_size(zmode, plan.ztype, shape)


# --------------------------------------------------------------------------------------------
# compression


def _prepare(arr: np.ndarray, plan: _Plan, mode: _Mode, check_floats: bool = True) -> np.ndarray:
    """The C-contiguous array of ``plan.work`` dtype that libzfp compresses, its values checked
    (float values only if ``check_floats``: else the compiled session checks them)."""
    kind = plan.kind
    if kind == "promote":  # int8/16, uint8/16: the promoted values always suit zfp
        shift = 31 - plan.bits
        work = np.asarray(arr).astype(np.int32, order="C")
        if plan.dtype.kind == "u":
            work -= 1 << (plan.bits - 1)
        work <<= shift
        return work
    if kind == "float":  # float16 / bfloat16 -> float32 (exact)
        work = np.asarray(arr).astype(np.float32, order="C")
    else:
        work = np.ascontiguousarray(arr, dtype=plan.dtype)
        if plan.dtype.kind in "mM":
            work = work.view(np.int64)
    if check_floats or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        _check_values(work, plan, mode)
    return work if kind != "uint" else work.view(plan.work)


#: exclusive magnitude limits of the values zfp's lossy modes handle, by the type libzfp sees:
#: integers as the zfp FAQ states (its decorrelating transform overflows beyond), floats so
#: that a block's reconstruction (at most 2**(E + 1) for values below 2**E) stays finite
_LOSSY_LIMIT_EXP = {ZFP_TYPE_INT32: 30, ZFP_TYPE_INT64: 62, ZFP_TYPE_FLOAT: 126,
                    ZFP_TYPE_DOUBLE: 1022}


def _check_values(work: np.ndarray, plan: _Plan, mode: _Mode) -> None:
    """Refuse values that zfp would return wrong without an error, before compressing.

    Lossy modes: NaN/Infinity (zfp turns them into garbage), integers of magnitude 2**30
    (int32, uint32) or 2**62 (int64, uint64, datetime64) and more (the transform overflows and
    they come back wrapped), floats of magnitude 2**126 (float32, float16, bfloat16) or 2**1022
    (float64) and more (their block can decode to +-Infinity), and blocks of only tiny floats
    (see :func:`_check_tiny_blocks`). Every mode: uint32/uint64 values beyond the signed range,
    which zarrs clamps. One min and one max reduction (for floats one compiled pass).
    """
    if work.size == 0 or (mode.lossless and plan.kind != "uint"):
        return
    label = _dtype_label(plan.dtype)
    if plan.ztype in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        _check_float_values(work, plan, mode, label)
        return
    lo, hi = work.min(), work.max()
    if plan.kind == "uint" and int(hi) > (1 << (plan.bits - 1)) - 1:
        limit = (1 << (plan.bits - 1)) - 1
        bad = int(np.count_nonzero(work > limit))
        raise ValueError(
            f"zfp cannot store {label} values above 2**{plan.bits - 1} - 1 = {limit}: {bad} "
            f"value(s) here are larger (max {int(hi)}). zarrs clamps them to {limit} and loses "
            "them silently, even in reversible mode; we refuse instead. Use another compressor "
            "for this array, or store it as a signed type if the values allow"
        )
    if mode.lossless:
        return
    exp = _LOSSY_LIMIT_EXP[plan.ztype]
    lo_i, hi_i = int(lo), int(hi)
    if -(1 << exp) < lo_i and hi_i < (1 << exp):
        return
    bad = int(np.count_nonzero((work <= -(1 << exp)) | (work >= (1 << exp))))
    wider = (" or store the data as int64, whose lossy range is (-2**62, 2**62)"
             if plan.ztype == ZFP_TYPE_INT32 else "")
    nat = " (NaT is -2**63)" if plan.dtype.kind in "mM" else ""
    raise ValueError(
        f"zfp mode {mode.name!r} can only encode {label} values in (-2**{exp}, 2**{exp}): "
        f"beyond, zfp's lossy integer transform overflows and the values come back wrong "
        f"without an error. {bad} value(s) here are outside (min {lo_i}, max {hi_i}){nat}. Use "
        f"mode 'reversible' (lossless over the whole range){wider}"
    )


def _check_float_values(work: np.ndarray, plan: _Plan, mode: _Mode, label: str) -> None:
    """The lossy float checks of :func:`_check_values`: finite, below the magnitude limit, and
    no block of only tiny values. One pass with the compiled kernels (GIL released)."""
    exp = _LOSSY_LIMIT_EXP[plan.ztype]
    limit, tiny = 2.0**exp, _TINY_BLOCK[plan.ztype]
    compiled = kernels()
    if compiled is not None and work.dtype.isnative and work.flags.c_contiguous and work.flags.aligned:
        lo, hi, nonfinite, has_tiny = compiled.scan(work, work.itemsize, tiny)
    else:
        lo, hi = float(work.min()), float(work.max())
        nonfinite = not (math.isfinite(lo) and math.isfinite(hi))
        has_tiny = None  # not looked at yet
    if nonfinite:
        bad = int(np.count_nonzero(~np.isfinite(work)))
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode non-finite values: the {label} array "
            f"holds {bad} NaN/Infinity value(s), which zfp's lossy modes silently turn into "
            "garbage. Use mode 'reversible' (keeps them bit for bit), or map them to finite "
            "values before this codec (e.g. a cast_value scalar_map)"
        )
    if max(-lo, hi) >= limit:
        bad = int(np.count_nonzero(np.abs(work) >= limit))
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode {label} values of magnitude 2**{exp} "
            f"({limit:.4g}) or more: their zfp blocks can decode to +-Infinity. {bad} value(s) "
            f"here are that large (largest magnitude {max(-lo, hi)!r}). Use mode "
            "'reversible' (lossless at any magnitude), or scale the data down first (e.g. with "
            "scale_offset)"
        )
    if has_tiny is not False:
        _check_tiny_blocks(work, plan, mode, label)


#: smallest largest-magnitude a lossy float block may have (other than 0): below, libzfp's block
#: scale factor overflows (LLNL/zfp#209) and every value of the block comes back as -2**(E+1)
_TINY_BLOCK = {ZFP_TYPE_FLOAT: 2.0**-98, ZFP_TYPE_DOUBLE: 2.0**-962}


def _check_tiny_blocks(work: np.ndarray, plan: _Plan, mode: _Mode, label: str) -> None:
    """Refuse a lossy float block whose values are all tiny but not all zero."""
    tiny = _TINY_BLOCK[plan.ztype]
    magnitude = np.abs(work)
    if not ((magnitude > 0) & (magnitude < tiny)).any():  # the common case: one cheap pass
        return
    blocks = magnitude.reshape(magnitude.shape or (1,))
    for axis, n in enumerate(blocks.shape):  # the largest magnitude of every 4**d block
        blocks = np.maximum.reduceat(blocks, np.arange(0, n, 4), axis=axis)
    bad = int(np.count_nonzero((blocks > 0) & (blocks < tiny)))
    if bad:
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode a block of {label} values whose largest "
            f"magnitude is below {tiny:.3g} (but not 0): libzfp returns every value of such a block "
            f"wrong (its block scale overflows; zfp issue 209). {bad} block(s) here are like that. "
            "Use mode 'reversible', or flush such tiny values to zero first"
        )


#: the fewest bit planes (fixed_precision's precision, expert's maxprec) with which zfp's
#: inverse transform of integer data cannot overflow, by dimensionality 1-4: with fewer, decoded
#: values can come back with flipped signs (e.g. int8 [-128, -128, 127, 127] at precision 1)
_INT_MIN_PLANES = {1: 4, 2: 6, 3: 8, 4: 10}


def check_chunk(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> None:
    """Check that chunks of ``shape`` and ``dtype`` can go through zfp in this mode at all (at
    most 4 dimensions, a dtype the mode takes): what reading needs. Writing checks more
    (:func:`check_encode`). ValueError or TypeError naming what would work."""
    shape = tuple(int(n) for n in shape)
    _check_shape(shape)
    _check(_native(dtype), _Mode.from_params(mode, params))


def check_encode(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> None:
    """Check that compressing chunks of ``shape`` and ``dtype`` in this mode gives what the
    README's guarantees say: for integers enough bit planes that no value can come back wrapped,
    and no setting that makes the stream mostly padding. Decoding is never refused for these.

    >>> check_encode((4, 4), "int16", "fixed_precision", precision=4)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: zfp mode 'fixed_precision': precision 4 is too few bit planes for int16 data in 2-D chunks:
    zfp's integer transform can overflow and return values with flipped signs. Use at least 6 (4, 6, 8, 10 for
    1- to 4-D chunks), or mode 'reversible'
    """
    shape = tuple(int(n) for n in shape)
    _check_shape(shape)
    zmode = _Mode.from_params(mode, params)
    _check_settings(_check(_native(dtype), zmode), zmode, len(shape))


#: bits a value may take in the stream, as a multiple of its own bits (fixed_rate and expert
#: minbits pad every block to their budget: beyond this the stream is mostly padding; the
#: stored fixtures use up to 8x, 1-D int16 at rate 8)
_MAX_EXPANSION = 32


def _check_settings(plan: _Plan, mode: _Mode, ndim: int) -> None:
    d = max(1, ndim)
    if mode.name == "expert" and mode.d < ZFP_MIN_EXP and mode.c < ZFP_MAX_BITS:
        raise ValueError(
            f"zfp mode 'expert': minexp {mode.d} (< {ZFP_MIN_EXP}) selects zfp's reversible coder, "
            f"which a bit budget (maxbits {mode.c} < {ZFP_MAX_BITS}) cuts into garbage (NaN, huge "
            f"values) without an error. Use maxbits={ZFP_MAX_BITS} with it (maxprec may still "
            f"truncate), or minexp >= {ZFP_MIN_EXP} for a lossy budget"
        )
    if mode.name in ("fixed_rate", "expert"):
        block_bits = math.floor(64 * mode.a + 0.5) if mode.name == "fixed_rate" else mode.b
        per_value = block_bits / 4**d
        own = 8 * plan.dtype.itemsize
        if per_value > _MAX_EXPANSION * own:
            key = f"rate {mode.a}" if mode.name == "fixed_rate" else f"minbits {mode.b}"
            limit = _MAX_EXPANSION * own * 4**d / (64 if mode.name == "fixed_rate" else 1)
            raise ValueError(
                f"zfp mode {mode.name!r}: {key} gives each value of {_dtype_label(plan.dtype)} "
                f"data in {d}-D chunks {per_value:g} bits, more than {_MAX_EXPANSION}x its own "
                f"{own}: the stream would be mostly padding. Use at most {limit:g} for {d}-D "
                "chunks (fixed_rate is applied to 64-value blocks, as zarrs does)"
            )
    _check_planes(plan, mode, d)


def _check_planes(plan: _Plan, mode: _Mode, ndim: int) -> None:
    if plan.ztype not in (ZFP_TYPE_INT32, ZFP_TYPE_INT64) or mode.lossless:
        return
    if mode.name == "fixed_precision":
        planes, key = mode.b, "precision"
    elif mode.name == "expert" and mode.d >= ZFP_MIN_EXP:
        planes, key = int(mode.a), "maxprec"
    else:
        return  # fixed_rate: see the README's guarantees (the fixtures hold low integer rates)
    need = _INT_MIN_PLANES[max(1, ndim)]
    if planes < need:
        raise ValueError(
            f"zfp mode {mode.name!r}: {key} {planes} is too few bit planes for "
            f"{_dtype_label(plan.dtype)} data in {max(1, ndim)}-D chunks: zfp's integer transform "
            f"can overflow and return values with flipped signs. Use at least {need} (4, 6, 8, 10 "
            "for 1- to 4-D chunks), or mode 'reversible'"
        )


def compress(arr: Any, mode: str, **params: Any) -> bytes:
    """Compress an array into a headerless zfp stream, byte for byte as zarrs does.

    Parameters
    ----------
    arr
        A 0- to 4-D array (or anything :func:`numpy.asarray` accepts) of a supported dtype:
        int8 … uint64, float16, bfloat16, float32, float64, datetime64, timedelta64.
    mode
        ``"reversible"``, ``"fixed_accuracy"``, ``"fixed_rate"``, ``"fixed_precision"`` or
        ``"expert"``.
    **params
        The mode's parameters: ``tolerance``; ``rate``; ``precision``; or ``minbits``,
        ``maxbits``, ``maxprec`` and ``minexp``.

    Returns
    -------
    bytes
        The zfp stream (a multiple of 8 bytes; empty for a zero-size array).

    Raises
    ------
    ValueError, TypeError
        Invalid parameters, an unsupported dtype or shape, non-finite values in a lossy mode, or
        uint32/uint64 values that zarrs would clamp.

    Examples
    --------
    >>> import numpy as np
    >>> compress(np.arange(4, dtype="int8"), "reversible").hex()
    '0850020000000000'
    >>> len(compress(np.zeros((8, 8)), "fixed_rate", rate=4))  # 2-D: 4 * 4 bits per value
    128
    """
    zmode = _mode_arg(mode, params)
    a = np.asarray(arr)
    plan = _check(_native(a.dtype), zmode)
    shape = a.shape
    _check_shape(shape)
    _check_settings(plan, zmode, len(shape))
    if a.size == 0:
        return b""
    check = _compiled_check(plan, zmode)
    work = _prepare(a, plan, zmode, check_floats=check is None)
    stream = _zfpsession.compress(work, zmode, plan.ztype, check)
    if stream is None:  # the compiled check found values to look at: ours raise, or let them by
        _check_values(work, plan, zmode)
        stream = _zfpsession.compress(work, zmode, plan.ztype)
    assert stream is not None
    return stream


def _compiled_check(plan: _Plan, mode: _Mode) -> tuple[int, float, float] | None:
    """What the compiled session checks in lossy float data before compressing it (see
    :func:`._zfpsession.compress`), or None where :func:`_check_values` must run first."""
    if mode.lossless or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        return None
    if not _zfpsession.compiled():
        return None
    return (4 if plan.ztype == ZFP_TYPE_FLOAT else 8, 2.0 ** _LOSSY_LIMIT_EXP[plan.ztype],
            _TINY_BLOCK[plan.ztype])


# --------------------------------------------------------------------------------------------
# decompression


def _as_bytes_array(buf: Any) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            buf = np.ascontiguousarray(buf)
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf, np.uint8)


def decompress(
    buf: Any,
    shape: tuple[int, ...],
    dtype: Any,
    mode: str,
    *,
    out: Optional[np.ndarray] = None,
    **params: Any,
) -> np.ndarray:
    """Decompress a headerless zfp stream into an array of the given shape and dtype.

    Parameters
    ----------
    buf
        The stream: bytes, bytearray, memoryview, a numpy array, or any buffer.
    shape, dtype
        Shape (0- to 4-D) and dtype of the array that was compressed.
    mode, **params
        The compression mode and its parameters, as given to :func:`compress`.
    out
        Optional C-contiguous, writeable array of ``dtype`` with ``prod(shape)`` elements to decode
        into (it is returned, reshaped to ``shape``).

    Returns
    -------
    numpy.ndarray
        The decoded array.

    Raises
    ------
    ValueError
        If the stream is truncated, corrupt (its end does not fall at the end of the bytes), has
        bytes after its end, or cannot be a stream for this shape, dtype and mode.

    Examples
    --------
    >>> import numpy as np
    >>> decompress(bytes.fromhex("0850020000000000"), (4,), "int8", "reversible")
    array([0, 1, 2, 3], dtype=int8)
    >>> decompress(bytes.fromhex("08500200"), (4,), "int8", "reversible")
    Traceback (most recent call last):
    ...
    ValueError: zfp stream of 4 bytes is not a whole number of 64-bit words: it is truncated or corrupt
    """
    zmode = _mode_arg(mode, params)
    dt_req = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = _check(_native(dt_req), zmode)
    shape = _checked_shape(tuple(shape))
    src = _as_bytes_array(buf)
    n = src.size
    count = math.prod(shape)

    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.dtype != plan.dtype or out.size != count or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(
                f"out must be a writeable C-contiguous {plan.dtype} array of {count} elements, "
                f"got {out.dtype} array of shape {out.shape}"
            )
        result = out.reshape(shape)
    else:
        result = np.empty(shape, dtype=plan.dtype)

    if count == 0:
        if n:
            raise ValueError(f"a zero-size array of shape {shape} has an empty zfp stream, got {n} bytes")
        return _finish_dtype(result, dt_req)
    if n % 8:
        raise ValueError(
            f"zfp stream of {n} bytes is not a whole number of 64-bit words: it is truncated or corrupt"
        )

    if plan.kind in ("direct", "uint"):
        work = result.view(plan.work)
    else:
        work = np.empty(shape, dtype=plan.work)

    decode, padded_size = _zfpsession.decoder(zmode, plan.ztype, shape)
    capacity = padded_size - 8
    if n > capacity:
        raise ValueError(
            f"zfp stream of {n} bytes is longer than any stream for shape {shape}, "
            f"{_dtype_label(plan.dtype)} and mode {zmode.name!r} can be ({capacity} bytes): "
            "corrupt, or decoded with the wrong shape/dtype/configuration"
        )
    consumed = decode(src, _zfpsession.scratch(max(padded_size, n + 8)), work)
    if consumed != n:
        _stream_error(consumed, n, capacity, shape, plan, zmode)
    kind = plan.kind
    if kind == "direct" and result.dtype is dt_req:  # the common case: nothing more to do
        return result

    kind = plan.kind
    if kind == "uint":
        np.maximum(work, 0, out=work)  # zarrs maps negative decoded values to 0
    elif kind == "promote":
        bits = plan.bits
        np.right_shift(work, 31 - bits, out=work)
        if plan.dtype.kind == "u":
            work += 1 << (bits - 1)
            np.clip(work, 0, (1 << bits) - 1, out=work)
        else:
            np.clip(work, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, out=work)
        result[...] = work
    elif kind == "float":
        if zmode.lossless and plan.dtype == _BFLOAT16:
            # exact: a bfloat16 is the top half of its float32. (ml_dtypes' cast would turn
            # every NaN into its canonical NaN, payload lost, with a RuntimeWarning.)
            np.right_shift(work.view(np.uint32), 16, out=work.view(np.uint32))
            result.view(np.uint16)[...] = work.view(np.uint32)
        else:
            if not zmode.lossless:
                # a lossy value of float16/bfloat16 data can come back a little beyond the
                # type's largest finite value, which would round to +-Infinity: the nearest
                # value is the max
                fmax = _FLOAT_MAX[plan.dtype]
                np.clip(work, -fmax, fmax, out=work)
            with np.errstate(invalid="ignore"):  # NaN payloads are kept (float16) as they are
                result[...] = work
    return _finish_dtype(result, dt_req)


def chunk_encoder(shape: tuple[int, ...], dtype: Any, mode: Any,
                  **params: Any) -> Callable[[np.ndarray], bytes]:
    """``lambda arr: compress(arr, mode, **params)``, for chunk after chunk of one shape and
    dtype (see :func:`chunk_decoder`). A C-contiguous float32 or float64 array goes to libzfp
    in one call with its values checked there; anything else, and values that need a closer
    look, take :func:`compress`: the results and errors are its own.

    >>> encode = chunk_encoder((4,), "float32", "fixed_rate", rate=8)
    >>> encode(np.ones(4, "float32")) == compress(np.ones(4, "float32"), "fixed_rate", rate=8)
    True
    """
    zmode = _mode_arg(mode, params)
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = _check(_native(dt), zmode)
    shape = _checked_shape(tuple(shape))
    general: Callable[[np.ndarray], bytes] = functools.partial(compress, mode=zmode)
    if plan.work != dt or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE) \
            or math.prod(shape) == 0:
        return general
    _check_settings(plan, zmode, len(shape))
    encode, capacity = _zfpsession.encoder(zmode, plan.ztype, shape)
    if encode is None:
        return general
    check = _compiled_check(plan, zmode) or (0, 0.0, 0.0)
    item, limit, tiny = check
    scratch = _zfpsession.scratch

    def run(arr: np.ndarray) -> bytes:
        if arr.shape != shape or arr.dtype != dt or not arr.flags.c_contiguous:
            return general(arr)
        stream = encode(arr, scratch(capacity), item, limit, tiny)
        return general(arr) if stream is None else stream  # (None: values to look at closely)

    return run


def chunk_decoder(shape: tuple[int, ...], dtype: Any, mode: Any,
                  **params: Any) -> Callable[[Any], np.ndarray]:
    """``lambda buf: decompress(buf, shape, dtype, mode, **params)``, for chunk after chunk of
    one shape and dtype: validation and set-up happen here, once.

    Results and errors are :func:`decompress`'s. For float32, float64, int32 and int64 with the
    compiled session, each call runs only a few lines of Python around the one C call: after a
    large chunk those lines run from cold caches, where each costs a microsecond or more with the
    GIL held (the other types call :func:`decompress`).

    >>> decode = chunk_decoder((4,), "int32", "reversible")
    >>> decode(compress(np.arange(4, dtype="int32"), "reversible"))
    array([0, 1, 2, 3], dtype=int32)
    """
    zmode = _mode_arg(mode, params)
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = _check(_native(dt), zmode)
    shape = _checked_shape(tuple(shape))
    if plan.work != dt or math.prod(shape) == 0 or not _zfpsession.compiled():
        return functools.partial(decompress, shape=shape, dtype=dt, mode=zmode)
    decode, padded_size = _zfpsession.decoder(zmode, plan.ztype, shape)
    capacity, scratch, empty, as_bytes = padded_size - 8, _zfpsession.scratch, np.empty, _as_bytes_array

    def run(buf: Any) -> np.ndarray:
        if type(buf) is bytes:  # (the C call reads any buffer: no array needed for bytes)
            src, n = buf, len(buf)
        else:
            src = as_bytes(buf)
            n = src.size
        if n % 8 or n > capacity or not n:
            return decompress(buf, shape, dt, zmode)  # raises, with the reason
        result = empty(shape, dt)
        consumed = decode(src, scratch(padded_size if padded_size > n + 8 else n + 8), result)
        if consumed != n:
            _stream_error(consumed, n, capacity, shape, plan, zmode)
        return result

    return run


def _stream_error(consumed: int, n: int, capacity: int, shape: tuple[int, ...], plan: _Plan,
                  mode: _Mode) -> None:
    """Raise for a stream of ``n`` bytes of which libzfp took ``consumed``."""
    if consumed > capacity + 8:  # pragma: no cover - would be a libzfp bug
        raise RuntimeError(f"libzfp read {consumed} bytes from a {capacity + 8}-byte buffer")
    if consumed == 0 or consumed > n:
        raise ValueError(
            f"zfp stream is truncated or corrupt: decoding shape {shape} "
            f"{_dtype_label(plan.dtype)} ({mode.name}) needs {consumed} bytes, got {n}"
        )
    raise ValueError(
        f"zfp stream is corrupt or decoded with the wrong shape/dtype/configuration: it ends "
        f"after {consumed} bytes, but {n} bytes were given ({n - consumed} extra)"
    )


def _finish_dtype(result: np.ndarray, dt_req: np.dtype) -> np.ndarray:
    if result.dtype != dt_req:  # non-native byte order requested
        return result.astype(dt_req)
    return result
