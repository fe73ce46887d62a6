"""tests/interop/interop_others.py itself (the CI job's driver): comparisons, shard parsing, and the rule
that a mismatch fails the job while an unsupported codec does not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

import interop_others as io


def test_compare_bit_for_bit_with_nan_payloads_equal() -> None:
    a = np.array([1.0, np.nan, -0.0])
    assert io.compare(a, a.copy()) == (True, "")
    other_nan = a.copy()
    other_nan.view(np.uint64)[1] ^= 1  # another NaN payload
    assert io.compare(other_nan, a) == (True, "NaN payloads differ")
    assert not io.compare(np.array([1.0, np.nan, 0.0]), a)[0]  # -0.0 is not 0.0 here
    assert io.compare(np.arange(3), np.arange(3).astype(np.int32))[1].startswith("dtype")
    assert io.compare(np.zeros((2, 2)), np.zeros(4))[1].startswith("shape")
    ok, detail = io.compare(np.array([1, 5, 3]), np.array([1, 2, 3]))
    assert not ok and "1 of 3 values differ, e.g. at 1" in detail


def test_int4_values_compare_whatever_their_bytes() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    want = np.array([-8, -1, 7], dtype=ml_dtypes.int4)
    assert io.compare(np.array([-8, -1, 7], np.int8), want)[0]
    assert not io.compare(np.array([-8, 1, 7], np.int8), want)[0]


def test_inner_chunks_of_a_shard(tmp_path: Path) -> None:
    case = io.CASES["sharding-int16"]
    a = zarr.create_array(str(tmp_path / "s.zarr"), shape=case.shape, dtype="int16", fill_value=-1,
                          chunks=case.chunks, serializer=case.codecs()[0], compressors=None)
    data = np.arange(70, dtype=np.int16).reshape(10, 7)
    data[:4, :2] = -1  # one inner chunk all fill: left out of its shard
    a[...] = data
    chunks = io.inner_chunks(tmp_path / "s.zarr", case)
    assert "c/0/0#0" not in chunks and chunks["c/0/0#1"] == data[:4, 2:4].tobytes()
    assert chunks["c/0/0#2"] == data[4:8, :2].tobytes()  # inner chunks in C order
    assert len(chunks) == 11  # 2x2 shards of 2x2 inner chunks: one all fill, four outside the array


def _run(tmp_path: Path, outcome: str) -> int:
    record = {"impl": "zarrista", "case": "packbits-uint8-default", "row": "packbits",
              "direction": "read", "outcome": outcome, "detail": "x",
              "deviation": "packbits-partial-first-bit" if outcome == "known" else None}
    run = {"env": "others", "versions": {"zarrista": "zarrista 9 (zarrs 9)"}, "families": {},
           "support": {}, "records": [record]}
    (tmp_path / "r.json").write_text(json.dumps(run))
    return io.table_command([tmp_path / "r.json"], None, None)


@pytest.mark.parametrize(("outcome", "status"), [("ok", 0), ("unsupported", 0), ("known", 0),
                                                  ("wrong", 1), ("refused", 1), ("error", 1)])
def test_the_job_fails_on_mismatches_only(tmp_path: Path, outcome: str, status: int, capsys) -> None:
    assert _run(tmp_path, outcome) == status
    out = capsys.readouterr().out
    assert ("MISMATCH zarrista read packbits-uint8-default" in out) == bool(status)


def test_known_needs_the_listed_version() -> None:
    """A deviation excuses a mismatch only for the versions deviations.py lists."""
    results = io.Results("test")
    case = io.CASES["packbits-uint8-bits2-5"]
    old = io.Recorded("zarrista", [("zarrs", "0.23.13", False)])
    new = io.Recorded("zarrista", [("zarrs", "0.24.0", False)])
    assert results.known(old, case, "read") == "packbits-partial-first-bit"
    assert results.known(new, case, "read") is None
    assert results.known(old, case, "write") is None  # it writes these right
    # a deviation of zarr-python's metadata parser is shared by zarrs-python, which parses with it
    parser = io.Recorded("zarrs-python", [("zarrs", "0.23.8", False), ("zarr-python", "3.4.2", True)])
    assert results.known(parser, io.CASES["reshape-then-transpose"], "write") == "transpose-after-reshape"
    assert results.known(parser, io.CASES["cast_value-float64-float16"], "write") is None


def test_every_row_has_a_probe_and_cases_are_well_formed() -> None:
    rows = {c.row for c in io.CASES.values()}
    assert rows == set(io.ROWS)
    probes = [c.row for c in io.CASES.values() if c.probe and c.row != "data types"]
    assert sorted(probes) == sorted(set(io.ROWS) - {"data types"})
    assert {c.dtype for c in io.CASES.values() if c.row == "data types"} == set(io.DTYPES)
    for case in io.CASES.values():  # what the job sends is a valid zarr.json for zarr-python
        meta = case.metadata()
        assert meta["codecs"] and all(isinstance(c, dict) for c in meta["codecs"])
        assert len(case.selection()) == len(case.shape)


def test_imagecodecs_header_length() -> None:
    pytest.importorskip("imagecodecs")
    zfp = io._LibZfp()
    assert len(zfp.header_bits(np.zeros(4), {"mode": "fixed_precision", "precision": 19})) == 44
    expert = {"mode": "expert", "minbits": 16, "maxbits": 3000, "maxprec": 22, "minexp": -40}
    assert len(zfp.header_bits(np.zeros(4), expert)) == 96  # the long mode word
