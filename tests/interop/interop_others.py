"""Interop with the other implementations: numcodecs_ext against zarr-python's built-ins, zarrs
(through zarrs-python's Rust pipeline and through zarrista), tensorstore and imagecodecs' libzfp.

Run by ``.ci/run`` in two environments (not by pytest): ours (numcodecs_ext installed) and
"others" (Python 3.12 WITHOUT numcodecs_ext, with the versions pinned in
``.ci/interop-others.txt``)::

    python tests/interop/interop_others.py ours-write  OURS            # (ours)   every case, written by us
    python tests/interop/interop_others.py others      OURS THEIRS     # (others) they read ours, they write
    python tests/interop/interop_others.py ours-read   OURS THEIRS     # (ours)   we read what they wrote
    python tests/interop/interop_others.py table OURS/results.json THEIRS/results.json [--check docs/interop.md]
                                                                 [--update docs/interop.md]

Every case is a small zarr v3 array (partial edge chunks, fill values, shards with missing inner
chunks). Directions: ``read`` (they read all of our array), ``partial`` (they read a box that
ends inside edge chunks), ``write`` (they write the same values from the same metadata; we read
all of it and the box, and the chunk bytes must equal ours wherever the spec fixes them: inner
chunks of shards are compared one by one, since the spec does not fix their order in a shard).
Values are compared bit for bit; NaNs of different payloads count as equal (and are reported).

What each implementation supports is detected, never assumed: one probe case per codec (the
simplest configuration) decides whether the implementation knows the codec at all. A case that
fails where every codec it uses passed its probe is a mismatch. zfp, which none of the zarr
implementations here reads, is compared stream for stream with imagecodecs' libzfp: imagecodecs
writes zfp's 32-bit magic and the mode word even with ``header=False``, so its stream is ours
after those bits (our streams get the same header bits in front before imagecodecs decodes them).

Outcomes: ``ok``, ``unsupported`` (a codec it does not implement, by its probe), ``known`` (a
mismatch that ``numcodecs_ext/tools/deviations.py`` lists for that implementation and version),
and the failures ``wrong`` (other values or bytes), ``refused`` (a valid configuration of a codec
it implements) and ``error``. ``table`` prints the support table and the matrix, and exits 1 on
any failure, never on "unsupported". Known deviations are pinned by tests/interop/test_deviations_others.py.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
ROWS = ["data types", "transpose", "packbits", "reshape", "bitround", "numcodecs.bitround", "scale_offset",
        "cast_value", "sharding_indexed", "zfp"]
DIRECTIONS = ["read", "partial", "write"]
FAILURES = {"wrong", "refused", "error"}


def _deviations() -> Any:
    """numcodecs_ext/tools/deviations.py, loaded by path (the others' environment has no
    numcodecs_ext): the one table of known deviations."""
    path = ROOT / "numcodecs_ext" / "tools" / "deviations.py"
    spec = importlib.util.spec_from_file_location("_interop_deviations", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    row: str
    dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]  # the chunk grid (the shards' shape when ``inner`` is set)
    fill: Any  # JSON
    make: Callable[[np.random.Generator], np.ndarray] = field(compare=False)
    filters: tuple[dict, ...] = ()
    serializer: dict = field(default_factory=lambda: BYTES)
    compressors: tuple[dict, ...] = ()
    inner: tuple[int, ...] | None = None
    index_location: str = "end"
    probe: bool = False  # the simplest configuration of ``row``: decides support

    def codecs(self) -> list[dict]:
        chain = [*self.filters, self.serializer, *self.compressors]
        if self.inner is None:
            return chain
        return [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(self.inner), "codecs": chain,
            "index_codecs": [BYTES, {"name": "crc32c"}], "index_location": self.index_location}}]

    def metadata(self) -> dict:
        return {"zarr_format": 3, "node_type": "array", "shape": list(self.shape),
                "data_type": self.dtype,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(self.chunks)}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": self.fill, "codecs": self.codecs(), "attributes": {}}

    def uses(self) -> set[str]:
        """The codecs (rows) and the data types this case needs, as support is keyed (a
        cast_value's target type too: a reader without float16 cannot decode one to float32)."""
        chain = [*self.filters, self.serializer, *self.compressors]
        names = {c["name"] for c in chain}
        if self.inner is not None:
            names.add("sharding_indexed")
        casts = {f"dtype:{c['configuration']['data_type']}" for c in chain if c["name"] == "cast_value"}
        return (names - {"bytes"}) | {f"dtype:{self.dtype}"} | casts

    def selection(self) -> tuple[slice, ...]:
        """A box from a third of each dimension to its end: it crosses chunk borders and ends
        inside the edge chunks."""
        return tuple(slice(n // 3, n) for n in self.shape)

    def bytes_fixed(self) -> bool:
        return self.row != "zfp" and not self.compressors


def np_dtype(name: str) -> np.dtype:
    """numpy's dtype for a zarr data type name (ml_dtypes for int4, uint4 ...)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def _c(name: str, **config: Any) -> dict:
    return {"name": name, "configuration": config} if config else {"name": name}


def _field(shape: tuple[int, ...]) -> np.ndarray:
    grids = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing="ij")
    return np.asarray(sum(np.sin(g * (i + 1.3)) for i, g in enumerate(grids)))


def _bits(dtype: str, first: int, last: int) -> Callable[[np.random.Generator], Callable]:
    """Values that packbits bits first..last holds exactly (sign-extended for signed types)."""
    def make(shape: tuple[int, ...]) -> Callable[[np.random.Generator], np.ndarray]:
        def gen(rng: np.random.Generator) -> np.ndarray:
            b = last - first + 1
            dt = np_dtype(dtype)
            if dt.kind == "i" or dtype.startswith("int"):
                v = rng.integers(-(2 ** (b - 1)), 2 ** (b - 1), size=shape, dtype=np.int64)
                v.flat[:2] = [-(2 ** (b - 1)), 2 ** (b - 1) - 1]
                return (v * 2 ** first).astype(dt)
            if dt.kind in "fc":
                width = dt.itemsize * 8 // (2 if dt.kind == "c" else 1)
                ut = np.dtype(f"u{width // 8}")
                parts = rng.integers(0, 2 ** b, size=shape + ((2,) if dt.kind == "c" else ()),
                                     dtype=np.uint64) << np.uint64(first)
                floats = parts.astype(ut).view(f"f{width // 8}")
                floats[~np.isfinite(floats)] = 1.5  # keep the values ordinary
                return floats.view(dt).reshape(shape) if dt.kind == "c" else floats
            if dt.kind == "b":
                return rng.integers(0, 2, size=shape).astype(bool)
            v = rng.integers(0, 2 ** b, size=shape, dtype=np.uint64)
            v.flat[:2] = [0, 2 ** b - 1]
            return (v << np.uint64(first)).astype(dt)
        return gen
    return make


def _ints(dtype: str, lo: int, hi: int, shape: tuple[int, ...],
          extra: tuple[int, ...] = ()) -> Callable[[np.random.Generator], np.ndarray]:
    def gen(rng: np.random.Generator) -> np.ndarray:
        v = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
        v.flat[:len(extra)] = extra
        return v.astype(dtype)
    return gen


def _floats(dtype: str, shape: tuple[int, ...], scale: float = 100.0, offset: float = 0.0,
            specials: tuple[float, ...] = (), nan_box: tuple[slice, ...] | None = None
            ) -> Callable[[np.random.Generator], np.ndarray]:
    def gen(rng: np.random.Generator) -> np.ndarray:
        v = (_field(shape) * scale + offset + rng.normal(0, scale / 50, size=shape)).astype(dtype)
        v.flat[:len(specials)] = specials
        if nan_box is not None:
            v[nan_box] = np.nan
        return v
    return gen


def _with_fill_box(gen: Callable, fill: Any, box: tuple[slice, ...]) -> Callable:
    """Make one region equal to the fill value, so that chunks there are left out."""
    def wrapped(rng: np.random.Generator) -> np.ndarray:
        v = gen(rng)
        v[box] = fill
        return v
    return wrapped


def _transpose_cases() -> list[Case]:
    s3 = (5, 6, 7)
    return [
        Case("transpose-int16-2d", "transpose", "int16", (10, 7), (4, 4), 3,
             _ints("int16", -30000, 30000, (10, 7)), filters=(_c("transpose", order=[1, 0]),), probe=True),
        Case("transpose-float64-3d-specials", "transpose", "float64", s3, (2, 4, 3), "NaN",
             _floats("float64", s3, specials=(np.nan, -0.0, np.inf, -np.inf, 5e-324)),
             filters=(_c("transpose", order=[2, 0, 1]),)),
        Case("transpose-uint8-4d", "transpose", "uint8", (3, 4, 5, 6), (2, 3, 2, 4), 7,
             _ints("uint8", 0, 255, (3, 4, 5, 6)), filters=(_c("transpose", order=[3, 1, 0, 2]),)),
        Case("transpose-bool-2d", "transpose", "bool", (9, 5), (4, 4), False,
             _ints("bool", 0, 1, (9, 5)), filters=(_c("transpose", order=[1, 0]),)),
        Case("transpose-complex128-2d", "transpose", "complex128", (6, 5), (4, 4), [1.0, -2.0],
             lambda rng: (rng.normal(size=(6, 5)) + 1j * rng.normal(size=(6, 5))),
             filters=(_c("transpose", order=[1, 0]),)),
        Case("transpose-twice-int32-3d", "transpose", "int32", s3, (2, 4, 3), 0,
             _ints("int32", -10**6, 10**6, s3),
             filters=(_c("transpose", order=[1, 0, 2]), _c("transpose", order=[0, 2, 1]))),
        Case("transpose-float32-sharded", "transpose", "float32", (10, 12), (8, 8), -1.5,
             _with_fill_box(_floats("float32", (10, 12)), -1.5, (slice(0, 4), slice(4, 8))),
             filters=(_c("transpose", order=[1, 0]),), inner=(4, 4)),
    ]


def _packbits_cases() -> list[Case]:
    pb = lambda **c: _c("packbits", **c)  # noqa: E731
    return [
        Case("packbits-uint8-default", "packbits", "uint8", (37,), (16,), 0,
             _bits("uint8", 0, 7)((37,)), serializer=pb(), probe=True),
        Case("packbits-bool-first_byte", "packbits", "bool", (50,), (16,), False,
             _bits("bool", 0, 0)((50,)), serializer=pb(padding_encoding="first_byte")),
        Case("packbits-uint8-bits2-5", "packbits", "uint8", (10, 7), (4, 4), 12,
             _bits("uint8", 2, 5)((10, 7)), serializer=pb(first_bit=2, last_bit=5)),
        Case("packbits-int16-bits0-5-last_byte", "packbits", "int16", (37,), (16,), -32,
             _bits("int16", 0, 5)((37,)),
             serializer=pb(first_bit=0, last_bit=5, padding_encoding="last_byte")),
        Case("packbits-int8-bits1-3", "packbits", "int8", (30,), (16,), 0,
             _bits("int8", 1, 3)((30,)), serializer=pb(first_bit=1, last_bit=3)),
        Case("packbits-int32-bits0-11-first_byte", "packbits", "int32", (30,), (16,), -2048,
             _bits("int32", 0, 11)((30,)),
             serializer=pb(last_bit=11, padding_encoding="first_byte")),
        Case("packbits-int16-bits0-11", "packbits", "int16", (30,), (16,), 0,
             _bits("int16", 0, 11)((30,)), serializer=pb(last_bit=11)),
        Case("packbits-uint16-bits4-15-last_byte", "packbits", "uint16", (25,), (8,), 16,
             _bits("uint16", 4, 15)((25,)),
             serializer=pb(first_bit=4, last_bit=15, padding_encoding="last_byte")),
        Case("packbits-float32-bits16-31", "packbits", "float32", (20,), (8,), 0.0,
             _bits("float32", 16, 31)((20,)), serializer=pb(first_bit=16, last_bit=31)),
        Case("packbits-uint64-bits0-39", "packbits", "uint64", (20,), (8,), 0,
             _bits("uint64", 0, 39)((20,)), serializer=pb(last_bit=39)),
        Case("packbits-complex64-bits16-31", "packbits", "complex64", (12,), (8,), [0.0, 0.0],
             _bits("complex64", 16, 31)((12,)), serializer=pb(first_bit=16, last_bit=31)),
        Case("packbits-int4", "packbits", "int4", (21,), (8,), -8,
             _bits("int4", 0, 3)((21,)), serializer=pb()),
        Case("packbits-uint4-first_byte", "packbits", "uint4", (21,), (8,), 15,
             _bits("uint4", 0, 3)((21,)), serializer=pb(padding_encoding="first_byte")),
        Case("packbits-uint8-full-first_byte", "packbits", "uint8", (20,), (8,), 0,
             _bits("uint8", 0, 7)((20,)), serializer=pb(padding_encoding="first_byte")),
        Case("packbits-int16-full-last_byte", "packbits", "int16", (20,), (8,), 0,
             _bits("int16", 0, 15)((20,)), serializer=pb(last_bit=15, padding_encoding="last_byte")),
        Case("packbits-uint16-bits0-11-sharded", "packbits", "uint16", (20, 14), (8, 8), 4095,
             _with_fill_box(_bits("uint16", 0, 11)((20, 14)), 4095, (slice(0, 4), slice(0, 4))),
             serializer=pb(last_bit=11, padding_encoding="last_byte"), inner=(4, 4)),
    ]


def _reshape_cases() -> list[Case]:
    rs = lambda shape: _c("reshape", shape=shape)  # noqa: E731
    return [
        Case("reshape-flatten", "reshape", "int32", (8, 6), (4, 6), 0,
             _ints("int32", -10**9, 10**9, (8, 6)), filters=(rs([-1]),), probe=True),
        Case("reshape-groups-3d", "reshape", "float64", (4, 6, 10), (2, 3, 10), "NaN",
             _floats("float64", (4, 6, 10), specials=(np.nan,)), filters=(rs([[0, 1], [2]]),)),
        Case("reshape-sizes", "reshape", "int16", (6, 8), (4, 6), 1,
             _ints("int16", -1000, 1000, (6, 8)), filters=(rs([2, 12]),)),
        Case("reshape-group-then-auto", "reshape", "uint8", (5, 6, 2), (4, 6, 2), 9,
             _ints("uint8", 0, 255, (5, 6, 2)), filters=(rs([[0], -1]),)),
        Case("reshape-size-auto-group", "reshape", "int32", (8, 3), (4, 3), 0,
             _ints("int32", -5, 5, (8, 3)), filters=(rs([2, -1, [1]]),)),
        Case("reshape-then-transpose", "reshape", "float32", (4, 6, 10), (2, 3, 10), 0.0,
             _floats("float32", (4, 6, 10)), filters=(rs([[0, 1], [2]]), _c("transpose", order=[1, 0]))),
        Case("reshape-sharded", "reshape", "int16", (8, 12), (8, 12), -1,
             _with_fill_box(_ints("int16", -100, 100, (8, 12)), -1, (slice(4, 8), slice(0, 6))),
             filters=(rs([-1]),), inner=(4, 6)),
    ]


def _bitround_cases() -> list[Case]:
    br = lambda k: _c("bitround", keepbits=k)  # noqa: E731
    nbr = lambda k: _c("numcodecs.bitround", keepbits=k)  # noqa: E731
    specials = (np.nan, np.inf, -np.inf, -0.0, 5e-324, 1e-310)
    ints16 = (32, 96, -8192, 100, 1000, -3)
    return [
        Case("bitround-float32", "bitround", "float32", (30,), (16,), 0.0,
             _floats("float32", (30,)), filters=(br(10),), probe=True),
        Case("bitround-float64-specials", "bitround", "float64", (6, 7), (4, 4), "NaN",
             _floats("float64", (6, 7), specials=specials), filters=(br(20),)),
        Case("bitround-float16", "bitround", "float16", (40,), (16,), 0.0,
             _floats("float16", (40,), scale=10), filters=(br(3),)),
        Case("bitround-int16", "bitround", "int16", (30,), (16,), 0,
             _ints("int16", 0, 30000, (30,), ints16), filters=(br(3),)),
        Case("bitround-uint32", "bitround", "uint32", (30,), (16,), 0,
             _ints("uint32", 0, 2**31, (30,)), filters=(br(5),)),
        Case("bitround-int64-negative", "bitround", "int64", (20,), (8,), 0,
             _ints("int64", -(2**40), 2**40, (20,)), filters=(br(4),)),
        Case("bitround-float32-sharded", "bitround", "float32", (10, 12), (8, 8), 0.0,
             _with_fill_box(_floats("float32", (10, 12)), 0.0, (slice(4, 8), slice(0, 4))),
             filters=(br(8),), inner=(4, 4)),
        Case("numcodecs.bitround-float32", "numcodecs.bitround", "float32", (30,), (16,), 0.0,
             _floats("float32", (30,)), filters=(nbr(10),), probe=True),
        Case("numcodecs.bitround-float64", "numcodecs.bitround", "float64", (6, 7), (4, 4), 0.0,
             _floats("float64", (6, 7), specials=(np.nan, -0.0)), filters=(nbr(30),)),
        Case("numcodecs.bitround-int16", "numcodecs.bitround", "int16", (30,), (16,), 0,
             _ints("int16", 0, 30000, (30,), ints16), filters=(nbr(3),)),
        Case("numcodecs.bitround-uint8", "numcodecs.bitround", "uint8", (30,), (16,), 0,
             _ints("uint8", 0, 255, (30,)), filters=(nbr(2),)),
    ]


def _scale_offset_cast_value_cases() -> list[Case]:
    so = lambda **c: _c("scale_offset", **c)  # noqa: E731
    cv = lambda **c: _c("cast_value", **c)  # noqa: E731
    nan_map = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}
    ties = (0.5, 1.5, 2.5, -0.5, -1.5, 32767.4, -32768.0)
    f16 = (1.0004882812500002, 65504.0, 6.1e-05, 1e-8, -2.5, 0.1)

    def u16_fill_map(rng: np.random.Generator) -> np.ndarray:
        v = rng.integers(1000, 1256, size=(20,)).astype("uint16")
        v[[0, 7]] = 0
        return v

    def spec_nan(rng: np.random.Generator) -> np.ndarray:
        v = np.round(rng.uniform(0, 2540, size=(20,)), 1)
        v[[0, 5, 19]] = np.nan
        return v

    def eopf_like(rng: np.random.Generator) -> np.ndarray:
        v = np.round(rng.uniform(0, 0.6, size=(20, 14)) + 0.1, 4)  # reflectance, 1e-4 steps
        v[:4, 8:12] = np.nan
        v[12:15, 2:5] = np.nan
        return v

    return [
        Case("scale_offset-float32-spec", "scale_offset", "float32", (10, 7), (4, 4), 5.0,
             _floats("float32", (10, 7)), filters=(so(offset=5, scale=0.1),), probe=True),
        Case("scale_offset-int16", "scale_offset", "int16", (6, 10), (4, 4), -5,
             _ints("int16", -1000, 1000, (6, 10)), filters=(so(offset=-5, scale=3),)),
        Case("scale_offset-float64-hex-offset", "scale_offset", "float64", (20,), (8,), 0.0,
             _floats("float64", (20,), offset=273.0), filters=(so(offset="0x4071100000000000", scale=100),)),
        Case("scale_offset-uint16-range-reduction", "scale_offset", "uint16", (20,), (8,), 1000,
             _ints("uint16", 1000, 1255, (20,)), filters=(so(offset=1000), cv(data_type="uint8"))),
        Case("cast_value-float64-int16", "cast_value", "float64", (12, 10), (5, 4), 0.0,
             lambda rng: np.concatenate([np.array(ties), np.round(_field((12, 10)).ravel()[7:] * 3000, 2)]
                                        ).reshape(12, 10),
             filters=(cv(data_type="int16"),), probe=True),
        Case("cast_value-spec-float64-uint8-nan", "cast_value", "float64", (20,), (8,), "NaN", spec_nan,
             filters=(so(offset=-10, scale=0.1),
                      cv(data_type="uint8", rounding="nearest-even", scalar_map=nan_map))),
        Case("cast_value-float64-float32-towards-zero", "cast_value", "float64", (9, 11), (4, 4), 0.0,
             _floats("float64", (9, 11), scale=1 / 7), filters=(cv(data_type="float32", rounding="towards-zero"),)),
        Case("cast_value-float32-float16", "cast_value", "float32", (30,), (16,), 0.0,
             _floats("float32", (30,)), filters=(cv(data_type="float16"),)),
        Case("cast_value-float64-float16", "cast_value", "float64", (20,), (8,), 0.0,
             _floats("float64", (20,), specials=f16), filters=(cv(data_type="float16"),)),
        Case("cast_value-float64-int8-wrap", "cast_value", "float64", (30,), (16,), 0.0,
             _floats("float64", (30,), scale=200),
             filters=(cv(data_type="int8", rounding="towards-negative", out_of_range="wrap"),)),
        Case("cast_value-float64-uint8-clamp", "cast_value", "float64", (30,), (16,), 0.0,
             _floats("float64", (30,), scale=300, specials=(0.5, 1.5, 254.5, -3.0, 1e9)),
             filters=(cv(data_type="uint8", rounding="nearest-away", out_of_range="clamp"),)),
        Case("cast_value-hex-scalar_map-key", "cast_value", "float64", (20,), (8,), "NaN",
             _floats("float64", (20,), scale=100, offset=120, specials=(np.nan,)),
             filters=(cv(data_type="uint8", out_of_range="clamp",
                         scalar_map={"encode": [["0x7ff8000000000000", 0]], "decode": [[0, "NaN"]]}),)),
        Case("cast_value-spec-uint16-fill-map", "cast_value", "uint16", (20,), (8,), 0, u16_fill_map,
             filters=(cv(data_type="uint16", scalar_map={"encode": [[0, 1000]], "decode": [[1000, 0]]}),
                      so(offset=1000), cv(data_type="uint8"))),
        Case("cast_value-int32-float32", "cast_value", "int32", (20,), (8,), 0,
             _ints("int32", -(2**30), 2**30, (20,), (16777217, -16777219)),
             filters=(cv(data_type="float32", rounding="towards-zero"),)),
        Case("cast_value-sharded-reflectance", "cast_value", "float64", (20, 14), (8, 8), "NaN", eopf_like,
             filters=(so(offset=-0.1, scale=10000), cv(data_type="uint16", scalar_map=nan_map)),
             inner=(4, 4)),
    ]


def _sharding_cases() -> list[Case]:
    return [
        Case("sharding-int16", "sharding_indexed", "int16", (10, 7), (8, 4), -1,
             _with_fill_box(_ints("int16", -999, 999, (10, 7)), -1, (slice(0, 4), slice(0, 2))),
             inner=(4, 2), probe=True),
        Case("sharding-index-start", "sharding_indexed", "float32", (9, 9), (6, 6), "NaN",
             _with_fill_box(_floats("float32", (9, 9)), np.nan, (slice(3, 6), slice(0, 3))),
             inner=(3, 3), index_location="start"),
        Case("sharding-gzip", "sharding_indexed", "uint16", (12,), (8,), 0,
             _ints("uint16", 0, 65535, (12,)), compressors=(_c("gzip", level=5),), inner=(4,)),
    ]


_ZFP_SHAPES = {1: ((37,), (16,)), 2: ((9, 7), (8, 4)), 3: ((5, 6, 7), (4, 4, 4)),
               4: ((3, 5, 4, 6), (2, 4, 4, 4))}
_ZFP_MODES = {
    "reversible": {},
    "fixed_accuracy": {"tolerance": 0.001},
    "fixed_precision": {"precision": 19},
    "fixed_rate": {"rate": 6.5},
    "expert": {"minbits": 16, "maxbits": 3000, "maxprec": 22, "minexp": -40},
}
_ZFP_MODES["expert-minexp0"] = {"minbits": 8, "maxbits": 2000, "maxprec": 30, "minexp": 0}
_ZFP_TYPES = {"float32": list(_ZFP_MODES)[:5], "float64": list(_ZFP_MODES),
              "int32": ["reversible", "fixed_precision", "fixed_rate", "expert"],
              "int64": ["reversible", "fixed_precision"], "int16": ["reversible", "fixed_precision"],
              "uint8": ["reversible", "fixed_rate"]}


def _zfp_cases() -> list[Case]:
    out = []
    for d, (shape, chunks) in _ZFP_SHAPES.items():
        for dtype, modes in _ZFP_TYPES.items():
            for mode in modes:
                config = dict(_ZFP_MODES[mode], mode=mode.split("-")[0])
                if mode == "fixed_rate" and dtype in ("int32", "uint8"):
                    config["rate"] = 12
                if mode == "expert" and dtype == "int32":
                    config.update(minexp=0, maxprec=28)
                kind = np.dtype(dtype).kind
                if kind == "f":
                    make = _floats(dtype, shape, scale=50)
                else:
                    info = np.iinfo(dtype)
                    span = min(info.max, 10**6)
                    make = (lambda s, lo, hi, dt: lambda rng: np.clip(
                        np.round(_field(s) * hi / 2.2 + (lo + hi) / 2), lo, hi).astype(dt))(
                        shape, max(info.min, -span), span, dtype)
                out.append(Case(f"zfp-{mode}-{dtype}-{d}d", "zfp", dtype, shape, chunks,
                                0 if kind != "f" else 0.0, make, serializer=_c("zfp", **config),
                                probe=(mode, dtype, d) == ("reversible", "float64", 2)))
    out.append(Case("zfp-fixed_rate-float32-sharded", "zfp", "float32", (10, 12), (8, 8), 0.0,
                    _with_fill_box(_floats("float32", (10, 12)), 0.0, (slice(0, 4), slice(4, 8))),
                    serializer=_c("zfp", mode="fixed_rate", rate=10), inner=(4, 4)))
    return out


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
          "float32", "float64", "complex64", "complex128", "int4", "uint4"]


def _dtype_cases() -> list[Case]:
    """One plain array per data type (bytes only): decides which data types each one reads."""
    def make(dtype: str) -> Callable[[np.random.Generator], np.ndarray]:
        dt = np_dtype(dtype)
        if dt.kind in "fc":
            return lambda rng: (rng.normal(size=(7,)) * (1 + 1j if dt.kind == "c" else 1)).astype(dt)
        if dtype == "bool":
            return lambda rng: rng.integers(0, 2, size=(7,)).astype(bool)
        lo, hi = ((-8, 7) if dtype == "int4" else (0, 15)) if dtype.endswith("int4") else \
            (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        values = [lo + (hi - lo) * k // 6 for k in range(7)]  # both extremes, exactly
        return lambda rng: np.array(values, dtype=object).astype(dt)
    fill = {"bool": False, "complex64": [0.0, 0.0], "complex128": [0.0, 0.0]}
    return [Case(f"dtype-{d}", "data types", d, (7,), (4,), fill.get(d, 0.0 if d.startswith("float") else 0),
                 make(d), probe=True) for d in DTYPES]


def cases() -> list[Case]:
    every = [*_dtype_cases(), *_transpose_cases(), *_packbits_cases(), *_reshape_cases(), *_bitround_cases(),
             *_scale_offset_cast_value_cases(), *_sharding_cases(), *_zfp_cases()]
    names = [c.name for c in every]
    assert len(names) == len(set(names)), "case names must be unique"
    return every


CASES = {c.name: c for c in cases()}


# ---------------------------------------------------------------------------------------------
# values, fill values and chunks
# ---------------------------------------------------------------------------------------------


def _float_json(value: Any, dtype: np.dtype) -> float:
    if isinstance(value, str):
        if value.lower().startswith("0x"):
            raw = int(value, 16).to_bytes(dtype.itemsize, "big")
            return float(np.frombuffer(raw, dtype.newbyteorder(">"))[0])
        return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(value, value))
    return float(value)


def fill_python(case: Case) -> Any:
    """The case's fill value as zarr-python's create_array takes it."""
    dt = np.dtype(case.dtype)
    if dt.kind == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        return complex(_float_json(case.fill[0], part), _float_json(case.fill[1], part))
    if dt.kind == "f":
        return _float_json(case.fill, dt)
    return case.fill


def save(path: Path, values: np.ndarray) -> None:
    """np.save, with ml_dtypes' integers (int4 ...) as int8/uint8 (.npy cannot name them)."""
    if values.dtype.kind == "V" and values.dtype.name.startswith(("int", "uint")):
        values = values.astype(np.int8 if values.dtype.name.startswith("int") else np.uint8)
    np.save(path, values)


def load(path: Path, case: Case) -> np.ndarray:
    values = np.load(path)
    want = np_dtype(case.dtype)
    return values.astype(want) if values.dtype != want and want.kind == "V" else values


def compare(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """Bit for bit; NaNs of any payload match each other (reported)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, f"shape {got.shape} instead of {want.shape}"
    if got.dtype != want.dtype:  # ml_dtypes' int4 read back as int8 (or so): compare the values
        if "V" in (got.dtype.kind + want.dtype.kind) and want.dtype.name.startswith(("int", "uint")) \
                and got.dtype.kind in "iuV":
            try:
                return compare(got.astype(np.int64), want.astype(np.int64))
            except (TypeError, ValueError):
                pass
        return False, f"dtype {got.dtype} instead of {want.dtype}"
    if got.tobytes() == want.tobytes():
        return True, ""
    flat_g, flat_w = got.ravel(), want.ravel()
    if want.dtype.kind in "fc":
        g, w = (flat_g.view(f"f{want.dtype.itemsize // 2}"), flat_w.view(f"f{want.dtype.itemsize // 2}")) \
            if want.dtype.kind == "c" else (flat_g, flat_w)
        nan = np.isnan(g) & np.isnan(w)
        width = g.dtype.itemsize
        differ = (g.view(f"u{width}") != w.view(f"u{width}")) & ~nan
        if not differ.any():
            return True, "NaN payloads differ"
        idx = np.flatnonzero(differ)
        return False, (f"{idx.size} of {g.size} values differ, e.g. at {idx[0]}: {g[idx[0]]!r} "
                       f"instead of {w[idx[0]]!r}")
    idx = np.flatnonzero(flat_g != flat_w)
    if idx.size == 0:  # e.g. ml_dtypes int4: equal values, another byte pattern in memory
        return True, "equal values, other in-memory bytes"
    return False, (f"{idx.size} of {flat_g.size} values differ, e.g. at {idx[0]}: "
                   f"{flat_g[idx[0]]!r} instead of {flat_w[idx[0]]!r}")


def chunk_files(store: Path) -> dict[str, bytes]:
    return {p.relative_to(store).as_posix(): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and p.name != "zarr.json"}


def inner_chunks(store: Path, case: Case) -> dict[str, bytes]:
    """Chunk bytes by key; for shards, every inner chunk by ``key#i`` (from the shard index)."""
    files = chunk_files(store)
    if case.inner is None:
        return files
    n = math.prod(s // i for s, i in zip(case.chunks, case.inner))
    size = 16 * n + 4  # the index (bytes little + crc32c)
    out = {}
    for key, raw in files.items():
        index = raw[:size] if case.index_location == "start" else raw[-size:]
        entries = np.frombuffer(index[:-4], "<u8").reshape(n, 2)
        for i, (offset, nbytes) in enumerate(entries):
            if offset == nbytes == 2**64 - 1:
                continue
            out[f"{key}#{i}"] = raw[int(offset):int(offset + nbytes)]
    return out


def compare_chunks(mine: dict[str, bytes], theirs: dict[str, bytes]) -> tuple[bool, str]:
    both = sorted(set(mine) & set(theirs))
    differ = [k for k in both if mine[k] != theirs[k]]
    notes = []
    if set(mine) != set(theirs):
        notes.append(f"chunks only in ours: {sorted(set(mine) - set(theirs))}, only in theirs: "
                     f"{sorted(set(theirs) - set(mine))}")
    if differ:
        k = differ[0]
        return False, (f"{len(differ)} of {len(both)} chunks differ, e.g. {k}: {len(theirs[k])} bytes "
                       f"{theirs[k][:12].hex()}... instead of {len(mine[k])} bytes {mine[k][:12].hex()}...")
    return bool(both), "; ".join(notes) if both else "no chunk in common"


# ---------------------------------------------------------------------------------------------
# the implementations
# ---------------------------------------------------------------------------------------------


class Impl:
    """One implementation: reads a store (a selection of it) and writes a case's values."""

    name = ""
    family = ""  # for deviations.py: "zarrs", "zarr-python", ...
    writes = True  # False: tested as a reader only (its write cells are "unsupported")

    def version(self) -> str:
        raise NotImplementedError

    def family_version(self) -> str:
        return self.version()

    def families(self) -> list[tuple[str, str, bool]]:
        """``(family, version, parser only)`` whose known deviations this implementation shares."""
        return [(self.family, self.family_version(), False)]

    def label(self) -> str:
        return f"{self.name} {self.version()}"

    def handles(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        raise NotImplementedError

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what it started (zarrita.js: its node process)."""


def _pkg_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _zarr_create(path: Path, case: Case) -> Any:
    import zarr

    common = {"store": str(path), "shape": case.shape, "dtype": case.dtype, "zarr_format": 3,
              "fill_value": fill_python(case), "overwrite": True}
    if case.inner is not None:
        return zarr.create_array(chunks=case.chunks, filters=None, serializer=case.codecs()[0],
                                 compressors=None, **common)
    return zarr.create_array(chunks=case.chunks, filters=list(case.filters) or None,
                             serializer=case.serializer, compressors=list(case.compressors) or None,
                             **common)


class ZarrPython(Impl):
    """zarr-python with the codecs registered in this environment (its own, and in ours numcodecs_ext)."""

    name = "zarr-python"
    family = "zarr-python"

    def version(self) -> str:
        import zarr

        extra = ""
        with contextlib.suppress(Exception):
            extra = f" + cast-value-rs {_pkg_version('cast-value-rs')}"
        return f"{zarr.__version__}{extra}"

    def family_version(self) -> str:
        import zarr

        return zarr.__version__

    def _context(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def _check_path(self, array: Any) -> str:
        return ""

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        import zarr

        with self._context():
            a = zarr.open_array(str(path), mode="r")
            self._check_path(a)
            return np.asarray(a[sel if sel is not None else ...])

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        with self._context():
            a = _zarr_create(path, case)
            self._check_path(a)
            a[...] = data


class Ours(ZarrPython):
    name = "numcodecs_ext"
    family = "numcodecs_ext"

    def version(self) -> str:
        import numcodecs_ext
        import zarr

        return f"{numcodecs_ext.__version__} (zarr {zarr.__version__})"

    family_version = version


# Placeholders let zarr-python parse metadata that names codecs it has no class for, so that
# zarrs' Rust pipeline (which reads the metadata JSON itself) can be tried on them. In strict mode
# nothing falls back to Python; a placeholder that is ever asked to encode or decode raises.
_PLACEHOLDER_KINDS = {"packbits": "bytes", "zfp": "bytes", "zarrs.zfp": "bytes", "reshape": "array",
                      "bitround": "array", "numcodecs.bitround": "array"}


def _register_placeholders() -> list[str]:
    from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec
    from zarr.core.array_spec import ArraySpec
    from zarr.registry import get_codec_class, register_codec

    def methods(kind: str) -> dict[str, Any]:
        def __init__(self, name: str, configuration: dict | None) -> None:  # noqa: N807
            object.__setattr__(self, "name", name)
            object.__setattr__(self, "configuration", configuration)

        @classmethod
        def from_dict(cls, data: dict) -> Any:
            return cls(data["name"], data.get("configuration"))

        def to_dict(self) -> dict:
            return {"name": self.name, **({"configuration": self.configuration}
                                          if self.configuration is not None else {})}

        def resolve_metadata(self, spec: ArraySpec) -> ArraySpec:
            if self.name != "reshape":
                return spec
            shape = _reshape_output(spec.shape, self.configuration["shape"])
            return ArraySpec(shape=shape, dtype=spec.dtype, fill_value=spec.fill_value,
                             config=spec.config, prototype=spec.prototype)

        async def refuse(self, *args: Any) -> Any:
            raise RuntimeError(f"{self.name}: decoded or encoded in Python, so zarrs-python fell back")

        return {"__init__": __init__, "from_dict": from_dict, "to_dict": to_dict,
                "resolve_metadata": resolve_metadata, "validate": lambda self, **kw: None,
                "evolve_from_array_spec": lambda self, array_spec: self,
                "compute_encoded_size": lambda self, n, spec: n,
                "_decode_single": refuse, "_encode_single": refuse, "is_fixed_size": True,
                "__hash__": lambda self: hash(self.name), "__eq__": lambda self, o: self is o}

    added = []
    for name, kind in _PLACEHOLDER_KINDS.items():
        try:
            get_codec_class(name)
            continue  # zarr-python has a class: it parses the metadata
        except Exception:  # noqa: BLE001 - UnknownCodecError (no public base class before 3.x)
            pass
        base = ArrayBytesCodec if kind == "bytes" else ArrayArrayCodec
        cls = type(f"Placeholder_{name.replace('.', '_')}", (base,), methods(kind))
        cls.__module__ = __name__
        register_codec(name, cls)
        added.append(name)
    return added


def _reshape_output(shape: tuple[int, ...], entries: list) -> tuple[int, ...]:
    out = [math.prod(shape[i] for i in e) if isinstance(e, list) else e for e in entries]
    if -1 in out:
        known = math.prod(n for n in out if n != -1)
        out[out.index(-1)] = math.prod(shape) // known
    return tuple(out)


class ZarrsPython(ZarrPython):
    """zarrs (Rust) as zarr-python's codec pipeline, in strict mode: nothing falls back."""

    name = "zarrs-python"
    family = "zarrs"

    placeholders: list[str] | None = None

    def version(self) -> str:
        return f"{_pkg_version('zarrs')} (zarrs {self.family_version()}, strict)"

    def family_version(self) -> str:
        import zarrs

        binary = Path(zarrs._internal.__file__).read_bytes()
        found = re.search(rb"zarrs-(\d+\.\d+\.\d+)[/\\]src", binary)
        return found.group(1).decode() if found else "?"

    def _context(self) -> contextlib.AbstractContextManager:
        import zarr

        if self.placeholders is None:  # registered on first use: zarr-python alone runs before
            type(self).placeholders = _register_placeholders()
        return zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline",
                                "codec_pipeline.strict": True})

    def families(self) -> list[tuple[str, str, bool]]:
        import zarr

        return [("zarrs", self.family_version(), False), ("zarr-python", zarr.__version__, True)]

    def _check_path(self, array: Any) -> str:
        pipeline = array._async_array.codec_pipeline  # which pipeline this array really uses
        if type(pipeline).__name__ != "ZarrsCodecPipeline" or pipeline.impl is None \
                or pipeline.python_impl is not None:
            raise RuntimeError(f"not zarrs' Rust pipeline: {type(pipeline).__name__}")
        return "rust"


class Zarrista(Impl):
    """zarrs (Rust) directly, through zarrista."""

    name = "zarrista"
    family = "zarrs"
    _crate = "?"

    def version(self) -> str:
        return f"{_pkg_version('zarrista')} (zarrs {self.family_version()})"

    def family_version(self) -> str:
        if self._crate == "?":
            import tempfile

            import zarrista
            from zarrista.store import FilesystemStore

            with tempfile.TemporaryDirectory() as tmp:
                meta = Case("v", "v", "uint8", (1,), (1,), 0, lambda r: None).metadata()
                zarrista.Array.from_metadata(meta, FilesystemStore(tmp), "/").store_metadata()
                attrs = json.loads((Path(tmp) / "zarr.json").read_text()).get("attributes", {})
                type(self)._crate = attrs.get("_zarrs", {}).get("version", "?")
        return self._crate

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        import zarrista
        from zarrista.store import FilesystemStore

        a = zarrista.Array.open(FilesystemStore(str(path)), "/")
        return np.asarray(a[sel if sel is not None else ...])

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        import zarrista
        from zarrista.store import FilesystemStore

        path.mkdir(parents=True)
        a = zarrista.Array.from_metadata(case.metadata(), FilesystemStore(str(path)), "/")
        a.store_metadata()
        data = np.ascontiguousarray(data)
        # zarrista takes numpy arrays through DLPack, which has no complex zarr type: complex
        # values go in as a plain buffer (zarrista then skips its dtype and shape checks)
        a[...] = data.tobytes() if data.dtype.kind == "c" else data


class TensorStore(Impl):
    name = "tensorstore"
    family = "tensorstore"

    def version(self) -> str:
        return _pkg_version("tensorstore")

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        import tensorstore as ts

        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}},
                    open=True, read=True).result()
        return np.asarray((t[sel] if sel is not None else t).read().result())

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        import tensorstore as ts

        meta = {k: v for k, v in case.metadata().items()
                if k not in ("zarr_format", "node_type", "attributes")}
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                     "metadata": meta}, create=True, delete_existing=True).result()
        t.write(data).result()


