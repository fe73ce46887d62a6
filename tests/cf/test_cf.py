"""CF packing as spec codecs (numcodecs_ext.cf): attributes, codecs, xarray and convert, on
real netCDF files, real xarray decoding and real zarr stores."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.cf import CFPacking, packing_from_attrs, packing_from_codecs, unpacked_dtype
from numcodecs_ext.cli import main

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

F32, F64 = np.float32, np.float64
# realistic scale factors (float32 and float64 attributes), with offsets
SCALES = [
    (F32(0.01), F32(273.15)), (F32(0.001), F32(0)), (F32(1 / 3), F32(-5)), (F32(0.0023), F32(100.5)),
    (F32(1.5259e-05), F32(0.5)), (F32(0.1), F32(-3276.7)), (F32(2**-7), F32(10)),
    (F64(0.01), F64(273.15)), (F64(0.00305185), F64(0)), (F64(7.3e-4), F64(2.3)), (F64(0.5), F64(1e3)),
]


def _cf_decoded(q: np.ndarray, attrs: dict) -> np.ndarray:
    """xarray's own CF decoding of stored integers ``q`` with ``attrs``."""
    raw = xr.Dataset({"v": ("x", q, dict(attrs))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.decode_cf(raw).v.values


def _codec_decoded(p: CFPacking, q: np.ndarray) -> np.ndarray:
    """What a zarr v3 array with the packing's filters reads from stored integers ``q``."""
    ints = zarr.create_array(store={}, shape=q.shape, chunks=q.shape, dtype=p.packed, fill_value=0,
                             compressors=None)
    ints[:] = q
    raw = ints.store_path.store._store_dict["c/0"]
    floats = zarr.create_array(store={}, shape=q.shape, chunks=q.shape, dtype=p.unpacked,
                               fill_value=p.fill_value, filters=p.codecs(), compressors=None)
    floats.store_path.store._store_dict["c/0"] = raw
    return floats[:]


# --- attributes -> codecs -------------------------------------------------------------------------


@pytest.mark.parametrize("packed", ["int8", "uint8", "int16", "uint16", "int32"])
@pytest.mark.parametrize(
    "attrs",
    [
        {"scale_factor": F32(0.1), "add_offset": F32(1)},
        {"scale_factor": F64(0.1), "add_offset": F64(1)},
        {"scale_factor": F32(0.1), "add_offset": F64(1)},
        {"scale_factor": F32(0.1)},
        {"scale_factor": 0.1},
        {"add_offset": F32(1)},
        {"_FillValue": -1},
    ],
    ids=["f32", "f64", "mixed", "sf32", "sfpy", "ao32", "fill"],
)
def test_unpacked_dtype_is_xarrays(packed, attrs):
    q = np.array([1, 2, 3], dtype=packed)
    assert unpacked_dtype(packed, attrs) == _cf_decoded(q, attrs).dtype


@pytest.mark.parametrize("sf, ao", SCALES)
def test_every_int16_code_decodes_within_the_bound_of_xarrays_decoding(sf, ao):
    attrs = {"scale_factor": sf, "add_offset": ao, "_FillValue": np.int16(-32768)}
    p = packing_from_attrs("int16", attrs)
    assert p.scale == p.unpacked.type(1) / p.unpacked.type(sf)  # the reciprocal, not scale_factor
    q = np.arange(-32768, 32768).astype("int16")
    ours, cf = _codec_decoded(p, q), _cf_decoded(q, attrs)
    assert ours.dtype == cf.dtype
    np.testing.assert_array_equal(ours, p.decode(q))  # the codecs compute exactly the formula
    assert np.isnan(ours[0]) and np.isnan(cf[0])
    diff = np.abs(ours[1:].astype(F64) - cf[1:].astype(F64))
    bound = p.decode_difference()
    assert diff.max() == bound  # decode_difference measures exactly this
    # the documented bound: 1 ulp of q * scale_factor plus 1 ulp of the result
    qf = q[1:].astype(p.unpacked)
    assert (diff <= np.spacing(np.abs(qf * p.scale_factor)) + np.spacing(np.abs(cf[1:]))).all()
    assert bound < abs(float(sf)) / 1000 or p.unpacked == F32 and bound <= np.spacing(
        F32(abs(float(ao)) + 32768 * abs(float(sf))))
    # the nearest reciprocal is the best scale: its neighbours never give fewer differences
    mismatches = np.count_nonzero(diff)
    for direction in (np.inf, -np.inf):
        s = np.nextafter(p.scale, p.unpacked.type(direction))
        other = qf / s + p.offset
        assert np.count_nonzero(other != cf[1:]) >= mismatches


@pytest.mark.parametrize("packed", ["int8", "uint8", "int16", "uint16"])
@pytest.mark.parametrize("sf", [F32(0.25), F64(2.0**-10), F32(4.0)])
def test_power_of_two_scale_factors_decode_exactly_as_xarray(packed, sf):
    info = np.iinfo(packed)
    q = np.arange(info.min, info.max + 1).astype(packed)
    attrs = {"scale_factor": sf, "add_offset": type(sf)(-17.5)}
    p = packing_from_attrs(packed, attrs)
    assert p.decode_difference() == 0
    np.testing.assert_array_equal(_codec_decoded(p, q), _cf_decoded(q, attrs))


def test_xarrays_decoded_values_encode_back_to_the_same_integers():
    for sf, ao in SCALES:
        attrs = {"scale_factor": sf, "add_offset": ao}
        p = packing_from_attrs("int16", attrs)
        q = np.arange(-32768, 32768).astype("int16")
        so, cv = p.filters()
        assert (cv.encode(so.encode(_cf_decoded(q, attrs))) == q).all(), (sf, ao)


def test_unsigned_missing_values_as_xarray_reads_them_and_the_way_back():
    # xarray reads _FillValue with the variable's bits (int8 -1 is uint8 255) but compares
    # missing_value with the unsigned data as it is: uint8(254) marks 254, int16(-2) and 300 mark
    # nothing (no uint8 code equals them); the report says so
    attrs = {"scale_factor": F32(0.5), "_Unsigned": "true", "_FillValue": np.int8(-1),
             "missing_value": np.array([-2, 300], dtype="int16")}
    p = packing_from_attrs("int8", attrs)
    assert p.packed == np.uint8 and p.missing == (255,)
    assert any("-2" in n and "marks nothing" in n for n in p.notes)
    q = np.array([0, 1, 254, 255, 128], dtype="uint8")
    np.testing.assert_array_equal(_codec_decoded(p, q), [0, 0.5, 127, np.nan, 64])
    np.testing.assert_array_equal(_cf_decoded(q.view("int8"), attrs), [0, 0.5, 127, np.nan, 64])
    unsigned_mv = dict(attrs, missing_value=np.uint8(254))  # typed unsigned: marks 254
    p = packing_from_attrs("int8", unsigned_mv)
    assert p.missing == (255, 254)
    np.testing.assert_array_equal(_codec_decoded(p, q), [0, 0.5, np.nan, np.nan, 64])
    np.testing.assert_array_equal(_cf_decoded(q.view("int8"), unsigned_mv), [0, 0.5, np.nan, np.nan, 64])
    back = packing_from_codecs(p.unpacked, p.codecs())
    assert back == p
    a = back.attrs()
    assert a["scale_factor"] == F32(0.5) and a["_FillValue"] == 255 and a["missing_value"].tolist() == [254]


def test_nothing_to_pack_and_bad_attributes():
    assert packing_from_attrs("int16", {"units": "K"}) is None
    # only missing values: a count, not a packing (it stays an integer; CF masking reads it)
    assert packing_from_attrs("int16", {"_FillValue": -999}) is None
    assert packing_from_attrs("float32", {"_FillValue": 1e20}) is None
    # float data with a scale_factor is a packing of the floats (decoded in the scale's type)
    fp = packing_from_attrs("float32", {"scale_factor": 2.0, "_FillValue": 1e20})
    assert fp.packed == np.float32 and fp.unpacked == np.float64 and fp.missing == ()
    assert fp.notes and "marks nothing" in fp.notes[0]  # 1e20 is no float32 value
    # a fill value no code can equal marks nothing, as in xarray: converted, with a note
    odd = packing_from_attrs("int16", {"scale_factor": F32(0.5), "_FillValue": 1.5, "missing_value": np.nan})
    assert odd.missing == () and len(odd.notes) == 2
    for attrs, word in [
        ({"scale_factor": 0.0}, "scale_factor"),
        ({"scale_factor": np.nan}, "scale_factor"),
        ({"add_offset": np.inf}, "add_offset"),
        ({"scale_factor": "0.1"}, "scale_factor"),
        ({"scale_factor": [0.1, 0.2]}, "scale_factor"),
        ({"scale_factor": F32(1e-45)}, "reciprocal"),
        ({"scale_factor": np.int16(2)}, "not to floats"),
    ]:
        with pytest.raises(ValueError, match=word):
            packing_from_attrs("int16", attrs)
    with pytest.raises(ValueError, match="CF packing is"):
        packing_from_codecs("float32", [{"name": "bitround", "configuration": {"keepbits": 3}}])


# --- xarray and convert on real files -------------------------------------------------------------


def _packed_file(path):
    rng = np.random.default_rng(0)
    t = rng.normal(280, 15, (6, 20, 30)).astype("float32")
    q = np.round((t - 273.15) / 0.01).astype("int16")
    q[:, :2, :] = -32767
    q[0, 5, :4] = 32767  # missing_value
    cloud = rng.integers(-128, 127, (6, 20, 30)).astype("int8")
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), q, {
                "scale_factor": F32(0.01), "add_offset": F32(273.15), "_FillValue": np.int16(-32767),
                "missing_value": np.int16(32767), "units": "K", "valid_range": np.array([-30000, 30000], "int16"),
            }),
            "cloud": (("time", "lat", "lon"), cloud, {"scale_factor": 0.004, "_Unsigned": "true",
                                                      "_FillValue": np.int8(-1)}),
            "mask": (("lat", "lon"), (rng.random((20, 30)) > 0.5).astype("int8"), {"flag": 1}),
            "sst": (("time", "lat", "lon"), t, {"_FillValue": F32(1e20)}),
        },
        coords={"time": ("time", np.arange(6.0), {"units": "days since 2000-01-01"}),
                "lat": np.linspace(-89, 89, 20), "lon": np.arange(30.0) * 12},
        attrs={"title": "packed", "Conventions": "CF-1.8"},
    )
    ds.to_netcdf(path, encoding={"t2m": {"zlib": True}})
    return q, cloud


