"""``--finish`` compares JSON as a reader takes it: between ``--in-place`` and ``--finish`` a zarr v2
writer that turns an attribute ``2.0`` into ``2`` or ``true`` (which Python's ``==`` calls equal)
changes what xarray reads (an int16 variable with ``scale_factor: 2`` decodes to int64, with 2.0 to
float64, with true to bool), and ``-0.0`` is another fill value than ``0.0``. --finish refuses such a
change and removes nothing; a NaN attribute left as it was is no change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from numcodecs_ext.migrate import finish_in_place, migrate_in_place
from numcodecs_ext.store.errors import UsageError

from tests.helpers.migrate_helpers import build_v2, hashes, quiet


def _edit(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def in_place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("strict") / "v2.zarr"
    build_v2(src, chunks=2)
    _edit(src / "t/.zattrs", lambda d: d.update(n=1, z=0.0, flag=True, nested={"a": [1, 2]}, missing=float("nan")))
    migrate_in_place(src)
    return src


EDITS: dict[str, Callable[[Path], None]] = {
    "1 -> 1.0": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(n=1.0)),
    "1 -> true": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(n=True)),
    "true -> 1": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(flag=1)),
    "0.0 -> -0.0": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(z=-0.0)),
    "0.0 -> 0": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(z=0)),
    "nested 1 -> 1.0": lambda s: _edit(s / "t/.zattrs", lambda d: d.update(nested={"a": [1.0, 2]})),
    "fill 0.0 -> -0.0": lambda s: _edit(s / "f/.zarray", lambda d: d.update(fill_value=-0.0)),
}
SAID = {"true -> 1": "t (attribute flag)", "0.0 -> -0.0": "t (attribute z)", "0.0 -> 0": "t (attribute z)",
        "nested 1 -> 1.0": "t (attribute nested)", "fill 0.0 -> -0.0": "f (fill value)"}


@pytest.mark.parametrize("edit", EDITS)
def test_finish_refuses_a_change_that_python_calls_equal(in_place: Path, tmp_path: Path, edit: str) -> None:
    store = tmp_path / "v2.zarr"
    shutil.copytree(in_place, store)
    EDITS[edit](store)
    before = hashes(store)
    with pytest.raises(UsageError, match="nothing was removed") as e:
        finish_in_place(store)
    assert SAID.get(edit, "t (attribute n)") in str(e.value)
    assert hashes(store) == before


def test_a_nan_attribute_left_as_it_was_finishes(in_place: Path, tmp_path: Path) -> None:
    store = tmp_path / "v2.zarr"
    shutil.copytree(in_place, store)
    assert finish_in_place(store).verified
    assert np.isnan(json.loads((store / "t/zarr.json").read_text())["attributes"]["missing"])


def test_xarray_reads_what_the_v2_view_read_or_finish_refuses(tmp_path: Path) -> None:
    """The case end to end: xarray's int16 variable with scale_factor 2.0, changed to 2 through v2."""
    xr = pytest.importorskip("xarray")
    src = tmp_path / "v2.zarr"
    ds = xr.Dataset({"v": ("x", np.arange(4, dtype="i2"), {"scale_factor": 2.0})})
    with quiet():
        ds.to_zarr(src, zarr_format=2, consolidated=True, encoding={"v": {"dtype": "i2"}})
        before = xr.open_zarr(src)["v"].dtype
        migrate_in_place(src)
        _edit(src / "v/.zattrs", lambda d: d.update(scale_factor=2))
        _edit(src / ".zmetadata", lambda d: d["metadata"]["v/.zattrs"].update(scale_factor=2))  # consolidated too
        changed = xr.open_zarr(src, zarr_format=2)["v"].dtype
    assert (before, changed) == (np.float64, np.int64)  # what the v2 writer's change means to xarray
    with pytest.raises(UsageError, match=r"v \(attribute scale_factor\)"):
        finish_in_place(src)
    assert (src / "v/.zattrs").exists()


def test_out_of_date_consolidated_metadata_by_type_alone_is_refused(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    src = tmp_path / "v2.zarr"
    ds = xr.Dataset({"v": ("x", np.arange(4, dtype="i2"), {"scale_factor": 2.0})})
    with quiet():
        ds.to_zarr(src, zarr_format=2, consolidated=True)
    migrate_in_place(src)
    _edit(src / ".zmetadata", lambda d: d["metadata"]["v/.zattrs"].update(scale_factor=2))  # what xarray reads
    with pytest.raises(UsageError, match=r"v2 consolidated metadata.*v/.zattrs"):
        finish_in_place(src)


def test_a_code_written_through_v2_is_said_to_read_as_the_map_s_value(tmp_path: Path) -> None:
    """--nan-code gives NaN the code 65535, which the v2 metadata reads as 905.35; a v2 writer may
    write 905.35 between --in-place and --finish, and --finish cannot tell that from a NaN written
    through v3: it says that such a write now reads as NaN."""
    import zarr

    src = tmp_path / "v2.zarr"
    build_v2(src, chunks=2)
    migrate_in_place(src, nan_code={"t": "auto"})
    with quiet():
        zarr.open_array(str(src / "t"), mode="r+", zarr_format=2)[0, 0] = np.float32(905.35)
    report = finish_in_place(src)
    assert any("a v2 writer that wrote the value a code means" in n for n in report.notes), report.notes