# --- zfp streams through imagecodecs --------------------------------------------------------

_ZFP_NATIVE = {"int32": 1, "int64": 2, "float32": 3, "float64": 4}  # zfp_type
_ZFP_PROMOTED = {"int8": 8, "int16": 16, "uint8": 8, "uint16": 16}
_HEADER_MAGIC, _HEADER_MODE = 0x1, 0x4


def _bits_of(raw: bytes) -> np.ndarray:
    return np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")


def _bytes_of(bits: np.ndarray) -> bytes:
    pad = (-bits.size) % 64  # zfp streams end on a 64-bit word
    return np.packbits(np.concatenate([bits, np.zeros(pad, np.uint8)]), bitorder="little").tobytes()


class _LibZfp:
    """The libzfp that the imagecodecs wheel bundles, called directly: the headerless stream
    (zfp_compress without zfp_write_header) and the header bits imagecodecs expects in front."""

    def __init__(self) -> None:
        import ctypes

        import imagecodecs

        base = Path(imagecodecs.__file__).parent
        found = sorted((base.parent / "imagecodecs.libs").glob("libzfp*.so*")) + sorted(base.glob("libzfp*"))
        if not found:
            raise ImportError("imagecodecs bundles no libzfp here")
        lib = ctypes.CDLL(str(found[0]))
        P, S, U, D, I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_double, ctypes.c_int
        for name, res, args in (
                ("zfp_stream_open", P, [P]), ("zfp_stream_close", None, [P]),
                ("zfp_field_1d", P, [P, I, S]), ("zfp_field_2d", P, [P, I, S, S]),
                ("zfp_field_3d", P, [P, I, S, S, S]), ("zfp_field_4d", P, [P, I, S, S, S, S]),
                ("zfp_field_free", None, [P]), ("zfp_stream_set_reversible", None, [P]),
                ("zfp_stream_set_rate", D, [P, D, I, U, I]), ("zfp_stream_set_precision", U, [P, U]),
                ("zfp_stream_set_accuracy", D, [P, D]), ("zfp_stream_set_params", I, [P, U, U, U, I]),
                ("zfp_stream_maximum_size", S, [P, P]), ("stream_open", P, [P, S]),
                ("stream_close", None, [P]), ("zfp_stream_set_bit_stream", None, [P, P]),
                ("zfp_stream_rewind", None, [P]), ("zfp_compress", S, [P, P]),
                ("zfp_write_header", S, [P, P, U]), ("zfp_stream_flush", S, [P])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib, self.ctypes = lib, ctypes

    def _run(self, values: np.ndarray, config: dict, header: int) -> bytes:
        lib = self.lib
        values = np.ascontiguousarray(values)
        ztype = _ZFP_NATIVE[values.dtype.name]
        dims = values.shape[::-1]  # nx first
        field = getattr(lib, f"zfp_field_{len(dims)}d")(values.ctypes.data, ztype, *dims)
        zfp = lib.zfp_stream_open(None)
        try:
            mode = config["mode"]
            if mode == "reversible":
                lib.zfp_stream_set_reversible(zfp)
            elif mode == "fixed_rate":  # as zarrs: the rate as for 3-D data
                lib.zfp_stream_set_rate(zfp, config["rate"], ztype, 3, 0)
            elif mode == "fixed_precision":
                lib.zfp_stream_set_precision(zfp, config["precision"])
            elif mode == "fixed_accuracy":
                lib.zfp_stream_set_accuracy(zfp, config["tolerance"])
            elif not lib.zfp_stream_set_params(zfp, config["minbits"], config["maxbits"],
                                               config["maxprec"], config["minexp"]):
                raise ValueError(f"zfp_stream_set_params refused {config}")
            size = lib.zfp_stream_maximum_size(zfp, field) + 64
            buffer = self.ctypes.create_string_buffer(size)
            stream = lib.stream_open(buffer, size)
            try:
                lib.zfp_stream_set_bit_stream(zfp, stream)
                lib.zfp_stream_rewind(zfp)
                if header:
                    lib.zfp_write_header(zfp, field, header)
                    lib.zfp_stream_flush(zfp)
                    return buffer.raw
                n = lib.zfp_compress(zfp, field)
                if n == 0:
                    raise ValueError("zfp_compress failed")
                return buffer.raw[:n]
            finally:
                lib.stream_close(stream)
        finally:
            lib.zfp_stream_close(zfp)
            lib.zfp_field_free(field)

    def compress(self, values: np.ndarray, config: dict) -> bytes:
        return self._run(values, config, 0)

    def header_bits(self, values: np.ndarray, config: dict) -> np.ndarray:
        """zfp's magic and mode word, as imagecodecs writes (and reads) them with header=False."""
        raw = self._run(values, config, _HEADER_MAGIC | _HEADER_MODE)
        bits = _bits_of(raw)
        mode12 = int(np.packbits(bits[32:44], bitorder="little").view("<u2")[0]) & 0xFFF
        return bits[:32 + (64 if mode12 == 0xFFF else 12)]  # the long mode word when 12 ones


class ImageCodecs(Impl):
    """zfp chunk streams (no zarr layer): imagecodecs' libzfp reads our streams through
    imagecodecs.zfp_decode; it writes through the same libzfp called without a header, and
    imagecodecs.zfp_encode(header=False) must give those bits after its magic and mode word."""

    name = "imagecodecs"
    family = "imagecodecs"

    def __init__(self) -> None:
        self.zfp = _LibZfp()

    def version(self) -> str:
        import imagecodecs

        return f"{imagecodecs.__version__} ({imagecodecs.zfp_version().replace('zfp', 'libzfp')})"

    def handles(self, case: Case) -> tuple[bool, str]:
        if case.row != "zfp" or case.filters or case.compressors or case.inner is not None:
            return False, "zfp chunk streams only"
        if case.dtype not in set(_ZFP_NATIVE) | set(_ZFP_PROMOTED):
            return False, f"{case.dtype}: no zfp type and no promotion in the spec"
        return True, ""

    @staticmethod
    def _config(case: Case) -> dict:
        return case.serializer.get("configuration", {})

    @staticmethod
    def _promote(chunk: np.ndarray) -> np.ndarray:
        """The spec's promotion of 8- and 16-bit integers to int32 (zfp_promote_*)."""
        n = _ZFP_PROMOTED.get(chunk.dtype.name)
        if n is None:
            return chunk
        v = chunk.astype(np.int64)
        if chunk.dtype.kind == "u":
            v -= 1 << (n - 1)
        return (v << (31 - n)).astype(np.int32)

    @staticmethod
    def _demote(values: np.ndarray, dtype: str) -> np.ndarray:
        n = _ZFP_PROMOTED.get(dtype)
        if n is None:
            return values.astype(dtype)
        v = values.astype(np.int64) >> (31 - n)
        if dtype.startswith("u"):
            return np.clip(v + (1 << (n - 1)), 0, (1 << n) - 1).astype(dtype)
        return np.clip(v, -(1 << (n - 1)), (1 << (n - 1)) - 1).astype(dtype)

    def _api_args(self, case: Case) -> tuple[Any, Any]:
        from imagecodecs import ZFP

        c = self._config(case)
        mode = c["mode"]
        if mode == "reversible":
            return ZFP.MODE.REVERSIBLE, None
        if mode == "fixed_accuracy":
            return ZFP.MODE.FIXED_ACCURACY, c["tolerance"]
        if mode == "fixed_precision":
            return ZFP.MODE.FIXED_PRECISION, c["precision"]
        if mode == "fixed_rate":  # imagecodecs passes the real dimensionality: scale the rate
            return ZFP.MODE.FIXED_RATE, c["rate"] * 4.0 ** (3 - len(case.chunks))
        return ZFP.MODE.EXPERT, (c["minbits"], c["maxbits"], c["maxprec"], c["minexp"])

    def decode(self, stream: bytes, case: Case) -> np.ndarray:
        import imagecodecs

        promoted = self._promote(np.zeros(case.chunks, case.dtype))
        bits = np.concatenate([self.zfp.header_bits(promoted, self._config(case)), _bits_of(stream)])
        out = imagecodecs.zfp_decode(_bytes_of(bits), shape=case.chunks, dtype=promoted.dtype)
        return self._demote(np.asarray(out), case.dtype)

    def encode(self, chunk: np.ndarray, case: Case) -> tuple[bytes, str]:
        """The headerless stream, and how imagecodecs.zfp_encode's own payload compares with it."""
        import imagecodecs

        promoted = self._promote(chunk)
        stream = self.zfp.compress(promoted, self._config(case))
        mode, level = self._api_args(case)
        try:
            api = bytes(imagecodecs.zfp_encode(promoted, level, mode=mode, header=False, numthreads=1))
        except OverflowError as exc:  # e.g. a negative minexp: imagecodecs takes it as unsigned
            return stream, f"imagecodecs.zfp_encode cannot express these parameters ({exc})"
        payload = _bits_of(api)[len(self.zfp.header_bits(promoted, self._config(case))):]
        mine = _bits_of(stream)
        common = min(payload.size, mine.size)
        if not (np.array_equal(payload[:common], mine[:common]) and not payload[common:].any()
                and not mine[common:].any()):
            raise ValueError("imagecodecs.zfp_encode's payload differs from its libzfp's headerless stream")
        return stream, ""

    def _grid(self, case: Case) -> Iterator[tuple[str, tuple[slice, ...]]]:
        counts = [math.ceil(s / c) for s, c in zip(case.shape, case.chunks)]
        for idx in np.ndindex(*counts):
            key = "c/" + "/".join(map(str, idx))
            yield key, tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, case.chunks, case.shape))

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        if sel is not None:
            raise NotImplementedError("imagecodecs reads whole zfp chunks")
        out = np.full(case.shape, fill_python(case), dtype=case.dtype)
        for key, box in self._grid(case):
            chunk_path = path / key
            if chunk_path.exists():
                values = self.decode(chunk_path.read_bytes(), case)
                out[box] = values[tuple(slice(0, b.stop - b.start) for b in box)]
        return out

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        path.mkdir(parents=True)
        (path / "zarr.json").write_text(json.dumps(case.metadata(), indent=2))
        notes = set()
        for key, box in self._grid(case):
            chunk = np.full(case.chunks, fill_python(case), dtype=case.dtype)
            chunk[tuple(slice(0, b.stop - b.start) for b in box)] = data[box]
            target = path / key
            target.parent.mkdir(parents=True, exist_ok=True)
            stream, note = self.encode(chunk, case)
            notes.add(note)
            target.write_bytes(stream)
        Path(f"{path}.notes").write_text("".join(notes))  # beside the store, not in it


