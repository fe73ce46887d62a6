"""A zarr ZipStore opened for appending (mode "a") as migrate's source: zarr cannot make a
read-only copy of it, and migrate read nothing through it ("zarr cannot open the v2 array
itself (... with_read_only is not implemented ...)"). It is read through a read-only view now;
--in-place adds zarr.json to the zip; --finish, which must remove the v2 metadata and a zip
cannot remove anything, is refused before anything is touched, with the way out."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import zarr
from zarr.storage import ZipStore

from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place
from numcodecs_ext.store.errors import UsageError

from tests.helpers.migrate_helpers import build_v2, quiet


def _zip(tmp_path: Path) -> Path:
    src = tmp_path / "v2.zarr"
    build_v2(src, chunks=2)
    archive = tmp_path / "v2.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(src).as_posix())
    return archive


def test_a_zip_store_opened_for_appending_migrates(tmp_path: Path) -> None:
    archive = _zip(tmp_path)
    store = ZipStore(archive, mode="a")
    assert migrate(store, tmp_path / "v3.zarr").verified
    assert migrate_in_place(store).verified
    with pytest.raises(UsageError, match=r"cannot remove objects \(a zip file\).*nothing was removed. Unzip it"):
        finish_in_place(store)
    assert finish_in_place(store, dry_run=True).verified
    store.close()
    names = zipfile.ZipFile(archive).namelist()
    assert "zarr.json" in names and ".zgroup" in names and "t/.zarray" in names  # nothing removed
    with quiet():
        t = zarr.open_array(ZipStore(archive, mode="r"), path="t", mode="r", zarr_format=3)
    assert t.shape == (8, 30)
