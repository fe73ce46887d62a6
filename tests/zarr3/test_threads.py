"""One thread topology: codec work runs on zarr's own threads, never on a pool of ours, so it
never takes more threads than zarr's ``threading.max_workers``, and follows changes of it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import zarr
from zarr.core import sync
from zarr.storage import MemoryStore

from numcodecs_ext import zarr3
from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.codecs.transpose import Transpose
from numcodecs_ext.codecs.zfp import Zfp
from numcodecs_ext.core.cast_value_chunks import CastValueChunks
from numcodecs_ext.core.scale_offset_chunks import ScaleOffsetChunks
from numcodecs_ext.core.transpose import TransposeChunks
from numcodecs_ext.core.zfp_chunks import ZfpChunks

PIPELINES = ["default"]
try:
    from zarr.core.codec_pipeline import FusedCodecPipeline  # noqa: F401

    PIPELINES.append("zarr.core.codec_pipeline.FusedCodecPipeline")
except ImportError:  # zarr < 3.2
    pass


@pytest.fixture
def spy(monkeypatch):
    """The names of the threads that ran our codecs' chunk work (wrapping our own methods)."""
    names: set[str] = set()
    lock = threading.Lock()

    def note(method):
        def run(self, *args, **kwargs):
            with lock:
                names.add(threading.current_thread().name)
            return method(self, *args, **kwargs)
        return run

    # the numcodecs classes, and the core's chunk work that the zarr v3 classes run
    for cls in (Transpose, Zfp, ScaleOffset, CastValue,
                TransposeChunks, ZfpChunks, ScaleOffsetChunks, CastValueChunks):
        monkeypatch.setattr(cls, "encode_chunk", note(cls.encode_chunk))
        monkeypatch.setattr(cls, "decode_chunk", note(cls.decode_chunk))
    return names


CHAINS = {
    "transpose": lambda: {"filters": [zarr3.Transpose(order=[1, 0])], "compressors": None},
    "scale_offset+cast_value": lambda: {"filters": [
        zarr3.ScaleOffset(offset=200.0, scale=100.0),
        zarr3.CastValue(data_type="uint16", out_of_range="clamp")], "compressors": None},
    "zfp": lambda: {"serializer": zarr3.Zfp(mode="fixed_accuracy", tolerance=1e-2),
                    "compressors": None},
}


def _zarrs(name: str, fused: bool) -> bool:
    """zarr's threads: its event loop ("zarr_io"), the pool ``threading.max_workers`` sizes
    ("zarr_pool_N"), and the pool of zarr 3.4's FusedCodecPipeline, which
    ``codec_pipeline.max_workers`` sizes (unnamed: "ThreadPoolExecutor-N_M")."""
    return name.startswith(("zarr_io", "zarr_pool", *(("ThreadPoolExecutor-",) if fused else ())))


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_codec_threads_are_zarrs_and_follow_max_workers(spy, chain, pipeline) -> None:
    data = np.random.default_rng(0).normal(250, 5, (2048, 1024)).astype("float32")
    fused = pipeline != "default"
    largest = 0
    for workers in (1, 3, 2):  # the pool follows every change of the setting
        largest = max(largest, workers)
        settings = {"threading.max_workers": workers}
        if fused:
            settings.update({"codec_pipeline.path": pipeline, "codec_pipeline.max_workers": workers})
        spy.clear()
        with zarr.config.set(settings):
            sync.cleanup_resources()  # zarr sizes its pool when it first needs it
            before = {t.name for t in threading.enumerate()}
            z = zarr.create_array(MemoryStore(), shape=data.shape, chunks=(512, 512),  # 1 MiB
                                  dtype=data.dtype, fill_value=200.0, **CHAINS[chain]())
            z[...] = data
            back = z[...]
            new = {t.name for t in threading.enumerate()} - before
        assert np.abs(back - data).max() <= 0.01
        assert spy, "no codec work was seen"
        main = threading.main_thread().name
        # every thread that ran our codecs, and every thread started meanwhile, is zarr's
        assert all(_zarrs(name, fused) or name == main for name in spy | new), (spy, new)
        # and no more of them ran codec work than zarr's setting allows (zarr 3.4's fused
        # pipeline pool only grows: the largest setting so far)
        assert len({n for n in spy if n.startswith("zarr_pool")}) <= workers, spy
        assert len({n for n in spy if n.startswith("ThreadPoolExecutor-")}) <= largest, spy
    sync.cleanup_resources()
