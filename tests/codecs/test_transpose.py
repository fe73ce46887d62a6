"""transpose: the core copy, the numcodecs codec and byte-identity with zarr's built-in codec."""

from __future__ import annotations

import itertools
import json
import math

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from packaging.version import Version
from zarr.storage import LocalStore

from numcodecs_ext.codecs.transpose import Transpose
from numcodecs_ext.core.transpose import inverse_order, transpose
from numcodecs_ext.zarr3.transpose import NumcodecsTranspose
from numcodecs_ext.zarr3.transpose import Transpose as V3Transpose

OURS = "numcodecs_ext.zarr3.transpose.Transpose"
ZARRS_OWN = "zarr.codecs.transpose.TransposeCodec"
CORE_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128"]


@st.composite
def array_and_order(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=5, min_side=0, max_side=7))
    dtype = draw(st.sampled_from(["u1", "i2", "f4", "f8", "c16", "V3"]))
    arr = np.frombuffer(
        draw(st.binary(min_size=int(np.prod(shape)) * np.dtype(dtype).itemsize,
                       max_size=int(np.prod(shape)) * np.dtype(dtype).itemsize)), dtype=dtype
    ).reshape(shape)
    layout = draw(st.sampled_from(["C", "F", "strided"]))
    if layout == "F":
        arr = np.asfortranarray(arr)
    elif layout == "strided":
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]
    order = draw(st.permutations(range(len(shape))))
    return arr, tuple(order)


@given(array_and_order())
def test_core_matches_numpy(case) -> None:
    arr, order = case
    out = transpose(arr, order)
    assert out.flags.c_contiguous
    assert out.tobytes() == np.ascontiguousarray(arr.transpose(order)).tobytes()
    assert transpose(out, inverse_order(order)).tobytes() == np.ascontiguousarray(arr).tobytes()


@pytest.mark.parametrize("shape,order", [
    ((300, 700), (1, 0)),               # tiled 2-D
    ((64, 80, 96), (2, 1, 0)),          # tiled 3-D
    ((40, 50, 60), (1, 2, 0)),
    ((20, 30, 40, 50), (3, 1, 2, 0)),
    ((5, 1, 300, 1, 400), (4, 3, 2, 1, 0)),  # length-1 axes
])
@pytest.mark.parametrize("dtype", ["u1", "f8"])
def test_core_large_tiled_paths(shape, order, dtype) -> None:
    arr = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    expected = np.ascontiguousarray(arr.transpose(order))
    assert np.array_equal(transpose(arr, order), expected)
    assert np.array_equal(transpose(np.asfortranarray(arr), order), expected)


# --- the tiled copy (compiled kernel and numpy loop), forced onto small arrays -----------------

TILED_DTYPES = ["u1", "i2", "V3", "f4", "V6", ">f8", "V12", "c16", "M8[s]", "V24"]


def _layout(arr: np.ndarray, layout: str) -> np.ndarray:
    """The same values in another memory layout (or at an odd address)."""
    if layout == "F":
        return np.asfortranarray(arr)
    if layout == "strided":
        return np.repeat(arr, 3, axis=0)[::3] if arr.ndim else arr
    if layout == "reversed":
        return np.ascontiguousarray(arr[::-1, ..., ::-1])[::-1, ..., ::-1]
    if layout == "unaligned":
        raw = np.empty(arr.nbytes + 1, np.uint8)[1:]
        moved = raw.view(arr.dtype).reshape(arr.shape)
        moved[...] = arr
        return moved
    return arr


