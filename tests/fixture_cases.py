"""The backward-compatibility fixtures: what `python tests/fixtures_tool.py generate` writes.

Codec fixtures: ``fixtures/<codec_id>/<case>/{config.json, array.npy, encoded.dat}``.
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


#: store name -> function that writes the store at a path and returns the array it holds.
ZARR_FIXTURES: dict[str, Callable[[Path], np.ndarray]] = {
    "transpose_v3.zarr": _transpose_v3,
    "transpose_adapter_v3.zarr": _transpose_adapter_v3,
    "transpose_v2.zarr": _transpose_v2,
}
