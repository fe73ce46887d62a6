"""Defects an independent review found in the per-chunk caches of issue #13, kept fixed."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

from numcodecs_ext import zarr3
from numcodecs_ext.codecs.transpose import Transpose
from numcodecs_ext.codecs.zfp import Zfp
from numcodecs_ext.core import _native
from numcodecs_ext.core import zfp as zfp_core

needs_kernels = pytest.mark.usefixtures("compiled")


@needs_kernels
def test_switching_the_kernels_off_reaches_arrays_already_written(monkeypatch) -> None:
    """NUMCODECS_EXT_PURE_NUMPY's run-time switch: the fused pair's cached chunk coders follow
    it, as every other codec's do."""
    calls = {"f2i": 0}
    compiled_f2i = _native._compiled.f2i

    def counting(*args):
        calls["f2i"] += 1
        return compiled_f2i(*args)

    monkeypatch.setattr(_native._compiled, "f2i", counting)
    data = np.random.default_rng(0).normal(250, 5, (256, 256)).astype("f4")
    z = zarr.create_array(MemoryStore(), shape=data.shape, chunks=(16, 256), dtype="f4",
                          fill_value=202.0, compressors=None,
                          filters=[zarr3.ScaleOffset(offset=200.0, scale=100.0),
                                   zarr3.CastValue(data_type="uint16", out_of_range="clamp")])
    z[...] = data
    assert calls["f2i"] > 0
    first = z[...]
    monkeypatch.setattr(_native, "ENABLED", False)
    calls["f2i"] = 0
    z[...] = data
    assert calls["f2i"] == 0
    assert (z[...] == first).all()


@needs_kernels
def test_kernels_switched_off_mid_compress_still_refuse_nan(monkeypatch) -> None:
    """compress() leaves the check of lossy float values to the compiled session; if the
    kernels are switched off meanwhile (another thread), the values are still checked."""
    prepare = zfp_core.prepare

    def switch_off_after(*args, **kwargs):
        result = prepare(*args, **kwargs)
        monkeypatch.setattr(_native, "ENABLED", False)
        return result

    monkeypatch.setattr(zfp_core, "prepare", switch_off_after)
    with pytest.raises(ValueError, match="non-finite"):
        zfp_core.compress(np.array([1.0, np.nan, 2.0, 3.0]), "fixed_accuracy", tolerance=1e-3)


def test_cached_chunk_paths_keep_each_calls_dtype() -> None:
    """Equal dtypes compare alike whatever their metadata (or 'l' vs 'q'): a chunk path
    cached for one must not hand its dtype object to the next."""
    tagged = np.dtype("f8", metadata={"k": 1})
    codec = Transpose(order=[1, 0])
    codec.encode_chunk(np.zeros((600, 300), tagged))
    assert codec.encode_chunk(np.zeros((600, 300))).dtype.metadata is None
    plain = np.ascontiguousarray(np.zeros((300, 600)))
    assert codec.decode_chunk(plain, (600, 300), tagged).shape == (600, 300)
    assert codec.decode_chunk(plain, (600, 300), np.dtype("f8")).dtype.metadata is None
    codec.encode_chunk(np.zeros((600, 300), "l"))
    assert codec.encode_chunk(np.zeros((600, 300), "q")).dtype.char == "q"
    z = Zfp(mode="reversible")
    stream = z.encode_chunk(np.ones(16))
    z.decode_chunk(stream, (16,), tagged)
    assert z.decode_chunk(stream, (16,), np.dtype("f8")).dtype.metadata is None
    s8 = z.encode_chunk(np.ones(16, "l"))
    z.decode_chunk(s8, (16,), np.dtype("l"))
    assert z.decode_chunk(s8, (16,), np.dtype("q")).dtype.char == "q"


def test_transpose_decode_takes_a_list_shape() -> None:
    codec = Transpose(order=[1, 0])
    a = np.arange(12.0).reshape(3, 4)
    back = codec.decode_chunk(np.ascontiguousarray(codec.encode_chunk(a)), [3, 4], np.dtype("f8"))
    assert (back == a).all()
