"""transpose: whole-array write+read through [transpose, bytes] vs zarr's built-in transpose.

Both run in the same process on the same data with an in-memory store, so the ratio isolates the
codec path; the raw copy is compared with numpy's strided copy (what zarr's transpose costs).
"""

from __future__ import annotations

import numpy as np
import zarr
from zarr.storage import MemoryStore

from _util import interleaved, row
from numcodecs_ext.core.transpose import transpose
from numcodecs_ext.zarr3 import Transpose

CASES = [
    ("2-D f8 2048x4096, order (1,0)", (2048, 4096), "f8", (1, 0)),
    ("2-D u1 4096x4096, order (1,0)", (4096, 4096), "u1", (1, 0)),
    ("3-D f4 256^3, order (2,1,0)", (256, 256, 256), "f4", (2, 1, 0)),
    ("3-D f8 128x256x256, order (2,0,1)", (128, 256, 256), "f8", (2, 0, 1)),
    ("3-D f8 128x256x256, order (0,2,1)", (128, 256, 256), "f8", (0, 2, 1)),
    ("3-D f8 128x256x256, order (1,0,2)", (128, 256, 256), "f8", (1, 0, 2)),
    ("3-D f8 128x256x256, order (1,2,0)", (128, 256, 256), "f8", (1, 2, 0)),
    ("3-D i2 100x300x500, order (2,1,0)", (100, 300, 500), "i2", (2, 1, 0)),
    ("2-D f8 64x64 (small chunks, 64 of them)", (512, 512), "f8", (1, 0)),
]


def _roundtrip(data: np.ndarray, filt: object, chunks: tuple[int, ...]) -> None:
    z = zarr.create_array(MemoryStore(), shape=data.shape, chunks=chunks, dtype=data.dtype,
                          filters=[filt], compressors=None, fill_value=0)
    z[...] = data
    z[...]


def _roundtrip_ours(data: np.ndarray, order: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    with zarr.config.set({"codecs.transpose": "numcodecs_ext.zarr3.transpose.Transpose"}):
        _roundtrip(data, Transpose(order=list(order)), chunks)


def _cases(quick: bool) -> list[tuple[str, tuple[int, ...], str, tuple[int, ...]]]:
    """CASES, each dimension a quarter (at least 64) when ``quick``."""
    if not quick:
        return CASES
    return [(f"{name} (quick: {'x'.join(str(max(64, n // 4)) for n in shape)})", tuple(max(64, n // 4) for n in shape),
             dtype, order) for name, shape, dtype, order in CASES]


def run(quick: bool = False) -> list[tuple[str, float]]:
    """Every measurement; ``quick``: each dimension a quarter, 3 repeats (to check it runs)."""
    print("transpose (whole-array write+read, [transpose, bytes], memory store)")
    ratios = []
    rng = np.random.default_rng(0)
    cases = _cases(quick)
    repeat = 3 if quick else 7
    for name, shape, dtype, order in cases:
        data = (rng.integers(0, 255, shape) if dtype == "u1" else rng.standard_normal(shape)).astype(dtype)
        chunks = (64, 64) if "small" in name else shape
        mb = data.nbytes / 1e6
        theirs, ours = interleaved(
            lambda: _roundtrip(data, zarr.codecs.TransposeCodec(order=order), chunks),
            lambda: _roundtrip_ours(data, order, chunks), repeat=repeat,
        )
        print(row(name, 2 * mb / ours, "zarr built-in", 2 * mb / theirs))
        ratios.append((f"transpose write+read {name}", theirs / ours))
    print("transpose (the copy alone)")
    for name, shape, dtype, order in cases[:4]:
        data = (rng.integers(0, 255, shape) if dtype == "u1" else rng.standard_normal(shape)).astype(dtype)
        mb = data.nbytes / 1e6
        strided, ours = interleaved(lambda: np.ascontiguousarray(data.transpose(order)),
                                    lambda: transpose(data, order), repeat=repeat)
        print(row(name, mb / ours, "numpy strided copy", mb / strided))
    return ratios


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv[1:])
