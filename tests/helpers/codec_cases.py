"""Codec instances and sample arrays that every shared contract test runs over.

Each codec of the collection adds its cases here; ``tests/codecs/test_contract.py`` then checks config
round trips, repr, pickling, threads, zarr v2, zarr v3 (spec and adapter names) and dask for all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from numcodecs_ext.codecs._base import ExtCodec

rng = np.random.default_rng(42)


@dataclass
class CodecCase:
    id: str
    codec: ExtCodec
    array: np.ndarray
    #: Maximum absolute decode error (0: bit-exact).
    tolerance: float = 0.0
    #: "array" for array->array codecs, "bytes" for array->bytes codecs.
    kind: str = "array"
    #: Fill value for zarr arrays written through the codec.
    fill_value: Any = 0
    #: Extra arguments a standalone decode needs, given the original array.
    decode_kwargs: Callable[[np.ndarray], dict[str, Any]] = field(
        default=lambda a: {"out": np.empty_like(a)}
    )


def _field(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    """A smooth float field with a little noise, like a climate or simulation variable."""
    grids = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing="ij")
    x = sum(np.sin(g * (i + 1)) for i, g in enumerate(grids)) + 0.01 * rng.standard_normal(shape)
    return np.asarray(x, dtype=dtype)


CODEC_CASES: list[CodecCase] = []

# --- transpose ------------------------------------------------------------------------------
from numcodecs_ext.codecs.transpose import Transpose  # noqa: E402

CODEC_CASES += [
    CodecCase("transpose-2d-f8", Transpose(order=[1, 0]), _field((40, 60)), fill_value=float("nan")),
    CodecCase("transpose-3d-i2", Transpose(order=[2, 0, 1]), rng.integers(-500, 500, (6, 10, 14)).astype("int16")),
    CodecCase("transpose-F-u1", Transpose(order="F"), rng.integers(0, 255, (8, 9, 10, 3)).astype("uint8")),
]

# --- zfp --------------------------------------------------------------------------------------
from numcodecs_ext.codecs.zfp import Zfp  # noqa: E402

CODEC_CASES += [
    CodecCase("zfp-reversible-2d-f4", Zfp(mode="reversible"), _field((30, 40), "float32"), kind="bytes"),
    CodecCase("zfp-reversible-3d-i2", Zfp(mode="reversible"), rng.integers(-3000, 3000, (5, 6, 7)).astype("int16"),
              kind="bytes"),
    CodecCase("zfp-accuracy-3d-f8", Zfp(mode="fixed_accuracy", tolerance=1e-3), _field((9, 10, 11)),
              tolerance=1e-3, kind="bytes"),
    CodecCase("zfp-precision-shape-dtype", Zfp(mode="fixed_precision", precision=40, shape=[12, 13], dtype="float64"),
              _field((12, 13)), tolerance=1e-6, kind="bytes", decode_kwargs=lambda a: {}),
]

# --- scale_offset and cast_value --------------------------------------------------------------
from numcodecs_ext.codecs.cast_value import CastValue  # noqa: E402
from numcodecs_ext.codecs.scale_offset import ScaleOffset  # noqa: E402

_with_nan = _field((20, 30)) * 50 + 100
_with_nan[3, :7] = np.nan
CODEC_CASES += [
    CodecCase("cast_value-f8-u1-nanmap",
              CastValue(data_type="uint8", out_of_range="clamp", dtype="float64",
                        scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}),
              np.round(np.clip(_with_nan, 1, 255)), fill_value=float("nan")),
    CodecCase("cast_value-f4-bf16", CastValue(data_type="bfloat16", rounding="towards-zero", dtype="float32"),
              np.linspace(-3, 3, 2 * 3 * 16, dtype="float32").reshape(2, 3, 16).round(2)
              .astype("bfloat16").astype("float32")),
    CodecCase("cast_value-i4-i2", CastValue(data_type="int16", dtype="int32"),
              rng.integers(-30000, 30000, (7, 9)).astype("int32")),
    CodecCase("scale_offset-f8", ScaleOffset(offset=-10, scale=0.5, dtype="float64"),
              np.arange(-40, 40, dtype="float64").reshape(8, 10) / 2, fill_value=float("nan")),
    CodecCase("scale_offset-u2", ScaleOffset(offset=1000, scale=2, dtype="uint16"),
              rng.integers(1000, 30000, (6, 11)).astype("uint16"), fill_value=1000),
]

# --- bitround, reshape, packbits ----------------------------------------------------------------
from numcodecs_ext.codecs.bitround import BitRound  # noqa: E402
from numcodecs_ext.codecs.packbits import PackBits  # noqa: E402
from numcodecs_ext.codecs.reshape import Reshape  # noqa: E402
from numcodecs_ext.core.bitround import bitround as _bitround  # noqa: E402

CODEC_CASES += [
    # lossy: values within half a unit in the 10th mantissa bit (|x| < 4: 2**-9)
    CodecCase("bitround-f4", BitRound(keepbits=10), _field((20, 30), "float32"), tolerance=2.0**-9,
              fill_value=float("nan")),
    # already rounded integers come back exactly (rounding twice changes nothing)
    CodecCase("bitround-i8", BitRound(keepbits=4),
              _bitround(rng.integers(-(2**40), 2**40, (9, 7)).astype("int64"), 4), fill_value=-(2**60)),
    CodecCase("reshape-3d-f8", Reshape(shape=[[0, 1], -1]), _field((6, 10, 4))),
    CodecCase("packbits-u1-4bit", PackBits(last_bit=3, padding_encoding="first_byte", dtype="uint8"),
              rng.integers(0, 16, (10, 13)).astype("uint8"), kind="bytes", fill_value=3),
    CodecCase("packbits-bool", PackBits(dtype="bool", shape=[12, 9]), rng.integers(0, 2, (12, 9)).astype(bool),
              kind="bytes", fill_value=False),
    CodecCase("packbits-i2-12bit", PackBits(last_bit=11, padding_encoding="last_byte", dtype="int16"),
              rng.integers(-2048, 2048, (5, 6, 7)).astype("int16"), kind="bytes", fill_value=-5),
]
