"""A migrated store keeps the consolidated metadata its v2 source had, and normalize keeps it
right: after ``normalize --nan-code auto`` the consolidated entries are what zarr consolidates
from the arrays' zarr.json, and xarray opens the store with no warning."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.migrate import migrate, normalize
from numcodecs_ext.migrate.consolidated import stale_entries

from tests.helpers.migrate_helpers import fso, quiet


def _docs(store: Path) -> dict[str, dict]:
    out = {}
    for p in store.rglob("zarr.json"):
        rel = p.parent.relative_to(store).as_posix()
        out["" if rel == "." else rel] = json.loads(p.read_text())
    return out


def test_normalize_nan_code_keeps_migrated_consolidated_metadata_right(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    src, dst = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    with quiet():
        g = zarr.open_group(str(src), mode="w", zarr_format=2)
        t = g.create_array("t", shape=(40,), chunks=(10,), dtype="<f4", fill_value=np.nan, filters=[fso()])
        t[:30] = np.linspace(250, 260, 30, dtype="<f4")
        t.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        zarr.consolidate_metadata(str(src), zarr_format=2)
    report = migrate(src, dst)
    assert report.read_only and stale_entries(_docs(dst)[""], "", _docs(dst)) == []
    normalize(dst, nan_code="auto")
    docs = _docs(dst)
    assert "scalar_map" in json.dumps(docs["t"]["codecs"])
    assert stale_entries(docs[""], "", docs) == []
    assert docs[""]["consolidated_metadata"]["metadata"]["t"]["codecs"] == docs["t"]["codecs"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(dst)
        assert int(ds["t"].isnull().sum()) == 10
