"""Read-only zarr objects beyond the store classes: a zarr Group or Array opened with mode="r"
(taken as the store path it was opened on: it was refused as "not a path, URL or zarr store",
naming neither the store nor a way out), a ZipStore opened for reading, and an FsspecStore opened
read_only=True on S3 (the moto server). Every tool that writes refuses before writing anything,
naming the store and the way out; dry runs and reading work; nothing changes (hashed)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.storage import FsspecStore, ZipStore

from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place, normalize, plan_migration
from numcodecs_ext.store.errors import UsageError

from tests.helpers.cf_files import write_variable
from tests.helpers.migrate_helpers import build_v2, hashes, quiet

WAY_OUT = (r"the store was opened read-only.*nothing was written. "
           r"Open the store with read_only=False, or give its path or URL")


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    build_v2(tmp_path / "v2.zarr", chunks=2)
    return tmp_path / "v2.zarr"


def _group(path: Path, fmt: int) -> Any:
    with quiet():
        return zarr.open_group(str(path), mode="r", zarr_format=fmt)


def test_a_group_opened_read_only_is_refused_naming_its_store(v2: Path, tmp_path: Path) -> None:
    before = hashes(v2)
    for how in (migrate_in_place, finish_in_place):
        with pytest.raises(UsageError, match=f"{v2}: {WAY_OUT}"):
            how(_group(v2, 2))
    with quiet():
        array = zarr.open_array(str(v2 / "t"), mode="r", zarr_format=2)
    with pytest.raises(UsageError, match=f"{v2 / 't'}: {WAY_OUT}"):
        migrate_in_place(array)
    assert plan_migration(_group(v2, 2), in_place=True).verified
    assert hashes(v2) == before
    assert migrate(_group(v2, 2), tmp_path / "v3.zarr").verified  # read from, fine
    v3 = tmp_path / "v3.zarr"
    before = hashes(v3)
    with pytest.raises(UsageError, match=f"{v3}: {WAY_OUT}"):
        normalize(_group(v3, 3))
    normalize(_group(v3, 3), dry_run=True)
    empty = tmp_path / "empty.zarr"
    with quiet():
        target = zarr.open_group(str(empty), mode="w", zarr_format=3)
        target = zarr.open_group(str(empty), mode="r")
    with pytest.raises(UsageError, match=f"{empty}: {WAY_OUT}"):
        migrate(v2, target)
    assert hashes(v3) == before and [p.name for p in empty.iterdir()] == ["zarr.json"]


def test_a_writable_group_is_its_store(v2: Path) -> None:
    with quiet():
        group = zarr.open_group(str(v2), mode="r+", zarr_format=2)
    assert migrate_in_place(group).verified and (v2 / "zarr.json").exists()


def test_convert_refuses_a_group_opened_read_only(tmp_path: Path) -> None:
    pytest.importorskip("netCDF4")
    from numcodecs_ext.cf import convert

    nc = tmp_path / "in.nc"
    write_variable(nc, "NETCDF4", np.arange(12, dtype="f4").reshape(3, 4), {"units": "K"})
    out = tmp_path / "out.zarr"
    with quiet():
        zarr.open_group(str(out), mode="w", zarr_format=3)
    before = hashes(out)
    with pytest.raises(UsageError, match=r"read-only.*convert writes the new store there"):
        convert(nc, _group(out, 3))
    assert hashes(out) == before


def test_a_zip_store_opened_for_reading(v2: Path, tmp_path: Path) -> None:
    archive = tmp_path / "v2.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in sorted(v2.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(v2).as_posix())
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    store = ZipStore(archive, mode="r")
    for how in (migrate_in_place, finish_in_place):
        with pytest.raises(UsageError, match=WAY_OUT):
            how(store)
    assert plan_migration(store, in_place=True).verified
    assert migrate(store, tmp_path / "v3.zarr").verified
    store.close()
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == digest


def _objects(s3: Any) -> dict[str, str]:
    """Every object of the bucket with the sha256 of its bytes."""
    s3.fs.invalidate_cache()
    keys = [k[len(s3.name) + 1:] for k in s3.fs.find(s3.path())]
    return {k: hashlib.sha256(s3.get(k)).hexdigest() for k in sorted(keys)}


def test_a_read_only_fsspec_store_on_s3(s3: Any, v2: Path, tmp_path: Path) -> None:
    s3.upload(v2, "v2.zarr")
    migrate(v2, tmp_path / "v3.zarr")
    s3.upload(tmp_path / "v3.zarr", "v3.zarr")
    before = _objects(s3)
    with quiet():
        src = FsspecStore.from_url(s3.url("v2.zarr"), read_only=True)
        v3 = FsspecStore.from_url(s3.url("v3.zarr"), read_only=True)
        empty = FsspecStore.from_url(s3.url("new.zarr"), read_only=True)
    for how in (migrate_in_place, finish_in_place):
        with pytest.raises(UsageError, match=WAY_OUT):
            how(src)
    with pytest.raises(UsageError, match=WAY_OUT):
        normalize(v3)
    with pytest.raises(UsageError, match=WAY_OUT):
        migrate(src, empty)
    assert plan_migration(src, in_place=True).verified
    normalize(v3, dry_run=True)
    assert len(before) > 20 and _objects(s3) == before
