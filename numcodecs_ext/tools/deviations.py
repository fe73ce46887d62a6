"""Known deviations of other zarr implementations from the codec specs, found from metadata alone.

The one place for this knowledge. ``numcodecs-ext inspect`` prints :func:`reader_warnings` for each
zarr v3 array; the interop CI job (``tests/interop/interop_others.py``) uses :func:`find_deviations` to tell
a known deviation from a new mismatch; ``tests/interop/test_deviations_others.py`` pins each entry against
the implementation itself (it fails when the implementation is fixed, so this table is updated);
the documentation page "Who reads what" lists the same entries.

Standard library only: the interop job loads this file by path in an environment without
numcodecs_ext. The entries themselves are data, in ``deviations.json`` beside this file (read by
path too); this module holds the rules that find them in an array's metadata.

Examples
--------
>>> meta = {"data_type": "int16", "chunk_grid": {"name": "regular",
...         "configuration": {"chunk_shape": [100]}},
...         "codecs": [{"name": "packbits", "configuration": {"first_bit": 2, "last_bit": 5}}]}
>>> [f.deviation.id for f in find_deviations(meta)]
['packbits-partial-first-bit', 'packbits-sign-extension']
>>> print(reader_warnings(meta)[0])  # doctest: +ELLIPSIS
zarrs <= 0.23 (zarrs-python <= 0.2.3, zarrista <= 0.1.0), packbits first_bit=2 at codecs[0] packbits: ...
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEVIATIONS", "Deviation", "Finding", "affects", "find_deviations", "reader_warnings",
           "zfp_fixed_rate_bits"]

_ZARRS = "zarrs <= 0.23 (zarrs-python <= 0.2.3, zarrista <= 0.1.0)"
_ZARR_PY = "zarr-python 3.2-3.4.2"
_ZARRITA = "zarrita.js <= 0.7.5"


@dataclass(frozen=True)
class Deviation:
    """One known way an implementation departs from a codec spec.

    ``implementation`` is ``"zarrs"`` (the Rust crate, whichever binding: zarrs-python, zarrista),
    ``"zarr-python"`` or ``"zarrita.js"`` (JavaScript, the reader of browser viewers); ``versions``
    is the affected range as ``(first, last)`` version tuples, ``last`` being the newest version
    checked (a newer version is not assumed to be affected).
    ``directions``: what it breaks, among ``"read"`` (a whole-array read), ``"partial"`` (a read
    of part of an array) and ``"write"``.
    """

    id: str
    implementation: str
    versions: tuple[tuple[int, ...], tuple[int, ...]]
    who: str
    codec: str
    directions: frozenset[str]
    effect: str
    spec: str
    advice: str
    parser: bool = False  # in zarr-python's metadata parsing: zarrs-python (which parses with it) too


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _dev(id: str, implementation: str, first: str, last: str, codec: str, directions: str,  # noqa: A002
         effect: str, spec: str, advice: str, *, who: str = "", parser: bool = False) -> Deviation:
    who = who or {"zarrs": _ZARRS, "zarrita.js": _ZARRITA}.get(implementation, _ZARR_PY)
    return Deviation(id, implementation, (_version(first), _version(last)), who, codec,
                     frozenset(directions.split()), effect, spec, advice, parser)


#: the catalogue itself, one entry per deviation (the arguments of :func:`_dev`), kept as data
#: beside this file so that this module stays the rules alone
DEVIATIONS: dict[str, Deviation] = {d.id: d for d in (
    _dev(**entry) for entry in json.loads((Path(__file__).parent / "deviations.json").read_text(encoding="utf-8"))
)}


@dataclass(frozen=True)
class Finding:
    """A deviation that applies to one codec of an array (``where``: its place in the chain)."""

    deviation: Deviation
    where: str
    detail: str

    def message(self) -> str:
        """The warning in words: who, which codec, what happens, what to do."""
        d = self.deviation
        when = " when writing" if d.directions == {"write"} else ""
        return f"{d.who}{when}, {self.detail} at {self.where}: {d.effect}. What to do: {d.advice}"


def affects(deviation: Deviation, implementation: str, version: str) -> bool:
    """Whether ``implementation`` at ``version`` is known to have ``deviation``.

    >>> d = DEVIATIONS["packbits-sign-extension"]
    >>> affects(d, "zarrs", "0.23.8"), affects(d, "zarrs", "0.24.0"), affects(d, "zarr-python", "3.4.2")
    (True, False, False)
    """
    if implementation != deviation.implementation:
        return False
    v, (first, last) = _version(version), deviation.versions
    return first <= v[:len(first)] and v[:len(last)] <= last


# -- data types -------------------------------------------------------------------------------

_BITS = {"bool": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4,
         "float6_e2m3fn": 6, "float6_e3m2fn": 6, "int8": 8, "uint8": 8, "float16": 16,
         "bfloat16": 16, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "float32": 32,
         "int64": 64, "uint64": 64, "float64": 64, "complex64": 32, "complex128": 64,
         "complex_float32": 32, "complex_float64": 64, "complex_bfloat16": 16,
         "complex_float16": 16, "complex_float4_e2m1fn": 4, "complex_float6_e2m3fn": 6,
         "complex_float6_e3m2fn": 6}


def _dtype_name(dtype: Any) -> str:
    if isinstance(dtype, Mapping):
        return str(dtype.get("name"))
    return str(dtype)


def _bits(dtype: str) -> int | None:
    if dtype.startswith("float8"):
        return 8
    return _BITS.get(dtype)


def _signed_int(dtype: str) -> bool:
    return dtype.startswith("int")


def _integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint")) or dtype.startswith("numpy.timedelta64") \
        or dtype.startswith("numpy.datetime64")


# -- the codec chain --------------------------------------------------------------------------


def _reshaped(shape: Sequence[int] | None, config: Mapping[str, Any]) -> tuple[int, ...] | None:
    entries = config.get("shape")
    if not isinstance(entries, list):
        return None
    if shape is None:
        return None
    out: list[int | None] = []
    for e in entries:
        if isinstance(e, list):
            out.append(math.prod(shape[i] for i in e if isinstance(i, int) and 0 <= i < len(shape)))
        elif e == -1:
            out.append(None)
        else:
            out.append(int(e))
    known = math.prod(n for n in out if n is not None)
    if None in out:
        out[out.index(None)] = math.prod(shape) // known if known else 0
    return tuple(n or 0 for n in out)


def _chain(codecs: Any, dtype: str, chunk: tuple[int, ...] | None,
           where: str) -> Iterator[tuple[str, str, Mapping[str, Any], str, tuple[int, ...] | None]]:
    """``(where, name, configuration, input dtype, input chunk shape)`` for every codec, shards'
    inner codecs included."""
    for i, codec in enumerate(codecs if isinstance(codecs, list) else []):
        if isinstance(codec, str):
            name, config = codec, {}
        elif isinstance(codec, Mapping):
            name, config = str(codec.get("name")), codec.get("configuration") or {}
        else:
            continue
        if not isinstance(config, Mapping):
            config = {}
        here = f"{where}[{i}] {name}"
        yield here, name, config, dtype, chunk
        if name == "sharding_indexed":
            inner = config.get("chunk_shape")
            inner = tuple(inner) if isinstance(inner, list) else None
            yield from _chain(config.get("codecs"), dtype, inner, f"{here} > codecs")
        elif name == "cast_value":
            dtype = _dtype_name(config.get("data_type"))
        elif name == "reshape":
            chunk = _reshaped(chunk, config)
        elif name == "transpose" and chunk is not None and isinstance(config.get("order"), list):
            try:
                chunk = tuple(chunk[j] for j in config["order"])
            except (IndexError, TypeError):
                chunk = None


def _zarrs_accepts_reshape(entries: list[Any]) -> bool:
    """zarrs' own check of a reshape shape (zarrs_metadata_ext, codec/registered/reshape.rs):
    each size and -1 counts as one input dimension, so a later group must start after them."""
    dim = 0
    for e in entries:
        if isinstance(e, list):
            for d in e:
                if not isinstance(d, int) or d < dim:
                    return False
                dim = max(dim, d) + 1
        else:
            dim += 1
    return True


def _float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _exact(value: Any, dtype: str) -> bool:
    """Whether the JSON number ``value`` is a value of ``dtype`` (float16, float32) as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # "NaN", hex, ...: not a plain number
    try:
        return struct.unpack("<e" if dtype == "float16" else "<f",
                             struct.pack("<e" if dtype == "float16" else "<f", value))[0] == value
    except (OverflowError, struct.error):
        return False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _int_range(dtype: str) -> tuple[int, int] | None:
    n = _bits(dtype)
    if n is None or not dtype.startswith(("int", "uint")):
        return None
    return (-(2 ** (n - 1)), 2 ** (n - 1) - 1) if _signed_int(dtype) else (0, 2 ** n - 1)


