"""``migrate --in-place --finish`` proves every thing the v2 metadata means against the v3 metadata,
not only the values: between ``--in-place`` and ``--finish`` a zarr v2 writer may change the v2
metadata (documented as allowed), and --finish must then refuse, remove nothing, and name the way
out (remove the node's zarr.json, rerun --in-place), which works."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place
from numcodecs_ext.store.errors import UsageError

from tests.helpers.migrate_helpers import build_v2, hashes, quiet


def _edit(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    doc = json.loads(path.read_text()) if path.exists() else {}
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.fixture
def in_place(tmp_path: Path) -> Path:
    src = tmp_path / "v2.zarr"
    build_v2(src, chunks=2)
    migrate_in_place(src)
    return src


# every edit keeps every chunk readable through the v2 metadata
EDITS: dict[str, tuple[Callable[[Path], None], str]] = {
    "renamed _ARRAY_DIMENSIONS": (
        lambda s: _edit(s / "t/.zattrs", lambda d: d.update(_ARRAY_DIMENSIONS=["lat", "lon"])),
        "t (dimension names (_ARRAY_DIMENSIONS))"),
    "fill value": (lambda s: _edit(s / "t/.zarray", lambda d: d.update(fill_value=260.0)),
                   "t (fill value, attribute _FillValue)"),
    "array attribute": (lambda s: _edit(s / "t/.zattrs", lambda d: d.update(units="degC")), "t (attribute units)"),
    "new array attribute": (lambda s: _edit(s / "f/.zattrs", lambda d: d.update(title="x")), "f (attribute title)"),
    "removed attribute": (lambda s: _edit(s / "t/.zattrs", lambda d: d.pop("units")),
                          "t (attribute units (only in zarr.json))"),
    "attribute added through v3": (lambda s: _edit(s / "t/zarr.json", lambda d: d["attributes"].update(history="x")),
                                   "t (attribute history (only in zarr.json))"),
    "group attribute": (lambda s: _edit(s / ".zattrs", lambda d: d.update(title="other")), "/ (attribute title)"),
    "subgroup attribute": (lambda s: _edit(s / "sub/.zattrs", lambda d: d.update(a=1)), "sub (attribute a)"),
    "data type": (lambda s: _edit(s / "sub/b/.zarray", lambda d: d.update(dtype=">i4")), "sub/b (data type"),
    "byte order": (lambda s: _edit(s / "sub/b/.zarray", lambda d: d.update(dtype="<i8")),
                   "sub/b (codecs (order, byte order, filters or compressor))"),
    "order": (lambda s: _edit(s / "f/.zarray", lambda d: d.update(order="C")),
              "f (codecs (order, byte order, filters or compressor))"),
    "shape": (lambda s: _edit(s / "f/.zarray", lambda d: d.update(shape=[4, 8])), "f (shape)"),
    "chunks": (lambda s: _edit(s / "cast/.zarray", lambda d: d.update(chunks=[25])), "cast (chunks)"),
    "compressor": (lambda s: _edit(s / "t/.zarray", lambda d: d["compressor"].update(level=9)),
                   "t (codecs (order, byte order, filters or compressor))"),
    "filters": (lambda s: _edit(s / "cast/.zarray", lambda d: d.update(filters=None)),
                "cast (codecs (order, byte order, filters or compressor))"),
    "chunk keys": (lambda s: _edit(s / "sub/b/.zarray", lambda d: d.update(dimension_separator=".")),
                   "sub/b (chunk keys)"),
    "array became a group": (lambda s: ((s / "scalar/.zarray").unlink(), _edit(s / "scalar/.zgroup",
                             lambda d: d.update(zarr_format=2))), "scalar (whether it is an array or a group"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_finish_refuses_a_v2_metadata_change_and_removes_nothing(in_place: Path, edit: str) -> None:
    change, said = EDITS[edit]
    change(in_place)
    before = hashes(in_place)
    with pytest.raises(UsageError, match="nothing was removed") as e:
        finish_in_place(in_place)
    assert said in str(e.value) and "--in-place" in str(e.value)
    assert hashes(in_place) == before
    with pytest.raises(UsageError):
        finish_in_place(in_place, dry_run=True)


def test_the_way_out_picks_up_renamed_dimensions_and_a_new_fill(in_place: Path, capsys) -> None:
    EDITS["renamed _ARRAY_DIMENSIONS"][0](in_place)
    EDITS["fill value"][0](in_place)
    assert main(["migrate", str(in_place), "--in-place", "--finish"]) == 2
    err = capsys.readouterr().err
    assert "remove the zarr.json of these nodes" in err
    (in_place / "t/zarr.json").unlink()
    migrate_in_place(in_place)
    report = finish_in_place(in_place)
    assert report.verified and not list(in_place.rglob(".z*"))
    with quiet():
        t = zarr.open_array(str(in_place / "t"), mode="r")
    assert t.metadata.dimension_names == ("lat", "lon") and t.fill_value == 260.0
    assert t.attrs["_FillValue"] == json.loads((in_place / "t/zarr.json").read_text())["attributes"]["_FillValue"]


def test_an_array_removed_through_v2_is_gone_from_both_views(in_place: Path) -> None:
    with quiet():
        del zarr.open_group(str(in_place), mode="r+", zarr_format=2)["cast"]  # as zarr removes a node
    assert not (in_place / "cast").exists()
    assert finish_in_place(in_place).verified
    with quiet():
        assert "cast" not in zarr.open_group(str(in_place), mode="r")


def test_finish_refuses_an_array_added_through_v2(in_place: Path) -> None:
    with quiet():
        zarr.open_group(str(in_place), mode="r+", zarr_format=2).create_array("new", shape=(3,), dtype="i2")
    with pytest.raises(UsageError, match=r"new.*--in-place"):
        finish_in_place(in_place)
    migrate_in_place(in_place)  # the way out: --in-place resumes, adding new's zarr.json
    assert finish_in_place(in_place).verified


def test_an_unchanged_store_migrated_with_options_finishes(tmp_path: Path) -> None:
    src = tmp_path / "v2.zarr"
    build_v2(src, chunks=2)
    migrate_in_place(src, wrap=True, keep_numcodecs=True)
    assert "wrap" in json.dumps(json.loads((src / "t/zarr.json").read_text())["codecs"])
    assert finish_in_place(src).verified


def _consolidated_v2(tmp_path: Path) -> tuple[Path, Any]:
    """A zarr v2 store as xarray writes one, with consolidated metadata (.zmetadata)."""
    xr = pytest.importorskip("xarray")
    src = tmp_path / "v2.zarr"
    ds = xr.Dataset({"t": (("y", "x"), np.arange(12, dtype="f4").reshape(3, 4), {"units": "K"}),
                     "n": ("y", np.array([1, 2, 3], dtype="i2"))}, attrs={"title": "test"})
    with quiet():
        ds.to_zarr(src, zarr_format=2, consolidated=True)
    assert (src / ".zmetadata").exists()
    return src, ds


def test_consolidated_metadata_is_kept_through_a_migration(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    src, ds = _consolidated_v2(tmp_path)
    report = migrate(src, tmp_path / "v3.zarr")
    assert any("keeps its consolidated metadata" in n for n in report.notes)
    root = json.loads((tmp_path / "v3.zarr/zarr.json").read_text())
    assert set(root["consolidated_metadata"]["metadata"]) == {"t", "n"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Failed to open Zarr store with consolidated metadata"
        got = xr.open_zarr(tmp_path / "v3.zarr")
        xr.testing.assert_identical(got.load(), ds)
        g = zarr.open_consolidated(str(tmp_path / "v3.zarr"))
        assert np.array_equal(g["n"][...], ds["n"].values)
    # a source without it gets none (as zarr would)
    plain = tmp_path / "plain.zarr"
    build_v2(plain, chunks=2)
    migrate(plain, tmp_path / "plain3.zarr")
    assert "consolidated_metadata" not in json.loads((tmp_path / "plain3.zarr/zarr.json").read_text())


def test_consolidated_metadata_is_kept_in_place_and_after_finish(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    src, ds = _consolidated_v2(tmp_path)
    migrate_in_place(src)
    assert json.loads((src / "zarr.json").read_text())["consolidated_metadata"]
    finish_in_place(src)
    assert not (src / ".zmetadata").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.testing.assert_identical(xr.open_zarr(src).load(), ds)


def test_finish_refuses_out_of_date_consolidated_metadata_of_either_version(tmp_path: Path) -> None:
    src, _ = _consolidated_v2(tmp_path)
    migrate_in_place(src)
    # a v2 writer that did not consolidate again: .zmetadata (what xarray reads) says other
    _edit(src / "t/.zattrs", lambda d: d.update(units="degC"))
    with pytest.raises(UsageError, match=r"v2 consolidated metadata.*t/.zattrs.*nothing was removed"):
        finish_in_place(src)
    with quiet():
        zarr.consolidate_metadata(str(src), zarr_format=2)
    with pytest.raises(UsageError, match=r"t \(attribute units\)"):
        finish_in_place(src)
    # the v3 document brought level by hand: only the v3 consolidated metadata is out of date now
    _edit(src / "t/zarr.json", lambda d: d["attributes"].update(units="degC"))
    before = hashes(src)
    with pytest.raises(UsageError, match=r"consolidated metadata in zarr.json is out of date for t"):
        finish_in_place(src)
    assert hashes(src) == before
    migrate_in_place(src)  # the way out: writes the root's zarr.json again
    assert finish_in_place(src).verified
    root = json.loads((src / "zarr.json").read_text())
    assert root["consolidated_metadata"]["metadata"]["t"]["attributes"]["units"] == "degC"


def test_finish_resumes_where_only_an_array_s_zattrs_is_left(in_place: Path) -> None:
    """An interrupted --finish removes an array's .zarray before its .zattrs: that state is
    finished again (the attributes still checked), not taken for a change."""
    (in_place / "t/.zarray").unlink()
    assert finish_in_place(in_place).verified
    assert not list(in_place.rglob(".z*"))
