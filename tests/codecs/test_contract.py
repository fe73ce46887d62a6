"""The contract every codec of the collection keeps (cases come from codec_cases.py)."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

from tests.helpers.codec_cases import CODEC_CASES, CodecCase
from tests.helpers.common import (
    assert_same,
    check_config,
    check_encode_decode,
    check_pickle,
    check_repr,
    check_threads,
)
from numcodecs_ext._registry import ZARR

cases = pytest.mark.parametrize("case", CODEC_CASES, ids=[c.id for c in CODEC_CASES])


def _v3_classes(codec_id: str) -> tuple[type, type]:
    """Our zarr v3 classes for a codec id: (spec-name class, adapter class). Codecs whose
    numcodecs id is ``numcodecs_ext.<name>`` (numcodecs owns ``<name>``) have only the spec name
    in zarr v3: the adapter naming runs the spec class again."""
    from numcodecs_ext._registry import load_class

    name = codec_id.removeprefix("numcodecs_ext.")
    return load_class(ZARR[name]), load_class(ZARR.get("numcodecs." + codec_id, ZARR[name]))


@cases
def test_config_round_trip(case: CodecCase) -> None:
    check_config(case.codec)


@cases
def test_repr(case: CodecCase) -> None:
    check_repr(case.codec)


@cases
def test_pickle(case: CodecCase) -> None:
    check_pickle(case.codec, case.array)


@cases
def test_encode_decode(case: CodecCase) -> None:
    check_encode_decode(case.codec, case.array, case.tolerance, case.decode_kwargs(case.array))


@cases
def test_threads(case: CodecCase) -> None:
    check_threads(case.codec, case.array, case.decode_kwargs)


def _chunks(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(max(1, (n + 1) // 2) for n in shape)


def _placement(case: CodecCase, codec: object) -> dict[str, object]:
    if case.kind == "array":
        return {"filters": [codec]}
    return {"serializer": codec, "compressors": None}


@pytest.mark.parametrize("case, byteorder", [  # one-byte items have no byte order
    pytest.param(case, byteorder, id=f"{case.id}-{byteorder}") for case in CODEC_CASES for byteorder in "<>"
    if byteorder == "<" or case.array.dtype.itemsize > 1])
@pytest.mark.parametrize("order", ["C", "F"])
def test_zarr_v2(case: CodecCase, order: str, byteorder: str, tmp_path) -> None:
    """zarr_format=2 arrays with the numcodecs codec as a filter (or the compressor).

    zarr v2 keeps an array's byte order and memory order in its chunks: element-wise codecs
    follow both; shape-aware codecs refuse order="F" (their decode cannot know it) at write time.
    """
    array = case.array
    if byteorder == ">":
        array = array.astype(array.dtype.newbyteorder(">"))
    chunks = _chunks(array.shape)
    # zarr v2 hands filters and the compressor flat bytes on decode: configure the chunk shape
    # (and the dtype, with its byte order) for codecs that need them.
    config = case.codec.get_config()
    keys = type(case.codec).config_keys()
    if "shape" in keys:
        config["shape"] = list(chunks)
    if "dtype" in keys and (case.kind == "bytes" or "dtype" in config):
        config["dtype"] = array.dtype.str
    codec = numcodecs.get_codec(config)
    if case.kind == "array":
        placement = {"filters": [codec], "compressors": None}
    else:
        placement = {"compressors": [codec], "filters": None}
    store = LocalStore(tmp_path / "a.zarr")
    z = zarr.create_array(
        store, shape=array.shape, chunks=chunks, dtype=array.dtype, zarr_format=2, order=order,
        fill_value=case.fill_value, **placement,
    )
    if order == "F" and not codec.elementwise:
        with pytest.raises(ValueError, match="Fortran-ordered"):
            z[...] = array
        return
    z[...] = array
    again = zarr.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    assert_same(again[...], array, case.tolerance)


@cases
@pytest.mark.parametrize("naming", ["spec", "adapter"])
def test_zarr_v3(case: CodecCase, naming: str, tmp_path) -> None:
    """zarr v3 arrays through our classes under the spec name and the numcodecs.<id> name."""
    spec_cls, adapter_cls = _v3_classes(case.codec.codec_id)
    cls = spec_cls if naming == "spec" else adapter_cls
    v3codec = cls(codec=case.codec)
    with zarr.config.set({f"codecs.{v3codec.name}": f"{cls.__module__}.{cls.__qualname__}"}):
        z = zarr.create_array(
            LocalStore(tmp_path / "a.zarr"), shape=case.array.shape, chunks=_chunks(case.array.shape),
            dtype=case.array.dtype, fill_value=case.fill_value, **_placement(case, v3codec),
        )
        z[...] = case.array
        meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
        names = [c["name"] for c in meta["codecs"]]
        assert v3codec.name in names
        again = zarr.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
        assert_same(again[...], case.array, case.tolerance)
        # Partial writes keep the fill value in untouched parts of a chunk.
        part = zarr.create_array(
            LocalStore(tmp_path / "b.zarr"), shape=case.array.shape, chunks=case.array.shape,
            dtype=case.array.dtype, fill_value=case.fill_value, **_placement(case, v3codec),
        )
        first = (slice(0, 1),) * case.array.ndim
        part[first] = case.array[first]
        got = part[...]
        expected = np.full(case.array.shape, case.fill_value, dtype=case.array.dtype)
        expected[first] = case.array[first]
        assert_same(got, expected, case.tolerance)


def test_no_warning_on_import_and_use(tmp_path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import numcodecs_ext  # noqa: F401

        for case in CODEC_CASES:
            numcodecs.get_codec(case.codec.get_config()).encode(case.array)


@pytest.mark.cluster
def test_dask_distributed_cluster(tmp_path) -> None:
    """A real LocalCluster writes a chunked zarr array through every codec and reads it back."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster):
        for case in CODEC_CASES:
            spec_cls, _ = _v3_classes(case.codec.codec_id)
            path = str(tmp_path / f"{case.id}.zarr")
            chunks = _chunks(case.array.shape)
            z = zarr.create_array(
                LocalStore(path), shape=case.array.shape, chunks=chunks, dtype=case.array.dtype,
                fill_value=case.fill_value, **_placement(case, spec_cls(codec=case.codec)),
            )
            # The array, with our codec instance in its metadata, is pickled to the workers.
            da.store(da.from_array(case.array, chunks=chunks), z, lock=False, compute=True)
            assert_same(zarr.open_array(LocalStore(path), mode="r")[...], case.array, case.tolerance)


