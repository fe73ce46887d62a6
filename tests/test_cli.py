"""The numcodecs-ext command: the demonstration on the embedded sample and ``info``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from numcodecs_ext.cli import main, sample_field


def test_demo_verifies_every_pipeline(tmp_path, capsys) -> None:
    assert main(["--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    for name in ("transpose [2, 1, 0] + zstd", "scale_offset+cast_value", "zfp reversible", "zfp fixed_accuracy"):
        assert name in out
    assert "FAILED" not in out
    assert len(list(tmp_path.glob("*.zarr"))) >= 5


def test_info_lists_codecs_and_versions(capsys) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for word in ("numcodecs", "zarr", "libzfp: LibZfp", "scale_offset", "cast_value", "numcodecs.zfp",
                 "kernels (scale_offset, cast_value, transpose, zfp checks, bitround): "):
        assert word in out


def test_python_dash_m() -> None:
    done = subprocess.run([sys.executable, "-W", "error", "-m", "numcodecs_ext", "info"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("numcodecs ids: transpose, scale_offset, cast_value, zfp, zarrs.zfp, reshape, "
            "numcodecs_ext.bitround, numcodecs_ext.packbits") in done.stdout


def test_sample_is_realistic() -> None:
    a = sample_field()
    assert a.shape == (24, 181, 360)
    assert 0.05 < float(np.isnan(a).mean()) < 0.5
    assert 200 < float(np.nanmin(a)) < float(np.nanmax(a)) < 320
