"""Stores opened read-only are never written: every tool that writes (migrate --in-place, --finish,
migrate's destination, normalize, convert's destination) refuses such a store before writing
anything, naming it and the way out; dry runs and reading from such a store still work."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import zarr
from zarr.storage import FsspecStore, LocalStore, MemoryStore, StorePath

from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place, normalize, plan_migration
from numcodecs_ext.store.errors import UsageError

from tests.helpers.cf_files import write_variable
from tests.helpers.migrate_helpers import build_v2, hashes, quiet


MEMORY: dict[int, dict[str, Any]] = {}  # each read-only MemoryStore's contents


def _memory_copy(path: Path) -> MemoryStore:
    """A read-only MemoryStore holding the files below ``path`` (over a writable one's dict)."""
    from zarr.core.buffer import default_buffer_prototype

    proto = default_buffer_prototype()
    contents = {p.relative_to(path).as_posix(): proto.buffer.from_bytes(p.read_bytes())
                for p in sorted(path.rglob("*")) if p.is_file()}
    store = MemoryStore(contents, read_only=True)
    MEMORY[id(store)] = contents
    return store


def _object_store(path: Path) -> Any:
    obstore = pytest.importorskip("obstore")
    from zarr.storage import ObjectStore

    return ObjectStore(obstore.store.LocalStore(prefix=str(path)), read_only=True)


def _fsspec(path: Path) -> Any:
    with quiet():
        return FsspecStore.from_url(f"file://{path}", read_only=True)


READ_ONLY: dict[str, Callable[[Path], Any]] = {
    "LocalStore": lambda p: LocalStore(str(p), read_only=True),
    "FsspecStore": _fsspec,
    "ObjectStore": _object_store,
    "MemoryStore": _memory_copy,
    "StorePath": lambda p: StorePath(LocalStore(str(p.parent), read_only=True), p.name),
}


def _state(store: Any, path: Path) -> Any:
    """What could have changed: the files below ``path``, or a MemoryStore's keys and bytes."""
    if isinstance(store, MemoryStore):
        return {k: v.to_bytes() for k, v in MEMORY[id(store)].items()}
    return hashes(path)


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    build_v2(tmp_path / "v2.zarr", chunks=2)
    return tmp_path / "v2.zarr"


@pytest.mark.parametrize("kind", READ_ONLY)
def test_migrate_in_place_refuses_a_read_only_store(v2: Path, kind: str) -> None:
    store = READ_ONLY[kind](v2)
    before = _state(store, v2)
    with pytest.raises(UsageError, match=r"read-only.*zarr.json.*nothing was written.*read_only=False"):
        migrate_in_place(store)
    assert _state(store, v2) == before
    report = plan_migration(store, in_place=True)  # a dry run only reads
    assert report.arrays and _state(store, v2) == before


@pytest.mark.parametrize("kind", READ_ONLY)
def test_migrate_finish_refuses_a_read_only_store(v2: Path, kind: str) -> None:
    migrate_in_place(v2)
    store = READ_ONLY[kind](v2)
    before = _state(store, v2)
    with pytest.raises(UsageError, match=r"read-only.*--finish removes its v2 metadata.*nothing was written"):
        finish_in_place(store)
    assert _state(store, v2) == before
    report = finish_in_place(store, dry_run=True)
    assert report.finished and _state(store, v2) == before


@pytest.mark.parametrize("kind", READ_ONLY)
def test_migrate_refuses_a_read_only_destination_and_reads_a_read_only_source(v2: Path, tmp_path: Path,
                                                                            kind: str) -> None:
    empty = tmp_path / "out.zarr"
    empty.mkdir()
    dst = READ_ONLY[kind](empty)
    with pytest.raises(UsageError, match=r"read-only.*writes the new store there.*nothing was written"):
        migrate(v2, dst)
    assert not any(empty.iterdir())
    assert plan_migration(v2, dst).arrays
    # the source may be read-only: it is only read
    src = READ_ONLY[kind](v2)
    before = _state(src, v2)
    report = migrate(src, tmp_path / "new.zarr")
    assert report.verified and _state(src, v2) == before
    with quiet():
        assert np.array_equal(zarr.open_array(str(tmp_path / "new.zarr/t"), mode="r")[...],
                              zarr.open_array(str(v2 / "t"), mode="r", zarr_format=2)[...])


@pytest.mark.parametrize("kind", READ_ONLY)
def test_normalize_refuses_a_read_only_store(v2: Path, tmp_path: Path, kind: str) -> None:
    v3 = tmp_path / "v3.zarr"
    migrate(v2, v3, keep_numcodecs=True)
    store = READ_ONLY[kind](v3)
    before = _state(store, v3)
    with pytest.raises(UsageError, match=r"read-only.*normalize replaces zarr.json.*--dry-run"):
        normalize(store)
    assert _state(store, v3) == before
    normalize(store, dry_run=True)
    assert _state(store, v3) == before


@pytest.mark.parametrize("kind", ["LocalStore", "FsspecStore", "ObjectStore", "MemoryStore", "StorePath"])
def test_convert_refuses_a_read_only_destination(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("netCDF4")
    from numcodecs_ext.cf import convert

    nc = tmp_path / "in.nc"
    write_variable(nc, "NETCDF4", np.arange(12, dtype="f4").reshape(3, 4), {"units": "K"})
    empty = tmp_path / "out.zarr"
    empty.mkdir()
    with pytest.raises(UsageError, match=r"read-only.*convert writes the new store there"):
        convert(nc, READ_ONLY[kind](empty))
    assert not any(empty.iterdir())


def test_a_zip_url_is_read_only(v2: Path, tmp_path: Path) -> None:
    """fsspec's zip filesystem opens a zip file for reading: a store in it is not written."""
    archive = shutil.make_archive(str(tmp_path / "v2"), "zip", v2)
    before = Path(archive).read_bytes()
    with pytest.raises(UsageError, match=r"filesystem is read-only.*nothing was written"):
        migrate_in_place(f"zip::file://{archive}")
    assert Path(archive).read_bytes() == before
    assert migrate(f"zip::file://{archive}", tmp_path / "from_zip.zarr").verified


@pytest.mark.parametrize("action", ["in_place", "finish", "dst"])
def test_an_http_url_is_read_only(tmp_path: Path, action: str) -> None:
    """http(s) is a read-only filesystem: refused before any request is made."""
    pytest.importorskip("aiohttp")
    url = "https://example.invalid/store.zarr"
    with pytest.raises(UsageError,
                       match=r"example.invalid/store.zarr: the filesystem is read-only.*nothing was written"):
        if action == "dst":
            migrate(tmp_path, url)
        else:
            (finish_in_place if action == "finish" else migrate_in_place)(url)
