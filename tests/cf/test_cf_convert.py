"""convert and zarr_encoding on real netCDF files: every CF case decodes as xarray decodes the file.

Each test writes a real file (netCDF4, or h5netcdf for plain HDF5), converts it, and compares what
``xr.open_zarr`` gives for the store with what ``xr.open_dataset`` gives for the file: dtype,
missing positions, every value (bit for bit where the packing is exact).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import zarr

from tests.helpers.cf_files import write_variable
from numcodecs_ext.cf import zarr_encoding
from numcodecs_ext.cf.convert import convert
from numcodecs_ext.cli import main
from numcodecs_ext.store.errors import ToolError, UsageError

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA", "NETCDF4", "NETCDF4_CLASSIC"]


def _open(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, **kw)


def _open_zarr(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path, **kw)


def _same(a, b, bound=0.0):
    """xarray's values of the source ``a`` and of the store ``b`` agree: dtype, NaN/NaT, values."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape
    if a.dtype.kind in "mM":
        np.testing.assert_array_equal(a.view("int64"), b.view("int64"))
    elif a.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        assert (np.abs(a[ok].astype("f8") - b[ok].astype("f8")) <= bound).all()
    else:
        np.testing.assert_array_equal(a, b)


def _converted(tmp_path, src, zarr_format, name="v", **kw):
    dst = tmp_path / f"out{zarr_format}.zarr"
    report = convert(src, dst, zarr_format=zarr_format, **kw)
    assert report.verified
    return report, _open(src)[name], _open_zarr(dst)[name], dst


# --- A: integers stay integers, verification in the data's own type ------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_int64_nanosecond_times_with_nat_stay_exact_integers(tmp_path, zarr_format):
    src = tmp_path / "t.nc"
    t = np.array([0, 1, 2**60 + 7, -2**63, 1_700_000_000_123_456_789], "int64")
    write_variable(src, "NETCDF4", t, {"units": "nanoseconds since 1970-01-01", "_FillValue": np.int64(-2**63)},
                   name="time")
    report, a, b, dst = _converted(tmp_path, src, zarr_format, name="time")
    assert a.dtype == np.dtype("datetime64[ns]") and np.isnat(a.values[3])
    _same(a.values, b.values)  # every nanosecond, NaT included
    assert report.variables["time"].route == "as is"
    z = zarr.open_array(dst / "time", mode="r")
    assert z.dtype == np.int64 and z[:].tolist()[:3] == [0, 1, 2**60 + 7]  # the integers themselves


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("dtype", ["int16", "int8", "uint16", "int32"])
def test_counts_with_only_a_fill_value_stay_integers(tmp_path, zarr_format, dtype):
    src = tmp_path / "c.nc"
    q = np.array([1, 5, 99, 3, 0], dtype)
    write_variable(src, "NETCDF4", q, {"_FillValue": np.dtype(dtype).type(99), "units": "1"})
    report, a, b, dst = _converted(tmp_path, src, zarr_format)
    _same(a.values, b.values)  # float32/float64 with NaN, as xarray gives for the file
    assert report.variables["v"].route == "as is"
    assert zarr.open_array(dst / "v", mode="r").dtype == np.dtype(dtype)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_float32_data_with_float64_scale_factor(tmp_path, zarr_format):
    src = tmp_path / "f.nc"
    x = np.array([1.5, -2.25, 3e10, np.nan, 7.0], "float32")
    write_variable(src, "NETCDF4", x, {"scale_factor": np.float64(0.1), "add_offset": np.float64(2.0),
                                       "_FillValue": np.float32(7.0)})
    report, a, b, dst = _converted(tmp_path, src, zarr_format)
    assert a.dtype == np.float64 and np.isnan(a.values[4])
    vp = report.variables["v"]
    assert vp.route == "packed" and vp.packing.packed == np.float32
    q = x.astype("f8")
    _same(a.values, b.values, bound=np.nanmax(vp.packing.decode_bound(x)))
    assert np.isnan(b.values[3]) and np.isnan(b.values[4]) and not np.isnan(q[0])


