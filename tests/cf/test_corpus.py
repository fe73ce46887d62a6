"""Real netCDF files as their producers wrote them (fixtures/netcdf/, see PROVENANCE.md there):
``numcodecs_ext.cf.convert`` and ``zarr_encoding`` + ``to_zarr`` on each, the result read back in a
fresh Python process with plain ``xr.open_zarr`` and compared with xarray's CF decoding of the
original (tests/helpers/corpus_check.py): dtypes, NaN/NaT positions, attributes, values bit for bit, or
within the documented bound where scale-packed.

A file the current code fails on stays in the test as a strict xfail whose reason is the exact
failure, so that a fix flips it (and must then remove it from ``KNOWN_FAILURES``). A file that
truly cannot be represented gets ``"refused": "<regex of the message>"`` in corpus.json instead:
convert must then refuse it with that message and leave nothing behind.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import HELPERS

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")

CORPUS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf"
#: the indexes (corpus.json, corpus-2.json ...): a committed one never changes, new files get a new one
INDEXES = sorted(CORPUS_DIR.glob("corpus*.json"))
PROVENANCE = "".join(p.read_text() for p in sorted(CORPUS_DIR.glob("PROVENANCE*.md")))
ENTRIES = [entry for index in INDEXES for entry in json.loads(index.read_text())["files"]]
CHECKER = HELPERS / "corpus_check.py"
HDF5_FORMATS = {"NETCDF4", "NETCDF4_CLASSIC", "HDF5"}


def _zarr_warning() -> type[Warning]:
    import zarr.errors

    return getattr(zarr.errors, "UnstableSpecificationWarning", UserWarning)


# (file, "convert" | "zarr_encoding") -> (exception type, the exact current failure [its cause]).
# A fix flips its entry to XPASS, which fails (strict): then delete the entry. The nine found on
# main 71e0dc8 (text missing_value, char arrays in v3, _Unsigned counts and packed coordinates
# through zarr_encoding, int32 times with fill values) are fixed: every file converts.
KNOWN_FAILURES: dict[tuple[str, str], tuple[Any, str]] = {
    # xarray's own to_zarr writes a char variable's _FillValue into zarr v3 that its zarr reader
    # cannot decode ("Failed to decode fill_value. Unsupported dtype |S1"): xarray's, not
    # zarr_encoding's (which leaves char variables alone); convert refuses the file up front
    ("example_3_maskedvals.nc", "zarr_encoding"): (
        AssertionError, "xarray cannot read back a char _FillValue from zarr v3 (xarray's bug)"),
    # zarr_encoding + to_zarr is xarray's own write: a padded compound comes back packed (another
    # dtype; convert refuses it in v3 and packs it in v2), and xarray cannot open a file with an
    # attribute of a vlen-of-compound type at all (convert refuses it before writing)
    # (zarr 3.4 warns as it packs: a UserWarning, an error here)
    ("ref_tst_compounds3.nc", "zarr_encoding"): ((AssertionError, UserWarning),
                                                 "xarray's to_zarr drops a compound's padding"),
    ("ref_tst_xplatform2_1.nc", "zarr_encoding"): (KeyError, "xarray cannot read an attribute of a vlen type"),
}

# More files to run through test_convert and test_zarr_encoding_to_zarr, e.g. ones whose licence
# keeps them out of fixtures/ (xarray's tutorial eraint_uvz.nc): NUMCODECS_EXT_CORPUS_EXTRA=a.nc:b.nc
EXTRA = [Path(p) for p in os.environ.get("NUMCODECS_EXT_CORPUS_EXTRA", "").split(os.pathsep) if p]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _extra_entry(path: Path) -> dict[str, Any]:
    with netCDF4.Dataset(path) as nc:
        model = nc.data_model
    return {"file": path.name, "path": str(path), "format": model, "sha256": _sha256(path)}


#: the files each check runs on without NUMCODECS_EXT_FULL: netCDF-3, netCDF-4 with packing, HDF5
#: groups, a byte type (the whole corpus runs with the switch, as CI runs it)
QUICK = {"convert": {"ubyte.nc", "euro_air_temp.nc", "ref_groups.h5", "ref_nctest_64bit_offset.nc"},
         "zarr_encoding": {"ubyte.nc", "euro_air_temp.nc"}}


def _params(kind: str) -> list[Any]:
    out = []
    for entry in ENTRIES + [_extra_entry(p) for p in EXTRA]:
        marks = [] if entry["file"] in QUICK[kind] or entry not in ENTRIES else [pytest.mark.full]
        known = KNOWN_FAILURES.get((entry["file"], kind))
        if known is not None:
            marks.append(pytest.mark.xfail(strict=True, raises=known[0], reason=known[1]))
        out.append(pytest.param(entry, id=entry["file"], marks=marks))
    return out


def _features(path: Path) -> list[str]:
    """What CF and netCDF features a file exercises, read from the file itself with netCDF4 (raw
    attributes, nothing decoded); corpus.json's "features" must say exactly this."""
    found: set[str] = set()
    with warnings.catch_warnings():  # netCDF4's note on a type it cannot read (ref_tst_xplatform2_1.nc)
        warnings.filterwarnings("ignore", "WARNING: unsupported", UserWarning)
        nc = netCDF4.Dataset(path)
    with nc:
        groups = [nc]
        todo = list(nc.groups.values())
        while todo:
            g = todo.pop(0)
            groups.append(g)
            todo.extend(g.groups.values())
        if len(groups) > 1:
            found.add("groups")
        for g in groups:
            for dim in g.dimensions.values():
                if dim.isunlimited():
                    found.add("unlimited dimension" if len(dim) else "zero-length unlimited dimension")
            for var in g.variables.values():
                found |= _variable_features(var)
    return sorted(found)