@st.composite
def tiled_case(draw):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=5, min_side=1, max_side=23))
    dtype = np.dtype(draw(st.sampled_from(TILED_DTYPES)))
    raw = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(
        0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    arr = _layout(raw.view(dtype).reshape(shape), draw(st.sampled_from(
        ["C", "F", "strided", "reversed", "unaligned"])))
    return arr, tuple(draw(st.permutations(range(len(shape)))))


@pytest.mark.usefixtures("kernels")
@given(tiled_case(), st.booleans())
def test_tiled_copy_matches_numpy(case, unaligned_out) -> None:
    """Every layout, item size and permutation through the tiled copy (the size threshold is
    lifted so that small arrays take it) gives numpy's bytes, into a fresh or an unaligned out."""
    from numcodecs_ext.core import transpose as core

    arr, order = case
    expected = np.ascontiguousarray(arr.transpose(order))
    saved = core._SMALL_BYTES
    core._SMALL_BYTES = 0
    try:
        out = None
        if unaligned_out:
            out = np.empty(expected.nbytes + 1, np.uint8)[1:].view(arr.dtype).reshape(expected.shape)
        got = transpose(arr, order, out=out)
    finally:
        core._SMALL_BYTES = saved
    assert got.flags.c_contiguous and (out is None or got is out)
    assert got.tobytes() == expected.tobytes()


@pytest.mark.usefixtures("kernels")
@pytest.mark.parametrize("shape,order,dtype", [
    ((1030, 517), (1, 0), "u2"),                  # remainders on both tile edges
    ((3, 515, 9, 260), (3, 0, 2, 1), "i4"),       # planes walked over two outer axes
    ((2, 600, 3, 300), (1, 3, 0, 2), "V3"),       # odd item size
    ((257, 1100), (1, 0), "c16"),
    ((40, 50, 60, 7), (3, 2, 1, 0), "f8"),
])
@pytest.mark.parametrize("layout", ["C", "F", "view", "reversed"])
def test_tiled_copy_at_real_sizes(shape, order, dtype, layout) -> None:
    """Chunks above the tiling threshold, including views whose row stride is a multiple of
    4 KiB (the layout zarr hands codecs when the caller's array is wider than a chunk)."""
    arr = np.random.default_rng(1).integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize,
                                            dtype=np.uint8).view(dtype).reshape(shape)
    if layout == "view":  # rows padded to the next multiple of 4 KiB (4096 items made 3.9 GB for f8)
        step = 4096 // math.gcd(4096, np.dtype(dtype).itemsize)
        wide = np.zeros(shape[:-1] + (-(-shape[-1] // step) * step,), dtype)
        assert wide.strides[-2] % 4096 == 0
        wide[..., : shape[-1]] = arr
        src = wide[..., : shape[-1]]
    else:
        src = _layout(arr, layout)
    expected = np.ascontiguousarray(arr.transpose(order))
    assert transpose(src, order).tobytes() == expected.tobytes()


@pytest.mark.parametrize("bad", ["X", [0, 0], [1, 2], [0.0, 1.0], None, [True, False], "c", [-1, 0]])
def test_invalid_order_refused_at_construction(bad) -> None:
    with pytest.raises(ValueError, match="order"):
        Transpose(order=bad)


def test_order_length_must_match_array() -> None:
    with pytest.raises(ValueError, match="3 dimensions"):
        Transpose(order=[1, 0]).encode(np.zeros((2, 3, 4)))


def test_unknown_config_key_refused() -> None:
    with pytest.raises(ValueError, match="unknown configuration key.*'ordr'.*valid keys are order"):
        numcodecs.get_codec({"id": "transpose", "ordr": [1, 0]})


def test_flat_decode_needs_shape() -> None:
    codec = Transpose(order=[1, 0])
    enc = codec.encode(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="out="):
        codec.decode(enc.tobytes())


def test_flat_decode_with_shape_and_dtype() -> None:
    a = np.arange(12, dtype="<i4").reshape(3, 4)
    enc = Transpose(order="F").encode(a).tobytes()
    assert np.array_equal(Transpose(order="F", shape=[3, 4], dtype="int32").decode(enc), a)
    untyped = Transpose(order="F", shape=[3, 4]).decode(enc)
    assert np.array_equal(untyped.view("<i4"), a)


def test_c_and_f_orders() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    assert np.array_equal(Transpose(order="C").encode(a), a)
    assert Transpose(order="F").encode(a).shape == (4, 3, 2)


def test_v3_refuses_c_and_f_orders() -> None:
    """The spec dropped the constants "C" and "F": zarr v3 metadata holds a permutation."""
    for order in ("C", "F"):
        with pytest.raises(ValueError, match="explicit permutation"):
            V3Transpose(order=order)
        with pytest.raises(ValueError, match="explicit permutation"):
            V3Transpose.from_dict({"name": "transpose", "configuration": {"order": order}})


def test_v3_metadata_exactly_as_spec(tmp_path) -> None:
    z = zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=(4, 5, 6), chunks=(2, 5, 6),
                          dtype="f4", filters=[V3Transpose(order=[2, 1, 0])])
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0] == {"name": "transpose", "configuration": {"order": [2, 1, 0]}}
    assert z.metadata.codecs[0].to_dict() == {"name": "transpose", "configuration": {"order": (2, 1, 0)}} or \
        z.metadata.codecs[0].to_dict() == {"name": "transpose", "configuration": {"order": [2, 1, 0]}}


def test_v3_from_dict_refuses_bad_config() -> None:
    with pytest.raises(ValueError, match="unknown configuration key"):
        V3Transpose.from_dict({"name": "transpose", "configuration": {"order": [0], "x": 1}})
    with pytest.raises(ValueError, match="missing required"):
        V3Transpose.from_dict({"name": "transpose", "configuration": {}})


def _sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape)
    if np.dtype(dtype).kind in "fc":  # random bits would include NaNs, on which zarr itself warns
        return (rng.standard_normal(shape) * 100).astype(dtype)
    return arr if dtype != "bool" else (raw[: arr.size] & 1).astype(bool).reshape(shape)


