"""StagedStore on S3 (moto's server), zarr's MemoryStore and a local disk: zarr and xarray write
and read through it, it travels to other processes with its storage options, and its commit
writes the metadata documents only, in commit order."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import zarr
from tests.helpers.s3server import ACCESS_KEY, SECRET_KEY

from numcodecs_ext.store.staging import METADATA_NAMES, LocationStore, StagedStore, commit_order
from numcodecs_ext.store.storage import Location


@pytest.fixture(params=["local", "s3", "zarr-memory"])
def where(request, tmp_path):
    if request.param == "local":
        return Location.parse(tmp_path / "out.zarr")
    if request.param == "s3":
        return Location.parse(request.getfixturevalue("s3").url("out.zarr"))
    return Location.parse(zarr.storage.MemoryStore())


def _dataset():
    t = np.arange(6)
    return xr.Dataset(
        {"temp": (("time", "x"), np.linspace(-3, 40, 24, dtype="f4").reshape(6, 4), {"units": "degC"}),
         "count": (("time",), np.array([1, 2, 3, 4, 5, 6], dtype="i2"))},
        coords={"time": t, "x": np.array([0.5, 1.5, 2.5, 3.5])}, attrs={"title": "staged"})


def _metadata(keys) -> list[str]:
    return sorted(k for k in keys if k.rpartition("/")[2] in METADATA_NAMES)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_through_the_staged_store(where, zarr_format):
    ds = _dataset()
    staged = StagedStore(where)
    ds.chunk({"time": 2}).to_zarr(staged, mode="w", zarr_format=zarr_format, consolidated=zarr_format == 2)
    assert not _metadata(where.walk().files), "metadata is held back"
    assert any("temp" in k for k in where.walk().files), "chunks are written through"
    with xr.open_zarr(staged, consolidated=zarr_format == 2) as back:  # read back before commit
        xr.testing.assert_identical(back.load(), ds)
    written = staged.commit()
    assert written == commit_order(written) and _metadata(where.walk().files) == sorted(written)
    if zarr_format == 2:
        assert written[-1] == ".zmetadata" and written[-2] == ".zgroup"
    else:
        assert written[-1] == "zarr.json"
    with xr.open_zarr(LocationStore(where), consolidated=zarr_format == 2) as again:
        xr.testing.assert_identical(again.load(), ds)


def test_discard_leaves_nothing_that_opens(where):
    staged = StagedStore(where)
    z = zarr.create_array(staged, shape=(4,), chunks=(2,), dtype="f8", fill_value=0)
    z[:] = [1, 2, 3, 4]
    staged.discard()
    assert sorted(where.walk().files) == ["c/0", "c/1"]
    with pytest.raises(FileNotFoundError):
        zarr.open_array(LocationStore(where), mode="r")


def test_commit_writes_only_metadata_in_order(s3):
    """On S3 the commit is one PUT per metadata document, in commit_order, and nothing else."""
    loc = Location.parse(s3.url("c.zarr"))
    staged = StagedStore(loc)
    root = zarr.create_group(staged, zarr_format=2)
    for name in ("a", "b/c"):
        z = root.create_array(name, shape=(4,), chunks=(2,), dtype="u1", fill_value=0)
        z[:] = 7
        z.attrs["name"] = name
    zarr.consolidate_metadata(staged, zarr_format=2)
    mark = len(s3.requests())
    written = staged.commit()
    requests = s3.proxy.since(mark)
    assert [(r.kind, r.key) for r in requests] == [("PUT", f"c.zarr/{k}") for k in written]
    assert sorted(written) == [".zattrs", ".zgroup", ".zmetadata", "a/.zarray", "a/.zattrs", "b/.zattrs",
                               "b/.zgroup", "b/c/.zarray", "b/c/.zattrs"]
    at = {k: i for i, k in enumerate(written)}
    assert at[".zmetadata"] == len(written) - 1 and at[".zgroup"] == len(written) - 2
    assert at["b/c/.zarray"] < at["b/.zgroup"] and at["b/c/.zattrs"] < at["b/c/.zarray"]
    assert at["a/.zattrs"] < at["a/.zarray"] < at[".zgroup"] and at["b/.zattrs"] < at["b/.zgroup"]
    assert zarr.open_array(LocationStore(loc), path="b/c", mode="r")[:].tolist() == [7] * 4


def test_pickles_with_its_storage_options(s3, monkeypatch):
    """A worker (another process, without the AWS_* variables) rebuilds the staged store from
    its pickle, storage options included, and writes chunks through it; no text of it shows a
    credential."""
    options = {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": {"endpoint_url": s3.endpoint}}
    loc = Location.parse(s3.url("p.zarr"), storage_options=options)
    staged = StagedStore(loc)
    z = zarr.create_array(staged, shape=(4,), chunks=(2,), dtype="i4", fill_value=0)
    again = pickle.loads(pickle.dumps(staged))
    assert again.staged == staged.staged and again.location.storage_options == options
    for text in (repr(staged), str(staged), repr(again), repr(loc), repr(LocationStore(loc))):
        assert SECRET_KEY not in text and ACCESS_KEY not in text
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    code = ("import pickle, sys, zarr, numpy as np\n"
            "staged = pickle.loads(sys.stdin.buffer.read())\n"
            "z = zarr.open_array(staged, mode='r+')\n"
            "z[2:] = [3, 4]\n")
    subprocess.run([sys.executable, "-c", code], input=pickle.dumps(staged), env=env, check=True, timeout=120)
    z[:2] = [1, 2]
    staged.commit()
    assert zarr.open_array(LocationStore(loc), mode="r")[:].tolist() == [1, 2, 3, 4]


def test_faults_inside_zarr_are_said_with_the_location(s3):
    """A store error raised while zarr reads through the location's store names the object by
    its display form (here a bucket that does not exist)."""
    from numcodecs_ext.store.storage import StoreNotFound

    loc = Location.parse(f"s3://no-{s3.name}/x.zarr")
    with pytest.raises(StoreNotFound, match=rf"^s3://no-{s3.name}/x.zarr/c/0: the bucket"):
        z = zarr.create_array(StagedStore(loc), shape=(2,), chunks=(2,), dtype="i1", fill_value=0)
        z[:] = 1
