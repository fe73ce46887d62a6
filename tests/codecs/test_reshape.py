"""reshape: the spec's shape rules (every MUST-error), views, zarr v2/v3, and zfp beyond 4-D."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from numcodecs_ext import Reshape, zarr3
from numcodecs_ext.core.reshape import output_shape, parse_spec
from tests.helpers import examples


@pytest.mark.parametrize("spec, shape_in, shape_out", [
    ([[0, 1], [2], 3], (100, 50, 64, 3), (5000, 64, 3)),  # the spec's example
    ([-1], (2, 3, 4), (24,)),
    ([6, 4], (2, 3, 4), (6, 4)),
    ([[0], -1], (2, 3, 4), (2, 12)),
    ([2, [1, 2]], (2, 3, 4), (2, 12)),
    ([[0, 1], [2]], (2, 3, 4), (6, 4)),
    ([[0, 1, 2], 1, 1], (2, 3, 4), (24, 1, 1)),
    ([1, -1, 1], (5,), (1, 5, 1)),
    ([[0], [], [1]], (3, 4), (3, 1, 4)),  # an empty list: a dimension of size 1
    ([[0, 2]], (4, 1, 5), (20,)),
    ([[0], 12, [3]], (2, 3, 4, 5), (2, 12, 5)),  # a skipped dimension of size 1 changes nothing
    ([], (), ()),
    ([1, 1], (), (1, 1)),
    ([-1], (), (1,)),
])
def test_output_shapes(spec: list, shape_in: tuple, shape_out: tuple) -> None:
    assert output_shape(parse_spec(spec), shape_in) == shape_out


@pytest.mark.parametrize("spec, match", [
    ([[1], [0]], "increase strictly"),  # the spec's examples of what is NOT allowed
    ([[1, 0], 10, [3, 4]], "increase strictly"),
    ([[3, 4], 10, [0, 1]], "increase strictly"),
    ([[0, 0]], "increase strictly"),
    ([-1, -1], "more than once"),
    ([0], "entry 0"),
    ([-2], "entry -2"),
    ([[-1]], "entry"),
    ([1.5], "entry"),
    ([True], "entry"),
    (["3"], "entry"),
    ("3", "must be a list"),
    (None, "must be a list"),
    ([{"a": 1}], "entry"),
])
def test_configuration_errors(spec: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_spec(spec)
    with pytest.raises(ValueError, match=match):
        Reshape(shape=spec)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match):
        zarr3.Reshape.from_dict({"name": "reshape", "configuration": {"shape": spec}})


@pytest.mark.parametrize("spec, shape_in, match", [
    ([5, -1], (4, 3), "not a multiple of 5"),
    ([5, 5], (4, 3), "holds 25 elements"),
    ([[0, 1], [3]], (2, 3, 4), "does not exist"),
    ([[1], 8, 5], (2, 3, 4, 5), "raveled together"),  # 120 elements, but [1] is not dimension 1
    ([10, [2, 3]], (2, 3, 4, 5), "holds 200 elements"),
    ([[1], -1], (2, 3, 4), "raveled together"),  # dimension 0 is left out before [1]
    ([[0], [2]], (2, 3, 4), "holds 8 elements"),
    ([-1, [0]], (0, 3), "undetermined"),
])
def test_shape_dependent_errors(spec: list, shape_in: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        output_shape(parse_spec(spec), shape_in)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=5), st.data())
def test_groupings_round_trip_as_views(shape_in: list[int], data: st.DataObject) -> None:
    """Random groupings of consecutive input dimensions (as lists, sizes or one -1) are valid,
    give numpy's reshape, and are views of contiguous chunks."""
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(shape_in)), max_size=4))))
    bounds = [0, *[c for c in cuts if 0 < c < len(shape_in)], len(shape_in)] if shape_in else [0, 0]
    spec: list = []
    auto_used = False
    for lo, hi in zip(bounds, bounds[1:]):
        style = data.draw(st.sampled_from(["dims", "size", "auto"]))
        if style == "auto" and not auto_used:
            spec.append(-1)
            auto_used = True
        elif style == "size":
            spec.append(int(np.prod(shape_in[lo:hi])))
        else:
            spec.append(list(range(lo, hi)))
    a = np.arange(int(np.prod(shape_in)), dtype="int32").reshape(shape_in)
    codec = Reshape(shape=spec)
    enc = codec.encode_chunk(a)
    want = tuple(int(np.prod(shape_in[lo:hi])) for lo, hi in zip(bounds, bounds[1:]))
    assert enc.shape == want and np.shares_memory(enc, a) or a.size == 0
    np.testing.assert_array_equal(enc.reshape(-1), a.reshape(-1))
    np.testing.assert_array_equal(codec.decode_chunk(enc, tuple(shape_in), a.dtype), a)