def _mapped(value: float, smap: Any) -> float:
    """``value`` through a cast_value's scalar_map encode entries (plain numbers only)."""
    for pair in (smap.get("encode") or []) if isinstance(smap, Mapping) else []:
        if isinstance(pair, list) and len(pair) == 2 and _number(pair[0]) == value:
            target = _number(pair[1])
            return value if target is None else target
    return value


def _zarrita_fill(metadata: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """zarrita.js <= 0.7.5 passes the fill value through cast_value but not scale_offset: where
    the unscaled fill then fails a cast that the scaled one passes, the array does not open."""
    spec = theirs = _number(metadata.get("fill_value"))
    if spec is None:
        return
    for where, name, config, dtype, _ in _chain(metadata.get("codecs"), _dtype_name(metadata.get("data_type")),
                                               None, "codecs"):
        if name == "scale_offset":  # a shard's inner codecs get the array's fill value too

            offset, scale = _number(config.get("offset", 0)), _number(config.get("scale", 1))
            if offset is None or scale is None:
                return
            spec = (spec - offset) * scale
        elif name == "cast_value":
            spec, theirs = _mapped(spec, config.get("scalar_map")), _mapped(theirs, config.get("scalar_map"))
            bounds = _int_range(_dtype_name(config.get("data_type")))
            if bounds is None or config.get("out_of_range") in ("clamp", "wrap"):
                continue
            fits = [bounds[0] <= round(v) <= bounds[1] for v in (spec, theirs)]
            if fits == [True, False]:
                yield ("zarrita-fill-not-scaled", where,
                       f"fill value {metadata.get('fill_value')} (reaching this cast_value as {theirs:g} "
                       f"instead of {spec:g})")
                return


def _transposes(codecs: Any, where: str) -> Iterator[tuple[str, str, str]]:
    """zarrita.js <= 0.7.5 applies the first transpose of a chain only."""
    found = [i for i, c in enumerate(codecs if isinstance(codecs, list) else [])
             if isinstance(c, Mapping) and c.get("name") == "transpose"]
    if len(found) > 1:
        yield "zarrita-second-transpose", f"{where}[{found[1]}] transpose", f"{len(found)} transposes in one chain"
    for i, c in enumerate(codecs if isinstance(codecs, list) else []):
        if (isinstance(c, Mapping) and c.get("name") == "sharding_indexed"
                and isinstance(c.get("configuration"), Mapping)):
            yield from _transposes(c["configuration"].get("codecs"), f"{where}[{i}] sharding_indexed > codecs")


def _hex(value: Any) -> bool:
    return isinstance(value, str) and value.lower().startswith(("0x", "-0x"))


def _check(name: str, config: Mapping[str, Any], dtype: str, ndim: int | None,
           array_ndim: int | None) -> Iterator[tuple[str, str]]:
    """``(deviation id, detail)`` for one codec (``ndim``: of the chunks it receives)."""
    if name == "packbits":
        n = _bits(dtype)
        if n is None:
            return
        first = config.get("first_bit") or 0
        last = config.get("last_bit")
        last = n - 1 if last is None else last
        if not isinstance(first, int) or not isinstance(last, int):
            return
        if first > 0:
            yield "packbits-partial-first-bit", f"packbits first_bit={first}"
        if _signed_int(dtype) and 8 * math.ceil((last + 1) / 8) < n:
            yield "packbits-sign-extension", f"packbits {dtype} bits {first}..{last}"
        if n >= 8 and last - first + 1 == n and config.get("padding_encoding", "none") != "none":
            yield ("packbits-full-width-padding",
                   f"packbits {dtype} (all {n} bits) with padding_encoding "
                   f"{config.get('padding_encoding')!r}")
    elif name == "reshape":
        entries = config.get("shape")
        if isinstance(entries, list) and not _zarrs_accepts_reshape(entries):
            yield "reshape-sizes-before-group", f"reshape shape={entries}"
        yield "reshape-partial-decode", "reshape"
    elif name == "transpose" and ndim is not None and array_ndim is not None and ndim != array_ndim:
        yield "transpose-after-reshape", f"transpose of {ndim}-D chunks in a {array_ndim}-D array"
    elif name == "cast_value":
        target = _dtype_name(config.get("data_type"))
        if target == "float16" and dtype == "float64":
            yield "cast-value-float16-double-rounding", "cast_value float64 -> float16"
        smap = config.get("scalar_map")
        if isinstance(smap, Mapping):
            entries = [v for side in ("encode", "decode") for pair in smap.get(side) or []
                       if isinstance(pair, list) for v in pair]
            hexes = [v for v in entries if _hex(v)]
            if hexes:
                yield "cast-value-hex-scalar-map", f"cast_value scalar_map entry {hexes[0]!r}"
    elif name == "numcodecs.bitround" and _integer(dtype):
        yield "numcodecs-bitround-integers", f"numcodecs.bitround on {dtype} data"
    if name == "scale_offset" and dtype in ("float16", "float32"):
        scale, offset = config.get("scale", 1), config.get("offset", 0)
        if not (_exact(scale, dtype) and _exact(offset, dtype)) or (scale != 1 and offset != 0):
            yield "zarrita-scale-offset-float64", f"scale_offset on {dtype} (offset={offset}, scale={scale})"
    elif name == "cast_value":
        target = _dtype_name(config.get("data_type"))
        rounding = config.get("rounding", "nearest-even")
        if _float(dtype) and _float(target) and rounding != "nearest-even":
            yield "zarrita-float-cast-rounding", f"cast_value {dtype} -> {target} rounding {rounding!r}"
    elif name == "sharding_indexed" and config.get("index_location") == "start":
        yield "zarrita-shard-index-start", 'sharding_indexed index_location "start"'


def _metadata_chain(metadata: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any], str,
                                                                    tuple[int, ...] | None]]:
    grid = metadata.get("chunk_grid")
    chunk = None
    if isinstance(grid, Mapping):
        shape = (grid.get("configuration") or {}).get("chunk_shape")
        chunk = tuple(shape) if isinstance(shape, list) else None
    yield from _chain(metadata.get("codecs"), _dtype_name(metadata.get("data_type")), chunk, "codecs")


