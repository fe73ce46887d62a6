"""numcodecs_ext 0.1's public forms still work for one release, each with a DeprecationWarning
that names its replacement: ``migrate(src, dst, in_place=, finish=, dry_run=)`` and the names of
``numcodecs_ext.dtypes``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.core import dtypes as core_dtypes
from numcodecs_ext.core import scalar_json
from numcodecs_ext.migrate import migrate
from numcodecs_ext.store.errors import UsageError


def _v2(path: Path) -> np.ndarray:
    data = np.arange(60, dtype="float32").reshape(6, 10)
    z = zarr.create_array(str(path), shape=data.shape, chunks=(3, 5), dtype="float32", zarr_format=2,
                          fill_value=0.0)
    z[...] = data
    return data


def _keys(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def test_in_place_then_finish_through_the_old_keywords(tmp_path: Path) -> None:
    src = tmp_path / "s.zarr"
    data = _v2(src)
    with pytest.warns(DeprecationWarning, match=r"use migrate_in_place\(src\)"):
        migrate(src, in_place=True)
    assert (src / "zarr.json").exists() and (src / ".zarray").exists()
    with pytest.warns(DeprecationWarning, match=r"use finish_in_place\(src\)"):
        migrate(src, finish=True)
    assert not (src / ".zarray").exists()
    got = zarr.open_array(str(src), mode="r")
    assert got.metadata.zarr_format == 3 and np.array_equal(got[...], data)


def test_dry_run_through_the_old_keyword_writes_nothing(tmp_path: Path) -> None:
    src, dst = tmp_path / "s.zarr", tmp_path / "d.zarr"
    _v2(src)
    before = _keys(src)
    with pytest.warns(DeprecationWarning, match=r"plan_migration\(src, dst\)"):
        report = migrate(src, dst, dry_run=True)
    assert report is not None and not dst.exists() and _keys(src) == before


def test_finish_through_the_old_keyword_still_takes_no_options(tmp_path: Path) -> None:
    src = tmp_path / "s.zarr"
    _v2(src)
    with pytest.warns(DeprecationWarning), pytest.raises(UsageError, match="takes no migration options"):
        migrate(src, finish=True, rewrite=True)
    assert (src / ".zarray").exists()


def test_the_current_forms_do_not_warn(tmp_path: Path, recwarn) -> None:
    src, dst = tmp_path / "s.zarr", tmp_path / "d.zarr"
    data = _v2(src)
    migrate(src, dst)
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
    assert np.array_equal(zarr.open_array(str(dst), mode="r")[...], data)
    assert json.loads((dst / "zarr.json").read_text())["zarr_format"] == 3


def test_verify_result_never_shipped_and_is_refused(tmp_path: Path) -> None:
    src, dst = tmp_path / "s.zarr", tmp_path / "d.zarr"
    _v2(src)
    with pytest.raises(UsageError, match="verify_result"):
        migrate(src, dst, verify_result=True)
    assert not dst.exists()


@pytest.mark.parametrize("name", ["NumericInfo", "numeric_info", "dtype_name", "scalar_to_json", "scalar_from_json",
                                  "check_numeric_json"])
def test_the_old_dtypes_module_names_their_new_home(name: str) -> None:
    old = importlib.import_module("numcodecs_ext.dtypes")
    home = core_dtypes if name in core_dtypes.__all__ else scalar_json
    with pytest.warns(DeprecationWarning, match=rf"moved to {home.__name__}\.{name}"):
        value = getattr(old, name)
    assert value is getattr(home, name)


def test_the_old_dtypes_module_knows_no_other_names() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        importlib.import_module("numcodecs_ext.dtypes").nothing