def _chunk_ints(store, name, key, dtype, shape, zarr_format):
    """The stored integers of one chunk, read from its bytes with the compressor its metadata names."""
    raw = (store / name / key).read_bytes()
    if zarr_format == 3:
        last = json.loads((store / name / "zarr.json").read_text())["codecs"][-1]
        codec = {"blosc": numcodecs.Blosc, "zstd": numcodecs.Zstd, "gzip": numcodecs.GZip}[last["name"]]()
    else:
        codec = numcodecs.get_codec(json.loads((store / name / ".zarray").read_text())["compressor"])
    return np.frombuffer(codec.decode(raw), dtype=dtype).reshape(shape)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_convert_keeps_the_integers_and_decodes_like_xarray(tmp_path, zarr_format):
    src, dst = tmp_path / "in.nc", tmp_path / "out.zarr"
    q, cloud = _packed_file(src)
    assert main(["convert", str(src), str(dst), "--zarr-format", str(zarr_format), "--chunks", "time=2",
                 "--quiet"]) == 0
    key = "t2m/c/1/0/0" if zarr_format == 3 else "t2m/1.0.0"
    ints = _chunk_ints(dst, *key.split("/", 1), "int16", (2, 20, 30), zarr_format)
    np.testing.assert_array_equal(ints, q[2:4])  # the netCDF integers, missing_value included
    key = "cloud/c/0/0/0" if zarr_format == 3 else "cloud/0.0.0"
    ints = _chunk_ints(dst, *key.split("/", 1), "uint8", (2, 20, 30), zarr_format)
    np.testing.assert_array_equal(ints, cloud[:2].view("uint8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = xr.open_dataset(src)
        back = xr.open_zarr(dst)
    for name in ("t2m", "cloud"):
        a, b = cf[name].values, back[name].values
        assert a.dtype == b.dtype
        assert (np.isnan(a) == np.isnan(b)).all()
        bound = packing_from_attrs(xr.open_dataset(src, mask_and_scale=False)[name].dtype,
                                   cf[name].encoding).decode_difference()
        assert np.nanmax(np.abs(a - b)) <= bound
    assert np.isnan(back.t2m.values[0, 5, :4]).all() and np.isnan(back.t2m.values[:, :2]).all()
    np.testing.assert_array_equal(back.sst.values, cf.sst.values)
    np.testing.assert_array_equal(back.mask.values, cf.mask.values)
    assert back.time.values[1] == np.datetime64("2000-01-02")
    assert back.attrs == {"title": "packed", "Conventions": "CF-1.8"}
    assert back.t2m.attrs["units"] == "K" and "scale_factor" not in back.t2m.attrs
    assert back.t2m.attrs["valid_range"] == pytest.approx([-26.85, 573.15], abs=1e-4)  # unpacked units
    assert back.mask.attrs == {"flag": 1}
    assert back.t2m.encoding["chunks"] == (2, 20, 30)
    arr = zarr.open_array(dst / "t2m")  # plain zarr, no xarray: the floats
    assert arr.dtype == np.float32 and np.isnan(arr.fill_value)
    np.testing.assert_array_equal(arr[:], back.t2m.values)


def test_convert_refuses_bad_input_clearly(tmp_path, capsys):
    src = tmp_path / "in.nc"
    _packed_file(src)
    (tmp_path / "exists.zarr").mkdir()
    (tmp_path / "exists.zarr" / "zarr.json").write_text("{}")
    assert main(["convert", str(src), str(tmp_path / "exists.zarr"), "--quiet"]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "missing.nc"), str(tmp_path / "o.zarr"), "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "o.zarr").exists()
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--chunks", "time=0", "--quiet"]) == 2
    assert "--chunks" in capsys.readouterr().err
    # an empty directory is a new store
    (tmp_path / "empty.zarr").mkdir()
    assert main(["convert", str(src), str(tmp_path / "empty.zarr"), "--quiet"]) == 0


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_zarr_encoding_for_xarray(tmp_path, zarr_format):
    from numcodecs_ext.cf import zarr_encoding

    src, dst = tmp_path / "in.nc", tmp_path / "out.zarr"
    q, _ = _packed_file(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(src)
        enc = zarr_encoding(ds, zarr_format=zarr_format, extra={"chunks": (3, 20, 30)})
        assert set(enc) == {"t2m", "cloud"}
        ds.to_zarr(dst, zarr_format=zarr_format, encoding=enc, consolidated=False)
        back = xr.open_zarr(dst, consolidated=False)
    assert "scale_factor" not in back.t2m.attrs
    for name in ("t2m", "cloud"):
        a, b = ds[name].values, back[name].values
        assert a.dtype == b.dtype and (np.isnan(a) == np.isnan(b)).all()
        assert np.nanmax(np.abs(a - b)) <= 2 * np.spacing(np.nanmax(np.abs(a)))
    # the stored integers are the file's, except that missing_value is stored as _FillValue
    key = "c/1/0/0" if zarr_format == 3 else "1.0.0"
    ints = _chunk_ints(dst, "t2m", key, "int16", (3, 20, 30), zarr_format)
    expect = q[3:6].copy()
    expect[expect == 32767] = -32767
    np.testing.assert_array_equal(ints, expect)
    with pytest.raises(ValueError, match="not a variable"):
        zarr_encoding(ds, variables=["nope"])
    with pytest.raises(ValueError, match="zarr_format"):
        zarr_encoding(ds, zarr_format=4)


def test_convert_every_group_and_scalar_variables(tmp_path):
    import netCDF4

    src, dst = tmp_path / "groups.nc", tmp_path / "groups.zarr"
    with netCDF4.Dataset(src, "w") as nc:
        nc.title = "root"
        nc.createDimension("x", 5)
        v = nc.createVariable("p", "i2", ("x",), fill_value=-999)
        v.scale_factor, v.add_offset = np.float32(0.1), np.float32(5)
        v.set_auto_maskandscale(False)
        v[:] = np.array([0, 1, -999, 30000, -30000], "i2")
        sc = nc.createVariable("scalar", "i2", ())
        sc.scale_factor = 0.5
        sc.set_auto_maskandscale(False)
        sc.assignValue(7)
        sub = nc.createGroup("sub")
        sub.note = "in a group"
        sub.createDimension("y", 4)
        w = sub.createVariable("w", "u1", ("y",), fill_value=255)
        w.scale_factor = np.float32(0.25)
        w.set_auto_maskandscale(False)
        w[:] = np.array([0, 4, 255, 8], "u1")
        deeper = sub.createGroup("deeper")
        deeper.createDimension("z", 2)
        deeper.createVariable("z", "f8", ("z",))[:] = [1.5, 2.5]
    assert main(["convert", str(src), str(dst), "--quiet"]) == 0
    root = xr.open_zarr(dst)
    np.testing.assert_array_equal(root.p.values, np.array([5, 5.1, np.nan, 3005, -2995], "float32"))
    assert root.scalar.values == 3.5 and root.scalar.dtype == np.float64
    assert root.attrs == {"title": "root"}
    sub = xr.open_zarr(dst, group="sub")
    np.testing.assert_array_equal(sub.w.values, [0, 1, np.nan, 2])
    assert sub.attrs == {"note": "in a group"}
    assert xr.open_zarr(dst, group="sub/deeper").z.values.tolist() == [1.5, 2.5]
    assert zarr.open_array(dst / "sub" / "w").metadata.to_dict()["codecs"][0]["name"] == "scale_offset"


def test_convert_stores_what_xarray_decodes_where_the_codecs_cannot_say_it(tmp_path, capsys):
    import netCDF4

    src, dst = tmp_path / "odd.nc", tmp_path / "odd.zarr"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("x", 2)
        nc.createVariable("ok", "i2", ("x",))[:] = [1, 2]
        sub = nc.createGroup("sub")
        v = sub.createVariable("v", "i2", ("x",))
        v.scale_factor = np.float32(0)  # no reciprocal: not a packing; xarray decodes zeros
        v.set_auto_maskandscale(False)
        v[:] = [1, 2]
        w = sub.createVariable("w", "i2", ("x",))
        w.scale_factor = np.int16(3)  # xarray decodes int16 (q * 3)
        w.set_auto_maskandscale(False)
        w[:] = [1, 2]
    assert main(["convert", str(src), str(dst)]) == 0
    out = capsys.readouterr().out
    assert "sub/v: float32, stored decoded" in out and "scale_factor=0.0 (float32)" in out
    assert "sub/w: int16, stored decoded" in out
    back = xr.open_zarr(dst, group="sub")
    assert back.v.values.tolist() == [0, 0] and back.w.dtype == np.int16 and back.w.values.tolist() == [3, 6]
    (tmp_path / "text.nc").write_text("not netCDF")
    assert main(["convert", str(tmp_path / "text.nc"), str(tmp_path / "t.zarr"), "--quiet"]) == 2
    assert "not a netCDF file" in capsys.readouterr().err