# --- B: CF attributes as xarray reads them ---------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_unsigned_with_an_unsigned_missing_value(tmp_path, zarr_format):
    src = tmp_path / "u.nc"
    q = np.array([0, 1, -1, -2, 127], "int8")  # -1 = 255 (the fill), -2 = 254 (missing_value)
    write_variable(src, "NETCDF4", q, {"_Unsigned": "true", "scale_factor": np.float32(0.5),
                                                    "_FillValue": np.int8(-1), "missing_value": np.uint8(254)})
    _, a, b, _ = _converted(tmp_path, src, zarr_format)
    np.testing.assert_array_equal(a.values, [0, 0.5, np.nan, np.nan, 63.5])  # xarray's reading
    _same(a.values, b.values)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_unsigned_false_on_an_unsigned_type(tmp_path, zarr_format):
    src = tmp_path / "s.nc"
    q = np.array([0, 1, 255, 128, 200], "uint8")
    write_variable(src, "NETCDF4", q, {"_Unsigned": "false", "scale_factor": np.float32(0.25),
                                       "_FillValue": np.uint8(255)})
    report, a, b, _ = _converted(tmp_path, src, zarr_format)
    assert report.variables["v"].packing.packed == np.int8
    np.testing.assert_array_equal(a.values, [0, 0.25, np.nan, -32, -14])
    _same(a.values, b.values)


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("stored, flag, fill", [
    ("uint8", "false", 128), ("uint8", "false", 255), ("uint16", "false", 40000), ("uint32", "false", 2**31),
    ("uint8", "false", 5), ("int8", "true", -1), ("int16", "true", -2), ("int8", "true", 7)])
def test_an_unpacked_unsigned_variable_whose_fill_is_out_of_the_other_range(tmp_path, zarr_format, stored, flag,
                                                                            fill):
    # found by hypothesis: uint8 with _Unsigned="false" and _FillValue 128 was written as JSON 128,
    # which xarray cannot read as int8 (OverflowError); the store must read as the file does
    src = tmp_path / "u.nc"
    dtype = np.dtype(stored)
    ends = [e for e in (np.iinfo(dtype).min, np.iinfo(dtype).max, np.iinfo(dtype).max - 1) if e != fill][:2]
    q = np.array([fill, 0, 1, *ends, fill], dtype)
    write_variable(src, "NETCDF4", q, {"_Unsigned": flag, "_FillValue": dtype.type(fill)})
    _, a, b, _ = _converted(tmp_path, src, zarr_format)
    assert np.isnan(a.values[[0, -1]]).all() and not np.isnan(a.values[1:-1]).any()  # xarray's reading
    _same(a.values, b.values)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_valid_range_with_the_fill_code_and_a_negative_scale(tmp_path, zarr_format):
    src = tmp_path / "r.nc"
    q = np.array([-32767, 0, 100, 32767], "int16")
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(-0.5), "add_offset": np.float32(10),
                                       "_FillValue": np.int16(-32767),
                                       "valid_range": np.array([-32767, 32767], "int16"),
                                       "valid_min": np.int16(-32767), "valid_max": np.int16(100)})
    _, a, b, dst = _converted(tmp_path, src, zarr_format)
    _same(a.values, b.values)
    attrs = b.attrs
    # decoded without masking, in the unpacked type, and ordered: the negative scale swaps them
    assert attrs["valid_range"] == [10 - 0.5 * 32767, 10 + 0.5 * 32767]
    assert attrs["valid_min"] == 10 - 0.5 * 100 and attrs["valid_max"] == 10 + 0.5 * 32767
    assert not any(np.isnan(v) for v in attrs["valid_range"])


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("attrs, note", [
    ({"scale_factor": np.float64(-0.003), "add_offset": np.float64(5000.0), "_FillValue": np.nan,
      "missing_value": np.nan}, "not a number"),                                           # ERA-Interim
    ({"scale_factor": np.float32(0.5), "_FillValue": np.int32(40000)}, "marks nothing"),   # out of range
    ({"scale_factor": np.float32(0.5), "_FillValue": np.float64(1.5)}, "marks nothing"),   # a fraction
])
def test_fill_values_no_code_can_equal_mark_nothing(tmp_path, zarr_format, attrs, note, capsys):
    src, dst = tmp_path / "era.nc", tmp_path / "era.zarr"
    q = np.array([[0, 1, -32767], [100, -32768, 32767]], "int16")
    write_variable(src, "NETCDF3_64BIT_OFFSET", q, attrs)
    assert main(["convert", str(src), str(dst), "--zarr-format", str(zarr_format), "-q"]) == 0
    a, b = _open(src).v, _open_zarr(dst).v
    assert not np.isnan(a.values).any()
    _same(a.values, b.values, bound=1e-9)
    assert main(["convert", str(src), str(tmp_path / "again.zarr"), "--zarr-format", str(zarr_format)]) == 0
    assert note in capsys.readouterr().out


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("attrs", [
    {"add_offset": np.float32(100)},                   # no scale_factor: float64, exact
    {"scale_factor": np.float32(0.125)},               # no add_offset: float32, exact
    {"scale_factor": np.float32(-0.25), "_FillValue": np.int16(7)},  # negative, exact
    {"scale_factor": np.array([0.01], "f4"), "add_offset": np.array([273.15], "f4")},  # 1-element arrays
    {"scale_factor": np.float64(0.01), "add_offset": np.float32(3)},  # types that differ: float64
    {"scale_factor": np.int32(2), "add_offset": np.float32(1)},       # an integer scale: float64
])
def test_scale_and_offset_in_every_form(tmp_path, zarr_format, attrs):
    src = tmp_path / "p.nc"
    q = np.array([0, 1, 7, -300, 32767, -32768], "int16")
    write_variable(src, "NETCDF4", q, attrs)
    report, a, b, _ = _converted(tmp_path, src, zarr_format)
    p = report.variables["v"].packing
    assert p is not None and p.unpacked == a.dtype
    bound = 0 if p.exact else np.nanmax(p.decode_bound(q))
    _same(a.values, b.values, bound=bound)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("zarr_format", [3, 2])