def _write(path, impl: str, arr: np.ndarray, order: tuple[int, ...], chunks) -> None:
    with zarr.config.set({"codecs.transpose": impl}):
        filt = V3Transpose(order=list(order)) if impl == OURS else zarr.codecs.TransposeCodec(order=order)
        z = zarr.create_array(LocalStore(path), shape=arr.shape, chunks=chunks, dtype=arr.dtype,
                              filters=[filt], compressors=None, fill_value=0 if arr.dtype != bool else False)
        z[...] = arr


def _read(path, impl: str) -> np.ndarray:
    with zarr.config.set({"codecs.transpose": impl}):
        z = zarr.open_array(LocalStore(path), mode="r")
        assert type(z.metadata.codecs[0]).__module__.startswith(impl.rsplit(".", 2)[0].split(".")[0])
        return z[...]


def _chunk_files(path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


CASES = [(dtype, shape, order)
         for dtype in CORE_DTYPES
         for shape in [(7,), (6, 5), (4, 3, 5), (3, 2, 4, 2), (2, 3, 2, 2, 3)]
         for order in itertools.islice(itertools.permutations(range(len(shape))), 1, 4)] + [
    ("float64", (3,), (0,)),
]


@pytest.mark.parametrize("dtype,shape,order", CASES)
def test_byte_identical_with_zarr_builtin(dtype, shape, order, tmp_path) -> None:
    arr = _sample(dtype, tuple(s * 2 + 1 for s in shape))  # partial edge chunks too
    _write(tmp_path / "ours.zarr", OURS, arr, order, shape)
    _write(tmp_path / "theirs.zarr", ZARRS_OWN, arr, order, shape)
    assert _chunk_files(tmp_path / "ours.zarr") == _chunk_files(tmp_path / "theirs.zarr")
    # Each implementation reads what the other wrote.
    assert _read(tmp_path / "ours.zarr", ZARRS_OWN).tobytes() == arr.tobytes()
    assert _read(tmp_path / "theirs.zarr", OURS).tobytes() == arr.tobytes()


def test_ours_is_default_and_zarrs_selectable(tmp_path) -> None:
    """Ours reads ``transpose`` by default (zarr's checks order against the array, so a transpose
    after a reshape could not open); zarr's own stays one config key away."""
    arr = _sample("int32", (4, 6))
    _write(tmp_path / "a.zarr", ZARRS_OWN, arr, (1, 0), (2, 3))
    assert type(zarr.open_array(LocalStore(tmp_path / "a.zarr")).metadata.codecs[0]) is V3Transpose
    with zarr.config.set({"codecs.transpose": ZARRS_OWN}):
        assert type(zarr.open_array(LocalStore(tmp_path / "a.zarr")).metadata.codecs[0]).__name__ == "TransposeCodec"
    zarr.config.reset()  # the default survives a reset (it is one of zarr's config defaults)
    assert type(zarr.open_array(LocalStore(tmp_path / "a.zarr")).metadata.codecs[0]) is V3Transpose


def test_transpose_after_reshape_as_zarrs_writes_it(tmp_path) -> None:
    """The reshape spec's pattern: reshape to fewer dimensions, then transpose them. A store
    with zarrs' metadata opens, reads, and we write the same chunk; a wrong order is refused."""
    data = np.arange(4 * 6 * 2, dtype="int16").reshape(4, 6, 2)
    path = tmp_path / "rt.zarr"
    (path / "c" / "0" / "0").mkdir(parents=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": [4, 6, 2], "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6, 2]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "attributes": {},
            "codecs": [{"name": "reshape", "configuration": {"shape": [[0, 1], 2]}},
                       {"name": "transpose", "configuration": {"order": [1, 0]}},
                       {"name": "bytes", "configuration": {"endian": "little"}}]}
    (path / "zarr.json").write_text(json.dumps(meta))
    chunk = data.reshape(24, 2).T.astype("<i2").tobytes()
    (path / "c" / "0" / "0" / "0").write_bytes(chunk)
    z = zarr.open_array(LocalStore(path), mode="r+")
    assert np.array_equal(z[...], data)
    z[...] = data
    assert (path / "c" / "0" / "0" / "0").read_bytes() == chunk
    meta["codecs"][1]["configuration"]["order"] = [2, 1, 0]  # 3 entries for the 2-D chunk
    (path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="order"):
        zarr.open_array(LocalStore(path))[...]