# --- zarrita.js, through node -----------------------------------------------------------------

ZARRITA_SCRIPT = Path(__file__).resolve().parent / "interop_zarrita.mjs"
ZARRITA_TIMEOUT = 300  # seconds for one read (each takes milliseconds)


class ZarritaError(RuntimeError):
    """zarrita.js refused or failed to read a store (its error and causes, in its words)."""


class ZarritaJs(Impl):
    """zarrita.js (JavaScript), as a reader: ``tests/interop/interop_zarrita.mjs`` under node reads the
    store and hands back the raw values. ``ZARRITA_DIR`` names the folder where the npm packages
    pinned in ``.ci/interop-zarrita/`` were installed; zarrita.js writes too, but only its reading
    (what browser viewers do) is tested here."""

    name = "zarrita.js"
    family = "zarrita.js"
    writes = False

    def __init__(self) -> None:
        self.node = shutil.which("node")
        self.dir = os.environ.get("ZARRITA_DIR", "")
        if self.node is None:
            raise ImportError("node is not on PATH")
        if not self.dir:
            raise ImportError("ZARRITA_DIR is not set: run npm ci in a copy of .ci/interop-zarrita/ "
                              "and set ZARRITA_DIR to that folder")
        if not (Path(self.dir) / "node_modules" / "zarrita").is_dir():
            raise ImportError(f"ZARRITA_DIR={self.dir} holds no node_modules/zarrita: run npm ci there "
                              "(with .ci/interop-zarrita/'s package files)")
        self.versions = json.loads(self._node("version").stdout)
        self._server: subprocess.Popen | None = None

    def _node(self, *args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([self.node, str(ZARRITA_SCRIPT), *args], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "ZARRITA_DIR": self.dir})
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"{ZARRITA_SCRIPT.name} {args[0]} exited with {proc.returncode}: {tail}")
        return proc

    def _ask(self, request: dict) -> dict:
        """One read by the script's ``serve`` process (started once: node starts slowly)."""
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [self.node, str(ZARRITA_SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, env={**os.environ, "ZARRITA_DIR": self.dir})
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        # one line per request, so nothing waits in the reader's buffer: select sees the answer
        if not select.select([self._server.stdout], [], [], ZARRITA_TIMEOUT)[0]:
            server, self._server = self._server, None
            server.kill()
            server.communicate()
            raise RuntimeError(f"zarrita.js gave no answer in {ZARRITA_TIMEOUT} s: {request['store']}")
        line = self._server.stdout.readline()
        if not line:  # it died: say why
            server, self._server = self._server, None
            _, err = server.communicate(timeout=60)
            tail = (err.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"{ZARRITA_SCRIPT.name} serve exited with {server.returncode}: {tail}")
        return json.loads(line)

    def close(self) -> None:
        if self._server is not None:
            self._server.communicate(timeout=60)  # closes its input: it ends; closes the pipes
        self._server = None

    def version(self) -> str:
        # node's major version only: it decides what zarrita.js can read (float16 needs
        # Float16Array), and the docs' matrix need not change with each node patch release
        return f"{self.versions['zarrita']} (node {self.versions['node'].split('.')[0]})"

    def family_version(self) -> str:
        return self.versions["zarrita"]

    def read(self, path: Path, case: Case, sel: tuple[slice, ...] | None) -> np.ndarray:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "values"
            box = None if sel is None else [[s.start, s.stop] for s in sel]
            answer = self._ask({"store": str(path), "out": str(out), "selection": box})
            if "error" in answer:
                raise ZarritaError(" <- ".join(answer["error"]))
            dtype = np_dtype(answer["data_type"])
            shape = tuple(answer["shape"])
            raw = np.frombuffer(out.read_bytes(), dtype)
        strides = tuple(s * dtype.itemsize for s in answer["stride"])
        if raw.size != math.prod(shape):
            raise RuntimeError(f"zarrita.js returned {raw.size} values for shape {list(shape)}")
        if dtype.kind == "b" and not np.isin(raw.view(np.uint8), (0, 1)).all():
            raise RuntimeError("zarrita.js returned booleans other than 0 and 1")
        return np.lib.stride_tricks.as_strided(raw, shape, strides).copy()

    def write(self, path: Path, case: Case, data: np.ndarray) -> None:
        raise NotImplementedError("zarrita.js is tested as a reader only")


def other_impls() -> tuple[list[Impl], list[str]]:
    """Every other implementation available here (the others' environment), and what is missing."""
    out: list[Impl] = []
    missing = []
    for module, make in (("zarr", ZarrPython), ("zarrs", ZarrsPython), ("zarrista", Zarrista),
                         ("tensorstore", TensorStore), ("imagecodecs", ImageCodecs), (None, ZarritaJs)):
        if module is not None and importlib.util.find_spec(module) is None:
            missing.append(f"{module} is not installed")
            continue
        try:
            out.append(make())
        except ImportError as exc:
            missing.append(f"{module or make.name}: {exc}")
    for why in missing:
        print(f"({why}: not tested)")
    return out, missing


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _attempt(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        return None, exc


class Results:
    """Records and the known-deviation lookup."""

    def __init__(self, env: str) -> None:
        self.env = env
        self.records: list[dict] = []
        self.support: dict[str, dict[str, dict[str, str]]] = {}
        self.versions: dict[str, str] = {}
        self.families: dict[str, list] = {}
        self.devs = _deviations()

    def known(self, impl: Impl, case: Case, direction: str, metadata: dict | None = None,
              families: list | None = None) -> str | None:
        """The id of a known deviation that explains a mismatch: one that ``case`` (or the
        ``metadata`` actually written) meets and that ``impl`` (or these ``families``) has."""
        for f in self.devs.find_deviations(metadata or case.metadata()):
            for family, version, parser_only in families or impl.families():
                if direction in f.deviation.directions and (f.deviation.parser or not parser_only) \
                        and self.devs.affects(f.deviation, family, version):
                    return f.deviation.id
        return None

    def add(self, impl: Impl, case: Case, direction: str, outcome: str, detail: str = "",
            reader: tuple[dict, list] | None = None) -> None:
        """Record one outcome; ``reader``: (the metadata written, the reader's families) when our
        reading of another's store failed (a deviation of the reader's parser may explain it)."""
        deviation = None
        if outcome in FAILURES:
            deviation = self.known(impl, case, direction)
            if deviation is None and reader is not None:
                deviation = self.known(impl, case, "read", *reader)
            if deviation is not None:
                outcome = "known"
        elif outcome == "ok":
            predicted = self.known(impl, case, direction)
            if predicted is not None:
                detail = (detail + "; " if detail else "") + f"{predicted} predicted, not observed"
        self.records.append({"impl": impl.name, "case": case.name, "row": case.row,
                             "direction": direction, "outcome": outcome, "deviation": deviation,
                             "detail": detail})
        mark = {"ok": "ok  ", "unsupported": "--  ", "known": "KNOWN"}.get(outcome, "FAIL")
        if outcome != "unsupported" or case.probe:
            print(f"{mark} {impl.name:>13} {direction:<7} {case.name}"
                  + (f": {deviation or ''} {detail}"[:400] if detail or deviation else ""))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"env": self.env, "versions": self.versions, "families": self.families,
                                    "support": self.support, "records": self.records}, indent=1))