def test_forked_child_encodes_through_zarr(tmp_path) -> None:
    """The zarr v3 layer's worker pool is rebuilt in a forked child (dask and multiprocessing
    workers started with fork), instead of waiting forever on the parent's dead threads."""
    import multiprocessing

    from numcodecs_ext.zarr3 import Transpose

    data = np.arange(2 * 1024 * 1024, dtype="float64").reshape(1024, 2048)  # > 1 MiB: pooled
    path = str(tmp_path / "a.zarr")
    z = zarr.create_array(LocalStore(path), shape=data.shape, chunks=data.shape, dtype=data.dtype,
                          filters=[Transpose(order=[1, 0])], compressors=None)
    z[...] = data  # starts the pool in this process
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply_async(_write_and_check, (path, 2.0)).get(timeout=60)
    assert np.array_equal(zarr.open_array(LocalStore(path), mode="r")[...], data * 2)


def _write_and_check(path: str, factor: float) -> bool:
    z = zarr.open_array(LocalStore(path), mode="r+")
    data = z[...]
    z[...] = data * factor
    return bool(np.array_equal(z[...], data * factor))


@cases
def test_zarr_v3_sharded(case: CodecCase, tmp_path) -> None:
    """Inside zarr's sharding codec (inner chunks of a shard go through our codecs)."""
    spec_cls, _ = _v3_classes(case.codec.codec_id)
    v3codec = spec_cls(codec=case.codec)
    shards = tuple(2 * c for c in _chunks(case.array.shape))
    with zarr.config.set({f"codecs.{v3codec.name}": f"{spec_cls.__module__}.{spec_cls.__qualname__}"}):
        z = zarr.create_array(
            LocalStore(tmp_path / "s.zarr"), shape=case.array.shape, chunks=_chunks(case.array.shape),
            shards=shards, dtype=case.array.dtype, fill_value=case.fill_value, **_placement(case, v3codec),
        )
        z[...] = case.array
        inner = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["codecs"][0]
        assert inner["name"] == "sharding_indexed"
        assert v3codec.name in [c["name"] for c in inner["configuration"]["codecs"]]
        assert_same(zarr.open_array(LocalStore(tmp_path / "s.zarr"), mode="r")[...], case.array, case.tolerance)