def test_adapter_name_reads_without_config(tmp_path) -> None:
    arr = _sample("float32", (6, 8))
    z = zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=arr.shape, chunks=(3, 4), dtype=arr.dtype,
                          filters=[NumcodecsTranspose(order="F")])
    z[...] = arr
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0] == {"name": "numcodecs.transpose", "configuration": {"order": [1, 0]}}
    assert np.array_equal(zarr.open_array(LocalStore(tmp_path / "a.zarr"))[...], arr)


def test_zarr_v2_filter_metadata(tmp_path) -> None:
    arr = _sample("uint16", (6, 8))
    z = zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=arr.shape, chunks=(3, 4), dtype=arr.dtype,
                          zarr_format=2, filters=[Transpose(order=[1, 0], shape=[3, 4])], compressors=None)
    z[...] = arr
    meta = json.loads((tmp_path / "a.zarr" / ".zarray").read_text())
    assert meta["filters"] == [{"id": "transpose", "order": [1, 0], "shape": [3, 4]}]
    chunk = np.frombuffer((tmp_path / "a.zarr" / "0.0").read_bytes(), dtype="<u2").reshape(4, 3)
    assert np.array_equal(chunk, arr[:3, :4].T)
    assert np.array_equal(zarr.open_array(LocalStore(tmp_path / "a.zarr"))[...], arr)


def test_decode_into_byte_swapped_out() -> None:
    """An encoded array decodes by value into out= of the other byte order."""
    a = np.arange(12.0).reshape(3, 4)
    codec = Transpose(order=[1, 0])
    out = np.empty((3, 4), dtype=">f8")
    assert codec.decode(codec.encode(a), out=out) is out
    assert np.array_equal(out, a)


@pytest.mark.parametrize("shape", [(64, 64), (512, 512)])  # below and above the tiled-copy size
def test_zarr_string_arrays_with_our_transpose(shape) -> None:
    """We are zarr's default transpose: its variable-length string arrays (references, not
    plain bytes) must go through it as through zarr's own, large chunks included."""
    import zarr
    from zarr.storage import MemoryStore

    from numcodecs_ext import zarr3

    a = np.array([f"s{i}" for i in range(math.prod(shape))]).reshape(shape)
    read = []
    for codec in (zarr3.Transpose(order=[1, 0]), zarr.codecs.TransposeCodec(order=[1, 0])):
        z = zarr.create_array(MemoryStore(), shape=shape, chunks=shape, dtype=str, fill_value="",
                              filters=[codec])
        z[...] = a
        read.append(z[...])
    assert (read[0] == read[1]).all()  # what zarr's own transpose gives, and where that is
    if (read[1] == a).all() or Version(zarr.__version__) >= Version("3.2"):  # (zarr 3.1: transposed)
        assert (read[0] == a).all()


