"""numcodecs-ext migrate and normalize on real zarr v2 and v3 stores."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import NotExpressible, finish_in_place, migrate, migrate_in_place, verify
from numcodecs_ext.store.errors import ToolError, VerificationError

from tests.helpers.migrate_helpers import hashes, opens_as_v3


def _quiet() -> warnings.catch_warnings:
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("ignore")  # zarr warns about numcodecs codecs and v2 stores
    return w


@pytest.fixture
def v2_store(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A zarr v2 hierarchy as zarr 3 writes one: packed temperatures (FixedScaleOffset + zstd),
    an int64 array with '/' chunk keys and auto-shuffled blosc, a Fortran-ordered array, a 0-d
    one, an AsType-filtered one and xarray's dimension names."""
    path = tmp_path / "v2.zarr"
    rng = np.random.default_rng(0)
    data = {
        "t": (250 + rng.random((20, 30)) * 60).astype("<f4"),
        "sub/b": np.array([1, 2, 3, 4, -1], ">i8"),
        "f": np.arange(24, dtype="<f8").reshape(4, 6) * 1.5,
        "scalar": np.array(7.25),
        "cast": rng.standard_normal(50).astype("<f8"),
    }
    w = _quiet()
    try:
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        g.attrs["title"] = "test"
        t = g.create_array("t", shape=(20, 30), chunks=(7, 10), dtype="<f4", fill_value=250.0,
                           filters=[numcodecs.FixedScaleOffset(offset=250, scale=100, dtype="<f4",
                                                               astype="<u2")],
                           compressors=numcodecs.Zstd(level=3))
        t[:] = data["t"]
        data["t"] = t[:]  # what the v2 store reads (packed)
        t.attrs.update({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
        b = g.create_group("sub").create_array(
            "b", shape=(5,), chunks=(2,), dtype=">i8", fill_value=-1,
            compressors=numcodecs.Blosc(shuffle=-1), chunk_key_encoding={"name": "v2", "separator": "/"})
        b[:4] = data["sub/b"][:4]
        f = g.create_array("f", shape=(4, 6), chunks=(3, 4), dtype="<f8", order="F", fill_value=0.0)
        f[:] = data["f"]
        s = g.create_array("scalar", shape=(), dtype="<f8", fill_value=0.0)
        s[()] = 7.25
        c = g.create_array("cast", shape=(50,), chunks=(20,), dtype="<f8", fill_value=0.0,
                           filters=[numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")])
        c[:] = data["cast"]
        data["cast"] = c[:]
    finally:
        w.__exit__(None, None, None)
    return path, data


def _files(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith((".z", "zarr.json"))}


def test_migrate_keeps_every_chunk_and_reads_the_same(v2_store) -> None:
    src, data = v2_store
    dst = src.parent / "v3.zarr"
    report = migrate(src, dst)
    assert report.verified and report.chunks_rewritten == 0
    assert _files(dst) == _files(src)  # every chunk file, byte for byte, under the same key
    g = zarr.open_group(str(dst), mode="r", zarr_format=3)
    for name, values in data.items():
        got = g[name][...]
        assert got.tobytes() == np.asarray(values, got.dtype).tobytes(), name
    meta = json.loads((dst / "t" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["cast_value", "scale_offset", "cast_value", "bytes", "zstd"]
    assert meta["dimension_names"] == ["y", "x"]
    assert meta["attributes"] == {"units": "K", "_FillValue": "AAAAAABAb0A="}  # 250.0, as xarray writes it
    assert meta["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert json.loads((dst / "f" / "zarr.json").read_text())["codecs"][0] == {
        "name": "transpose", "configuration": {"order": [1, 0]}}
    assert json.loads((dst / "sub" / "b" / "zarr.json").read_text())["codecs"][-1]["configuration"][
        "shuffle"] == "shuffle"
    assert g.attrs["title"] == "test"
    assert not list(dst.rglob(".z*"))


def test_migrated_arrays_take_writes(v2_store) -> None:
    src, _ = v2_store
    dst = src.parent / "v3.zarr"
    migrate(src, dst, verify="none")
    t = zarr.open_array(str(dst / "t"), mode="r+")
    t[0, :3] = [260.0, 261.5, 262.25]
    assert t[0, :3].tolist() == [260.0, 261.5, 262.25]
    with pytest.raises(ValueError, match="cannot convert"):  # numcodecs would wrap it silently
        t[1, 0] = 100.0
    wrapped = src.parent / "wrapped.zarr"
    migrate(src, wrapped, wrap=True, verify="none")  # ... as numcodecs did, if asked
    w = zarr.open_array(str(wrapped / "t"), mode="r+")
    w[1, 0] = 100.0
    assert w[1, 0] == np.float32(np.uint16(-15000 % 65536) / 100 + 250)


def test_a_fill_value_the_codecs_cannot_carry_is_reported(tmp_path: Path) -> None:
    """numcodecs wrapped the fill value 0 (0 - 250 is no uint16) in partly written chunks; the
    migrated array reads the same, and says that zarr will refuse writes."""
    src = tmp_path / "fill.zarr"
    w = _quiet()
    try:
        a = zarr.create_array(str(src), shape=(10,), chunks=(4,), dtype="<f4", zarr_format=2,
                              fill_value=0.0, filters=[numcodecs.FixedScaleOffset(
                                  offset=250, scale=100, dtype="<f4", astype="<u2")])
        a[:6] = 260.0
        before = a[:]
    finally:
        w.__exit__(None, None, None)
    report = migrate(src, tmp_path / "fill3.zarr")
    text = str(report)
    assert "read-only" in text and "refuse every write" in text and "np." not in text
    # the user's fill value, then what scale_offset makes of it
    assert "its fill value 0 becomes -25000 after scale_offset (offset 250, scale 100)" in text
    assert "--fill-code auto" in text
    assert zarr.open_array(str(tmp_path / "fill3.zarr"))[:].tobytes() == before.tobytes()


def test_xarray_opens_the_result_as_it_opened_the_v2_store(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"tas": (("time", "lat"), (280 + np.random.default_rng(1).random((6, 5)) * 20))},
                    coords={"time": np.arange(6), "lat": np.linspace(-60, 60, 5)})
    src, dst = tmp_path / "x2.zarr", tmp_path / "x3.zarr"
    w = _quiet()
    try:
        ds.to_zarr(src, zarr_format=2, consolidated=True, encoding={"tas": {"filters": [
            numcodecs.FixedScaleOffset(offset=280, scale=1000, dtype="<f8", astype="<u2")]}})
        before = xr.open_zarr(src, consolidated=True).load()
    finally:
        w.__exit__(None, None, None)
    migrate(src, dst)
    after = xr.open_zarr(dst, consolidated=False, zarr_format=3).load()
    xr.testing.assert_identical(after, before)
    assert after["tas"].dims == ("time", "lat")


def test_xarray_missing_values_stay_missing(tmp_path: Path) -> None:
    """xarray masks a v2 array's fill value but reads v3's from the _FillValue attribute."""
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"n": (("x",), np.array([1, -9999, 3], "int16")),
                     "t": (("x",), np.array([1.5, np.nan, 2.5])),
                     "f": (("x",), np.array([1.5, -1.0, 2.5], "float32"))})
    ds["n"].encoding["_FillValue"] = -9999
    ds["f"].encoding["_FillValue"] = -1.0
    src, dst = tmp_path / "m2.zarr", tmp_path / "m3.zarr"
    w = _quiet()
    try:
        ds.to_zarr(src, zarr_format=2, consolidated=False)
        before = xr.open_zarr(src, consolidated=False).load()
    finally:
        w.__exit__(None, None, None)
    assert np.isnan(before["n"].values[1]) and np.isnan(before["f"].values[1])
    migrate(src, dst)
    after = xr.open_zarr(dst, consolidated=False, zarr_format=3).load()
    xr.testing.assert_identical(after, before)
    # the same attributes xarray itself writes for zarr v3
    direct = tmp_path / "direct3.zarr"
    ds.to_zarr(direct, zarr_format=3, consolidated=False)
    for name in "ntf":
        ours = json.loads((dst / name / "zarr.json").read_text())["attributes"]["_FillValue"]
        assert ours == json.loads((direct / name / "zarr.json").read_text())["attributes"]["_FillValue"]


def test_rewrite_when_asked(v2_store) -> None:
    src, data = v2_store
    dst = src.parent / "v3.zarr"
    report = migrate(src, dst, rewrite=True)
    assert report.chunks_rewritten > 0 and report.verified
    assert zarr.open_array(str(dst / "t"))[...].tobytes() == data["t"].tobytes()


def test_in_place_adds_v3_metadata_last_and_keeps_v2(v2_store) -> None:
    src, data = v2_store
    chunks = _files(src)
    migrate_in_place(src)
    assert _files(src) == chunks and (src / ".zgroup").exists() and (src / "zarr.json").exists()
    assert zarr.open_array(str(src / "t"), zarr_format=3)[...].tobytes() == data["t"].tobytes()
    w = _quiet()
    try:
        assert zarr.open_array(str(src / "t"), zarr_format=2)[...].tobytes() == data["t"].tobytes()
    finally:
        w.__exit__(None, None, None)
    again = migrate_in_place(src)  # a re-run keeps what equals the plan
    assert again.resumed and "already migrated in place" in again.resumed and _files(src) == chunks


def test_dry_run_prints_the_plan_and_writes_nothing(v2_store, capsys) -> None:
    src, _ = v2_store
    before = sorted(p.as_posix() for p in src.rglob("*"))
    assert main(["migrate", str(src), str(src.parent / "out.zarr"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "t: float32 [20, 30], 9 chunks, keep chunks" in out
    assert "fixedscaleoffset -> zstd" in out and "dry run" in out
    assert sorted(p.as_posix() for p in src.rglob("*")) == before
    assert not (src.parent / "out.zarr").exists()


def test_command_migrates_with_progress_and_verifies(v2_store, capsys) -> None:
    src, _ = v2_store
    assert main(["migrate", str(src), str(src.parent / "out.zarr")]) == 0
    captured = capsys.readouterr()
    assert "migrate: 100%" in captured.err
    assert "verified" in captured.out


def test_bad_input_changes_nothing(tmp_path: Path, v2_store, capsys) -> None:
    src, _ = v2_store
    assert main(["migrate", str(tmp_path / "missing"), str(tmp_path / "o1")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert main(["migrate", str(tmp_path / "plain"), str(tmp_path / "o2")]) == 2
    assert "not a zarr v2 store" in capsys.readouterr().err
    assert main(["migrate", str(src), str(src)]) == 2
    assert "overlaps" in capsys.readouterr().err
    # a filter the spec codecs cannot express: refused with the reason, or kept if asked
    w = _quiet()
    try:
        bad = zarr.create_array(str(tmp_path / "int.zarr"), shape=(4,), dtype="<i4", zarr_format=2,
                                filters=[numcodecs.FixedScaleOffset(offset=0, scale=2, dtype="<i4",
                                                                    astype="<i2")], fill_value=0)
        bad[:] = [1, 2, 3, 4]
    finally:
        w.__exit__(None, None, None)
    assert main(["migrate", str(tmp_path / "int.zarr"), str(tmp_path / "o3")]) == 1  # not convertible
    err = capsys.readouterr().err
    assert "scale 1" in err and "--keep-numcodecs" in err
    assert not (tmp_path / "o3").exists() and not (tmp_path / "int.zarr" / "zarr.json").exists()
    report = migrate(tmp_path / "int.zarr", tmp_path / "o4", keep_numcodecs=True)
    assert report.arrays[0].metadata["codecs"][0]["name"] == "numcodecs.fixedscaleoffset"
    w = _quiet()
    try:
        assert zarr.open_array(str(tmp_path / "o4"))[:].tolist() == [1, 2, 3, 4]
    finally:
        w.__exit__(None, None, None)


def test_a_corrupt_source_chunk_is_reported_and_nothing_opens(tmp_path: Path, capsys) -> None:
    w = _quiet()
    try:
        b = zarr.create_array(str(tmp_path / "c.zarr"), shape=(6,), chunks=(2,), dtype="<f8",
                              zarr_format=2, compressors=numcodecs.Blosc())
        b[:] = np.arange(6.0)
    finally:
        w.__exit__(None, None, None)
    (tmp_path / "c.zarr" / "0").write_bytes(b"garbage!")
    before = hashes(tmp_path / "c.zarr")
    assert main(["migrate", str(tmp_path / "c.zarr"), str(tmp_path / "out.zarr")]) == 1
    err = capsys.readouterr().err
    assert "array /: zarr cannot read the source at [0:2]: " in err and "Traceback" not in err
    assert opens_as_v3(tmp_path / "out.zarr") is None  # chunks only, no metadata
    assert hashes(tmp_path / "c.zarr") == before


def test_verification_finds_a_changed_chunk(v2_store) -> None:
    src, _ = v2_store
    dst = src.parent / "v3.zarr"
    report = migrate(src, dst, verify="none")
    chunk = dst / "f" / "0.0"
    raw = bytearray(chunk.read_bytes())
    raw[8] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    with pytest.raises(VerificationError, match=r"array f: the v3 store does not read as the v2 store at "
                                                r"\[0:3, 0:4\]: zarr cannot read"):
        verify(src, dst, report)


def test_a_compressor_zarr_v3_lacks_is_rewritten_with_zstd_and_our_filters_keep_spec_names(tmp_path: Path) -> None:
    from numcodecs_ext import BitRound, CastValue, ScaleOffset

    x = np.linspace(250, 310, 40)
    w = _quiet()
    try:
        a = zarr.create_array(str(tmp_path / "b64.zarr"), shape=(40,), chunks=(16,), dtype="<f8",
                              zarr_format=2, compressors=numcodecs.Base64(), fill_value=250.0,
                              filters=[BitRound(keepbits=20, dtype="float64"),
                                       ScaleOffset(offset=250, scale=100, dtype="float64"),
                                       CastValue(data_type="uint16", out_of_range="clamp", dtype="float64")])
        a[:] = x
        before = a[:]
    finally:
        w.__exit__(None, None, None)
    report = migrate(tmp_path / "b64.zarr", tmp_path / "out.zarr")
    plan = report.arrays[0]
    assert plan.rewrite and "numcodecs.base64" in plan.rewrite and report.verified
    assert [c["name"] for c in plan.metadata["codecs"]] == [
        "bitround", "scale_offset", "cast_value", "bytes", "zstd"]
    assert zarr.open_array(str(tmp_path / "out.zarr"))[:].tobytes() == before.tobytes()
    with pytest.raises(ToolError, match="--in-place keeps the chunks"):
        migrate_in_place(tmp_path / "b64.zarr")
    assert not (tmp_path / "b64.zarr" / "zarr.json").exists()
    # a fill value the new codecs cannot carry: a rewrite is impossible, said before writing
    w = _quiet()
    try:
        zarr.create_array(str(tmp_path / "f0.zarr"), shape=(4,), dtype="<f8", zarr_format=2,
                          compressors=numcodecs.Base64(), fill_value=0.0,
                          filters=[ScaleOffset(offset=250, scale=100, dtype="float64"),
                                   CastValue(data_type="uint16", dtype="float64")])[:] = 260.0
    finally:
        w.__exit__(None, None, None)
    with pytest.raises(NotExpressible, match="refuses to write.*fill value"):
        migrate(tmp_path / "f0.zarr", tmp_path / "f0-out.zarr")
    assert not (tmp_path / "f0-out.zarr").exists()


def test_every_fixed_size_type_migrates_verified(tmp_path: Path) -> None:
    """Empty and never-written arrays, fixed-size strings, datetimes with NaT, bool, complex with
    NaN, big-endian packed data, Fortran order under FixedScaleOffset, float16 packed to uint8:
    each keeps its chunks and reads bit for bit as before, in place and then v3 only too."""
    src = tmp_path / "h2.zarr"
    w = _quiet()
    try:
        g = zarr.open_group(str(src), mode="w", zarr_format=2)
        g.create_array("empty", shape=(0, 5), chunks=(2, 5), dtype="<f8", fill_value=0.0)
        g.create_array("unwritten", shape=(7,), chunks=(3,), dtype="<i4", fill_value=-5)
        g.create_array("str_u", shape=(4,), chunks=(2,), dtype="<U5", fill_value="")[:3] = ["a", "bcdef", ""]
        g.create_array("str_s", shape=(4,), chunks=(2,), dtype="|S3", fill_value=b"")[:3] = [b"a", b"bc", b""]
        g.create_array("dt", shape=(5,), chunks=(2,), dtype="<M8[ns]", fill_value="NaT")[:3] = np.array(
            ["2020-01-01", "NaT", "1970-01-01T00:00:00.000000001"], "M8[ns]")
        g.create_array("bool", shape=(9,), chunks=(4,), dtype="|b1", fill_value=True)[:5] = [
            True, False, True, False, False]
        g.create_array("complex", shape=(5,), chunks=(2,), dtype="<c16", fill_value=0)[:3] = [1 + 2j, np.nan, -0.0]
        g.create_array("be", shape=(5,), chunks=(2,), dtype=">f8", fill_value=np.nan, filters=[
            numcodecs.FixedScaleOffset(offset=0, scale=10, dtype=">f8", astype=">i2")])[:3] = [1.5, np.nan, -3.2]
        g.create_array("fso_f", shape=(4, 6), chunks=(3, 4), dtype="<f4", fill_value=250.0, order="F", filters=[
            numcodecs.FixedScaleOffset(offset=250, scale=10, dtype="<f4", astype="<u2")])[:] = \
            np.arange(24).reshape(4, 6) + 250.5
        g.create_array("f16", shape=(6,), chunks=(4,), dtype="<f2", fill_value=1.0, filters=[
            numcodecs.FixedScaleOffset(offset=1, scale=10, dtype="<f2", astype="|u1")])[:5] = [1.0, 2.5, 3.3, 1.1, 20.0]
        want = {name: zarr.open_array(str(src / name), mode="r", zarr_format=2)[...] for name in
                ("empty", "unwritten", "str_u", "str_s", "dt", "bool", "complex", "be", "fso_f", "f16")}
    finally:
        w.__exit__(None, None, None)
    report = migrate(src, tmp_path / "out.zarr", nan_code="auto")
    assert report.verified and not any(a.rewrite for a in report.arrays)
    assert "numpy.datetime64 (unit ns, scale_factor 1)" in str(report)
    migrate_in_place(src)
    finish_in_place(src)
    assert "no published specification" in str(report)  # the fixed-size bytes and strings
    for store in (tmp_path / "out.zarr", src):
        w = _quiet()
        try:
            g3 = zarr.open_group(str(store), mode="r", zarr_format=3)
            got_all = {name: g3[name][...] for name in want}
        finally:
            w.__exit__(None, None, None)
        for name, values in want.items():
            got = got_all[name]
            assert got.shape == values.shape and got.dtype.newbyteorder("=") == values.dtype.newbyteorder("=")
            assert np.ascontiguousarray(got, values.dtype.newbyteorder("=")).tobytes() == \
                np.ascontiguousarray(values, values.dtype.newbyteorder("=")).tobytes(), name


def test_a_run_holds_a_bounded_number_of_chunks() -> None:
    """zarr keeps a task per chunk of a read: a run of 4 MiB of one-byte chunks would hold four
    million of them (measured: 320 MB peak for 100,000 one-byte chunks in one run, 89 MB in runs
    of 1,024). Runs are bounded in chunks as well as in bytes."""
    from numcodecs_ext.migrate.runs import MAX_CHUNKS, chunk_coords, run_count, runs

    for shape, chunks in (([100_000], [1]), ([300, 300], [1, 2]), ([50, 40, 30], [1, 1, 1])):
        sizes = [len(list(chunk_coords(sel, chunks))) for _, sel in runs(shape, chunks, itemsize=1)]
        assert max(sizes) <= MAX_CHUNKS and sum(sizes) == np.prod([-(-s // c) for s, c in zip(shape, chunks)])
        assert run_count(shape, chunks, itemsize=1) == len(sizes)


def test_filters_that_work_on_bytes_go_after_the_bytes_codec(tmp_path: Path) -> None:
    """numcodecs Shuffle (or any compressor) as a v2 *filter* is a bytes -> bytes codec in zarr v3:
    it must follow the bytes codec, or zarr refuses the metadata (the whole migration failed)."""
    src = tmp_path / "s.zarr"
    rng = np.random.default_rng(3)
    w = _quiet()
    try:
        g = zarr.open_group(str(src), mode="w", zarr_format=2)
        g.create_array("shuffled", shape=(30, 7), chunks=(8, 7), dtype="<f4", fill_value=0.0,
                       filters=[numcodecs.Shuffle(elementsize=4)], compressors=numcodecs.Zstd(level=1))[:] = \
            rng.standard_normal((30, 7)).astype("<f4")
        g.create_array("both", shape=(50,), chunks=(20,), dtype="<i4", fill_value=0, order="F",
                       filters=[numcodecs.Delta(dtype="<i4"), numcodecs.Zlib(level=1)], compressors=None)[:] = \
            np.arange(50, dtype="<i4") ** 2
        want = {name: g[name][...] for name in ("shuffled", "both")}
    finally:
        w.__exit__(None, None, None)
    report = migrate(src, tmp_path / "o.zarr")
    assert report.verified and report.chunks_rewritten == 0
    names = {a.path: [c["name"] for c in a.metadata["codecs"]] for a in report.arrays}
    assert names == {"shuffled": ["bytes", "numcodecs.shuffle", "zstd"],
                     "both": ["numcodecs.delta", "bytes", "numcodecs.zlib"]}
    w = _quiet()
    try:
        for name, values in want.items():
            got = zarr.open_array(str(tmp_path / "o.zarr" / name), mode="r")[...]
            assert got.tobytes() == values.tobytes(), name
    finally:
        w.__exit__(None, None, None)
    # an array filter after a bytes filter has no v3 form: refused, saying why
    bad = tmp_path / "bad.zarr"
    w = _quiet()
    try:
        zarr.create_array(str(bad), shape=(10,), chunks=(5,), dtype="<i4", zarr_format=2, fill_value=0,
                          filters=[numcodecs.Zlib(level=1), numcodecs.Delta(dtype="<i4")])
    finally:
        w.__exit__(None, None, None)
    with pytest.raises(NotExpressible, match="delta comes after zlib, which works on bytes"):
        migrate(bad, tmp_path / "bad3.zarr", keep_numcodecs=True)


def test_structured_arrays_as_zarr_2_wrote_them(tmp_path: Path) -> None:
    """zarr 2 writes a structured type as a list of [name, type] lists, which numpy does not take
    as it is: the whole migration failed with '.zarray lacks a valid Field elements must be
    2- or 3-tuples'."""
    src = tmp_path / "st.zarr"
    src.mkdir()
    (src / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    values = np.zeros(10, dtype=[("a", "<i4"), ("b", "<f8")])
    values["a"], values["b"] = np.arange(10), np.linspace(0, 1, 10)
    for name, fields in (("little", values.dtype), ("mixed", np.dtype([("a", ">i4"), ("b", "<f8")]))):
        data = values.astype(fields)
        (src / name).mkdir()
        (src / name / ".zarray").write_text(json.dumps({
            "zarr_format": 2, "shape": [10], "chunks": [4], "dtype": [list(f) for f in _descr(fields)],
            "compressor": None, "fill_value": None, "filters": None, "order": "C"}))
        for i in range(3):
            chunk = np.zeros(4, fields)
            part = np.ascontiguousarray(data[i * 4:(i + 1) * 4])
            chunk[:len(part)] = part
            (src / name / str(i)).write_bytes(chunk.tobytes())
    w = _quiet()
    try:
        want = {n: zarr.open_array(str(src / n), mode="r", zarr_format=2)[:] for n in ("little", "mixed")}
    finally:
        w.__exit__(None, None, None)
    assert want["mixed"]["a"].tolist() == list(range(10))
    report = migrate(src, tmp_path / "o.zarr")
    assert report.verified
    w = _quiet()
    try:
        for name, values in want.items():
            got = zarr.open_array(str(tmp_path / "o.zarr" / name), mode="r")[:]
            assert got.tolist() == values.tolist(), name
    finally:
        w.__exit__(None, None, None)


def _descr(dtype: np.dtype) -> list[list]:
    """A structured dtype as zarr 2 writes it in .zarray."""
    return [[n, dt.str] + ([list(shape)] if shape else []) for n, (dt, shape) in
            ((n, (dtype.fields[n][0].base, dtype.fields[n][0].shape)) for n in dtype.names)]


def test_variable_length_strings_and_bytes_migrate(tmp_path: Path) -> None:
    """xarray writes string coordinates (station names, labels ...) as zarr v2 object arrays
    with the vlen-utf8 filter; zarr v3 has them as the 'string' data type with the vlen-utf8
    codec, whose chunks are the very same bytes. Such a store could not be migrated at all."""
    xr = pytest.importorskip("xarray")
    from zarr.dtype import VariableLengthBytes

    src, dst = tmp_path / "s2.zarr", tmp_path / "s3.zarr"
    names = np.array(["alpha", "", "gamma \u00e9t\u00e9", "d" * 300, "e"], dtype=object)
    ds = xr.Dataset({"v": (("station",), np.arange(5.0))}, coords={"station": names})
    w = _quiet()
    try:
        ds.to_zarr(src, zarr_format=2, consolidated=True)
        raw = zarr.create_array(str(src / "extra" / "raw"), shape=(5,), chunks=(2,), dtype=VariableLengthBytes(),
                                zarr_format=2, order="F")
        raw[:] = np.array([b"a", b"bc", b"", b"\x00\xff", b"zz"], dtype=object)
        before = xr.open_zarr(src, consolidated=True).load()
        raw_before = zarr.open_array(str(src / "extra" / "raw"), mode="r", zarr_format=2)[:]
    finally:
        w.__exit__(None, None, None)
    report = migrate(src, dst)
    assert report.verified and report.chunks_rewritten == 0
    plans = {a.path: a.metadata for a in report.arrays}
    assert plans["station"]["data_type"] == "string"
    assert [c["name"] for c in plans["station"]["codecs"]] == ["vlen-utf8", "blosc"]
    assert plans["extra/raw"]["data_type"] == "variable_length_bytes"
    assert plans["extra/raw"]["codecs"][0]["name"] == "vlen-bytes"
    w = _quiet()
    try:
        after = xr.open_zarr(dst, consolidated=False, zarr_format=3).load()
        raw_after = zarr.open_array(str(dst / "extra" / "raw"), mode="r")[:]
    finally:
        w.__exit__(None, None, None)
    xr.testing.assert_identical(after, before)
    assert raw_after.tolist() == raw_before.tolist()
    # a string that reads differently is a difference, not a pass
    from numcodecs_ext.migrate.runs import differences, same_values

    a = np.array(["x", "y"], dtype=object)
    assert same_values(a, a.copy()) and not same_values(a, np.array(["x", "z"], dtype=object))
    assert "1 of 2 values differ, the first at [1]: y reads as z" in differences(a, np.array(["x", "z"], dtype=object))


@pytest.mark.parametrize("kind", ["memory", "zip", "obstore"])
def test_migrate_from_a_zarr_store_object(kind, tmp_path) -> None:
    """A store object tells no stamps (a resumed run trusts none of its chunks), and migrates."""
    import os

    import zarr.storage

    def fill(store) -> None:
        g = zarr.open_group(store, mode="w", zarr_format=2)
        g.create_array("t", shape=(20,), chunks=(10,), dtype="i4")[:] = np.arange(20)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "memory":
            src = zarr.storage.MemoryStore()
            fill(src)
        elif kind == "zip":
            z = zarr.storage.ZipStore(tmp_path / "src.zip", mode="w")
            fill(z)
            z.close()
            src = zarr.storage.ZipStore(tmp_path / "src.zip", mode="r")
        else:
            obstore = pytest.importorskip("obstore.store")
            os.makedirs(tmp_path / "obj")
            fill(zarr.storage.LocalStore(tmp_path / "obj"))
            src = zarr.storage.ObjectStore(obstore.LocalStore(str(tmp_path / "obj")), read_only=True)
        report = migrate(src, tmp_path / "out.zarr")
        assert report.verified
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "out.zarr", path="t", mode="r")[:], np.arange(20))


def test_structured_arrays_in_runs_of_one_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, a run per chunk: zarr 3.1 wrote a big-endian field of a partial selection as
    raw bytes (1 read back as 16777216), which verification refused; the values are converted
    to the array's own type first."""
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")
    test_structured_arrays_as_zarr_2_wrote_them(tmp_path)
