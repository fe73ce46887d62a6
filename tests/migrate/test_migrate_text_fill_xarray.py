"""A zarr v2 text array with a fill value and xarray's dimension names: xarray masks the fill value
of a v2 array (the stored string "0" too, when zarr-python 2's default fill 0 reads as "0"), but
reads no text ``_FillValue`` in zarr v3. The migrated array gets the fill value as the attribute
``missing_value``, which xarray masks alike, so that xarray reads the migrated store (new, or in
place and finished) as it read the v2 one; consolidated metadata stays consolidated and right,
opened with no warning. (Bytes have no JSON attribute form: that one stays a note.)"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place

xr = pytest.importorskip("xarray")


def _v2(root: Path, dtype: str, fill: Any) -> Path:
    """A consolidated v2 group holding ``v`` (4 elements in chunks of 2, the second chunk not
    written), as zarr-python 2 wrote it."""
    (root / "v").mkdir(parents=True)
    filters = [{"id": "vlen-utf8"}] if dtype == "|O" else None
    zarray = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": dtype, "fill_value": fill, "order": "C",
              "filters": filters, "compressor": {"id": "zstd", "level": 1}}
    docs = {".zgroup": {"zarr_format": 2}, ".zattrs": {"title": "t"}, "v/.zarray": zarray,
            "v/.zattrs": {"_ARRAY_DIMENSIONS": ["x"], "units": "m"}}
    for key, doc in docs.items():
        (root / key).write_text(json.dumps(doc))
    (root / ".zmetadata").write_text(json.dumps({"zarr_consolidated_format": 1, "metadata": docs}))
    values = np.array(["ab", "0"], dtype=object if dtype == "|O" else dtype)
    raw = numcodecs.VLenUTF8().encode(values) if dtype == "|O" else values.tobytes()
    (root / "v/0").write_bytes(numcodecs.Zstd(level=1).encode(raw))
    return root


def _xarray(path: Path, **kwargs: Any) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Failed to open Zarr store with consolidated metadata"
        values = xr.open_zarr(path, **kwargs)["v"].values
    return ["missing" if isinstance(v, float) else str(v) for v in values.tolist()]


CASES = [("|O", 0), ("|O", ""), ("|O", None), ("|O", "abc"), ("<U3", ""), ("<U3", "x")]


@pytest.mark.parametrize(("dtype", "fill"), CASES)
def test_xarray_reads_the_migrated_text_as_it_read_the_v2_one(tmp_path: Path, dtype: str, fill: Any) -> None:
    src = _v2(tmp_path / "v2.zarr", dtype, fill)
    want = _xarray(src, zarr_format=2)
    if fill is not None:
        assert "missing" in want  # what this is about: xarray masked the v2 fill value
    assert migrate(src, tmp_path / "v3.zarr").verified
    assert _xarray(tmp_path / "v3.zarr") == want
    inplace = tmp_path / "inplace.zarr"
    shutil.copytree(src, inplace)
    migrate_in_place(inplace)
    assert finish_in_place(inplace).verified
    assert _xarray(inplace) == want and not (inplace / ".zmetadata").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        group = zarr.open_consolidated(str(inplace))
        assert group.metadata.consolidated_metadata is not None
        assert group["v"].attrs.get("missing_value") == (None if fill is None else group["v"].fill_value)


def test_a_missing_value_of_the_source_is_kept(tmp_path: Path) -> None:
    src = _v2(tmp_path / "v2.zarr", "|O", "")
    doc = json.loads((src / "v/.zattrs").read_text())
    doc["missing_value"] = "n/a"
    (src / "v/.zattrs").write_text(json.dumps(doc))
    (src / ".zmetadata").unlink()
    migrate(src, tmp_path / "v3.zarr")
    assert json.loads((tmp_path / "v3.zarr/v/zarr.json").read_text())["attributes"]["missing_value"] == "n/a"


def test_an_interrupted_finish_of_a_text_array_finishes(tmp_path: Path) -> None:
    """--finish removes an array's .zarray before its .zattrs: the missing_value made from the
    fill value that .zarray held is no attribute "only in zarr.json" then."""
    src = _v2(tmp_path / "v2.zarr", "|O", "")
    want = _xarray(src, zarr_format=2)
    migrate_in_place(src)
    for key in (".zmetadata", "v/.zarray"):  # as far as an interrupted --finish got
        (src / key).unlink()
    assert finish_in_place(src).verified
    assert _xarray(src) == want and not list(src.rglob(".z*"))


@pytest.mark.parametrize("fill", ["", "eA=="])
def test_fixed_size_bytes_that_xarray_masked_are_said(tmp_path: Path, fill: str) -> None:
    """Bytes have no attribute form xarray masks in v3: xarray masked the v2 fill value and reads
    it in v3; the plan says so (it said nothing of fixed-size bytes)."""
    src = _v2(tmp_path / "v2.zarr", "|S3", fill)
    assert "missing" in _xarray(src, zarr_format=2)
    report = migrate(src, tmp_path / "v3.zarr")
    assert any("xarray read the fill value of this v2 array as missing" in n for n in report.arrays[0].notes)