def test_references_are_copied_by_numpy_with_their_counts() -> None:
    """Object and numpy StringDType items are references: never moved as raw bytes."""
    import sys

    token = object()
    a = np.empty((512, 512), object)
    a[...] = token
    before = sys.getrefcount(token)
    codec = Transpose(order=[1, 0])
    copied = transpose(a, (1, 0))
    assert sys.getrefcount(token) - before == a.size
    assert all(x is token for x in copied.ravel()[:: 997])
    view = codec.encode_chunk(a)
    assert (view == a.T).all() and sys.getrefcount(token) - before == a.size
    back = codec.decode_chunk(np.ascontiguousarray(view), a.shape, a.dtype)
    assert back.shape == a.shape and all(x is token for x in back.ravel()[:: 997])
    del copied
    strings = np.array([f"v{i}" for i in range(512 * 512)], np.dtypes.StringDType()).reshape(512, 512)
    assert (transpose(strings, (1, 0)) == strings.T).all()
    assert (codec.encode_chunk(strings) == strings.T).all()


def test_permute_plan_checks_its_plan(compiled) -> None:
    """The compiled copy from a plan of plain numbers must refuse any plan whose view would
    leave the source buffer, or whose destination is not the view's size (whether or not the
    compiled kernels are switched on at the moment: the call goes to them directly)."""
    src = np.arange(24, dtype="float32").reshape(2, 3, 4)
    dst = np.empty((4, 3, 2), "float32")

    def plan(*values: int) -> bytes:
        return np.array(values, np.int64).tobytes()

    view = src.transpose(2, 1, 0)
    compiled.permute_plan(src, dst, plan(3, 0, 4, *view.shape, *view.strides))
    assert (dst == view).all()
    bad = [
        plan(3, 0, 4, 4, 3, 2, 4, 16, 52),  # the last item would be past the end of src
        plan(3, 2, 4, *view.shape, *view.strides),  # p must be below ndim - 1
        plan(3, 0, 4, 4, 3, 0, 4, 16, 48),  # a zero size
        plan(3, 0, 4, 4, 3, 2, -4, 16, 48),  # a negative stride
        plan(3, 0, 4, *view.shape, *view.strides)[:-8],  # truncated
        plan(1, 0, 4, 24, 4),  # 1-d
        plan(3, 0, 0, *view.shape, *view.strides),  # no item size
        plan(3, 0, 4, 4, 3, 2**62, 4, 16, 48),  # sizes that overflow
    ]
    for p in bad:
        with pytest.raises(ValueError):
            compiled.permute_plan(src, dst, p)
    with pytest.raises(ValueError):  # dst of another size
        compiled.permute_plan(src, np.empty(25, "float32"), plan(3, 0, 4, *view.shape, *view.strides))


@pytest.mark.parametrize("shape,order", [((1024, 256), (1, 0)), ((16, 64, 128), (2, 0, 1)),
                                         ((8, 96, 2, 160), (3, 1, 0, 2)), ((300, 700), (1, 0))])
@pytest.mark.parametrize("dtype", ["uint8", "float32", ">f8", "complex128", "M8[s]"])
def test_chunk_transposer_layouts(shape, order, dtype) -> None:
    """Every way a chunk takes (a plan, raw items, numpy's copy) gives numpy's
    result, for C-contiguous, Fortran and reversed inputs."""
    from numcodecs_ext.core.transpose import chunk_transposer

    a = (np.arange(math.prod(shape)) % 251).astype(dtype).reshape(shape)
    for x in (a, np.asfortranarray(a), a[::-1]):
        got = chunk_transposer(x, order)(x)
        assert got.shape == x.transpose(order).shape and (got == x.transpose(order)).all()
