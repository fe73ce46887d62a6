"""Migrated arrays stay writable: a stored code for NaN or for a fill value outside the packing,
checked against the stored chunks; messages in the user's terms, never a numpy repr."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import NotExpressible, migrate, migrate_in_place
from numcodecs_ext.store.errors import UsageError

from tests.helpers.migrate_helpers import fso, hashes, quiet, same

NUMPY_REPR = re.compile(r"np\.[a-z_]+[0-9]*\(|dtype\(")


def _packed(path: Path, *, fill, offset=250, scale=100, astype="<u2", dtype="<f4", n=40,
            compressor=None, written=slice(0, 30)) -> np.ndarray:
    """A v2 array packed with FixedScaleOffset, partly written (its last chunk is missing)."""
    with quiet():
        a = zarr.create_array(str(path), shape=(n,), chunks=(10,), dtype=dtype, zarr_format=2,
                              fill_value=fill, filters=[fso(offset, scale, dtype, astype)],
                              **({"compressors": compressor} if compressor is not None else {}))
        values = np.linspace(offset + 1, offset + 100, n).astype(dtype)
        values[3] = np.nan if np.isnan(fill) else values[3]
        a[written] = values[written]
        return a[:]


def _write(path: Path, sel, value) -> None:
    with quiet():
        zarr.open_array(str(path), mode="r+")[sel] = value


def test_a_nan_fill_is_read_only_until_nan_has_a_code(tmp_path: Path, capsys) -> None:
    src = tmp_path / "nan.zarr"
    before = _packed(src, fill=np.nan)
    assert main(["migrate", str(src), str(tmp_path / "ro.zarr"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "array / will be read-only: its fill value NaN has no code in uint16" in err
    assert "--nan-code auto" in err and not NUMPY_REPR.search(err)
    with quiet():
        assert same(zarr.open_array(str(tmp_path / "ro.zarr"), mode="r")[:], before)
    with pytest.raises(ValueError):
        _write(tmp_path / "ro.zarr", 0, 260.0)
    # with a code: every stored value reads as before, and writes work, NaN included
    assert main(["migrate", str(src), str(tmp_path / "rw.zarr"), "--nan-code", "auto"]) == 0
    captured = capsys.readouterr()
    assert "NaN is stored as code 65535" in captured.out and "read-only" not in captured.err
    out = tmp_path / "rw.zarr"
    meta = json.loads((out / "zarr.json").read_text())
    assert meta["codecs"][2]["configuration"]["scalar_map"] == {"encode": [["NaN", 65535]],
                                                                "decode": [[65535, "NaN"]]}
    with quiet():
        assert same(zarr.open_array(str(out), mode="r")[:], before)
    _write(out, slice(30, 33), [260.0, np.nan, 270.5])  # the missing chunk: fill value NaN
    with quiet():
        got = zarr.open_array(str(out), mode="r")[:]
    assert same(got[:30], before[:30]) and np.isnan(got[31]) and np.isnan(got[35])
    assert got[30] == np.float32(260.0) and got[32] == np.float32(270.5)


def test_a_code_the_chunks_hold_is_refused_with_a_free_one(tmp_path: Path, capsys) -> None:
    src = tmp_path / "nan.zarr"
    _packed(src, fill=np.nan)
    before = hashes(src)
    # numcodecs stored NaN (the partial chunks' fill) as some code: 0 on this platform
    assert main(["migrate", str(src), str(tmp_path / "o.zarr"), "--nan-code", "100"]) == 2
    err = capsys.readouterr().err
    assert "holds the code 100 in its stored chunks" in err and "65535 is free" in err
    assert not (tmp_path / "o.zarr").exists() and hashes(src) == before
    for bad, words in (("70000", "stores uint16 codes, from 0 to 65535"), ("-1", "from 0 to 65535"),
                       ("x", "give an integer code, 'auto', or ARRAY=CODE"),
                       ("nosuch=auto", "has no array nosuch")):
        assert main(["migrate", str(src), str(tmp_path / "o.zarr"), "--nan-code", bad]) == 2, bad
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and not NUMPY_REPR.search(err), bad
    assert not (tmp_path / "o.zarr").exists()


def test_nan_code_in_place_changes_metadata_only(tmp_path: Path) -> None:
    src = tmp_path / "nan.zarr"
    before = _packed(src, fill=np.nan)
    chunks = {k: v for k, v in hashes(src).items() if not k.startswith(".z")}
    report = migrate_in_place(src, nan_code="auto")
    assert "code 65535" in report.arrays[0].notes[0] and report.arrays[0].read_only is None
    assert {k: v for k, v in hashes(src).items() if k in chunks} == chunks
    with quiet():
        assert same(zarr.open_array(str(src), mode="r", zarr_format=3)[:], before)
    _write(src, 35, 300.0)
    with quiet():
        assert zarr.open_array(str(src), mode="r", zarr_format=3)[35] == np.float32(300.0)


def test_signed_and_wide_stored_types_get_their_end_codes(tmp_path: Path) -> None:
    # numcodecs stored NaN as whatever numpy's cast made of it: -2**31 for int32 on x86, so
    # that end is taken there and the other one is chosen
    for astype, code in (("<i2", -32768), ("|i1", -128), ("<i4", 2**31 - 1), ("<u4", 2**32 - 1), ("|u1", 255)):
        src = tmp_path / f"s{astype[1:]}.zarr"
        scale = 1 if astype[1] in "iu" and astype[-1] == "1" else 100
        before = _packed(src, fill=np.nan, offset=0 if "i" in astype else 0, scale=scale, astype=astype)
        report = migrate(src, tmp_path / f"o{astype[1:]}.zarr", nan_code="auto")
        assert f"code {code}" in report.arrays[0].notes[0], astype
        with quiet():
            assert same(zarr.open_array(str(tmp_path / f"o{astype[1:]}.zarr"), mode="r")[:], before)


def test_messages_name_the_users_fill_value(tmp_path: Path, capsys) -> None:
    """The issue's example: a fill of 0 with offset 1000 and scale 100 was reported as
    "fill value np.float64(-100000.0)"."""
    src = tmp_path / "f0.zarr"
    before = _packed(src, fill=0.0, offset=1000, scale=100)
    assert main(["migrate", str(src), str(tmp_path / "o.zarr"), "-q"]) == 0
    err = capsys.readouterr().err
    assert ("its fill value 0 becomes -100000 after scale_offset (offset 1000, scale 100), which is "
            "outside the range of uint16 [0, 65535]") in err
    assert "--fill-code auto" in err and not NUMPY_REPR.search(err)
    # a code for the fill value makes the array writable; stored values read as before
    report = migrate(src, tmp_path / "w.zarr", fill_code="auto")
    assert "the fill value 0 is stored as code 65535" in report.arrays[0].notes[0]
    with quiet():
        assert same(zarr.open_array(str(tmp_path / "w.zarr"), mode="r")[:], before)
    _write(tmp_path / "w.zarr", 35, 1050.0)
    with quiet():
        got = zarr.open_array(str(tmp_path / "w.zarr"), mode="r")[:]
    assert got[35] == np.float32(1050.0) and got[36] == 0.0 and same(got[:30], before[:30])


def test_an_array_that_must_be_rewritten_needs_its_code_first(tmp_path: Path) -> None:
    """zarr has no v3 base64 codec: the chunks are rewritten (zstd), which encodes the NaN fill."""
    src = tmp_path / "b.zarr"
    before = _packed(src, fill=np.nan, compressor=numcodecs.Base64())
    with pytest.raises(NotExpressible, match="refuses to write it .* NaN has no code in uint16.* --nan-code auto"):
        migrate(src, tmp_path / "o.zarr")
    assert not (tmp_path / "o.zarr").exists()
    report = migrate(src, tmp_path / "o.zarr", nan_code="auto")
    assert report.arrays[0].rewrite and report.verified
    with quiet():
        assert same(zarr.open_array(str(tmp_path / "o.zarr"), mode="r")[:], before)


def test_codes_only_where_they_make_sense(tmp_path: Path) -> None:
    with quiet():
        g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
        g.create_array("plain", shape=(4,), dtype="f8", fill_value=np.nan)[:] = 1.0
    with pytest.raises(UsageError, match="no cast to integers"):
        migrate(tmp_path / "g.zarr", tmp_path / "o.zarr", nan_code={"plain": "auto"})
    report = migrate(tmp_path / "g.zarr", tmp_path / "o.zarr", nan_code="auto")  # none needs one
    assert report.arrays[0].notes == [] and report.arrays[0].read_only is None


def test_no_numpy_repr_in_any_message(tmp_path: Path, capsys) -> None:
    """A catalogue of refusals and notes of migrate and normalize."""
    src = tmp_path / "nan.zarr"
    _packed(src, fill=np.nan)
    zero = tmp_path / "zero.zarr"
    _packed(zero, fill=0.0)
    wrapped = tmp_path / "wrapped.zarr"
    with quiet():
        zarr.create_array(str(wrapped), shape=(20,), chunks=(10,), dtype="|u1", zarr_format=2,
                          fill_value=0, filters=[numcodecs.AsType(encode_dtype="|i1", decode_dtype="|u1")])[:] = \
            np.arange(20, dtype="u1") * 12
    runs = [["migrate", str(src), str(tmp_path / "a.zarr")],
            ["migrate", str(zero), "--dry-run"],
            ["migrate", str(wrapped), "--in-place"],
            ["migrate", str(wrapped), "--dry-run"],
            ["migrate", str(src), str(tmp_path / "b.zarr"), "--nan-code", "0"],
            ["normalize", str(tmp_path / "a.zarr")],
            ["normalize", str(tmp_path / "a.zarr"), "--nan-code", "0"],
            ["normalize", str(src)]]
    for argv in runs:
        main([*argv, "-q"])
        captured = capsys.readouterr()
        text = captured.out + captured.err
        assert not NUMPY_REPR.search(text), (argv, text)
        assert "Traceback" not in text and "unexpected" not in text, (argv, text)


def test_nan_and_the_fill_value_get_codes_of_their_own(tmp_path: Path, capsys) -> None:
    """Asked for both, NaN and an out-of-packing fill value must not share a code (the fill
    value would then read back as NaN); a code the map already gives away is not free either."""
    src = tmp_path / "both.zarr"
    before = _packed(src, fill=0.0, offset=250, scale=1, astype="|u1", dtype="<f8")
    out = tmp_path / "o.zarr"
    report = migrate(src, out, nan_code={"": "auto"}, fill_code="auto")  # "": the root array
    assert report.arrays[0].read_only is None, report.arrays[0].read_only
    smap = json.loads((out / "zarr.json").read_text())["codecs"][1]["configuration"]["scalar_map"]
    codes = [code for _, code in smap["encode"]]
    assert len(codes) == 2 and len(set(codes)) == 2 and len(smap["decode"]) == 2, smap
    with quiet():
        assert same(zarr.open_array(str(out), mode="r")[:], before)
    _write(out, slice(30, 33), [np.nan, 0.0, 260.0])  # the missing chunk: fill value 0
    with quiet():
        got = zarr.open_array(str(out), mode="r")[:]
    assert np.isnan(got[30]) and got[31] == 0.0 and got[32] == 260.0 and got[35] == 0.0
    # a code given explicitly that the map already gives NaN is refused, naming a free one
    assert main(["migrate", str(src), str(tmp_path / "p.zarr"), "--nan-code", "/=255",
                 "--fill-code", "255"]) == 2
    err = capsys.readouterr().err
    assert "--fill-code 255" in err and "already stands for NaN" in err and "Traceback" not in err
    assert not (tmp_path / "p.zarr").exists()


def test_a_fill_code_for_an_array_without_a_cast_names_the_fill_value(tmp_path: Path) -> None:
    with quiet():
        g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
        g.create_array("plain", shape=(4,), dtype="f8", fill_value=0.0)[:] = 1.0
    with pytest.raises(UsageError, match="no cast to integers to give its fill value a code in"):
        migrate(tmp_path / "g.zarr", tmp_path / "o.zarr", fill_code={"plain": "auto"})


def test_finish_after_nan_written_through_the_v3_metadata(tmp_path: Path, capsys) -> None:
    """Review defect A: after --in-place --nan-code, NaN written through the v3 metadata is
    stored as NaN's code, which the v2 metadata reads as a number. --finish accepts exactly
    those differences (the v2 metadata cannot represent NaN there) and says so; any other
    difference still stops it with nothing removed."""
    src = tmp_path / "nan.zarr"
    before = _packed(src, fill=np.nan)
    migrate_in_place(src, nan_code="auto")
    _write(src, slice(5, 7), np.nan)
    _write(src, 35, 300.0)
    with quiet():
        v2 = zarr.open_array(str(src), mode="r", zarr_format=2)[:]
        v3 = zarr.open_array(str(src), mode="r", zarr_format=3)[:]
    assert np.isnan(v3[5:7]).all() and not np.isnan(v2[5:7]).any()  # the v2 view has no NaN code
    # another difference (a chunk stored under the v3 view's other scale) is still refused
    doc = json.loads((src / "zarr.json").read_text())
    changed = json.loads(json.dumps(doc).replace('"scale": 100', '"scale": 50'))
    assert changed != doc
    (src / "zarr.json").write_text(json.dumps(changed))
    assert main(["migrate", str(src), "--in-place", "--finish"]) == 2
    assert "/ (codecs (" in capsys.readouterr().err and (src / ".zarray").exists()
    (src / "zarr.json").write_text(json.dumps(doc))
    assert main(["migrate", str(src), "--in-place", "--finish"]) == 0
    out = capsys.readouterr().out
    # NaN at 5 and 6, and the 9 fill values (NaN) of the chunk zarr made to store 300.0 at 35
    assert "array /: 11 values read differently through the v2 metadata" in out and "(65535:" in out
    assert not (src / ".zarray").exists()
    with quiet():
        after = zarr.open_array(str(src), mode="r")[:]
    want = before.copy()
    want[5:7], want[35] = np.nan, 300.0
    assert same(after, want)


def test_messages_in_the_singular(tmp_path: Path, capsys) -> None:
    """One array kept, one v2 document removed (an array without .zattrs, as zarrs and
    tensorstore write it), one value written through the v3 metadata only: every count in the
    noun's number, and the verb with it."""
    src = tmp_path / "one.zarr"
    _packed(src, fill=np.nan)
    (src / ".zattrs").unlink(missing_ok=True)
    report = migrate_in_place(src, nan_code="auto")
    assert str(report).splitlines()[-1] == "1 array (1 keeps its chunks, 0 rewritten), 0 groups"
    _write(src, 5, np.nan)
    assert main(["migrate", str(src), "--in-place", "--finish", "-q"]) == 0
    out = capsys.readouterr().out
    assert "removed the v2 metadata (1 document) of" in out, out
    assert "array /: 1 value reads differently through the v2 metadata, stored as a code " in out, out
    assert "the v3 view reads it as written" in out, out