def _outcome_of_failure(impl: Impl, case: Case, supported: dict[str, str], stage: str,
                        exc: BaseException) -> tuple[str, str]:
    needed = [n for n in sorted(case.uses()) if n in ROWS or n.startswith("dtype:")]
    missing = [n for n in needed if supported.get(n, "unsupported") != "supported"]
    if missing:
        return "unsupported", f"{', '.join(missing)}: {_first_line(exc)}"
    return ("refused" if stage == "open" else "error"), f"{stage}: {_first_line(exc)}"


def ours_write(out: Path) -> int:
    """(ours) Every case written by numcodecs_ext through zarr, with its input and our read-back."""
    import numcodecs_ext  # noqa: F401 - registers and pins ours

    out.mkdir(parents=True, exist_ok=True)
    ours = Ours()
    failures = 0
    manifest = {"version": ours.version(), "cases": {}}
    for case in CASES.values():
        rng = np.random.default_rng(zlib.crc32(case.name.encode()))
        data = np.asarray(case.make(rng), dtype=np_dtype(case.dtype))
        store = out / "stores" / f"{case.name}.zarr"
        shutil.rmtree(store, ignore_errors=True)
        _, exc = _attempt(lambda: ours.write(store, case, data))
        if exc is None:
            back, exc = _attempt(lambda: ours.read(store, case, None))
        if exc is not None:
            print(f"FAIL ours cannot write {case.name}: {_first_line(exc)}")
            traceback.print_exception(exc)
            failures += 1
            continue
        save(out / "stores" / f"{case.name}.input.npy", data)
        save(out / "stores" / f"{case.name}.expected.npy", back)
        manifest["cases"][case.name] = {"row": case.row}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"numcodecs_ext {ours.version()} wrote {len(manifest['cases'])} of {len(CASES)} cases")
    return 1 if failures else 0