def _variable_features(var: Any) -> set[str]:
    found: set[str] = set()
    attrs = {k: var.getncattr(k) for k in var.ncattrs()}
    kind = getattr(var.dtype, "kind", "O")
    if kind in "iu" and "scale_factor" in attrs:
        found |= {"scale_factor", f"packed {var.dtype}"}
        if float(np.asarray(attrs["scale_factor"])) < 0:
            found.add("negative scale_factor")
        if "add_offset" not in attrs:
            found.add("scale_factor without add_offset")
    if kind in "iu" and "add_offset" in attrs:
        found.add("add_offset")
    found |= {k for k in ("_Unsigned", "_FillValue", "missing_value", "valid_range") if k in attrs}
    if isinstance(attrs.get("missing_value"), str):
        found.add("string missing_value")
    if "_FillValue" in attrs and "missing_value" in attrs and not isinstance(attrs["missing_value"], str):
        same = np.array_equal(np.asarray(attrs["missing_value"]), np.asarray(attrs["_FillValue"]))
        found.add("_FillValue == missing_value" if same else "_FillValue != missing_value")
    for key in ("valid_min", "valid_max", "valid_range"):
        if key in attrs:
            found.add("valid_range" if key == "valid_range" else "valid_min/valid_max")
            if isinstance(attrs[key], str):
                found.add("string valid_min/valid_max")
            elif kind in "iuf" and np.asarray(attrs[key]).dtype != var.dtype:
                found.add("valid_* of another type than the data")
    units, calendar = attrs.get("units"), attrs.get("calendar")
    if isinstance(units, str) and " since " in units:
        found.add("time units")
    if isinstance(calendar, str) and calendar.lower() not in ("standard", "gregorian", "proleptic_gregorian"):
        found.add(f"calendar {calendar}")
    if var.ndim == 0:
        found.add("scalar variables")
    if kind == "S" or var.dtype is str:
        found.add("char/string variables")
    if kind == "u" and var.dtype.itemsize == 8:
        found.add("uint64")
    if kind in "iuf" and var.dtype.byteorder == ">":
        found.add("big-endian")
    if len(set(var.dimensions)) != len(var.dimensions):
        found.add("repeated dimension")
    return found


def _groups(path: Path) -> list[str | None]:
    """Every group, root first (None), as netCDF-C lists them: ``a``, ``a/b`` ..."""
    out: list[str | None] = [None]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "WARNING: unsupported", UserWarning)
        nc = netCDF4.Dataset(path)
    with nc:
        todo = list(nc.groups.values())
        while todo:
            g = todo.pop(0)
            out.append(g.path.lstrip("/"))
            todo.extend(g.groups.values())
    return out


def _source_copy(entry: dict[str, Any], tmp_path: Path) -> Path:
    """The fixture copied aside: a tool that wrote into its source must not damage the corpus."""
    src = tmp_path / entry["file"]
    shutil.copyfile(entry.get("path") or CORPUS_DIR / entry["file"], src)
    return src


def _convert_function() -> Any:
    """``numcodecs_ext.cf.convert``, the public function (see
    test_numcodecs_ext_cf_convert_is_the_function for why it may come back as the module)."""
    from numcodecs_ext import cf

    fn = cf.convert
    return fn if callable(fn) else fn.convert


