"""An interrupted remote migration resumes: ``migrate s3://.../src s3://.../dst`` (chunks copied
server-side, or --rewrite) killed with SIGKILL at several moments on a real S3 API (moto's
server), then run again to completion. After each kill nothing at the destination opens as
complete; the run that completes skips the runs the journal recorded as written and verified,
says what it resumed, and the result reads as the source."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings

import numcodecs
import numpy as np
import pytest
import zarr

CHUNKS = 120


def _store(path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        a = g.create_array("t", shape=(CHUNKS * 16,), chunks=(16,), dtype="<f4", fill_value=0.0,
                           compressors=numcodecs.Zstd(level=1))
        a[:] = np.arange(CHUNKS * 16, dtype="<f4") * 0.5
        return a[...]


def _open(url: str, path: str = ""):
    """The zarr v3 node at ``url``/``path``, or None if zarr opens nothing there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            store = zarr.storage.FsspecStore.from_url(url, read_only=True,
                                                      storage_options={"use_listings_cache": False})
            return zarr.open(store, path=path, mode="r", zarr_format=3)
        except Exception:  # noqa: BLE001 - nothing there
            return None


def _claims_nothing_false(s3, want: np.ndarray) -> bool:
    """Whatever the destination holds: the root does not open, or it opens complete; an array
    that opens reads the source's values. True if it opens as complete."""
    root = _open(s3.url("dst.zarr"))
    array = _open(s3.url("dst.zarr"), "t")
    if array is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(array[...], want)
    if root is not None:
        assert array is not None, "the root opens and its array does not"
    return root is not None


def _chunk_objects(s3) -> int:
    return sum(1 for k in s3.keys("dst.zarr") if k.startswith("dst.zarr/t/") and k[len("dst.zarr/t/"):].isdigit())


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "numcodecs_ext.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NUMCODECS_EXT_RUN_BYTES": "1", **(env or {})})


def _kill_when(process: subprocess.Popen[str], ready, timeout: float = 180) -> bool:
    """SIGKILL ``process`` as soon as ``ready()``; False if it ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if ready():
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=60)
            return True
        time.sleep(0.01)
    process.kill()
    raise AssertionError("the kill moment never came")


@pytest.mark.parametrize("rewrite", [False, True], ids=["copy", "rewrite"])
@pytest.mark.full
def test_killed_remote_migration_resumes(s3, tmp_path, rewrite):
    want = _store(tmp_path / "v2.zarr")
    s3.upload(tmp_path / "v2.zarr", "src.zarr")
    argv = ["migrate", s3.url("src.zarr"), s3.url("dst.zarr"), "-q", *(["--rewrite"] if rewrite else [])]
    moments = [
        ("journal written, no chunk yet", lambda: "dst.zarr/.numcodecs-ext-migrate/stamp.json" in s3.keys("dst.zarr")),
        ("10 chunks", lambda: _chunk_objects(s3) >= 10),
        ("45 chunks", lambda: _chunk_objects(s3) >= 45),
        ("85 chunks", lambda: _chunk_objects(s3) >= 85),
    ]
    killed = []
    for name, ready in moments:
        if _kill_when(_run(argv), ready):
            killed.append(name)
            assert not _claims_nothing_false(s3, want), f"killed at {name}, the destination opens as complete"
        else:
            break
    assert len(killed) >= 2, killed
    s3.proxy.reset()
    done = _run(argv)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    assert "Traceback" not in err
    assert "resumed the interrupted migration" in out, out
    resumed = int(out.split("migration in ")[1].split(": ")[1].split(" runs")[0])
    assert 0 < resumed < CHUNKS
    # the runs resumed were not written again: fewer chunk writes than chunks
    written = [r for r in s3.requests() if r.kind in ("COPY", "PUT") and r.key.startswith("dst.zarr/t/")
               and r.key[len("dst.zarr/t/"):].isdigit()]
    assert len(written) <= CHUNKS - resumed
    assert _claims_nothing_false(s3, want)
    assert not [k for k in s3.keys("dst.zarr") if k.startswith("dst.zarr/.numcodecs-ext-migrate")]
    # and a run of the finished migration is refused, not redone
    again = _run(argv)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 2 and "exists and holds a zarr store" in err


@pytest.mark.full
def test_stopped_server_mid_run_then_resume(s3, tmp_path):
    """The server stops answering mid-run: a clear error (exit 1), nothing opens as complete;
    once it answers again, the same command resumes and completes."""
    want = _store(tmp_path / "v2.zarr")
    s3.upload(tmp_path / "v2.zarr", "src.zarr")
    argv = ["migrate", s3.url("src.zarr"), s3.url("dst.zarr"), "-q"]
    s3.proxy.cut_after(150)
    try:
        failed = _run(argv, {"AWS_MAX_ATTEMPTS": "2"})
        _, err = failed.communicate(timeout=300)
    finally:
        s3.proxy.cut_after(None)
    assert failed.returncode == 1, err
    assert "Traceback" not in err and "cannot be reached" in err
    assert not _claims_nothing_false(s3, want)
    done = _run(argv)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    assert _claims_nothing_false(s3, want)
