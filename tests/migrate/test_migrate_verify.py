"""``--verify full|sample:N|none`` on migrate and normalize: what each reads, what the summary
says, where sampling is refused (normalize's proof before it rewrites metadata, --finish before
it removes the v2 metadata), and hostile values."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest
import zarr
from tests.helpers.migrate_helpers import build_v2, check_complete_or_absent, fso

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import migrate, migrate_in_place, normalize, verify
from numcodecs_ext.store.errors import UsageError, VerificationError


@pytest.fixture
def v2(tmp_path):
    src = tmp_path / "v2.zarr"
    want = build_v2(src, chunks=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(src), mode="a", zarr_format=2)
        g.create_array("empty", shape=(0, 3), chunks=(2, 3), dtype="<i2", fill_value=0)
    want["empty"] = np.zeros((0, 3), "<i2")
    return src, want


HOSTILE = ["sample:0", "sample:-1", "sample:x", "sample:", "sample:1.5", "sample: 2", "Full", "", "sample:+3",
           "sample:1e3"]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("command", ["migrate", "normalize"])
def test_bad_verify_values_are_usage_errors(value, command, v2, tmp_path, capsys):
    src, _ = v2
    argv = [command, str(src), str(tmp_path / "out.zarr"), "--verify", value] if command == "migrate" \
        else [command, str(src), "--verify", value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--verify" in err and "full, sample:N (N >= 1) or none" in err
    assert not (tmp_path / "out.zarr").exists()


def test_huge_sample_reads_every_stored_chunk(v2, tmp_path, capsys):
    """A sample larger than any chunk count (even larger than a 64-bit integer) checks every
    stored chunk once, with no memory blow-up, and says so in counts."""
    src, want = v2
    dst = tmp_path / "out.zarr"
    assert main(["migrate", str(src), str(dst), "-q", "--verify", "sample:999999999999999999999"]) == 0
    out = capsys.readouterr().out
    stored = sum(1 for p in src.rglob("*") if p.is_file() and not p.name.startswith(".z"))
    assert f"sampled: {stored} of {stored} chunks read back and compared" in out, out
    assert check_complete_or_absent(dst, want) == "complete"


def test_sample_summary_and_counts(v2, tmp_path, capsys):
    src, want = v2
    report = migrate(src, tmp_path / "a.zarr", verify="sample:2")
    # t: 12 stored chunks, sub/b 2 (of 3), f 4, scalar 1, cast 3, empty 0 (its grid has none)
    assert (report.chunks_checked, report.chunks_total) == (2 + 2 + 2 + 1 + 2, 12 + 2 + 4 + 1 + 3)
    assert not report.verified and report.verify.mode == "sample"
    assert report.verification().startswith("sampled: 9 of 22 chunks read back and compared (seed ")
    assert check_complete_or_absent(tmp_path / "a.zarr", want) == "complete"
    assert main(["migrate", str(src), str(tmp_path / "b.zarr"), "-q", "--verify", "sample:1"]) == 0
    out = capsys.readouterr().out
    assert "sampled: 5 of 22 chunks" in out and "the others were not checked" in out
    assert "verified: every chunk" not in out


def test_full_and_none_and_the_older_forms(v2, tmp_path, capsys):
    src, want = v2
    report = migrate(src, tmp_path / "a.zarr")
    assert report.verified and report.chunks_checked >= 22
    report = migrate(src, tmp_path / "b.zarr", verify="none")
    assert not report.verified and report.chunks_checked == 0 and report.verification() == "not verified"
    assert main(["migrate", str(src), str(tmp_path / "c.zarr"), "-q", "--no-verify"]) == 0
    assert "not verified (--verify none)" in capsys.readouterr().out
    assert main(["migrate", str(src), str(tmp_path / "d.zarr"), "-q", "--verify", "none"]) == 0
    assert "not verified (--verify none)" in capsys.readouterr().out
    for name in "abcd":
        assert check_complete_or_absent(tmp_path / f"{name}.zarr", want) == "complete"
    with pytest.raises(UsageError, match="verify_result: not a migration option"):  # the older form is gone
        migrate(src, tmp_path / "e.zarr", verify="sample:2", verify_result=False)
    assert not (tmp_path / "e.zarr").exists()


def test_sample_verify_reads_only_the_chosen_chunks(v2, tmp_path):
    """verify() with a sample finds a bad chunk it chose and misses one it did not: it reads
    what it says it reads, no more."""
    src, _ = v2
    dst = tmp_path / "out.zarr"
    migrate(src, dst)
    # corrupt one chunk of t in the destination (a valid chunk of other values)
    (dst / "t" / "5.0").write_bytes((src / "t" / "0.0").read_bytes())
    with pytest.raises(VerificationError, match=r"array t: .* at \[20:24, 0:30\]"):
        verify(src, dst)
    with pytest.raises(VerificationError, match="array t"):
        verify(src, dst, verify="sample:12")
    from numcodecs_ext.store.verifying import VerifyPlan

    missed = 0
    for seed in range(40):
        plan = VerifyPlan("sample", 1, seed)
        try:
            report = verify(src, dst, verify=plan)
        except VerificationError:
            continue
        missed += 1
        assert "sampled:" in report.verification()
    assert 0 < missed < 40  # one chunk of 12: most seeds miss it, some catch it


def test_in_place_sample_and_finish_refuses_it(v2, capsys):
    """--in-place may prove on a sample (the v2 metadata stays); --finish removes it, so it
    proves every chunk and refuses sample:N and none, writing nothing."""
    src, want = v2
    assert main(["migrate", str(src), "--in-place", "-q", "--verify", "sample:1"]) == 0
    out = capsys.readouterr().out
    assert "sampled: 5 of 22 chunks" in out and (src / "zarr.json").exists()
    for value in ("sample:3", "none"):
        assert main(["migrate", str(src), "--in-place", "--finish", "--verify", value]) == 2
        err = capsys.readouterr().err
        assert "--finish removes the v2 metadata only after proving" in err and "Traceback" not in err
        assert (src / ".zgroup").exists() and (src / "t" / ".zarray").exists()
    assert main(["migrate", str(src), "--in-place", "--finish", "--verify", "full"]) == 0
    assert not (src / ".zgroup").exists()
    assert check_complete_or_absent(src, want) == "complete"


def _numcodecs_v3(path):
    from tests.migrate.test_normalize import FixedScaleOffset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(str(path), shape=(40,), chunks=(4,), dtype="<f4", fill_value=0,
                              filters=[FixedScaleOffset(offset=0, scale=10, dtype="<f4", astype="<i2")])
        a[:] = np.arange(40, dtype="<f4") / 10
    return json.loads((path / "zarr.json").read_text())


def test_normalize_refuses_a_sampled_proof_unless_dry_run(tmp_path, capsys):
    path = tmp_path / "n.zarr"
    before = _numcodecs_v3(path)
    for value in ("sample:2", "none"):
        assert main(["normalize", str(path), "--verify", value]) == 2
        err = capsys.readouterr().err
        assert "cannot sample or skip that proof" in err and "Traceback" not in err
        assert json.loads((path / "zarr.json").read_text()) == before
        with pytest.raises(UsageError, match="cannot sample or skip"):
            normalize(path, verify=value)
    assert main(["normalize", str(path), "--dry-run", "-q", "--verify", "sample:2"]) == 0
    out = capsys.readouterr().out
    assert "would change" in out and "proof sampled: 2 of 10 chunks" in out
    assert main(["normalize", str(path), "--dry-run", "-q", "--verify", "none"]) == 0
    assert "not proven (--verify none)" in capsys.readouterr().out
    assert json.loads((path / "zarr.json").read_text()) == before
    assert main(["normalize", str(path), "-q"]) == 0
    assert "every chunk read under both metadata versions" in capsys.readouterr().out


def test_sample_zero_d_and_empty_arrays(tmp_path):
    """Sampling an array with no stored chunk draws from its grid (reading the fill value);
    an array with no chunk at all (empty) is nothing to read."""
    src = tmp_path / "v2.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(src), mode="w", zarr_format=2)
        g.create_array("z", shape=(), dtype="<f8", fill_value=3.5)  # 0-d, never written
        g.create_array("e", shape=(0,), chunks=(5,), dtype="<f4", fill_value=250.0, filters=[fso()])
        g.create_array("u", shape=(10,), chunks=(5,), dtype="<f4", fill_value=1.0)  # unwritten
    report = migrate(src, tmp_path / "out.zarr", verify="sample:3")
    assert (report.chunks_checked, report.chunks_total) == (1 + 0 + 2, 1 + 0 + 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert zarr.open_array(str(tmp_path / "out.zarr" / "z"), mode="r")[()] == 3.5
    shutil.rmtree(tmp_path / "out.zarr")
    report = migrate(src, tmp_path / "out.zarr", rewrite=True, verify="sample:1")
    assert report.chunks_checked == 2 and check_complete_or_absent(
        tmp_path / "out.zarr", {"u": np.ones(10, "<f4"), "e": np.zeros(0, "<f4")}) == "complete"


def test_ctrl_c_mid_rewrite_then_resume(tmp_path):
    """Ctrl-C (SIGINT) while runs are being written by the thread pool: ended by SIGINT, the message
    and no traceback, nothing that opens as complete; the same command then resumes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "v2.zarr"
    want = build_v2(src, chunks=400)
    dst = tmp_path / "out.zarr"
    argv = [sys.executable, "-m", "numcodecs_ext.cli", "migrate", str(src), str(dst), "--rewrite", "-q"]
    env = {**os.environ, "NUMCODECS_EXT_RUN_BYTES": "1"}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if (dst / "t").exists() and sum(1 for _ in (dst / "t").iterdir()) >= 20:
            process.send_signal(signal.SIGINT)
            break
        time.sleep(0.005)
    out, err = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip("the migration ended before the interrupt came")
    assert process.returncode == -signal.SIGINT, err  # ended by SIGINT: 130 in a shell
    assert "interrupted" in err and "Traceback" not in err
    assert check_complete_or_absent(dst, want) in ("absent", "partial") and not (dst / "zarr.json").exists()
    done = subprocess.run(argv[:-1], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "resumed the interrupted migration" in done.stdout
    assert check_complete_or_absent(dst, want) == "complete"


def test_unreachable_scheduler_writes_nothing(v2, tmp_path, monkeypatch, capsys):
    """A DASK_SCHEDULER_ADDRESS nobody answers: a usage error before anything is written."""
    import dask

    src, _ = v2
    import contextlib

    import distributed

    with contextlib.suppress(ValueError):  # a client an earlier test left as the default would win
        distributed.default_client().close()
    with dask.config.set({"scheduler-address": "tcp://127.0.0.1:9", "distributed.comm.timeouts.connect": "1s"}):
        assert main(["migrate", str(src), str(tmp_path / "out.zarr"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to the dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err
    assert not (tmp_path / "out.zarr").exists()


def test_verify_progress_counts_every_chunk_of_the_arrays(v2, tmp_path, capsys):
    """The verify bar says chunks done out of the arrays' chunks (t 12, sub/b 3, f 4, scalar 1,
    cast 3, empty 0), in place and between two stores, also when it samples."""
    src, _ = v2
    dst = tmp_path / "out.zarr"
    migrate(src, dst)
    capsys.readouterr()
    for how in ("full", "sample:1"):
        verify(src, dst, progress=True, verify=how)
        err = capsys.readouterr().err
        assert "verify" in err and "23/23 chunks" in err, (how, err)
    migrate_in_place(src, progress=True)
    err = capsys.readouterr().err
    assert "verify" in err and "23/23 chunks" in err, err