def test_every_netcdf_format(tmp_path, fmt, zarr_format):
    src = tmp_path / "f.nc"
    q = np.arange(-50, 50, dtype="int16").reshape(10, 10)
    write_variable(src, fmt, q, {"scale_factor": np.float32(0.01), "add_offset": np.float32(273.15),
                                 "_FillValue": np.int16(-50), "units": "K"})
    report, a, b, _ = _converted(tmp_path, src, zarr_format)
    _same(a.values, b.values, bound=np.nanmax(report.variables["v"].packing.decode_bound(q)))
    assert np.isnan(b.values[0, 0])


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_hdf5_files_through_h5netcdf(tmp_path, zarr_format):
    pytest.importorskip("h5netcdf")
    h5py = pytest.importorskip("h5py")
    src = tmp_path / "h5.nc"
    q = np.array([[1, 2, -999], [4, 5, 6]], "int16")
    ds = xr.Dataset({"v": (("y", "x"), q, {"scale_factor": np.float32(0.5), "_FillValue": np.int16(-999)})})
    ds.to_netcdf(src, engine="h5netcdf")
    report, a, b, _ = _converted(tmp_path, src, zarr_format, engine="h5netcdf")
    _same(a.values, b.values)
    # a plain HDF5 file (no netCDF dimension scales), as h5py writes it
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        d = f.create_dataset("w", data=q)
        d.attrs["scale_factor"] = np.float32(0.25)
        d.attrs["add_offset"] = np.float32(1)
    dst = tmp_path / f"plain{zarr_format}.zarr"
    convert(plain, dst, zarr_format=zarr_format)
    a = _open(plain, engine="h5netcdf").w
    _same(a.values, _open_zarr(dst).w.values)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_zero_length_unlimited_dimension(tmp_path, zarr_format):
    src = tmp_path / "z.nc"
    write_variable(src, "NETCDF4", np.zeros((0, 3), "int16"), {"scale_factor": np.float32(0.5),
                                                              "_FillValue": np.int16(-1)},
                   dims=("time", "x"), unlimited="time")
    _, a, b, _ = _converted(tmp_path, src, zarr_format)
    assert a.shape == b.shape == (0, 3) and a.dtype == b.dtype


# --- zarr_encoding ------------------------------------------------------------------------------


