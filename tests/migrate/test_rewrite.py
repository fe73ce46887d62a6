"""A rewritten run is stored with the objects zarr's write stores (encoded in the task's thread),
and runs it cannot encode so are left to zarr's write; migrate --rewrite stores zarr's bytes."""

from __future__ import annotations

import numcodecs
import numpy as np
import obstore
import pytest
import zarr
from zarr.codecs import BytesCodec

from numcodecs_ext.migrate import migrate
from numcodecs_ext.migrate.rewrite import store_run
from numcodecs_ext.store.staging import StagedStore
from numcodecs_ext.zarr3 import CastValue, ScaleOffset

FILTERS = [ScaleOffset(offset=250, scale=100), CastValue(data_type="uint16")]


def _objects(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.name != "zarr.json"}


def _values():
    values = (250 + np.arange(70, dtype="f4").reshape(10, 7) / 4).astype("f4")
    values[8:, 4:] = 250.0  # an edge chunk of the fill value only: no object
    values[:4, :4] = 250.0  # a whole one
    return values


@pytest.mark.parametrize("sel", [(slice(0, 10), slice(0, 7)), (slice(4, 10), slice(4, 7)), (slice(0, 4), slice(0, 4))])
def test_a_run_is_stored_as_zarr_stores_it(tmp_path, sel):
    values = _values()
    kwargs = dict(name="t", shape=(10, 7), chunks=(4, 4), dtype="float32", filters=FILTERS, fill_value=250.0)
    by_zarr = zarr.create_array(tmp_path / "z.zarr", **kwargs)
    mine = zarr.create_array(tmp_path / "m.zarr", **kwargs)
    for arr in (by_zarr, mine):  # objects there before: replaced, or deleted where only fill is left
        arr[...] = values + 1
    by_zarr[sel] = values[sel]
    store = StagedStore(str(tmp_path / "m.zarr"))
    assert store_run(store, "t", mine, sel, np.ascontiguousarray(values[sel]), key=(str(tmp_path), "run")) is True
    assert _objects(tmp_path / "m.zarr") == _objects(tmp_path / "z.zarr") != {}
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "m.zarr", path="t")[sel], values[sel])
    assert ("t/c/0/0" in _objects(tmp_path / "m.zarr")) == (sel[0].start > 0)  # deleted where the run had it


def test_what_it_cannot_encode_is_left_to_zarr(tmp_path):
    values = _values()
    sel = (slice(0, 10), slice(0, 7))
    sharded = zarr.create_array(tmp_path / "s.zarr", name="t", shape=(10, 7), chunks=(2, 2), shards=(4, 4),
                                dtype="float32", filters=FILTERS, fill_value=250.0)
    store = StagedStore(str(tmp_path / "s.zarr"))
    assert store_run(store, "t", sharded, sel, values, key=(str(tmp_path), "sharded")) is False
    plain = zarr.create_array(tmp_path / "p.zarr", name="t", shape=(10, 7), chunks=(4, 4), dtype="float32")
    store = StagedStore(str(tmp_path / "p.zarr"))
    # values of another type: zarr converts them its own way
    assert store_run(store, "t", plain, sel, values.astype("f8"), key=(str(tmp_path), "plain")) is False
    assert _objects(tmp_path / "s.zarr") == {} and _objects(tmp_path / "p.zarr") == {}


def test_migrate_rewrite_stores_what_zarr_would(tmp_path):
    src = zarr.create_array(tmp_path / "v2.zarr", shape=(37, 21), chunks=(8, 8), dtype="<f4", zarr_format=2,
                            fill_value=250.0, compressors=numcodecs.Zstd(level=1),
                            filters=[numcodecs.FixedScaleOffset(offset=250, scale=100, dtype="<f4", astype="<u2")])
    values = (250 + np.random.default_rng(1).uniform(0, 600, (37, 21))).round(2).astype("f4")
    values[:8, :8] = 250.0
    values[32:, 16:] = 250.0
    src[...] = values
    migrate(tmp_path / "v2.zarr", tmp_path / "v3.zarr", rewrite=True, verify="full")
    out = zarr.open_array(tmp_path / "v3.zarr")
    np.testing.assert_array_equal(out[...], src[...])
    again = zarr.create_array(tmp_path / "again.zarr", shape=out.shape, chunks=out.chunks, dtype=out.dtype,
                              fill_value=out.fill_value, filters=out.filters, serializer=out.serializer,
                              compressors=out.compressors, chunk_key_encoding=out.metadata.chunk_key_encoding)
    again[...] = src[...]
    assert _objects(tmp_path / "v3.zarr") == _objects(tmp_path / "again.zarr")
    assert "0.0" not in _objects(tmp_path / "v3.zarr")  # the chunk of the fill value only


@pytest.mark.parametrize("through_zarr", [False, True])  # (True: as where the array has no chunk encoder)
@pytest.mark.parametrize("chunks", [(1_000,), (4_000,)])  # several chunks a run, and one
def test_runs_read_into_one_buffer_never_change_what_was_stored(tmp_path, monkeypatch, chunks, through_zarr):
    # zarr 3.1's MemoryStore keeps the very object it is given: a chain of no copying codec
    # stores a view of the values, which each thread reads into the same buffer run after run
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "32000")
    if through_zarr:
        import numcodecs_ext.migrate.tasks as tasks

        monkeypatch.setattr(tasks, "store_run", lambda *args, **kwargs: False)
    src = zarr.storage.MemoryStore()
    a = zarr.create_array(src, name="x", shape=(24_000,), chunks=chunks, dtype="f8", zarr_format=2,
                          compressors=None)
    values = np.random.default_rng(0).normal(size=a.shape)
    a[:] = values
    for rewrite_dst in (zarr.storage.MemoryStore(), zarr.storage.ObjectStore(obstore.store.MemoryStore())):
        migrate(src, rewrite_dst, rewrite=True, verify="full")
        np.testing.assert_array_equal(zarr.open_array(rewrite_dst, path="x")[:], values)


@pytest.mark.parametrize("chain", [{"filters": FILTERS}, {"serializer": BytesCodec(endian="big")},
                                   {"serializer": BytesCodec(endian="little"), "compressors": None}])
def test_values_of_another_byte_order_are_stored_as_zarr_stores_them(tmp_path, chain):
    values = _values()
    kwargs = dict(name="t", shape=(10, 7), chunks=(4, 4), dtype="float32", fill_value=250.0, **chain)
    by_zarr = zarr.create_array(tmp_path / "z.zarr", **kwargs)
    by_zarr[...] = values.astype(">f4")
    mine = zarr.create_array(tmp_path / "m.zarr", **kwargs)
    store = StagedStore(str(tmp_path / "m.zarr"))
    sel = (slice(0, 10), slice(0, 7))
    assert store_run(store, "t", mine, sel, values.astype(">f4"), key=(str(tmp_path), "big")) is True
    assert _objects(tmp_path / "m.zarr") == _objects(tmp_path / "z.zarr") != {}