def _bare_names(codecs: Any, where: str) -> Iterator[tuple[str, str]]:
    for i, codec in enumerate(codecs if isinstance(codecs, list) else []):
        if isinstance(codec, str):
            yield f"{where}[{i}]", codec
        elif isinstance(codec, Mapping) and isinstance(codec.get("configuration"), Mapping):
            for key in ("codecs", "index_codecs"):
                yield from _bare_names(codec["configuration"].get(key), f"{where}[{i}] {codec.get('name')} > {key}")


def find_deviations(metadata: Mapping[str, Any]) -> list[Finding]:
    """Every known deviation that the zarr v3 array ``metadata`` (its zarr.json as a dict) meets."""
    out = []
    bare = list(_bare_names(metadata.get("codecs"), "codecs"))
    if bare:
        names = ", ".join(repr(name) for _, name in bare)
        out.append(Finding(DEVIATIONS["codec-name-shorthand"], bare[0][0], f"codecs written as bare names ({names})"))
    shape = metadata.get("shape")
    array_ndim = len(shape) if isinstance(shape, list) else None
    for where, name, config, dtype, chunk in _metadata_chain(metadata):
        ndim = len(chunk) if chunk is not None else None
        for dev_id, detail in _check(name, config, dtype, ndim, array_ndim):
            out.append(Finding(DEVIATIONS[dev_id], where, detail))
    for dev_id, where, detail in [*_zarrita_fill(metadata), *_transposes(metadata.get("codecs"), "codecs")]:
        out.append(Finding(DEVIATIONS[dev_id], where, detail))
    return out