def _check_in_fresh_process(spec: dict[str, Any], tmp_path: Path) -> list[str]:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    run = subprocess.run(
        [sys.executable, str(CHECKER), str(spec_path)],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, f"the checker failed:\n{run.stderr[-3000:]}"
    result = json.loads(run.stdout)
    for note in result["notes"]:
        print(note)
    return result["problems"]


def _assert_no_problems(problems: list[str]) -> None:
    if problems:
        raise AssertionError(
            f"{len(problems)} difference(s); first: {problems[0]}\n" + "\n".join(problems[1:20])
        )


def _ignore_what_xarray_says_about_the_file() -> None:
    """Warnings xarray gives about the original file's own content (several fill values, repeated
    dimension names): a user opening the file sees them too; they are not failures of ours."""
    warnings.filterwarnings("ignore", category=xr.SerializationWarning)
    warnings.filterwarnings("ignore", message="Duplicate dimension names present", category=UserWarning)
    warnings.filterwarnings("ignore", message="WARNING: unsupported", category=UserWarning)  # netCDF4's


def _engines(entry: dict[str, Any]) -> list[str]:
    if entry["format"] not in HDF5_FORMATS:
        return ["default"]
    if importlib.util.find_spec("h5netcdf") is None or importlib.util.find_spec("h5py") is None:
        pytest.fail('h5netcdf and h5py are test dependencies: pip install -e ".[test]"')
    return ["default", "h5netcdf"]


# --- the corpus itself ----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_fixture_is_what_provenance_says(entry):
    path = CORPUS_DIR / entry["file"]
    assert path.stat().st_size == entry["size"]
    assert _sha256(path) == entry["sha256"], f"{entry['file']} changed: a committed fixture never changes"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "WARNING: unsupported", UserWarning)
        with netCDF4.Dataset(path) as nc:
            model = nc.data_model
    if entry["format"] == "HDF5":  # a plain HDF5 file that netCDF-C reads as netCDF-4
        assert model == "NETCDF4" and path.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    else:
        assert model == entry["format"]
    assert entry["file"] in PROVENANCE
    assert entry["features"] == _features(path), "corpus.json's features are what the file holds"


def test_corpus_covers_what_issue_27_asks():
    assert len(ENTRIES) >= 10
    assert len({e["producer_organisation"] for e in ENTRIES}) >= 4
    assert {"NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF4", "NETCDF4_CLASSIC", "HDF5"} <= {
        e["format"] for e in ENTRIES
    }
    features = {f for e in ENTRIES for f in e["features"]}
    for wanted in (
        "packed int16",
        "packed int32",
        "scale_factor",
        "add_offset",
        "negative scale_factor",
        "_Unsigned",
        "_FillValue",
        "missing_value",
        "_FillValue == missing_value",
        "_FillValue != missing_value",
        "valid_range",
        "valid_min/valid_max",
        "time units",
        "groups",
        "unlimited dimension",
        "zero-length unlimited dimension",
    ):
        assert wanted in features, wanted
    total = sum(e["size"] for e in ENTRIES)
    assert total == sum((CORPUS_DIR / e["file"]).stat().st_size for e in ENTRIES) < 8 << 20
    on_disk = {p.name for p in CORPUS_DIR.iterdir()} - {p.name for p in INDEXES}
    on_disk -= {p.name for p in CORPUS_DIR.glob("PROVENANCE*.md")}
    assert on_disk == {e["file"] for e in ENTRIES}, "every file in fixtures/netcdf/ is described"