@pytest.mark.parametrize("sharded", [False, True])
def test_unrepresentable_fill_value_is_an_error_even_in_shards(sharded: bool, tmp_path) -> None:
    """uint16 - 1000 with the default fill value 0 cannot be stored (spec: MUST be an error).

    zarr >= 3.3 validates a shard's inner codecs with a made-up fill value, so for sharded arrays
    the check happens when the first chunk is written instead of at creation.
    """
    from numcodecs_ext.zarr3 import ScaleOffset

    with pytest.raises(ValueError, match="fill value.*below the offset"):
        z = zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=(8,), chunks=(4,),
                              shards=(8,) if sharded else None, dtype="uint16",
                              filters=[ScaleOffset(offset=1000)], compressors=None)
        z[...] = np.arange(1000, 1008, dtype="uint16")


@pytest.mark.parametrize("kwargs,match", [
    ({"dtype": "float64", "fill_value": 2.5, "filters": "cast_u8"}, "does not survive"),
    ({"dtype": "uint16", "fill_value": 0, "filters": "offset_1000"}, "below the offset"),
    ({"dtype": "float64", "fill_value": 30.0, "filters": "scale_then_cast"}, "cannot be cast"),
])
def test_fill_value_the_chain_cannot_carry(kwargs, match, tmp_path) -> None:
    """A fill value our codecs cannot carry (the spec: an error) is refused at the first write on
    every zarr version, so no chunk is ever stored with it; the array still opens and reads (as
    one another implementation wrote must), since reading never encodes the fill value."""
    from numcodecs_ext.zarr3 import CastValue, ScaleOffset

    codecs = {
        "cast_u8": [CastValue(data_type="uint8")],
        "offset_1000": [ScaleOffset(offset=1000)],
        "scale_then_cast": [ScaleOffset(scale=10), CastValue(data_type="uint8")],
    }
    kwargs = dict(kwargs)
    filters = codecs[kwargs.pop("filters")]
    path = tmp_path / "a.zarr"
    z = zarr.create_array(LocalStore(path), shape=(8,), chunks=(4,), compressors=None,
                          filters=filters, **kwargs)
    with pytest.raises(ValueError, match=match):
        z[:2] = 1000
    assert [p.name for p in path.rglob("*") if p.is_file()] == ["zarr.json"]
    again = zarr.open_array(LocalStore(path), mode="r")[...]
    assert np.array_equal(again, np.full(8, kwargs["fill_value"], kwargs["dtype"]))


def test_unusable_zfp_chunks_refused_at_creation(tmp_path) -> None:
    """A configuration that can write no chunk at all is refused by create_array."""
    from numcodecs_ext.zarr3 import Zfp

    with pytest.raises(TypeError, match="floating-point"):
        zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=(8,), chunks=(4,), dtype="int32",
                          serializer=Zfp(mode="fixed_accuracy", tolerance=1.0), compressors=None)
    with pytest.raises(ValueError, match="at most 4"):
        zarr.create_array(LocalStore(tmp_path / "b.zarr"), shape=(2,) * 5, chunks=(2,) * 5,
                          dtype="float32", serializer=Zfp(mode="reversible"), compressors=None)
