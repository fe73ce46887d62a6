"""The backward-compatibility fixtures: what `python -m tests.helpers.fixtures_tool generate` writes.

Codec fixtures: ``fixtures/<codec_id>/<case>/{config.json, array.npy, encoded.dat}``, plus
``decoded.npy`` for lossy cases (what the stored bytes decode to).
zarr store fixtures: ``fixtures/zarr/<name>/`` (a complete store) and ``fixtures/zarr/<name>.npy``.

Adding a case here and running the generator adds a fixture. A committed fixture never changes:
the generator refuses to overwrite, and the tests check every folder on disk, listed here or not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

rng = np.random.default_rng(20261121)


def _field(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    grids = np.meshgrid(*[np.linspace(0, 2, n) for n in shape], indexing="ij")
    x = 280 + 10 * sum(np.cos(g * (i + 1)) for i, g in enumerate(grids))
    return np.asarray(x + rng.standard_normal(shape) * 0.1, dtype=dtype)


#: codec id -> case name -> (numcodecs config, array)
CODEC_FIXTURES: dict[str, dict[str, tuple[dict[str, Any], np.ndarray]]] = {
    "transpose": {
        "1d-f8-C": ({"id": "transpose", "order": "C"}, _field((17,))),
        "2d-f4-10": ({"id": "transpose", "order": [1, 0]}, _field((12, 7), "float32")),
        "3d-i2-201": ({"id": "transpose", "order": [2, 0, 1]}, rng.integers(-999, 999, (4, 5, 6)).astype("int16")),
        "4d-u1-F": ({"id": "transpose", "order": "F"}, rng.integers(0, 255, (2, 3, 4, 5)).astype("uint8")),
        "5d-c16-31420": ({"id": "transpose", "order": [3, 1, 4, 2, 0]},
                         (rng.standard_normal((2, 3, 2, 3, 2)) + 1j).astype("complex128")),
        "2d-bool-F-shape": ({"id": "transpose", "order": "F", "shape": [5, 3], "dtype": "bool"},
                            rng.integers(0, 2, (5, 3)).astype(bool)),
    },
}


def _wave(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A smooth wave over ``shape``; non-negative for unsigned types, scaled to the integer range."""
    x = np.sin(np.linspace(0, 20, int(np.prod(shape)))).reshape(shape) * 100
    dt = np.dtype(dtype)
    if dt.kind == "u":
        x = np.abs(x)
    if dt.kind in "iu" and dt.itemsize >= 4:
        x = x * 1000
    return x.astype(dtype)


_ZFP_SHAPES = {"1d": (7,), "2d": (5, 6), "3d": (3, 4, 5), "4d": (2, 3, 4, 5)}
_ZFP_MODES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "reversible": ({"mode": "reversible"},
                   ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]),
    "accuracy": ({"mode": "fixed_accuracy", "tolerance": 0.01}, ["float32", "float64"]),
    "rate": ({"mode": "fixed_rate", "rate": 8}, ["float32", "float64", "int32", "int16"]),
    "precision": ({"mode": "fixed_precision", "precision": 16}, ["float32", "float64", "int64", "uint8"]),
    "expert": ({"mode": "expert", "minbits": 1, "maxbits": 4000, "maxprec": 24, "minexp": -20},
               ["float32", "float64", "int32"]),
}
CODEC_FIXTURES["zfp"] = {
    f"{mode}-{dtype}-{dims}": ({"id": "zfp", **config}, _wave(shape, dtype))
    for mode, (config, dtypes) in _ZFP_MODES.items()
    for dtype in dtypes
    for dims, shape in _ZFP_SHAPES.items()
}
CODEC_FIXTURES["zfp"]["reversible-float64-0d"] = ({"id": "zfp", "mode": "reversible"}, np.array(3.25))
CODEC_FIXTURES["zfp"]["reversible-float32-specials"] = (
    {"id": "zfp", "mode": "reversible"},
    np.array([0, -0.0, np.nan, np.inf, -np.inf, 1e-40, 3.5], dtype="float32"),
)


_NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}
CODEC_FIXTURES["cast_value"] = {
    "f8-u1-clamp-nanmap": (
        {"id": "cast_value", "data_type": "uint8", "out_of_range": "clamp", "scalar_map": _NAN_MAP,
         "dtype": "float64"},
        np.array([np.nan, 1.4, 2.5, 300.0, -3.0, 254.5, 3.5, 0.5]),
    ),
    "f8-u1-spec-numpy-example": (
        {"id": "cast_value", "data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
         "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]}, "dtype": "float64"},
        np.array([1.9, -1.9, 300.7, np.nan, np.inf, 12.0]),
    ),
    "f4-bf16-towards-zero": (
        {"id": "cast_value", "data_type": "bfloat16", "rounding": "towards-zero", "dtype": "float32"},
        np.linspace(-3, 3, 33, dtype="float32"),
    ),
    "f8-int4-clamp": (
        {"id": "cast_value", "data_type": "int4", "out_of_range": "clamp", "dtype": "float64"},
        np.linspace(-10, 10, 21),
    ),
    "f8-f2-nearest-even": (
        {"id": "cast_value", "data_type": "float16", "dtype": "float64"},
        np.array([1.0004882812500002, 65519.99999999999, -0.0, 1e-8, np.nan, -np.inf, 3.14159]),
    ),
    "i8-f4-towards-positive": (
        {"id": "cast_value", "data_type": "float32", "rounding": "towards-positive", "dtype": "int64"},
        np.array([2**53 + 1, -(2**62) - 1, 16777217, 0, -5], dtype="int64"),
    ),
    "u2-u1-hex-map": (
        {"id": "cast_value", "data_type": "uint8", "out_of_range": "clamp", "dtype": "uint16",
         "scalar_map": {"encode": [[65535, 255]], "decode": [[255, 65535]]}},
        np.array([0, 1, 254, 300, 65535], dtype="uint16"),
    ),
}
CODEC_FIXTURES["scale_offset"] = {
    "f8-spec-example": ({"id": "scale_offset", "offset": -10, "scale": 0.1, "dtype": "float64"},
                        np.linspace(0, 2540, 50)),
    "f4-nan-hex-offset": ({"id": "scale_offset", "offset": "0x3f800000", "scale": 4, "dtype": "float32"},
                          np.array([1, 2.5, np.nan, -np.inf, 0.25], dtype="float32")),
    "u2-range-reduction": ({"id": "scale_offset", "offset": 1000, "dtype": "uint16"},
                           np.arange(1000, 1256, dtype="uint16")),
    "i8-scale": ({"id": "scale_offset", "offset": -(2**40), "scale": 3, "dtype": "int64"},
                 np.array([0, 1, -(2**40), 2**40, 12345678901], dtype="int64")),
    "default-noop": ({"id": "scale_offset", "dtype": "int16"}, np.array([-3, 0, 7], dtype="int16")),
}

_SPECIAL_F4 = np.array([0, -0.0, np.nan, np.inf, -np.inf, 3.4028235e38, 1e-42, 1.2, -1234.5], "float32")
CODEC_FIXTURES["numcodecs_ext.bitround"] = {
    "f4-keep7-specials": ({"id": "numcodecs_ext.bitround", "keepbits": 7},
                          np.concatenate([_SPECIAL_F4, _field((31,), "float32")])),
    "f8-keep20-2d": ({"id": "numcodecs_ext.bitround", "keepbits": 20}, _field((6, 7))),
    "i2-keep3-signed": ({"id": "numcodecs_ext.bitround", "keepbits": 3},
                        np.array([0, 1, 11, 127, 255, 32767, -1, -2, -100, -32768], "int16")),
    "u8-keep5": ({"id": "numcodecs_ext.bitround", "keepbits": 5},
                 np.array([0, 1, 2**64 - 1, 2**63, 12345678901234567], "uint64")),
    "c8-keep4-dtype": ({"id": "numcodecs_ext.bitround", "keepbits": 4, "dtype": "complex64"},
                       (_field((3, 4)) + 1j * _field((3, 4))).astype("complex64")),
}
CODEC_FIXTURES["reshape"] = {
    "3d-f8-groups": ({"id": "reshape", "shape": [[0, 1], -1]}, _field((3, 4, 5))),
    "2d-i2-sizes": ({"id": "reshape", "shape": [2, -1, 3]}, rng.integers(-99, 99, (4, 9)).astype("int16")),
    "1d-u1-input-shape": ({"id": "reshape", "shape": [[0], 1], "input_shape": [11], "dtype": "uint8"},
                          np.arange(11, dtype="uint8")),
}
CODEC_FIXTURES["numcodecs_ext.packbits"] = {
    "u1-4bit-first-byte": ({"id": "numcodecs_ext.packbits", "last_bit": 3, "padding_encoding": "first_byte",
                            "dtype": "uint8"}, rng.integers(0, 16, 13).astype("uint8")),
    "bool-none-shape": ({"id": "numcodecs_ext.packbits", "dtype": "bool", "shape": [3, 7]},
                        rng.integers(0, 2, (3, 7)).astype(bool)),
    "bool-numcodecs-layout": ({"id": "numcodecs_ext.packbits", "dtype": "bool", "bit_order": "big",
                               "padding_encoding": "first_byte"}, rng.integers(0, 2, 19).astype(bool)),
    "i2-12bit-last-byte": ({"id": "numcodecs_ext.packbits", "last_bit": 11, "padding_encoding": "last_byte",
                            "dtype": "int16"}, rng.integers(-2048, 2048, (2, 5)).astype("int16")),
    "i1-bits1to3": ({"id": "numcodecs_ext.packbits", "first_bit": 1, "last_bit": 3,
                     "padding_encoding": "first_byte", "dtype": "int8"},
                    np.array([-6, 5, 0, 7, -8, 6, -2], "int8")),
    "f4-top16": ({"id": "numcodecs_ext.packbits", "first_bit": 16, "padding_encoding": "first_byte",
                  "dtype": "float32"}, _field((5,), "float32")),
    "c16-full": ({"id": "numcodecs_ext.packbits", "dtype": "complex128", "padding_encoding": "last_byte"},
                 np.array([1 + 2j, -0.0 - 1j, complex(np.nan, np.inf)])),
}


def _nan_uint8_pipeline(path: Path, adapter: bool) -> np.ndarray:
    """The cast_value spec's example: float64 with NaN stored as uint8 through scale_offset."""
    import zarr

    from numcodecs_ext import zarr3

    so, cv = (zarr3.NumcodecsScaleOffset, zarr3.NumcodecsCastValue) if adapter else (zarr3.ScaleOffset, zarr3.CastValue)
    data = np.full((4, 10), np.nan)
    data[1:3, 2:8] = np.round(_field((2, 6)) - 270, 1)
    z = zarr.create_array(str(path), shape=data.shape, chunks=(2, 5), dtype="float64", fill_value=float("nan"),
                          filters=[so(offset=-10, scale=0.1),
                                   cv(data_type="uint8", rounding="nearest-even", scalar_map=_NAN_MAP)],
                          compressors=None)
    z[...] = data
    return np.asarray(z[...])


def _nan_uint8_pipeline_v2(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext import CastValue, ScaleOffset

    data = np.full((4, 10), np.nan)
    data[1:3, 2:8] = np.round(_field((2, 6)) - 270, 1)
    z = zarr.create_array(str(path), shape=data.shape, chunks=(2, 5), dtype="float64", zarr_format=2,
                          fill_value=float("nan"), compressors=None,
                          filters=[ScaleOffset(offset=-10, scale=0.1, dtype="float64"),
                                   CastValue(data_type="uint8", scalar_map=_NAN_MAP, dtype="float64")])
    z[:2] = data[:2]  # a partial write: the second row of chunks stays unwritten (fill value)
    return np.asarray(z[...])


def _zfp_v3(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext.zarr3 import Zfp

    data = _field((6, 20, 30), "float32")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(3, 10, 16), dtype="float32", fill_value=0,
                          serializer=Zfp(mode="reversible"), compressors=None)
    z[...] = data
    return data


def _zfp_lossy_named_zarrs_v3(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext.zarr3 import Zfp

    data = _field((16, 24), "float64")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(8, 8), dtype="float64", fill_value=0,
                          serializer=Zfp(mode="fixed_accuracy", tolerance=1e-3, name="zarrs.zfp"),
                          compressors=None)
    z[...] = data
    return np.asarray(z[...])  # the lossy values, as stored


def _zfp_v2(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext import Zfp

    data = _wave((12, 10), "int16")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(6, 5), dtype="int16", zarr_format=2, fill_value=0,
                          compressors=[Zfp(mode="reversible", shape=[6, 5], dtype="int16")], filters=None)
    z[...] = data
    return data


def _transpose_v3(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext.zarr3 import Transpose

    data = _field((6, 10, 8), "float32")
    data[0, 0, :] = np.nan
    z = zarr.create_array(str(path), shape=data.shape, chunks=(4, 5, 8), dtype="float32",
                          fill_value=float("nan"), filters=[Transpose(order=[2, 0, 1])])
    z[...] = data
    return data


def _transpose_adapter_v3(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext.zarr3 import NumcodecsTranspose

    data = rng.integers(0, 60000, (9, 7)).astype("uint16")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(4, 4), dtype="uint16", fill_value=7,
                          filters=[NumcodecsTranspose(order="F")])
    z[...] = data
    return data


def _transpose_v2(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext import Transpose

    data = _field((10, 12), "float64")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(4, 6), dtype="float64", zarr_format=2,
                          fill_value=float("nan"), filters=[Transpose(order=[1, 0], shape=[4, 6])])
    z[...] = data
    return data


def _bfloat16_v3(path: Path) -> np.ndarray:
    """An array whose data type is one of ours (needs our ZDType to open)."""
    import ml_dtypes
    import zarr

    data = _field((8, 12), "float32").astype(ml_dtypes.bfloat16)
    data[0, :3] = np.nan
    z = zarr.create_array(str(path), shape=data.shape, chunks=(4, 6), dtype="bfloat16",
                          fill_value="NaN", compressors=None)
    z[:6] = data[:6]  # the last two rows stay the fill value
    return np.asarray(z[...])


def _narrow_casts_v3(path: Path) -> np.ndarray:
    """float32 stored as int4 and float8 codes through cast_value (ml_dtypes targets)."""
    import zarr

    from numcodecs_ext.zarr3 import CastValue, ScaleOffset

    data = np.round(_field((10, 9), "float32") * 2) / 2
    z = zarr.create_array(str(path), shape=data.shape, chunks=(5, 9), dtype="float32", fill_value=0,
                          filters=[ScaleOffset(offset=0, scale=2),
                                   CastValue(data_type="float8_e4m3", out_of_range="clamp")],
                          compressors=None)
    z[...] = data
    return np.asarray(z[...])


def _bits_v3(path: Path) -> np.ndarray:
    """uint16 counts rounded to 4 significant bits and stored in 12 bits, inside shards."""
    import zarr

    from numcodecs_ext.zarr3 import BitRound, PackBits

    data = rng.integers(0, 3840, (12, 16)).astype("uint16")  # rounded, still within 12 bits
    z = zarr.create_array(str(path), shape=data.shape, chunks=(3, 8), shards=(6, 16), dtype="uint16",
                          fill_value=3840, filters=[BitRound(keepbits=4)],
                          serializer=PackBits(last_bit=11, padding_encoding="last_byte"), compressors=None)
    z[:6] = data[:6]  # the second shard stays the fill value
    return np.asarray(z[...])


def _reshape_zfp_5d_v3(path: Path) -> np.ndarray:
    """A 5-D float32 array compressed by zfp through reshape (zfp takes at most 4 dimensions)."""
    import zarr

    from numcodecs_ext.zarr3 import Reshape, Zfp

    data = _field((2, 3, 4, 5, 6), "float32")
    z = zarr.create_array(str(path), shape=data.shape, chunks=(1, 3, 4, 5, 6), dtype="float32", fill_value=0,
                          filters=[Reshape(shape=[[0, 1], [2], [3], [4]])],
                          serializer=Zfp(mode="reversible"), compressors=None)
    z[...] = data
    return data


def _bool_mask_v3(path: Path) -> np.ndarray:
    import zarr

    from numcodecs_ext.zarr3 import PackBits

    data = rng.integers(0, 2, (10, 13)).astype(bool)
    z = zarr.create_array(str(path), shape=data.shape, chunks=(5, 13), dtype="bool", fill_value=False,
                          serializer=PackBits(), compressors=None)
    z[...] = data
    return data


#: store name -> function that writes the store at a path and returns the array it holds.
ZARR_FIXTURES: dict[str, Callable[[Path], np.ndarray]] = {
    "bitround_packbits_v3.zarr": _bits_v3,
    "reshape_zfp_5d_v3.zarr": _reshape_zfp_5d_v3,
    "packbits_bool_v3.zarr": _bool_mask_v3,
    "transpose_v3.zarr": _transpose_v3,
    "transpose_adapter_v3.zarr": _transpose_adapter_v3,
    "transpose_v2.zarr": _transpose_v2,
    "zfp_v3.zarr": _zfp_v3,
    "zfp_fixed_accuracy_zarrs_name_v3.zarr": _zfp_lossy_named_zarrs_v3,
    "zfp_v2.zarr": _zfp_v2,
    "scale_offset_cast_value_v3.zarr": lambda p: _nan_uint8_pipeline(p, adapter=False),
    "scale_offset_cast_value_adapter_v3.zarr": lambda p: _nan_uint8_pipeline(p, adapter=True),
    "scale_offset_cast_value_v2.zarr": _nan_uint8_pipeline_v2,
    "bfloat16_v3.zarr": _bfloat16_v3,
    "narrow_casts_v3.zarr": _narrow_casts_v3,
}