def test_numcodecs_contract() -> None:
    codec = numcodecs.get_codec({"id": "reshape", "shape": [[0, 1], -1]})
    assert isinstance(codec, Reshape) and codec.get_config() == {"id": "reshape", "shape": [[0, 1], -1]}
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert repr(codec) == "Reshape(shape=[[0, 1], -1])"
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    enc = codec.encode(a)
    assert enc.shape == (6, 4) and enc.flags.c_contiguous
    assert codec.decode(enc).shape == (24,)  # no shape known: flat, as zarr v2 filters return
    out = np.empty((2, 3, 4), "float32")
    assert codec.decode(enc, out=out) is out and np.array_equal(out, a)
    ba = bytearray(a.nbytes)
    codec.decode(enc.tobytes(), out=ba)
    assert bytes(ba) == a.tobytes()
    full = Reshape(shape=[[0, 1], -1], input_shape=[2, 3, 4], dtype="float32")
    np.testing.assert_array_equal(full.decode(enc.tobytes()), a)
    np.testing.assert_array_equal(full.encode(a.tobytes()), enc)
    assert Reshape.from_config(full.get_config()) == full
    with pytest.raises(ValueError, match="input_shape"):
        full.encode(np.zeros((4, 3, 2), "float32"))
    with pytest.raises(ValueError, match="not a multiple"):
        Reshape(shape=[5, -1], input_shape=[2, 3])
    with pytest.raises(ValueError, match="Fortran"):
        codec.encode(np.asfortranarray(a))
    np.testing.assert_array_equal(codec.encode(a[:, :, ::2]), a[:, :, ::2].reshape(6, 2))


def test_zero_dimensional_output_and_input(tmp_path: Path) -> None:
    """shape=[] makes a chunk of one element 0-d, and back; a 0-d array takes any all-ones shape."""
    to0d = Reshape(shape=[])
    assert to0d.encode(np.array([5.5])).shape == ()
    assert to0d.encode(np.array([[7]], "int8")).shape == ()
    with pytest.raises(ValueError, match="holds 1 elements"):
        to0d.encode(np.arange(3))
    assert Reshape(shape=[1, 1]).encode(np.array(3)).shape == (1, 1)
    full = Reshape(shape=[], input_shape=[1], dtype="float64")
    assert full.decode(full.encode(np.array([2.5])).tobytes()).shape == (1,)
    z = zarr.create_array(str(tmp_path / "z.zarr"), shape=(3,), chunks=(1,), dtype="int16",
                          filters=[zarr3.Reshape(shape=[])])
    z[:] = [1, 2, 3]
    assert z[:].tolist() == [1, 2, 3]


@pytest.mark.parametrize("adapter", [False, True])
def test_zarr_v3_with_shards_and_fill(tmp_path: Path, adapter: bool) -> None:
    cls = zarr3.NumcodecsReshape if adapter else zarr3.Reshape
    data = np.arange(8 * 6 * 4, dtype="int16").reshape(8, 6, 4)
    z = zarr.create_array(str(tmp_path / "r.zarr"), shape=data.shape, chunks=(2, 3, 4), shards=(4, 6, 4),
                          dtype="int16", fill_value=-7, filters=[cls(shape=[[0, 1], [2]])])
    z[:4] = data[:4]
    back = zarr.open_array(str(tmp_path / "r.zarr"))
    np.testing.assert_array_equal(back[:4], data[:4])
    assert (back[4:] == -7).all()
    meta = json.loads((tmp_path / "r.zarr" / "zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]["codecs"][0]
    assert inner == {"name": "numcodecs.reshape" if adapter else "reshape",
                     "configuration": {"shape": [[0, 1], [2]]}}


def test_zarr_refuses_at_creation(tmp_path: Path) -> None:
    for spec in ([4, -1], [[0], [2]], [[1], -1]):
        with pytest.raises(ValueError, match="codec 'reshape'"):
            zarr.create_array(str(tmp_path / "bad.zarr"), shape=(4, 6), chunks=(2, 3), dtype="int32",
                              filters=[zarr3.Reshape(shape=spec)], overwrite=True)


def test_zarr_v2_filter(tmp_path: Path) -> None:
    data = np.arange(60, dtype="float64").reshape(3, 4, 5)
    z = zarr.create_array(str(tmp_path / "v2.zarr"), shape=data.shape, chunks=(3, 2, 5), dtype="float64",
                          zarr_format=2, filters=[Reshape(shape=[-1, 5])])
    z[:] = data
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "v2.zarr"))[:], data)


def test_zfp_on_six_dimensions(tmp_path: Path) -> None:
    """The recipe in the README: zfp takes 1-4 dimensions; reshape 6-D chunks to 4-D first."""
    pytest.importorskip("zfpy")
    grids = np.meshgrid(*[np.linspace(0, 1, n) for n in (2, 3, 4, 4, 4, 4)], indexing="ij")
    data = np.sin(sum(grids)).astype("float32")
    with pytest.raises(ValueError, match="reshape"):
        zarr.create_array(str(tmp_path / "bad.zarr"), shape=data.shape, dtype="float32",
                          serializer=zarr3.Zfp(mode="fixed_accuracy", tolerance=1e-3))
    z = zarr.create_array(str(tmp_path / "z6.zarr"), shape=data.shape, chunks=data.shape, dtype="float32",
                          filters=[zarr3.Reshape(shape=[[0, 1, 2], [3], [4], [5]])],
                          serializer=zarr3.Zfp(mode="fixed_accuracy", tolerance=1e-3), compressors=None)
    z[:] = data
    back = zarr.open_array(str(tmp_path / "z6.zarr"))[:]
    assert back.shape == data.shape and np.abs(back - data).max() <= 1e-3
    assert z.nbytes_stored() < data.nbytes / 2