def _probe_support(impl: Impl, ours_dir: Path, results: Results) -> dict[str, dict[str, str]]:
    """Per codec and direction: "supported", or "unsupported: why" (from the probe cases)."""
    support: dict[str, dict[str, str]] = {}
    for case in (c for c in CASES.values() if c.probe):
        key = f"dtype:{case.dtype}" if case.row == "data types" else case.row
        store = ours_dir / "stores" / f"{case.name}.zarr"
        ok, why = impl.handles(case)
        if not ok:
            support[key] = {"read": f"unsupported: {why}", "write": f"unsupported: {why}"}
            continue
        _, read_exc = _attempt(lambda: impl.read(store, case, None))
        data = load(ours_dir / "stores" / f"{case.name}.input.npy", case)
        scratch = Path(results.scratch) / impl.name / f"probe-{case.name}.zarr"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.parent.mkdir(parents=True, exist_ok=True)
        write_exc = _attempt(lambda: impl.write(scratch, case, data))[1] if impl.writes else \
            NotImplementedError("tested as a reader only")
        support[key] = {d: "supported" if e is None else f"unsupported: {_first_line(e)}"
                        for d, e in (("read", read_exc), ("write", write_exc))}
    support["bytes"] = {"read": "supported", "write": "supported"}
    return support


