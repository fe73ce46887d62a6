"""What convert cannot write is refused before anything is written, naming the variable, its
type and a way out; what it can write reads back as xarray reads the source. The class walked:
every netCDF type (vlen, compound with and without padding, nested and array members, enum,
string, char with and without _FillValue, char arrays sharing a dimension) and every naming
hazard (zarr's metadata document names, path separators, the journal's prefix), in zarr v2 and
v3, and the attributes xarray's zarr reader hides (``_nc*`` in any case)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")
zarr = pytest.importorskip("zarr")

from numcodecs_ext.cf import convert  # noqa: E402
from numcodecs_ext.store.journal import CONVERT_JOURNAL as PREFIX  # noqa: E402
from numcodecs_ext.store.errors import ToolError  # noqa: E402


def _nc(path, fmt: str = "NETCDF4"):
    return netCDF4.Dataset(path, "w", format=fmt)


def _read(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, **kwargs).load()


def _read_store(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path, consolidated=False).load()


def _refused(src, dst, pattern: str, **kwargs) -> str:
    with pytest.raises(ToolError, match=pattern) as caught:
        convert(src, dst, **kwargs)
    assert not dst.exists(), "a refusal before writing leaves nothing"
    message = str(caught.value)
    assert "run the same command again" not in message
    assert "np." not in message and "dtype(" not in message  # no numpy reprs
    return message


# -- names ------------------------------------------------------------------------------------------


def _named(path, name: str, *, group: bool = False) -> None:
    """A variable (or a group holding one) named ``name``, written through h5netcdf: netCDF-C
    refuses names that begin with a dot, HDF5 (and so netCDF-C reading the file) takes them."""
    import h5netcdf

    with h5netcdf.File(path, "w") as f:
        where = f.create_group(name) if group else f
        where.dimensions = {"x": 3}
        where.create_variable("v" if group else name, ("x",), "f4")[:] = [1, 2, 3]


@pytest.mark.parametrize("name", ["zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata", PREFIX, "a\\b"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_variable_named_like_a_store_key_is_refused(tmp_path, name, zarr_format):
    src = tmp_path / "n.nc"
    _named(src, name)
    message = _refused(src, tmp_path / "o.zarr", "rename it first", zarr_format=zarr_format)
    assert repr(name) in message and "ncrename" in message


@pytest.mark.parametrize("name", ["zarr.json", ".zgroup"])
def test_a_group_named_like_a_store_key_is_refused(tmp_path, name):
    src = tmp_path / "g.nc"
    _named(src, name, group=True)
    message = _refused(src, tmp_path / "o.zarr", "rename it first")
    assert f"group {name!r}" in message


def test_a_variable_in_a_group_may_take_the_journals_name(tmp_path):
    import h5netcdf

    src = tmp_path / "g.nc"
    with h5netcdf.File(src, "w") as f:
        g = f.create_group("g")
        g.dimensions = {"x": 3}
        g.create_variable(PREFIX, ("x",), "f4")[:] = [1, 2, 3]
    assert convert(src, tmp_path / "o.zarr").verified


# -- types ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", [None, "h5netcdf"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_ragged_variable_is_refused(tmp_path, engine, zarr_format):
    src = tmp_path / "r.nc"
    with _nc(src) as nc:
        nc.createDimension("x", 3)
        nc.createVariable("ok", "f4", ("x",))[:] = [1, 2, 3]
        vt = nc.createVLType(np.int32, "ragged")
        v = nc.createVariable("r", vt, ("x",))
        for i in range(3):
            v[i] = np.arange(i + 1, dtype="i4")
    message = _refused(src, tmp_path / "o.zarr", "variable-length", zarr_format=zarr_format, engine=engine)
    assert "'r'" in message and "int32" in message and "drop it" in message


def _compound(path, dtype: np.dtype) -> np.ndarray:
    values = np.zeros(4, dtype)
    for n in dtype.names:
        if dtype.fields[n][0].names is None:
            values[n] = np.arange(4).reshape((4,) + (1,) * len(dtype.fields[n][0].shape)) + 0.5
    with _nc(path) as nc:
        nc.createDimension("x", 4)
        for sub in [dtype.fields[n][0] for n in dtype.names if dtype.fields[n][0].names is not None]:
            nc.createCompoundType(sub, "inner")
        ct = nc.createCompoundType(dtype, "cmp")
        nc.createVariable("c", ct, ("x",))[:] = values
    return values


def test_a_compound_with_padding_converts_in_zarr_v2(tmp_path):
    src, dst = tmp_path / "c.nc", tmp_path / "o.zarr"
    values = _compound(src, np.dtype([("a", "i1"), ("b", "f8")]))  # netCDF-4 pads 'a' to 8 bytes
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ZarrUserWarning leaks
        report = convert(src, dst, zarr_format=2)
    assert report.verified
    got = _read_store(dst)["c"].values
    assert list(got.dtype.names) == ["a", "b"]
    np.testing.assert_array_equal(got["a"], values["a"])
    np.testing.assert_array_equal(got["b"], values["b"])


def test_a_compound_is_refused_in_zarr_v3_with_its_fields(tmp_path):
    src = tmp_path / "c.nc"
    _compound(src, np.dtype([("a", "i1"), ("b", "f8")]))
    message = _refused(src, tmp_path / "o.zarr", "--zarr-format 2")
    assert "'c'" in message and "a: int8, b: float64" in message


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", [
    np.dtype([("a", "i4"), ("m", "f4", (2,))]),
    np.dtype([("a", "i4"), ("n", np.dtype([("p", "i2"), ("q", "f4")]))]),
], ids=["array member", "nested"])
def test_a_compound_no_zarr_format_holds_is_refused_in_both(tmp_path, zarr_format, dtype):
    src = tmp_path / "c.nc"
    _compound(src, dtype)
    message = _refused(src, tmp_path / "o.zarr", "nested or array members", zarr_format=zarr_format)
    assert "--zarr-format 2" not in message and "drop it" in message


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_enum_converts_as_its_codes(tmp_path, zarr_format):
    src, dst = tmp_path / "e.nc", tmp_path / "o.zarr"
    with _nc(src) as nc:
        nc.createDimension("x", 3)
        et = nc.createEnumType(np.uint8, "cloud", {"clear": 0, "cloudy": 1, "missing": 255})
        nc.createVariable("e", et, ("x",), fill_value=255)[:] = np.array([0, 1, 255], "u1")
    assert convert(src, dst, zarr_format=zarr_format).verified
    np.testing.assert_array_equal(_read_store(dst)["e"].values, _read(src)["e"].values)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_strings_convert_and_read_back(tmp_path, zarr_format):
    src, dst = tmp_path / "s.nc", tmp_path / "o.zarr"
    words = np.array(["a", "", "ccc", "é" * 30], dtype=object)
    with _nc(src) as nc:
        nc.createDimension("x", 4)
        nc.createVariable("s", str, ("x",))[:] = words
    assert convert(src, dst, zarr_format=zarr_format).verified
    assert [str(w) for w in _read_store(dst)["s"].values] == list(words)


# -- char ------------------------------------------------------------------------------------------


def _char_with_fill(path) -> None:
    """scipy's example_3_maskedvals.nc shape: a char variable with a _FillValue, beside others."""
    with _nc(path, "NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 3)
        nc.createVariable("a", "f4", ("x",))[:] = [1, 2, 3]
        nc.createVariable("c", "S1", ("x",), fill_value=b"x")[:] = np.array([b"a", b"x", b"b"])
        nc.createVariable("b", "i4", ("x",))[:] = [1, 2, 3]


def test_a_char_variable_with_a_fill_value_is_refused_in_v3_naming_it(tmp_path):
    src = tmp_path / "c.nc"
    _char_with_fill(src)
    message = _refused(src, tmp_path / "o.zarr", "--zarr-format 2")
    assert message.startswith("variable 'c'") and "char" in message and "_FillValue" in message


def test_a_char_variable_with_a_fill_value_converts_in_v2(tmp_path):
    src, dst = tmp_path / "c.nc", tmp_path / "o.zarr"
    _char_with_fill(src)
    assert convert(src, dst, zarr_format=2).verified
    got, want = _read_store(dst)["c"].values, _read(src)["c"].values
    assert [None if isinstance(x, float) else x for x in got] == [None if isinstance(x, float) else x for x in want]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF4"])
@pytest.mark.parametrize("dims", [(("x", "s"), ("x",)), (("s", "x"), ("s",)), (("x", "s"), ("s",))],
                         ids=["1-D on the leading dimension", "1-D on the char dimension of another", "shared"])
def test_char_arrays_sharing_a_dimension_read_back_as_the_file(tmp_path, zarr_format, fmt, dims):
    src, dst = tmp_path / "c.nc", tmp_path / "o.zarr"
    with _nc(src, fmt) as nc:
        nc.createDimension("x", 3)
        nc.createDimension("s", 4)
        for i, d in enumerate(dims):
            shape = tuple(len(nc.dimensions[n]) for n in d)
            nc.createVariable(f"v{i}", "S1", d)[:] = np.array(list("abcdefghijkl"[:int(np.prod(shape))]),
                                                               "S1").reshape(shape)
    assert convert(src, dst, zarr_format=zarr_format).verified
    got, want = _read_store(dst), _read(src)
    for name in ("v0", "v1"):
        assert got[name].dims == want[name].dims
        np.testing.assert_array_equal(got[name].values, want[name].values)


# -- attributes xarray's zarr reader hides -----------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_nc_attributes_are_kept_and_compared_as_xarray_shows_them(tmp_path, zarr_format):
    src, dst = tmp_path / "a.nc", tmp_path / "o.zarr"
    with _nc(src) as nc:
        nc.setncattr("_NCPROPERTIES", "version=2,netcdf=4.6.1,hdf5=1.10.1")
        nc.setncattr("title", "kept")
        nc.createDimension("x", 3)
        v = nc.createVariable("v", "f4", ("x",))
        v[:] = [1, 2, 3]
        v.setncattr("_nc_note", "a")
        g = nc.createGroup("g")
        g.setncattr("_NcThing", "b")
    report = convert(src, dst, zarr_format=zarr_format)
    assert report.verified
    assert any("_NCPROPERTIES" in n and "kept in the store" in n for n in report.notes), report.notes
    assert any("_NcThing" in n for n in report.notes), report.notes
    assert ("_nc_note" in " ".join(report.variables["v"].notes)) == (zarr_format == 2)  # hidden in v2 only
    root = zarr.open_group(str(dst), mode="r")
    assert root.attrs["_NCPROPERTIES"] == "version=2,netcdf=4.6.1,hdf5=1.10.1"  # in the store, as to_zarr does
    assert root["v"].attrs["_nc_note"] == "a"
    shown = _read_store(dst)
    assert "_NCPROPERTIES" not in shown.attrs and shown.attrs["title"] == "kept"
    assert "_NCPROPERTIES" in str(report)


# -- the real files of these shapes (fixtures/netcdf/, refused in v3 by test_corpus) ------------------


def test_the_corpus_compound_converts_in_zarr_v2(tmp_path):
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf" / "ref_tst_compounds3.nc"
    dst = tmp_path / "o.zarr"
    assert convert(src, dst, zarr_format=2).verified
    got, want = _read_store(dst)["var"].values, _read(src)["var"].values
    for field in ("x", "y"):
        np.testing.assert_array_equal(got[field], want[field])


def test_the_corpus_char_with_fill_value_converts_in_zarr_v2(tmp_path):
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf" / "example_3_maskedvals.nc"
    assert convert(src, tmp_path / "o.zarr", zarr_format=2).verified


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_strings_with_a_fill_value_read_back_as_the_file(tmp_path, zarr_format):
    """zarr v3's string type has no fill value xarray can write (it failed before writing with
    numpy's words and no variable): the _FillValue becomes missing_value, masked the same way."""
    src, dst = tmp_path / "s.nc", tmp_path / "o.zarr"
    with _nc(src) as nc:
        nc.createDimension("x", 3)
        nc.createVariable("a", "f4", ("x",))[:] = [1, 2, 3]
        nc.createVariable("s", str, ("x",), fill_value="-")[:] = np.array(["a", "-", "c"], dtype=object)
    report = convert(src, dst, zarr_format=zarr_format)
    assert report.verified
    got, want = _read_store(dst)["s"].values, _read(src)["s"].values
    assert [None if isinstance(x, float) else str(x) for x in got] == ["a", None, "c"]
    assert [None if isinstance(x, float) else str(x) for x in want] == ["a", None, "c"]
    assert any("missing_value" in n for n in report.variables["s"].notes) == (zarr_format == 3)