def _no_missing_dataset(tmp_path):
    src = tmp_path / "n.nc"
    q = np.array([0, 1, 2, 0, -5], "int16")  # code 0 is real data: 273.15 K
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.01), "add_offset": np.float32(273.15)})
    return _open(src)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_encoding_never_makes_real_data_the_fill_value(tmp_path, zarr_format):
    ds = _no_missing_dataset(tmp_path)
    enc = zarr_encoding(ds, zarr_format=zarr_format)
    dst = tmp_path / "n.zarr"
    ds.to_zarr(dst, zarr_format=zarr_format, encoding=enc, consolidated=False)
    back = _open_zarr(dst, consolidated=False)
    assert not np.isnan(back.v.values).any()  # 273.15 reads back as 273.15, not NaN
    _same(ds.v.values, back.v.values)
    # zarr v2: NaN is the fill value (xarray masks it, and no code decodes to it)
    fill = zarr.open_array(dst / "v", mode="r").fill_value
    if zarr_format == 2:
        assert np.isnan(fill)
    else:
        assert "_FillValue" not in json.loads((dst / "v" / "zarr.json").read_text())["attributes"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_encoding_leaves_times_and_counts_to_xarray(tmp_path, zarr_format):
    import netCDF4

    src = tmp_path / "tc.nc"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("t", 4)
        t = nc.createVariable("time", "i4", ("t",), fill_value=np.int32(-1))
        t.units = "hours since 2000-01-01"
        t[:] = np.array([0, 1, -1, 3], "i4")
        c = nc.createVariable("count", "i2", ("t",), fill_value=np.int16(-9))
        c[:] = np.array([1, -9, 3, 4], "i2")
        p = nc.createVariable("p", "i2", ("t",), fill_value=np.int16(-9))
        p.scale_factor = np.float32(0.5)
        p[:] = np.array([1, -9, 3, 4], "i2")
    ds = _open(src)
    enc = zarr_encoding(ds, zarr_format=zarr_format)
    assert set(enc) == {"p"}
    dst = tmp_path / "tc.zarr"
    ds.to_zarr(dst, zarr_format=zarr_format, encoding=enc, consolidated=False)
    back = _open_zarr(dst, consolidated=False)
    for name in ("time", "count", "p"):
        _same(ds[name].values, back[name].values)


# --- C: arguments and paths ------------------------------------------------------------------------


def test_bad_arguments_are_refused_at_once(tmp_path, capsys):
    src = tmp_path / "in.nc"
    write_variable(src, "NETCDF4", np.arange(10, dtype="int16"), {"scale_factor": np.float32(0.5)}, dims=("x",))
    dst = str(tmp_path / "o.zarr")
    for args, word in [
        (["--chunk-mib", "0"], "--chunk-mib 0"), (["--chunk-mib", "-5"], "--chunk-mib -5"),
        (["--chunk-mib", "nan"], "--chunk-mib nan"), (["--chunk-mib", "inf"], "--chunk-mib inf"),
        (["--chunk-mib", "1e12"], "--chunk-mib 1e12"), (["--chunk-mib", "x"], "--chunk-mib x"),
        (["--chunks", "nosuchdim=5"], "its dimensions are x"), (["--chunks", "x=0"], "--chunks"),
        (["--chunks", "x=5,x=6"], "twice"), (["--chunks", "x"], "DIM=SIZE"),
        (["--compressor", "gzip", "--shuffle", "byte"], "only blosc shuffles"),
        (["--compressor", "zstd", "--level", "99"], "zstd levels"),
        (["--compressor", "none", "--level", "3"], "no level"),
    ]:
        assert main(["convert", str(src), dst, "-q", *args]) == 2, args
        err = capsys.readouterr().err
        assert word in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "o.zarr").exists()
    with pytest.raises(UsageError, match="chunk_bytes"):
        convert(src, dst, chunk_bytes=0)
    with pytest.raises(UsageError, match="zarr_format"):
        convert(src, dst, zarr_format=4)


