"""Stored codes for values a packing cannot hold: NaN, or a fill value outside the packed range.

numcodecs' ``FixedScaleOffset`` and ``AsType`` cast NaN, and values beyond the stored integer
type, with numpy, which writes an arbitrary code (or wraps) without a word. The spec codecs
refuse them instead, so an array whose fill value is NaN (the usual layout of packed floats), or
lies outside the packing (a fill of 0 with offset 250), reads as before once migrated but zarr
refuses every write: each partial chunk it writes must encode the fill value.

The way out is a ``scalar_map`` entry in the ``cast_value`` that makes the integers: the value
gets a code of its own, in both directions. The code must be one that no stored chunk holds
(else those values would read as NaN): :func:`scan_codes` reads the stored codes, a run at a
time, and :func:`choose_code` picks a free one at the end of the type's range.

Examples
--------
>>> meta = {"data_type": "float64", "fill_value": "NaN", "codecs": [
...     {"name": "scale_offset", "configuration": {"offset": 250, "scale": 100}},
...     {"name": "cast_value", "configuration": {"data_type": "uint16"}},
...     {"name": "bytes", "configuration": {"endian": "little"}}]}
>>> check = check_fill(meta)
>>> check.reason
'its fill value NaN has no code in uint16'
>>> with_code(meta, check.where, "NaN", 65535)["codecs"][1]["configuration"]["scalar_map"]
{'encode': [['NaN', 65535]], 'decode': [[65535, 'NaN']]}
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.dtypes import dtype_name, int_range, v3_dtype_from_json
from ..core.scalar_json import scalar_from_json, scalar_to_json
from .text import number

__all__ = ["CodeUse", "FillCheck", "check_fill", "choose_code", "code_cast", "codes_metadata", "codes_zarray",
           "mapped_codes", "parse_code_option", "scan_codes", "with_code", "without_maps"]

#: array -> array codecs whose effect on a scalar numcodecs_ext can compute (through its own
#: numcodecs classes); ``transpose`` moves values without changing them
_VALUE_CODECS = ("scale_offset", "cast_value")
_SHAPE_CODECS = ("transpose",)
_BYTES_CODECS = ("bytes", "vlen-bytes", "vlen-utf8")


def _chains(metadata: dict[str, Any],
            where: tuple[int, ...] = ()) -> Iterable[tuple[tuple[int, ...], list[dict[str, Any]]]]:
    """(where, codec list) of the array's chain and of the inner chain of each sharding codec."""
    codecs = metadata.get("codecs", [])
    yield where, codecs
    for i, codec in enumerate(codecs):
        if isinstance(codec, dict) and codec.get("name") == "sharding_indexed":
            inner = {"codecs": (codec.get("configuration") or {}).get("codecs", [])}
            yield from _chains(inner, (*where, i))


def chain_at(metadata: dict[str, Any], where: tuple[int, ...]) -> list[dict[str, Any]]:
    codecs = metadata["codecs"]
    for i in where:
        codecs = codecs[i]["configuration"]["codecs"]
    return codecs