def test_numcodecs_ext_cf_convert_is_the_function():
    code = (
        "import numcodecs_ext.cf as cf\nfirst = cf.convert\nfrom numcodecs_ext.cf import convert\n"
        "assert callable(first), first\nassert callable(convert), convert\nassert callable(cf.convert), cf.convert\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr.strip().splitlines()[-1]


# --- convert ----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", _params("convert"))
def test_convert(entry, tmp_path):
    """``numcodecs_ext.cf.convert(src, dst)``, read back in a fresh process: what xarray decodes."""
    src = _source_copy(entry, tmp_path)
    dst = tmp_path / "out.zarr"
    refused = entry.get("refused")
    if refused:
        from numcodecs_ext.store.errors import ToolError

        with pytest.raises((ValueError, ToolError), match=refused):
            _convert_function()(src, dst)
        assert not dst.exists(), "a refused file leaves nothing behind"
        return
    with warnings.catch_warnings():
        _ignore_what_xarray_says_about_the_file()
        report = _convert_function()(src, dst)
    assert _sha256(src) == entry["sha256"], "convert wrote into its source"
    packed = {}
    for name, packing in report.packed.items():
        sf, ao = packing.scale_factor, packing.add_offset
        packed[name] = {
            "bound": float(packing.decode_difference()),
            "reported": None if name not in report.max_difference else float(report.max_difference[name]),
            "valid": {
                "packed": packing.packed.name,
                "scale_factor": None if sf is None else float(sf),
                "add_offset": None if ao is None else float(ao),
            },
        }
    # every variable is accounted for once: packed or stored as it is
    names = list(report.packed) + list(report.plain)
    assert len(names) == len(set(names))
    spec = {
        "src": str(src),
        "store": str(dst),
        "groups": _groups(src),
        "engines": _engines(entry),
        "packed": packed,
    }
    _assert_no_problems(_check_in_fresh_process(spec, tmp_path))


# --- zarr_encoding + to_zarr ------------------------------------------------------------------


@pytest.mark.parametrize("entry", _params("zarr_encoding"))
def test_zarr_encoding_to_zarr(entry, tmp_path):
    """``ds.to_zarr(encoding=zarr_encoding(ds))`` per group of the file, read back in a fresh process."""
    from numcodecs_ext.cf import packing_from_attrs, zarr_encoding

    src = _source_copy(entry, tmp_path)
    dst = tmp_path / "out.zarr"
    packed: dict[str, Any] = {}
    for group in _groups(src):
        with warnings.catch_warnings():
            _ignore_what_xarray_says_about_the_file()
            ds = xr.open_dataset(src, group=group)
        with ds, warnings.catch_warnings():
            # xarray's own to_zarr of the variables zarr_encoding leaves alone (char arrays) warns
            # that fixed-length bytes have no zarr v3 spec: xarray's doing, tested in test_convert
            warnings.filterwarnings("ignore", category=_zarr_warning())
            _ignore_what_xarray_says_about_the_file()
            encoding = zarr_encoding(ds)
            prefix = "" if group is None else group + "/"
            for name in encoding:
                var = ds.variables[name]
                packing = packing_from_attrs(var.encoding["dtype"], var.encoding, unpacked=var.dtype)
                if packing is None:  # not packed (an _Unsigned count, attributes xarray cannot write)
                    continue
                packed[prefix + str(name)] = {"bound": float(packing.decode_difference()), "reported": None}
            ds.to_zarr(
                dst,
                group=group,
                mode="w-" if group is None else "a",
                encoding=encoding,
                zarr_format=3,
                consolidated=False,
            )
    assert _sha256(src) == entry["sha256"]
    spec = {
        "src": str(src),
        "store": str(dst),
        "groups": _groups(src),
        "engines": _engines(entry),
        "packed": packed,
    }
    _assert_no_problems(_check_in_fresh_process(spec, tmp_path))


@pytest.mark.full
def test_checker_sees_a_wrong_value_a_moved_nan_and_a_changed_attribute(tmp_path):
    """The comparison itself can fail: one changed bit, one NaN moved, one attribute changed."""
    data = np.array([[1.5, np.nan, 3.0]], dtype="float32")
    src = tmp_path / "s.nc"
    xr.Dataset({"t": (("y", "x"), data, {"units": "K"})}).to_netcdf(src)
    cases = {
        "values are not bit for bit": lambda d: d.assign(
            t=d.t.copy(data=np.nextafter(data, 9, dtype="float32"))
        ),
        "missing values": lambda d: d.assign(t=d.t.copy(data=np.array([[1.5, 2.0, np.nan]], "float32"))),
        "attribute 'units'": lambda d: d.assign(t=d.t.assign_attrs(units="degC")),
    }
    for expected, change in cases.items():
        store = tmp_path / f"{len(expected)}.zarr"
        with xr.open_dataset(src) as ds:
            change(ds.load()).to_zarr(store, zarr_format=3, consolidated=False)
        spec = {"src": str(src), "store": str(store), "groups": [None], "engines": ["default"], "packed": {}}
        problems = _check_in_fresh_process(spec, tmp_path)
        assert len(problems) == 1 and expected in problems[0], problems
    store = tmp_path / "same.zarr"
    with xr.open_dataset(src) as ds:
        ds.to_zarr(store, zarr_format=3, consolidated=False)
    spec = {"src": str(src), "store": str(store), "groups": [None], "engines": ["default"], "packed": {}}
    assert _check_in_fresh_process(spec, tmp_path) == []
    # a packed variable: within the bound passes, beyond it fails
    spec["packed"] = {"t": {"bound": 0.0, "reported": None}}
    assert _check_in_fresh_process(spec, tmp_path) == []
    with xr.open_dataset(src) as ds:
        ds.load().assign(t=ds.t + np.float32(1e-3)).to_zarr(
            tmp_path / "off.zarr", zarr_format=3, consolidated=False
        )
    spec["store"] = str(tmp_path / "off.zarr")
    spec["packed"] = {"t": {"bound": 1e-4, "reported": None}}
    problems = _check_in_fresh_process(spec, tmp_path)
    assert len(problems) == 1 and re.search(r"exceeds the bound", problems[0]), problems
