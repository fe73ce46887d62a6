"""Choosing a packing: the guaranteed error proven against the real codecs, and numcodecs-ext suggest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cf import DataRange, choose_packing, data_range
from numcodecs_ext.cli import main

RANGES = [(250.0, 310.0), (-1.0, 1.0), (0.0, 1e-3), (-5e4, 7e5), (1e6, 1e6 + 3.0), (-273.15, -200.0)]


def _round_trip(p, x: np.ndarray) -> np.ndarray:
    so, cv = p.filters()
    return so.decode(cv.decode(cv.encode(so.encode(x))))


def _every_code_and_half_step(p) -> np.ndarray:
    """Values at every code and halfway between codes (where rounding is worst), in range."""
    info = np.iinfo(p.packed)
    q = np.arange(info.min, info.max + 1, dtype=np.float64)
    centres = q / p.scale + p.offset
    x = np.concatenate([centres, centres + 0.5 / p.scale, centres - 0.5 / p.scale])
    x = x.astype(p.dtype)
    x = x[(x >= p.range.min) & (x <= p.range.max)]
    return np.concatenate([x, np.array([p.range.min, p.range.max], p.dtype),
                           np.nextafter(np.array([p.range.min], p.dtype), np.inf),
                           np.nextafter(np.array([p.range.max], p.dtype), -np.inf)])


@pytest.mark.parametrize("floats, lo, hi", [  # float16 only for the ranges it can hold
    (floats, lo, hi) for floats in ("float16", "float32", "float64") for lo, hi in RANGES
    if not (floats == "float16" and max(abs(lo), abs(hi)) > 65504)])
@pytest.mark.parametrize("packed", ["int8", "uint8", "int16", "uint16"])
def test_guaranteed_error_holds_at_every_code(floats: str, packed: str, lo: float, hi: float) -> None:
    r = DataRange(float(np.dtype(floats).type(lo)), float(np.dtype(floats).type(hi)), False)
    for nan in (False, True):
        p = choose_packing(data_range=r, dtype=packed, nan=nan, float_dtype=floats)
        x = _every_code_and_half_step(p)
        err = np.abs(_round_trip(p, x).astype(np.float64) - x.astype(np.float64))
        assert np.isfinite(_round_trip(p, x)).all()
        assert err.max() <= p.max_error, (p, err.max())
        if hi > lo and not p.lossless:  # the bound is not loose: rounding to a code costs half a step
            assert p.max_error <= 1.01 * (0.5 / p.scale) + 8 * np.finfo(floats).eps * max(abs(lo), abs(hi))
        assert p.max_error <= 2 * err.max() + 8 * np.finfo(floats).eps * max(abs(lo), abs(hi))


@pytest.mark.parametrize("floats", ["float32", "float64"])
def test_tolerance_is_met_with_the_smallest_type(floats: str) -> None:
    rng = np.random.default_rng(0)
    x = (250 + rng.random(200_000) * 60).astype(floats)
    x[::101] = np.nan
    for tol, smallest in [(1.0, "int8"), (0.1, "int16"), (0.01, "int16"), (1e-3, "int16"), (1e-4, "int32")]:
        p = choose_packing(x, tolerance=tol)
        assert p.max_error <= tol and p.packed == np.dtype(smallest), (tol, p)
        back = _round_trip(p, x)
        assert np.array_equal(np.isnan(back), np.isnan(x))
        assert np.nanmax(np.abs(back.astype(np.float64) - x)) <= p.max_error
    # below the float32 resolution of the data (ulp(256) = 3e-5): the values are stored exactly
    exact = choose_packing(x.astype("float32"), tolerance=1e-6)
    assert exact.lossless and exact.packed == np.dtype("int32")
    back = _round_trip(exact, x.astype("float32"))
    assert np.array_equal(back, x.astype("float32"), equal_nan=True)
    # from 0: exact arithmetic (offset 0, scale 2**19) meets what float32 rounding alone would not
    fine = choose_packing(np.array([0.0, 310.0], "float32"), tolerance=1e-6)
    assert fine.offset == 0 and fine.scale == 2**19 and fine.max_error == 2**-20
    # ... but values down to 0 are finer than any scale reaches, and 1e-8 needs 1.6e10 codes
    with pytest.raises(ValueError, match="no integer type meets tolerance=1e-08.*need 1.55e\\+10 codes, "
                                         "more than.*above the largest float32.*the best is"):
        choose_packing(np.array([0.0, 310.0], "float32"), tolerance=1e-8)


def test_nan_codes_constant_data_and_bad_arguments() -> None:
    assert choose_packing(data_range=DataRange(0.0, 1.0), dtype="uint8").nan_code == 255  # unknown: reserved
    assert choose_packing(np.array([0.0, 1.0]), dtype="uint8").nan_code is None
    assert choose_packing(np.array([0.0, np.nan]), dtype="int8").nan_code == -128
    with pytest.raises(ValueError, match="NaN needs a code"):
        choose_packing(np.array([0.0, np.nan]), dtype="int8", nan=False)
    const = choose_packing(np.full(10, 3.25, "float32"), tolerance=1e-9)
    assert const.packed == np.dtype("int8") and np.all(_round_trip(const, np.full(3, 3.25, "float32")) == 3.25)
    for kwargs, match in [({"tolerance": 0}, "tolerance"), ({"tolerance": float("nan")}, "tolerance"),
                          ({"dtype": "int64"}, "dtype"), ({}, "exactly one"),
                          ({"tolerance": 1, "dtype": "int8"}, "exactly one"),
                          ({"dtype": "int8", "nan": "yes"}, "nan")]:
        with pytest.raises(ValueError, match=match):
            choose_packing(np.arange(3.0), **kwargs)
    with pytest.raises(ValueError, match="Infinity"):
        choose_packing(np.array([1.0, np.inf]), tolerance=1)
    with pytest.raises(ValueError, match="max"):
        choose_packing(data_range=DataRange(2.0, 1.0), tolerance=1)
    with pytest.raises(ValueError, match="finite"):
        choose_packing(data_range=DataRange(0.0, float("inf")), tolerance=1)
    with pytest.raises(ValueError, match="only NaN"):
        data_range(np.array([np.nan]))
    with pytest.raises(ValueError, match="empty"):
        data_range(np.zeros(0))
    wide = choose_packing(np.arange(3.0, dtype="float32"), dtype="int32")
    assert wide.max_error < 2**-24 and np.array_equal(_round_trip(wide, np.arange(3.0, dtype="float32")),
                                                      np.arange(3.0, dtype="float32"))


def test_range_streams_over_zarr_and_dask(tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    x = np.linspace(-3, 9, 10_000).reshape(100, 100)
    x[5, 5] = np.nan
    z = zarr.create_array(str(tmp_path / "r.zarr"), shape=x.shape, chunks=(10, 100), dtype="f8")
    z[:] = x
    want = DataRange(-3.0, 9.0, True, 10_000)
    assert data_range(z) == want and data_range(da.from_array(x, chunks=7)) == want == data_range(x)


def test_range_reads_bounded_blocks_even_of_one_huge_row() -> None:
    from numcodecs_ext.cf import blocks

    seen = []

    class Spy:  # records what is read; the data is a real numpy array
        def __init__(self, a):
            self.a, self.shape, self.dtype = a, a.shape, a.dtype

        def __getitem__(self, key):
            out = self.a[key]
            seen.append(out.size)
            return out

    x = np.linspace(-1, 5, 3 * 1000).reshape(1, 3, 1000)
    assert data_range(Spy(x), budget=800) == DataRange(-1.0, 5.0, False, 3000)
    assert max(seen) <= 100 and sum(seen) == 3000
    assert blocks.block_shape((7, 3), 8, None, 800) == (7, 3)
    assert blocks.block_shape((10**6,), 8, None, 800) == (100,)


def test_codecs_write_and_read_through_zarr(tmp_path: Path) -> None:
    x = np.array([[250.5, np.nan], [300.0, 310.0]], "float32")
    p = choose_packing(x, tolerance=0.01)
    z = zarr.create_array(str(tmp_path / "p.zarr"), shape=x.shape, dtype="float32",
                          fill_value=p.fill_value, filters=p.zarr_filters())
    z[:] = x
    assert np.nanmax(np.abs(z[:] - x)) <= p.max_error and np.isnan(z[0, 1])
    meta = json.loads((tmp_path / "p.zarr" / "zarr.json").read_text())
    assert meta["codecs"][:2] == p.codecs()


def _stores(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(1)
    x = (250 + rng.random((60, 40)) * 60).astype("float32")
    x[0, :3] = np.nan
    out = {}
    for fmt in (2, 3):
        g = zarr.open_group(str(tmp_path / f"v{fmt}.zarr"), mode="w", zarr_format=fmt)
        a = g.create_array("t2m", shape=x.shape, chunks=(20, 40), dtype="float32", fill_value=np.nan)
        a[:] = x
        g.create_array("count", shape=(3,), dtype="int32")[:] = [1, 2, 3]
        out[f"v{fmt}"] = tmp_path / f"v{fmt}.zarr"
    return out


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_command_on_zarr_v2_v3_and_netcdf(tmp_path: Path, capsys) -> None:
    stores = _stores(tmp_path)
    xr = pytest.importorskip("xarray")
    nc = tmp_path / "t.nc"
    t2m = zarr.open_array(str(stores["v3"] / "t2m"))[:]
    xr.Dataset({"t2m": (("y", "x"), t2m), "count": (("n",), np.arange(3))}).to_netcdf(nc)
    for src in (stores["v2"], stores["v3"], nc):
        assert main(["suggest", str(src), "--tolerance", "0.01"]) == 0
        out = capsys.readouterr().out
        assert "t2m: float32 in [250" in out and "with NaN" in out and "count" not in out.split("max error:")[0]
        assert "int16 (tolerance)" in out and "<- " in out
        code = out.split("to write it so:\n")[1].split("\n\n")[0]
        code = "\n".join(line[4:] for line in code.splitlines())
        namespace: dict = {}
        exec(code.replace("t2m_packed.zarr", str(tmp_path / f"made-{src.name}.zarr")), namespace)
        assert namespace["z"].dtype == np.dtype("float32") and namespace["z"].shape == (60, 40)


def test_command_json_and_bad_input(tmp_path: Path, capsys) -> None:
    stores = _stores(tmp_path)
    assert main(["suggest", str(stores["v3"]), "--array", "t2m", "--dtype", "uint8", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["t2m"]
    row = result["rows"][0]
    assert row["dtype"] == "uint8" and row["nan_code"] == 255 and row["measured_error"] <= row["max_error"]
    assert result["range"]["has_nan"] is True and row["codecs"][0]["name"] == "scale_offset"
    for argv, match in [([str(tmp_path / "missing")], "does not exist"),
                        ([str(stores["v3"]), "--array", "nope"], "no array 'nope'"),
                        ([str(stores["v3"]), "--array", "count"], "only float arrays"),
                        ([str(stores["v3"]), "--tolerance", "-1"], "not valid"),
                        ([str(tmp_path)], "not a zarr store")]:
        assert main(["suggest", *argv]) == 2, argv
        assert match in capsys.readouterr().err, argv