def others(ours_dir: Path, out: Path) -> int:
    """(others) Each implementation reads our stores and writes every case it supports."""
    if importlib.util.find_spec("numcodecs_ext") is not None:
        print("the others' environment must not see numcodecs_ext (it would replace zarr's codecs)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    results = Results("others")
    results.scratch = str(out / "scratch")
    impls, missing = other_impls()
    if missing and os.environ.get("NUMCODECS_EXT_REQUIRE_OTHERS"):
        print("NUMCODECS_EXT_REQUIRE_OTHERS is set, and not every implementation is here: "
              + "; ".join(missing))
        return 1
    for impl in impls:
        started = time.perf_counter()
        results.versions[impl.name] = impl.label()
        results.families[impl.name] = impl.families()
        support = _probe_support(impl, ours_dir, results)
        results.support[impl.name] = support
        print(f"\n=== {impl.label()}: " + ", ".join(
            f"{row} {'R' if s['read'] == 'supported' else '-'}{'W' if s['write'] == 'supported' else '-'}"
            for row, s in support.items() if row != "bytes"))
        for case in CASES.values():
            store = ours_dir / "stores" / f"{case.name}.zarr"
            if not store.is_dir():
                continue
            expected = load(ours_dir / "stores" / f"{case.name}.expected.npy", case)
            ok, why = impl.handles(case)
            for direction in DIRECTIONS:
                sup = {n: s[direction if direction != "partial" else "read"].split(":")[0]
                       for n, s in support.items()}
                if not ok:
                    results.add(impl, case, direction, "unsupported", why)
                    continue
                if direction == "write" and not impl.writes:
                    results.add(impl, case, direction, "unsupported", "tested as a reader only")
                    continue
                if direction in ("read", "partial"):
                    sel = case.selection() if direction == "partial" else None
                    if direction == "partial" and isinstance(impl, ImageCodecs):
                        results.add(impl, case, direction, "unsupported", "no partial reads")
                        continue
                    got, exc = _attempt(lambda: impl.read(store, case, sel))
                    if exc is not None:
                        results.add(impl, case, direction, *_outcome_of_failure(impl, case, sup, "open", exc))
                        continue
                    same, detail = compare(got, expected[sel] if sel is not None else expected)
                    results.add(impl, case, direction, "ok" if same else "wrong", detail)
                else:
                    target = out / "stores" / impl.name / f"{case.name}.zarr"
                    shutil.rmtree(target, ignore_errors=True)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    data = load(ours_dir / "stores" / f"{case.name}.input.npy", case)
                    _, exc = _attempt(lambda: impl.write(target, case, data))
                    if exc is not None:
                        shutil.rmtree(target, ignore_errors=True)
                        results.add(impl, case, direction, *_outcome_of_failure(impl, case, sup, "open", exc))
                        continue
                    back, exc = _attempt(lambda: impl.read(target, case, None))
                    if exc is not None:  # they wrote it but cannot read it back: ours still tries
                        back = None
                    if back is not None:
                        save(out / "stores" / impl.name / f"{case.name}.readback.npy", back)
                    # the verdict on writes is given by ours-read (ours reads it, bytes compared)
        impl.close()
        print(f"    ({impl.name}: {time.perf_counter() - started:.1f} s)")
    shutil.rmtree(out / "scratch", ignore_errors=True)
    results.save(out / "results.json")
    return 0


def ours_read(ours_dir: Path, theirs_dir: Path) -> int:
    """(ours) Read what each implementation wrote; compare with ours, values and chunk bytes."""
    import numcodecs_ext  # noqa: F401

    results = Results("ours")
    ours = Ours()
    results.versions["numcodecs_ext"] = ours.label()
    theirs = json.loads((theirs_dir / "results.json").read_text())
    import zarr

    our_parser = [("zarr-python", zarr.__version__, True)]  # ours reads through zarr's parser
    for impl_name in theirs["versions"]:
        impl = Recorded(impl_name, [tuple(f) for f in theirs["families"][impl_name]])
        for case in CASES.values():
            prior = [r for r in theirs["records"]
                     if r["impl"] == impl_name and r["case"] == case.name and r["direction"] == "write"]
            if prior:  # decided there: unsupported, refused, error (or known)
                results.records.append(prior[0])
                continue
            store = theirs_dir / "stores" / impl_name / f"{case.name}.zarr"
            mine = ours_dir / "stores" / f"{case.name}.zarr"
            if not store.is_dir() or not mine.is_dir():
                continue
            expected = load(ours_dir / "stores" / f"{case.name}.expected.npy", case)
            notes = []
            got, exc = _attempt(lambda: ours.read(store, case, None))
            if exc is not None:
                written = json.loads((store / "zarr.json").read_text())
                results.add(impl, case, "write", "error", f"numcodecs_ext cannot read it: {_first_line(exc)}",
                            reader=(written, our_parser))
                continue
            same, detail = compare(got, expected)
            if not same:
                readback = theirs_dir / "stores" / impl_name / f"{case.name}.readback.npy"
                own = ""
                if readback.exists():
                    own = (" (they read their store back as numcodecs_ext does: they wrote other values)"
                           if compare(got, load(readback, case))[0]
                           else " (they read their store back otherwise than numcodecs_ext)")
                results.add(impl, case, "write", "wrong", f"values: {detail}{own}")
                continue
            if detail:
                notes.append(detail)
            sel = case.selection()
            part, exc = _attempt(lambda: ours.read(store, case, sel))
            same, detail = (False, _first_line(exc)) if exc is not None else compare(part, expected[sel])
            if not same:
                results.add(impl, case, "write", "wrong", f"partial read by numcodecs_ext: {detail}")
                continue
            if case.bytes_fixed() or case.row == "zfp":
                same, detail = compare_chunks(inner_chunks(mine, case), inner_chunks(store, case))
                if not same:
                    results.add(impl, case, "write", "wrong", f"chunk bytes: {detail}")
                    continue
                notes.append(("zfp streams = ours" if case.row == "zfp" else "chunk bytes = ours")
                             + (f" ({detail})" if detail else ""))
                extra = Path(f"{store}.notes")
                if extra.exists() and extra.read_text():
                    notes.append(extra.read_text())
            results.add(impl, case, "write", "ok", "; ".join(notes))
    results.save(theirs_dir / "results-ours-read.json")
    return 0


class Recorded(Impl):
    """Another implementation as the others' run recorded it (name and families)."""

    def __init__(self, name: str, families: list[tuple[str, str, bool]]) -> None:
        self.name = name
        self._families = families

    def families(self) -> list[tuple[str, str, bool]]:
        return self._families


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------

BEGIN, END = "<!-- interop-matrix: begin -->", "<!-- interop-matrix: end -->"


def table(paths: list[Path]) -> tuple[str, list[dict]]:
    """The markdown matrix (codec x direction x implementation) and the failing records."""
    runs = [json.loads(p.read_text()) for p in paths]
    records: dict[tuple[str, str, str], dict] = {}
    versions: dict[str, str] = {}
    for run in runs:
        versions.update(run["versions"])
        for r in run["records"]:
            records[(r["impl"], r["case"], r["direction"])] = r  # ours-read decides writes
    impls = [i for i in versions if i != "numcodecs_ext"]
    devs = sorted({r["deviation"] for r in records.values() if r["deviation"]})
    marks = {d: chr(ord("a") + i) for i, d in enumerate(devs)}
    lines = [f"Tested: {versions.get('numcodecs_ext', 'numcodecs_ext ?')} against "
             + "; ".join(versions[i] for i in impls) + ".", "",
             "| codec | direction | " + " | ".join(impls) + " |",
             "|---|---|" + "---|" * len(impls)]
    for row in ROWS:
        n_cases = sum(1 for c in CASES.values() if c.row == row)
        for direction in DIRECTIONS:
            cells = []
            for impl in impls:
                rs = [records.get((impl, c.name, direction)) for c in CASES.values() if c.row == row]
                rs = [r for r in rs if r is not None]
                tested = [r for r in rs if r["outcome"] != "unsupported"]
                if not tested:
                    cells.append("—")
                    continue
                ok = sum(r["outcome"] == "ok" for r in tested)
                known = sorted({marks[r["deviation"]] for r in tested if r["outcome"] == "known"})
                bad = sum(r["outcome"] in FAILURES for r in tested)
                cell = f"{ok}/{len(tested)}"
                if known:
                    cell += " (" + ",".join(known) + ")"
                if bad:
                    cell += f" **{bad} FAIL**"
                cells.append(cell)
            label = {"read": "read", "partial": "partial read", "write": "write"}[direction]
            lines.append(f"| {row if direction == 'read' else ''}"
                         + (f" ({n_cases})" if direction == "read" else "")
                         + f" | {label} | " + " | ".join(cells) + " |")
    if devs:
        lines += ["", "Known deviations (cases that differ): "
                  + "; ".join(f"({marks[d]}) `{d}`" for d in devs) + "."]
    failing = [r for r in records.values() if r["outcome"] in FAILURES]
    return "\n".join(lines) + "\n", failing


def _support_lines(paths: list[Path]) -> list[str]:
    """What each implementation supports, as its probes found (codecs, then data types)."""
    lines = []
    for p in paths:
        run = json.loads(p.read_text())
        for impl, rows in run.get("support", {}).items():
            lines.append(f"{run['versions'][impl]}:")
            for row, s in rows.items():
                if row != "bytes" and not row.startswith("dtype:"):
                    lines.append(f"    {row:<20} read: {s['read'][:100]}")
                    lines.append(f"    {'':<20} write: {s['write'][:100]}")
            for d in ("read", "write"):
                yes = [r[6:] for r, s in rows.items() if r.startswith("dtype:") and s[d] == "supported"]
                no = [r[6:] for r, s in rows.items() if r.startswith("dtype:") and s[d] != "supported"]
                lines.append(f"    {'data types':<20} {d}: {', '.join(yes) or 'none'}"
                             + (f"; not: {', '.join(no)}" if no else ""))
    return lines


def _counts(paths: list[Path]) -> list[str]:
    runs = [json.loads(p.read_text()) for p in paths]
    records = {}
    for run in runs:
        for r in run["records"]:
            records[(r["impl"], r["case"], r["direction"])] = r
    out = []
    impls = sorted({k[0] for k in records})
    for impl in impls:
        parts = []
        for d in DIRECTIONS:
            rs = [r for k, r in records.items() if k[0] == impl and k[2] == d]
            tested = [r for r in rs if r["outcome"] != "unsupported"]
            parts.append(f"{d} {len(tested)} of {len(rs)} cases tested "
                         f"({sum(r['outcome'] == 'ok' for r in tested)} ok, "
                         f"{sum(r['outcome'] == 'known' for r in tested)} known)")
        out.append(f"{impl}: " + "; ".join(parts))
    return out


def table_command(paths: list[Path], check: Path | None, update: Path | None) -> int:
    text, failing = table(paths)
    print("\n".join(_support_lines(paths)))
    print()
    print("\n".join(_counts(paths)))
    print()
    print(text)
    status = 0
    for r in failing:
        print(f"MISMATCH {r['impl']} {r['direction']} {r['case']}: {r['outcome']}: {r['detail']}")
        status = 1
    for target in (check, update):
        if target is None:
            continue
        page = target.read_text()
        start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
        if target is update:
            target.write_text(page[:start] + "\n" + text + page[end:])
            print(f"updated the matrix in {target}")
        elif page[start:end].strip() != text.strip():
            print(f"{target}'s matrix differs from this run: regenerate it with\n"
                  f"  python tests/interop/interop_others.py table {' '.join(map(str, paths))} --update {target}")
            status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ours-write").add_argument("ours", type=Path)
    p = sub.add_parser("others")
    p.add_argument("ours", type=Path)
    p.add_argument("theirs", type=Path)
    p = sub.add_parser("ours-read")
    p.add_argument("ours", type=Path)
    p.add_argument("theirs", type=Path)
    p = sub.add_parser("table")
    p.add_argument("results", type=Path, nargs="+")
    p.add_argument("--check", type=Path)
    p.add_argument("--update", type=Path)
    args = parser.parse_args(argv)
    if args.command == "ours-write":
        return ours_write(args.ours)
    if args.command == "others":
        return others(args.ours, args.theirs)
    if args.command == "ours-read":
        return ours_read(args.ours, args.theirs)
    return table_command(args.results, args.check, args.update)


if __name__ == "__main__":
    sys.exit(main())