def test_paths_say_what_is_wrong(tmp_path, capsys):
    src = tmp_path / "in.nc"
    write_variable(src, "NETCDF4", np.arange(10, dtype="int16"), {"scale_factor": np.float32(0.5)})
    out = tmp_path / "out.zarr"
    assert main(["convert", str(src), str(out), "-q"]) == 0
    for args, word in [
        ([str(out), str(tmp_path / "y.zarr")], "is a directory, not a netCDF file"),
        ([str(tmp_path / "missing.nc"), str(tmp_path / "y.zarr")], "does not exist"),
        ([str(src), str(out)], "exists"),
        ([str(src), str(src)], "overlaps the source"),
        ([str(src), str(tmp_path)], "overlaps the source"),
    ]:
        assert main(["convert", *args, "-q"]) == 2, args
        err = capsys.readouterr().err
        assert word in err and "Traceback" not in err, (args, err)
    assert not (tmp_path / "y.zarr").exists()


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"])
def test_a_truncated_classic_file_is_refused(tmp_path, fmt):
    import os

    src = tmp_path / "cut.nc"
    q = np.arange(4000, dtype="int16").reshape(40, 100)
    write_variable(src, fmt, q, {"scale_factor": np.float32(0.5)}, dims=("time", "x"), unlimited="time")
    size = os.path.getsize(src)
    for cut in (1, 2, 100, size // 2):
        os.truncate(src, size - cut)
        with pytest.raises(ToolError, match="is truncated"):
            convert(src, tmp_path / "cut.zarr")
        assert not (tmp_path / "cut.zarr").exists()
    os.truncate(src, 20)  # into the header
    with pytest.raises(ToolError, match="header ends early"):
        convert(src, tmp_path / "cut.zarr")


def test_a_truncated_hdf5_file_is_refused(tmp_path, capsys):
    import os

    src = tmp_path / "cut.nc"
    write_variable(src, "NETCDF4", np.arange(40000, dtype="int16"), {"scale_factor": np.float32(0.5)})
    os.truncate(src, os.path.getsize(src) - 1000)
    assert main(["convert", str(src), str(tmp_path / "cut.zarr"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "truncated" in err and "Traceback" not in err
    assert not (tmp_path / "cut.zarr").exists()


def test_the_summary_names_every_codec_and_the_size_ratio(tmp_path, capsys):
    src = tmp_path / "s.nc"
    q = np.arange(-1000, 1000, dtype="int16").reshape(20, 100)
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.01), "_FillValue": np.int16(-1000),
                                       "missing_value": np.int16(999)})
    assert main(["convert", str(src), str(tmp_path / "s.zarr")]) == 0
    captured = capsys.readouterr()
    assert "cast_value(int16, NaN <-> -1000, 999 -> NaN)" in captured.out
    assert "blosc(zstd, level 1, byte shuffle over 2-byte items, 1 MiB blocks)" in captured.out
    assert "(ratio " in captured.out and "writing /" not in captured.out + captured.err
    assert main(["convert", str(src), str(tmp_path / "q.zarr"), "-q"]) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("compressor", [["--compressor", "zstd", "--level", "5"], ["--compressor", "gzip"],
                                        ["--compressor", "none"], ["--shuffle", "bit"]])
def test_compressor_choices_write_spec_codecs(tmp_path, compressor):
    src, dst = tmp_path / "c.nc", tmp_path / "c.zarr"
    q = np.arange(-1000, 1000, dtype="int16").reshape(20, 100)
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.01)})
    assert main(["convert", str(src), str(dst), "-q", *compressor]) == 0
    codecs = json.loads((dst / "v" / "zarr.json").read_text())["codecs"]
    names = [c["name"] for c in codecs]
    assert names[:3] == ["scale_offset", "cast_value", "bytes"]
    expected = {"--compressor": compressor[1] if compressor[0] == "--compressor" else "blosc"}["--compressor"]
    assert names[3:] == ([] if expected == "none" else [expected])