def zfp_fixed_rate_bits(rate: float, dtype: str, ndim: int) -> tuple[int, float]:
    """``(bits per block, bits per value)`` that zarrs (and numcodecs_ext) store for zfp
    ``fixed_rate`` on chunks of ``ndim`` dimensions: zfp is told the data is 3-D whatever the
    chunk's dimensionality, so a block of ``4**ndim`` values gets ``64 * rate`` bits
    (zfp's minimum for floats: 1 + 8 bits, for doubles 1 + 11).

    >>> zfp_fixed_rate_bits(8, "float32", 2)
    (512, 32.0)
    """
    d = max(1, min(4, ndim))
    bits = math.floor(64 * rate + 0.5)
    if dtype == "float64":
        bits = max(bits, 12)
    elif dtype.startswith(("float", "bfloat")):
        bits = max(bits, 9)
    return bits, bits / 4 ** d


def reader_warnings(metadata: Mapping[str, Any]) -> list[str]:
    """What a reader of the zarr v3 array ``metadata`` meets: known deviations of other
    implementations (each naming the readers and versions), and for zfp ``fixed_rate`` the bits
    per value really stored.

    >>> for w in reader_warnings({"data_type": "float32", "chunk_grid": {"name": "regular",
    ...         "configuration": {"chunk_shape": [64, 64]}},
    ...         "codecs": [{"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 8}}]}):
    ...     print(w)  # doctest: +NORMALIZE_WHITESPACE
    zfp fixed_rate rate=8 at codecs[0] zfp: zarrs and numcodecs_ext set the rate as for 3-D data, so these 2-D
    chunks store 32 bits per value (512 bits per block of 16 values), 4x the rate; zfp's own definition of the
    rate (imagecodecs) would store 8
    """
    out = [f.message() for f in find_deviations(metadata)]
    for where, name, config, dtype, chunk in _metadata_chain(metadata):
        if name in ("zfp", "zarrs.zfp") and config.get("mode") == "fixed_rate" and chunk is not None:
            rate = config.get("rate")
            if not isinstance(rate, (int, float)) or isinstance(rate, bool):
                continue
            d = max(1, len(chunk))
            bits, per_value = zfp_fixed_rate_bits(rate, dtype, d)
            if d == 3:
                continue
            factor = 4 ** (3 - d) if d < 3 else 1 / 4
            out.append(f"zfp fixed_rate rate={rate:g} at {where}: zarrs and numcodecs_ext set the rate "
                       f"as for 3-D data, so these {d}-D chunks store {per_value:g} bits per value "
                       f"({bits} bits per block of {4 ** d} values), {factor:g}x the rate; "
                       f"zfp's own definition of the rate (imagecodecs) would store {rate:g}")
    return out
