"""scale_offset + cast_value as zarr v3 filters: each codec runs on its own, whatever stands
beside it; results, errors and the user's codec objects are the same in every arrangement.

(Until the redesign of issue 33 the pair was fused in zarr; these checks come from the tests of
that fusion, in tests/core/test_fused.py, minus what only concerned the fusion.)
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import zarr

from numcodecs_ext.core import fused
from numcodecs_ext.zarr3.cast_value import CastValue as ZCastValue
from numcodecs_ext.zarr3.cast_value import NumcodecsCastValue
from numcodecs_ext.zarr3.scale_offset import NumcodecsScaleOffset
from numcodecs_ext.zarr3.scale_offset import ScaleOffset as ZScaleOffset
from numcodecs_ext.zarr3.transpose import Transpose as ZTranspose

NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


@pytest.fixture
def ours():
    names = {"scale_offset": ZScaleOffset, "cast_value": ZCastValue,
             "numcodecs.scale_offset": NumcodecsScaleOffset,
             "numcodecs.cast_value": NumcodecsCastValue}
    with zarr.config.set({f"codecs.{n}": f"{c.__module__}.{c.__qualname__}" for n, c in names.items()}):
        yield


def _chunks(store: dict) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in sorted(store.items()) if k != "zarr.json"}


#: zarr's default pipeline (async, per chunk) and zarr 3.4's opt-in synchronous one
PIPELINES = ["zarr.core.codec_pipeline.BatchedCodecPipeline",
             "zarr.core.codec_pipeline.FusedCodecPipeline"]


@pytest.fixture(params=PIPELINES, ids=lambda p: p.rsplit(".", 1)[1])
def pipeline(request):
    module, name = request.param.rsplit(".", 1)
    if not hasattr(__import__(module, fromlist=[name]), name):
        pytest.skip(f"this zarr {zarr.__version__} has no {name}")
    with zarr.config.set({"codec_pipeline.path": request.param}):
        yield request.param


@pytest.mark.parametrize("pair", [(ZScaleOffset, ZCastValue), (NumcodecsScaleOffset, NumcodecsCastValue),
                                  (ZScaleOffset, NumcodecsCastValue)])
@pytest.mark.parametrize("shards", [None, (40, 30)])
def test_zarr_chain_is_identical_with_a_codec_between(ours, pipeline, pair, shards) -> None:
    """Neighbours or not, the pair writes the same chunks and reads the same values, and those
    are the two steps of the core (fused.encode is the core's one-pass equivalent)."""
    so_cls, cv_cls = pair
    rng = np.random.default_rng(3)
    x = rng.normal(0, 200, 80 * 60).reshape(80, 60) + 1000
    x[:20, :20] = np.nan  # a whole chunk of fill value, and partial ones

    def array(filters, store):
        return zarr.create_array(store, shape=x.shape, chunks=(20, 15), shards=shards,
                                 dtype="float64", fill_value=np.nan, filters=filters,
                                 compressors=None)

    def pair_of_codecs():
        return [so_cls(offset=-10, scale=0.1),
                cv_cls(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)]

    next_store: dict = {}
    neighbours = array(pair_of_codecs(), next_store)
    apart_store: dict = {}
    so, cv = pair_of_codecs()
    apart = array([so, ZTranspose(order=(0, 1)), cv], apart_store)
    assert type(neighbours.async_array.codec_pipeline).__name__ == pipeline.rsplit(".", 1)[1]
    apart[...] = x
    neighbours[...] = x
    assert _chunks(next_store) == _chunks(apart_store) != {}
    got = neighbours[...]
    assert got.tobytes() == apart[...].tobytes()
    want = fused.decode(fused.encode(x, -10.0, 0.1, "uint8", out_of_range="clamp",
                                     scalar_map=[(np.nan, 0)]),
                        "float64", -10.0, 0.1, scalar_map=[(0, np.nan)])
    assert got.tobytes() == want.tobytes()
    neighbours[5:7, 3:40] = 2000.0  # partial writes read, merge and re-encode through the chain
    apart[5:7, 3:40] = 2000.0
    assert neighbours[...].tobytes() == apart[...].tobytes()


def test_zarr_chain_errors_propagate(ours) -> None:
    z = zarr.create_array({}, shape=(100,), chunks=(50,), dtype="float64", fill_value=0.0,
                          filters=[ZScaleOffset(offset=0, scale=1), ZCastValue(data_type="uint8")],
                          compressors=None)
    with pytest.raises(ValueError, match=r"cannot convert 300 \(float64\) to uint8"):
        z[...] = np.full(100, 300.0)
    h = zarr.create_array({}, shape=(4,), chunks=(4,), dtype="float16", fill_value=0.0,
                          filters=[ZScaleOffset(offset=0, scale=1000), ZCastValue(data_type="int32")],
                          compressors=None)
    with pytest.raises(ValueError, match=r"x=.*100\.0.* overflows float16"):
        h[...] = np.array([1, 2, 3, 100], np.float16)


def test_the_users_codec_objects_are_never_changed(ours) -> None:
    """Frozen means frozen: using a codec object in arrays (both orders of evolution, reading,
    writing, pickling the array) leaves every attribute of it as it was."""
    so = ZScaleOffset(offset=-8, scale=0.5)
    cv = ZCastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)
    before = [copy.copy(vars(c)) for c in (so, cv)]
    z = zarr.create_array({}, shape=(8,), chunks=(4,), dtype="float64", fill_value=np.nan,
                          filters=[so, cv], compressors=None)
    z[...] = np.arange(8.0)
    assert pickle.loads(pickle.dumps(z))[...].tolist() == z[...].tolist() == [0, 0, 2, 4, 4, 4, 6, 8]
    alone = zarr.create_array({}, shape=(8,), chunks=(4,), dtype="float64", fill_value=0.0,
                              filters=[so], compressors=None)
    alone[...] = np.arange(8.0)
    assert alone[...].tolist() == np.arange(8.0).tolist()
    after = [vars(c) for c in (so, cv)]
    assert after[0].keys() == before[0].keys() and after[1].keys() == before[1].keys()
    assert all(a[k] is b[k] for a, b in zip(after, before) for k in a)
    with pytest.raises(AttributeError):
        so.offset = 1  # type: ignore[misc]


def test_codecs_pickle_after_chunks_were_coded() -> None:
    """dask pickles zarr arrays, codecs included: a clone after chunk work equals the codec
    and decodes the same."""
    z = zarr.create_array({}, shape=(64,), chunks=(8,), dtype="float32", fill_value=200.0,
                          filters=[ZScaleOffset(offset=200.0, scale=100.0),
                                   ZCastValue(data_type="uint16", out_of_range="clamp")],
                          compressors=None)
    z[...] = np.linspace(200, 250, 64, dtype="float32")
    first = z[...]
    for codec in z.filters:
        clone = pickle.loads(pickle.dumps(codec))
        assert clone == codec and hash(clone) == hash(codec) and clone.to_dict() == codec.to_dict()
    assert pickle.loads(pickle.dumps(z))[...].tobytes() == first.tobytes()
