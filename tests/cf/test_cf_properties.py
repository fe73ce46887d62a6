"""Hypothesis: random CF attribute combinations, written to real netCDF files with netCDF4, read
back through convert and through zarr_encoding + to_zarr (zarr v2 and v3), against xarray's own
decoding of the same file.

Each example draws the packed type, data (with the fill codes among it), ``scale_factor`` and
``add_offset`` (present or not, float32, float64 or a Python float), ``_FillValue`` (a code, a
value no code equals, NaN), ``missing_value`` (scalar or list, typed or not), ``valid_*`` and
``_Unsigned``. What xarray gives for the file is the reference: dtype, missing positions, values
(exact where ``1 / scale_factor`` is, else within each value's documented bound).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.cf_files import CLASSIC, fill_is_native, write_variable
from numcodecs_ext.cf import packing_from_attrs, zarr_encoding
from numcodecs_ext.cf.convert import convert

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

PACKED = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]
SCALES = [0.01, 0.5, 1 / 3, 2.0**-7, -0.25, 1.5e-5, 4.0, 0.0023, -0.1]


@st.composite
def cases(draw):
    packed = np.dtype(draw(st.sampled_from(PACKED)))
    fmt = draw(st.sampled_from(["NETCDF4", "NETCDF3_64BIT_OFFSET"] if packed.kind == "i" else ["NETCDF4"]))
    info = np.iinfo(packed)
    attrs: dict = {}
    kind = draw(st.sampled_from(["both", "scale", "offset", "none"]))
    ftype = draw(st.sampled_from([np.float32, np.float64, float]))
    sf = draw(st.sampled_from(SCALES))
    if kind in ("both", "scale"):
        attrs["scale_factor"] = ftype(sf)
    if kind in ("both", "offset"):
        otype = draw(st.sampled_from([ftype, np.float32, np.float64]))
        attrs["add_offset"] = otype(draw(st.integers(-1000, 1000)) * abs(sf) + draw(st.sampled_from([0, 0.5, 273.15])))
    unsigned = draw(st.sampled_from([None, "true", "false"]))
    if unsigned:
        attrs["_Unsigned"] = unsigned
    lo, hi = max(int(info.min), -100000), min(int(info.max), 100000)
    codes = st.integers(lo, hi)
    fill = draw(st.one_of(st.none(), codes, st.sampled_from(["nan", "big", "fraction"])))
    if fill == "nan":
        fill = np.float64(np.nan)
    elif fill == "big":
        fill = np.float64(float(info.max) * 4 + 1)
    elif fill == "fraction":
        fill = np.float64(1.5)
    elif fill is not None:
        fill = packed.type(fill)
    if fill is not None and (fmt in CLASSIC or fill_is_native(fill, packed)):
        attrs["_FillValue"] = fill
    mv = draw(st.one_of(st.none(), codes, st.lists(codes, min_size=1, max_size=3), st.just("nan-list")))
    if mv == "nan-list":
        attrs["missing_value"] = np.array([np.nan, 3.0])
    elif isinstance(mv, list):
        attrs["missing_value"] = np.array(mv, dtype=packed)
    elif mv is not None:
        attrs["missing_value"] = draw(st.sampled_from([packed.type, np.int32, np.float64]))(mv)
    if draw(st.booleans()):
        vr = sorted([draw(codes), draw(codes)])
        attrs["valid_range"] = np.array(vr, dtype=packed)
    if draw(st.booleans()):
        attrs["valid_min"] = packed.type(draw(codes))
    n = draw(st.integers(0, 40))
    data = np.array(draw(st.lists(codes, min_size=n, max_size=n)), dtype=packed)
    specials = [v for v in [attrs.get("_FillValue"), *np.ravel(attrs.get("missing_value", []))]
                if v is not None and np.isfinite(v) and lo <= float(v) <= hi and float(v).is_integer()]
    data = np.concatenate([data, np.array(specials, dtype=np.int64).astype(packed), np.array([0, lo, hi], packed)])
    return fmt, data, attrs


def _decoded(path, opener, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return opener(path, **kw).v.values


def _check(a, b, q, attrs, *, reencoded=False):
    """``b`` (the store) reads as ``a`` (the file), as the module docstring says."""
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b)
        return
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    diff = np.abs(a[ok].astype("f8") - b[ok].astype("f8"))
    p = packing_from_attrs(q.dtype, attrs, unpacked=a.dtype) if ("scale_factor" in attrs or "add_offset" in attrs) \
        else None
    if p is None or p.exact and not reencoded:
        assert (diff == 0).all()
        return
    qq = q.view(p.packed)[ok]
    bound = p.decode_bound(qq).astype("f8")  # zarr_encoding: xarray's floats encode back to qq
    assert (diff <= bound).all(), (diff.max(), bound.max())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(case=cases(), zarr_format=st.sampled_from([2, 3]))
def test_convert_reads_back_as_xarray_reads_the_file(tmp_path_factory, case, zarr_format):
    fmt, q, attrs = case
    d = tmp_path_factory.mktemp("p")
    src = d / "v.nc"
    write_variable(src, fmt, q, attrs, dims=("x",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            a = _decoded(src, xr.open_dataset)
        except (ValueError, OverflowError, TypeError):
            return  # xarray itself cannot read this combination: nothing to match
    report = convert(src, d / "v.zarr", zarr_format=zarr_format)
    assert report.verified
    _check(a, _decoded(d / "v.zarr", xr.open_zarr), q, attrs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(case=cases(), zarr_format=st.sampled_from([2, 3]))
def test_zarr_encoding_reads_back_as_xarray_reads_the_file(tmp_path_factory, case, zarr_format):
    fmt, q, attrs = case
    if "scale_factor" not in attrs and "add_offset" not in attrs:
        return  # not packed: xarray's own encoding, nothing of ours
    if not ("_FillValue" in attrs or "missing_value" in attrs) and len(q) == 0:
        return
    d = tmp_path_factory.mktemp("e")
    src = d / "v.nc"
    write_variable(src, fmt, q, attrs, dims=("x",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ds = xr.open_dataset(src)
            a = ds.v.values
        except (ValueError, OverflowError, TypeError):
            return
        try:
            enc = zarr_encoding(ds, zarr_format=zarr_format)
        except ValueError as e:
            assert "variable 'v'" in str(e)  # a packing the codecs cannot state: said clearly
            return
        ds.to_zarr(d / "v.zarr", zarr_format=zarr_format, encoding=enc, consolidated=False)
        b = xr.open_zarr(d / "v.zarr", consolidated=False).v.values
    _check(a, b, q, attrs, reencoded=True)