@pytest.mark.parametrize("compressor", [[], ["--compressor", "zstd"], ["--compressor", "gzip"], ["--shuffle", "bit"]])
def test_zarrs_reads_every_chunk_convert_writes(tmp_path, compressor):
    """zarrs (Rust, strict: no fallback to zarr-python) decodes the compressors convert writes. Its
    Python pipeline has no scale_offset/cast_value yet, so the packed arrays are read as their
    stored integers: the same chunks under metadata without the two filters."""
    pytest.importorskip("zarrs")
    src, dst = tmp_path / "z.nc", tmp_path / "z.zarr"
    q = np.arange(-3000, 3000, dtype="int16").reshape(60, 100)
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.01), "_FillValue": np.int16(-3000)},
                   dims=("y", "x"))
    write_variable(tmp_path / "c.nc", "NETCDF4", (q % 200).astype("uint8"), {"_FillValue": np.uint8(7)},
                   dims=("y", "x"))
    assert main(["convert", str(src), str(dst), "-q", "--chunks", "y=16", *compressor]) == 0
    assert main(["convert", str(tmp_path / "c.nc"), str(tmp_path / "c.zarr"), "-q", "--chunks", "y=16",
                 *compressor]) == 0
    meta = json.loads((dst / "v" / "zarr.json").read_text())
    meta["data_type"], meta["fill_value"] = "int16", 0
    meta["codecs"] = [c for c in meta["codecs"] if c["name"] not in ("scale_offset", "cast_value")]
    (dst / "v" / "zarr.json").write_text(json.dumps(meta))
    (dst / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}):
        ints = zarr.open_array(dst / "v", mode="r")
        assert type(ints._async_array.codec_pipeline).__name__ == "ZarrsCodecPipeline"
        np.testing.assert_array_equal(ints[...], q)
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "c.zarr" / "v", mode="r")[...], q % 200)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_calendars_durations_packed_coordinates_and_scalars(tmp_path, zarr_format):
    import netCDF4

    src = tmp_path / "misc.nc"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("time", 4)
        nc.createDimension("lat", 3)
        t = nc.createVariable("time", "i4", ("time",))
        t.units, t.calendar = "days since 1850-01-01", "noleap"  # cftime objects
        t[:] = np.array([0, 365, 400, 59], "i4")
        lat = nc.createVariable("lat", "i2", ("lat",))  # a packed dimension coordinate
        lat.scale_factor = np.float32(0.5)
        lat.set_auto_maskandscale(False)
        lat[:] = np.array([-10, 0, 10], "i2")
        age = nc.createVariable("age", "i2", ("time",), fill_value=np.int16(-9))
        age.units = "days"  # a duration
        age[:] = np.array([1, -9, 3, 4], "i2")
        s = nc.createVariable("scalar", "i1", ())
        s.scale_factor, s.add_offset = np.float64(0.25), np.float64(100)
        s.set_auto_maskandscale(False)
        s.assignValue(-3)
        v = nc.createVariable("v", "i2", ("time", "lat"), fill_value=np.int16(-1))
        v.scale_factor = np.float32(0.1)
        v.set_auto_maskandscale(False)
        v[:] = np.array([[1, 2, 3], [-1, 5, 6], [7, 8, 9], [10, 11, -1]], "i2")
    dst = tmp_path / "misc.zarr"
    report = convert(src, dst, zarr_format=zarr_format)
    assert report.verified
    a, b = _open(src), _open_zarr(dst)
    assert a.time.dtype == object and a.age.dtype.kind in "mfi"  # xarray 2026: int64, -2**63 where missing
    for name in ("time", "lat", "age", "scalar", "v"):
        assert a[name].dtype == b[name].dtype, name
        if a[name].dtype.kind == "O":
            assert list(a[name].values) == list(b[name].values)
        else:
            _same(a[name].values, b[name].values, bound=1e-6)
    assert report.variables["lat"].route == "packed" and report.variables["time"].route == "as is"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_encoding_for_unsigned_counts_and_attributes_xarray_cannot_write_back(tmp_path, zarr_format):
    src = tmp_path / "u.nc"
    write_variable(src, "NETCDF4", np.array([0, -1, 5, -128], "int8"), {"_Unsigned": "true"}, name="ub")
    write_variable(tmp_path / "f.nc", "NETCDF4", np.array([0, -1, 5, -128], "int8"),
                   {"_Unsigned": "true", "_FillValue": np.int8(-1)}, name="ub")
    write_variable(tmp_path / "s.nc", "NETCDF4", np.array([0, 7, 5], "int32"),
                   {"missing_value": "-1.e+34f"}, name="ub")  # a text missing_value (a real file's)
    for path in (src, tmp_path / "f.nc", tmp_path / "s.nc"):
        ds = _open(path)
        enc = zarr_encoding(ds, zarr_format=zarr_format)
        assert set(enc) == {"ub"}
        dst = tmp_path / f"{path.stem}{zarr_format}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(dst, zarr_format=zarr_format, encoding=enc, consolidated=False)
        _same(ds.ub.values, _open_zarr(dst, consolidated=False).ub.values)  # uint8 (or float32) as xarray reads


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("existing", [False, True])
def test_a_conversion_that_fails_verification_leaves_nothing_that_opens(tmp_path, monkeypatch, zarr_format,
                                                                         existing):
    """A fault injected into our own code (a packing declared with a wrong offset): verification
    catches it, no metadata is written, the chunks are removed, the message says what is left."""
    from numcodecs_ext.cf import plan as plan_module
    from numcodecs_ext.store.errors import VerificationError

    src, dst = tmp_path / "v.nc", tmp_path / "v.zarr"
    q = np.arange(-500, 500, dtype="int16").reshape(10, 100)
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.25), "_FillValue": np.int16(-500)})
    if existing:
        dst.mkdir()
    declare = plan_module.declare_packing

    def wrong(documents, path, packing, zf):
        from dataclasses import replace

        declare(documents, path, replace(packing, add_offset=packing.unpacked.type(1)), zf)

    import importlib

    # the write step's own module, by its name
    monkeypatch.setattr(importlib.import_module("numcodecs_ext.cf.write"), "declare_packing", wrong)
    with pytest.raises(VerificationError, match=r"variable 'v' at \(0, 1\): .* in the store") as info:
        convert(src, dst, zarr_format=zarr_format)
    assert ("empty again" if existing else "nothing was left") in str(info.value)
    assert dst.exists() == existing and (not existing or not any(dst.iterdir()))
    with pytest.raises(Exception):
        zarr.open_group(dst, mode="r")