def _with_chain(metadata: dict[str, Any], where: tuple[int, ...], chain: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(metadata)
    if not where:
        out["codecs"] = chain
        return out
    holder = out["codecs"]
    for i in where[:-1]:
        holder = holder[i]["configuration"]["codecs"]
    holder[where[-1]]["configuration"]["codecs"] = chain
    return out


def make_codec(name: str, configuration: dict[str, Any]) -> Any:
    from ..codecs.cast_value import CastValue
    from ..codecs.scale_offset import ScaleOffset

    return {"scale_offset": ScaleOffset, "cast_value": CastValue}[name].from_v3_configuration(configuration)


def code_cast(chain: list[dict[str, Any]], dtype: np.dtype) -> tuple[int, np.dtype, np.dtype] | None:
    """(index, input dtype, integer dtype) of the ``cast_value`` in ``chain`` that turns floats
    into the stored integers (the last one), or None; ``dtype`` is the chain's input."""
    found = None
    for i, codec in enumerate(chain):
        name = codec.get("name")
        if name == "cast_value":
            target = v3_dtype_from_json((codec.get("configuration") or {}).get("data_type"))
            if dtype.kind == "f" and target.kind in "iu":
                found = (i, dtype, target)
            dtype = target
        elif name not in (*_VALUE_CODECS, *_SHAPE_CODECS, "bitround"):
            break
    return found


@dataclass
class FillCheck:
    """Whether zarr can encode the array's fill value through its codecs (every write of a
    partial chunk must), and if not, why (``reason``) and where a code for it would go:
    ``where`` (the chain), ``index`` (its ``cast_value``) and ``key`` (fill-value JSON of the
    value reaching that cast)."""

    reason: str | None = None
    where: tuple[int, ...] = ()
    index: int | None = None
    key: Any = None
    nan: bool = False


def check_fill(metadata: dict[str, Any]) -> FillCheck:
    """Follow the fill value through the array -> array codecs numcodecs_ext knows (scale_offset,
    cast_value, transpose) and say, in the user's terms, why one of them cannot carry it."""
    try:
        dtype = v3_dtype_from_json(metadata["data_type"])
        fill = scalar_from_json(metadata["fill_value"], dtype)
    except (KeyError, TypeError, ValueError):
        return FillCheck()  # a type these codecs do not take: nothing to say here
    user = number(fill)
    for where, chain in _chains(metadata):
        value, dt = np.asarray(fill), dtype
        steps: list[str] = []
        for i, codec in enumerate(chain):
            name = codec.get("name")
            if name in _SHAPE_CODECS:
                continue
            if name not in _VALUE_CODECS:
                break
            configuration = codec.get("configuration") or {}
            try:
                c = make_codec(name, configuration)
                _, out_dt, enc = c.resolve_spec((1,), dt, value[()], strict=True)
            except (ValueError, TypeError) as e:
                return _explain(name, configuration, where, i, value, dt, user, steps, e)
            if name == "scale_offset" and enc is not None and number(enc) != number(value):
                steps.append(f"{number(enc)} after scale_offset "
                             f"(offset {number(c.offset)}, scale {number(c.scale)})")
            value, dt = np.asarray(enc), np.dtype(out_dt)
    return FillCheck()


def _explain(name: str, configuration: dict[str, Any], where: tuple[int, ...], index: int,
             value: np.ndarray, dt: np.dtype, user: str, steps: list[str], e: Exception) -> FillCheck:
    from .text import plain

    became = f" becomes {steps[-1]}," if steps else ""
    if name != "cast_value":
        return FillCheck(f"its fill value {user}{became} cannot go through {name} ({plain(str(e))})")
    target = v3_dtype_from_json(configuration.get("data_type"))
    v = value[()]
    nan = dt.kind == "f" and bool(np.isnan(v))
    key = scalar_to_json(v, dt)
    if nan:
        why = f"its fill value {user}{became} has no code in {dtype_name(target)}"
    elif target.kind in "iu" and dt.kind == "f" and not math.isfinite(float(v)):
        why = f"its fill value {user}{became} has no code in {dtype_name(target)}"
    elif target.kind in "iu":
        lo, hi = int_range(target)
        f = float(v) if dt.kind == "f" else int(v)
        if not lo <= f <= hi:
            why = f"its fill value {user}{became} outside the range of {dtype_name(target)} [{lo}, {hi}]"
        else:
            why = f"its fill value {user}{became} is not a whole number, which {dtype_name(target)} needs"
    else:
        why = f"its fill value {user}{became} does not survive the cast to {dtype_name(target)} ({plain(str(e))})"
    if steps and not nan and "outside" in why:
        why = why.replace(", outside", ", which is outside")
    return FillCheck(why, where, index, key, nan)


def with_code(metadata: dict[str, Any], where: tuple[int, ...], key: Any, code: int,
              index: int | None = None) -> dict[str, Any]:
    """``metadata`` with ``key`` (fill-value JSON of the cast's input) mapped to the stored
    ``code`` both ways in the chain's integer ``cast_value`` (``index``, found if not given)."""
    chain = copy.deepcopy(chain_at(metadata, where))
    if index is None:
        found = code_cast(chain, _input_dtype(metadata))
        if found is None:
            raise ValueError("no cast_value from floats to integers to give a code in")
        index = found[0]
    configuration = dict(chain[index].get("configuration") or {})
    smap = {k: [list(e) for e in v] for k, v in (configuration.get("scalar_map") or {}).items()}
    encode, decode = smap.setdefault("encode", []), smap.setdefault("decode", [])
    if not any(e[0] == key for e in encode):
        encode.append([key, int(code)])
    if not any(e[0] == int(code) for e in decode):
        decode.append([int(code), key])
    configuration["scalar_map"] = smap
    chain[index] = {**chain[index], "configuration": configuration}
    return _with_chain(metadata, where, chain)


def _input_dtype(metadata: dict[str, Any]) -> np.dtype:
    return v3_dtype_from_json(metadata["data_type"])


def existing_code(metadata: dict[str, Any], where: tuple[int, ...], index: int, key: Any) -> int | None:
    """The code ``key`` already has in that cast's scalar_map, or None."""
    smap = (chain_at(metadata, where)[index].get("configuration") or {}).get("scalar_map") or {}
    for k, v in smap.get("encode", []):
        if k == key:
            return int(v)
    return None


def mapped_codes(metadata: dict[str, Any], where: tuple[int, ...], index: int) -> dict[int, str]:
    """The stored codes that cast's scalar_map already gives a value, either way: {code: the
    value, in words} (no other value can have them)."""
    smap = (chain_at(metadata, where)[index].get("configuration") or {}).get("scalar_map") or {}
    out: dict[int, str] = {}
    for code, value in [(v, k) for k, v in smap.get("encode", [])] + [tuple(e) for e in smap.get("decode", [])]:
        try:
            out.setdefault(int(code), "NaN" if value == "NaN" else str(value))
        except (TypeError, ValueError):  # a hex or NaN code: not one an integer cast stores
            continue
    return out


def codes_metadata(metadata: dict[str, Any], where: tuple[int, ...], index: int) -> dict[str, Any] | None:
    """Metadata that reads the stored integers themselves (what the ``cast_value`` at ``index``
    writes): the value codecs before it dropped, the moves (transpose) kept, or None where a
    codec before it changes more than values. In a sharded array (``where``: the sharding
    codec), the codecs before the sharding codec must be moves only."""
    chain = chain_at(metadata, where)
    before = chain[:index]
    if any(c.get("name") not in (*_VALUE_CODECS, *_SHAPE_CODECS, "bitround") for c in before):
        return None
    outer = metadata["codecs"][:where[0]] if where else []
    if len(where) > 1 or any(c.get("name") not in _SHAPE_CODECS for c in outer):
        return None  # the outer codecs would see the integers where they expect the array's type
    target = v3_dtype_from_json((chain[index].get("configuration") or {}).get("data_type"))
    kept = [c for c in before if c.get("name") in _SHAPE_CODECS] + chain[index + 1:]
    out = _with_chain(metadata, where, kept)
    out.update({"data_type": dtype_name(target), "fill_value": 0, "attributes": {}})
    return out


def codes_zarray(zarray: dict[str, Any]) -> dict[str, Any] | None:
    """A zarr v2 array's ``.zarray`` that reads its stored integers (what its last
    FixedScaleOffset, or AsType from floats to integers, writes), or None if it has none."""
    filters = list(zarray.get("filters") or [])
    for i in range(len(filters) - 1, -1, -1):
        f = filters[i]
        if not isinstance(f, dict):
            continue
        stored = None
        if f.get("id") == "fixedscaleoffset":
            stored = f.get("astype")
        elif f.get("id") == "astype" and np.dtype(f.get("decode_dtype", "u1")).kind == "f":
            stored = f.get("encode_dtype")
        if stored is not None and np.dtype(stored).kind in "iu":
            return {**zarray, "dtype": np.dtype(stored).str, "fill_value": 0, "filters": filters[i + 1:] or None}
    return None


@dataclass
class CodeUse:
    """Which codes of an integer type the stored chunks hold: every code for 8- and 16-bit
    types, the range and the codes asked about for wider ones."""

    dtype: np.dtype
    seen: np.ndarray | None = None
    lo: int | None = None
    hi: int | None = None
    asked: dict[int, bool] | None = None
    chunks: int = 0
    taken: set[int] = field(default_factory=set)  # codes of the scalar_map (wide types)

    def used(self, code: int) -> bool:
        lo, hi = int_range(self.dtype)
        if self.seen is not None:
            return bool(self.seen[code - lo])
        if code in self.taken:
            return True
        if self.asked is not None and code in self.asked:
            return self.asked[code]
        return self.lo is not None and self.lo <= code <= self.hi  # (conservative)

    def reserve(self, codes: Iterable[int]) -> None:
        """Mark ``codes`` as taken (by the scalar_map) though no stored chunk holds them."""
        lo, hi = int_range(self.dtype)
        for code in codes:
            if not lo <= code <= hi:
                continue
            if self.seen is not None:
                self.seen[code - lo] = True
            elif self.asked is not None and code in self.asked:
                self.asked[code] = True
            else:
                self.taken.add(int(code))

    def add(self, codes: np.ndarray) -> None:
        if codes.size == 0:
            return
        lo = int_range(self.dtype)[0]
        if self.seen is not None:
            flat = (codes.astype(np.int64) - lo).reshape(-1) if self.dtype.kind == "i" else \
                codes.reshape(-1)
            self.seen |= np.bincount(flat, minlength=self.seen.size).astype(bool)
            return
        mn, mx = int(codes.min()), int(codes.max())
        self.lo = mn if self.lo is None else min(self.lo, mn)
        self.hi = mx if self.hi is None else max(self.hi, mx)
        for code in self.asked or {}:
            if not self.asked[code] and bool((codes == code).any()):
                self.asked[code] = True


def new_use(dtype: np.dtype, asked: Iterable[int] = ()) -> CodeUse:
    if dtype.itemsize <= 2:
        lo, hi = int_range(dtype)
        return CodeUse(dtype, seen=np.zeros(hi - lo + 1, bool))
    return CodeUse(dtype, asked={int(c): False for c in asked})


def choose_code(use: CodeUse) -> int | None:
    """A code no stored chunk holds, as far from the data as can be: the top of an unsigned
    type, the bottom of a signed one, then inwards from both ends; None if every code is used."""
    lo, hi = int_range(use.dtype)
    ends = [hi, lo] if use.dtype.kind == "u" else [lo, hi]
    if use.seen is None:  # wide types: the ends, and next to them, outside the stored range
        for step in range(64):
            for end in ends:
                code = end - step if end == hi else end + step
                if not use.used(code):
                    return code
        return None
    free = np.flatnonzero(~use.seen) + lo
    if free.size == 0:
        return None
    order = np.minimum(np.abs(free - ends[0]), np.abs(free - ends[1]) + 0.5)
    return int(free[int(np.argmin(order))])


def scan_codes(view: Any, present: Iterable[str] | dict[str, int], *, asked: Iterable[int] = (),
               progress: Any = None) -> CodeUse:
    """The codes the array's stored chunks hold (``view``: a :class:`~.runs.View` with
    :func:`codes_metadata`; ``present``: the store keys of its chunks). Chunks that are not
    stored (fill) are skipped; memory stays within a run."""
    from .runs import chunk_coords, quiet, runs

    array = view.open()
    dtype = np.dtype(array.dtype).newbyteorder("=")
    use = new_use(dtype, asked)
    keys = set(present)
    prefix = f"{view.path}/" if view.path else ""
    chunks = list(array.shards or array.chunks)  # what the stored keys name: shards, if any
    shape = list(array.shape)
    for _, sel in runs(shape, chunks, itemsize=dtype.itemsize):
        coords = list(chunk_coords(sel, chunks))
        stored = [c for c in coords if prefix + array.metadata.encode_chunk_key(c) in keys]
        if not stored:
            continue
        with quiet():
            block = np.asarray(array[sel])
        if len(stored) == len(coords):
            use.add(block)
        else:
            for c in stored:
                local = tuple(slice(i * n - s.start, min((i + 1) * n, s.stop) - s.start)
                              for i, n, s in zip(c, chunks, sel))
                use.add(block[local])
        use.chunks += len(stored)
        if progress is not None:
            progress.advance(len(stored), chunks=len(stored))
    return use


def without_maps(codecs: Any) -> Any:
    """``codecs`` without the scalar_map of any cast_value (inside sharding too)."""
    if isinstance(codecs, list):
        return [without_maps(c) for c in codecs]
    if not isinstance(codecs, dict):
        return codecs
    out = dict(codecs)
    configuration = out.get("configuration")
    if isinstance(configuration, dict):
        configuration = {k: without_maps(v) for k, v in configuration.items() if k != "scalar_map"}
        out["configuration"] = configuration
    return out


def parse_code_option(values: Iterable[str] | None, option: str) -> dict[str | None, int | str]:
    """``--nan-code`` / ``--fill-code`` values (``auto``, ``N``, ``ARRAY=auto``, ``ARRAY=N``) as
    {array path or None for every array: code or "auto"}; UsageError for anything else."""
    from ..store.errors import UsageError

    out: dict[str | None, int | str] = {}
    for value in values or []:
        path, _, code = value.rpartition("=")
        key = path.strip("/") if _ else None
        code = code.strip()
        if code == "auto":
            parsed: int | str = "auto"
        else:
            try:
                parsed = int(code, 0)
            except ValueError:
                raise UsageError(f"{option} {value}: give an integer code, 'auto', or ARRAY=CODE "
                                 "(for example 65535, auto or temperature=auto)") from None
        if key in out and out[key] != parsed:
            raise UsageError(f"{option} is given twice for {key or 'every array'}: "
                             f"{out[key]} and {parsed}")
        out[key] = parsed
    return out