def test_zarrs_builtin_codecs_read_what_convert_writes(tmp_path):
    """zarr's own scale_offset and cast_value (zarr >= 3.2, with cast-value-rs) decode the stores
    convert writes exactly as ours do."""
    zc = pytest.importorskip("zarr.codecs")
    if not hasattr(zc, "CastValue"):
        pytest.skip("zarr < 3.2 has no scale_offset/cast_value of its own")
    pytest.importorskip("cast_value_rs")
    src, dst = tmp_path / "b.nc", tmp_path / "b.zarr"
    q = np.arange(-3000, 3000, dtype="int16").reshape(60, 100)
    write_variable(src, "NETCDF4", q, {"scale_factor": np.float32(0.25), "add_offset": np.float32(10),
                                       "_FillValue": np.int16(-3000)}, dims=("y", "x"))
    assert main(["convert", str(src), str(dst), "-q", "--chunks", "y=16"]) == 0
    ours = zarr.open_array(dst / "v", mode="r")[...]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note that its cast_value is new
        with zarr.config.set({"codecs.scale_offset": "zarr.codecs.scale_offset.ScaleOffset",
                              "codecs.cast_value": "zarr.codecs.cast_value.CastValue"}):
            z = zarr.open_array(dst / "v", mode="r")
            assert [type(c).__module__ for c in z.metadata.codecs[:2]] == ["zarr.codecs.scale_offset",
                                                                          "zarr.codecs.cast_value"]
            theirs = z[...]
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(theirs[0, 0]) and theirs[0, 1] == -2999 * 0.25 + 10


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_repeated_dimension(tmp_path, zarr_format):
    import netCDF4

    src = tmp_path / "m.nc"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("d", 300)
        m = nc.createVariable("m", "i2", ("d", "d"))
        m.scale_factor = np.float32(0.5)
        m.set_auto_maskandscale(False)
        m[:] = np.arange(90000).reshape(300, 300) % 30000
    report, a, b, _ = _converted(tmp_path, src, zarr_format, name="m", chunk_bytes=64 << 10)
    assert len(set(report.variables["m"].chunks)) == 1
    _same(a.values, b.values)
