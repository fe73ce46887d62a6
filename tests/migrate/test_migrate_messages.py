"""What migrate says to a user: a migrated array that refuses writes names the tool that repairs
it (in migrate's note and in the error zarr raises on a write), and ``migrate --help`` is short
and in the user's words."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import normalize

from tests.helpers.migrate_helpers import fso, quiet

NUMPY_REPR = re.compile(r"np\.[a-z_]+[0-9]*\(|dtype\(")


def _nan_filled(path: Path) -> None:
    with quiet():
        a = zarr.create_array(str(path), shape=(40,), chunks=(10,), dtype="<f4", fill_value=np.nan,
                              zarr_format=2, filters=[fso()])
        a[:30] = np.linspace(250, 260, 30, dtype="<f4")


@pytest.mark.parametrize(("fill", "option"), [(np.nan, "--nan-code"), (0.0, "--fill-code")])
def test_a_read_only_migrated_array_names_normalize(tmp_path: Path, capsys, fill: float, option: str) -> None:
    src, dst = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    with quiet():
        a = zarr.create_array(str(src), shape=(40,), chunks=(10,), dtype="<f4", fill_value=fill,
                              zarr_format=2, filters=[fso()])
        a[:30] = np.linspace(250, 260, 30, dtype="<f4")
    assert main(["migrate", str(src), str(dst), "-q"]) == 0
    err = capsys.readouterr().err
    assert f"Now `numcodecs-ext normalize {dst} {option} auto` does that" in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.open_array(str(dst), mode="r+")
        with pytest.raises(ValueError, match=rf"normalize STORE {option} auto") as e:
            array[35] = 255.0
    assert not NUMPY_REPR.search(str(e.value)) and "cannot be cast to uint16 and back" in str(e.value)
    # the way out it names
    normalize(dst, **{option.strip("-").replace("-", "_"): "auto"})
    with quiet():
        array = zarr.open_array(str(dst), mode="r+")
        array[35] = 255.0
        assert array[35] == np.float32(255.0)
        assert np.array_equal(array[36:], np.full(4, fill, dtype="<f4"), equal_nan=True)  # written as the fill


def test_a_dry_run_names_migrate_s_own_option(tmp_path: Path, capsys) -> None:
    _nan_filled(tmp_path / "v2.zarr")
    assert main(["migrate", str(tmp_path / "v2.zarr"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "--nan-code auto" in err and "normalize" not in err


def test_migrate_help_is_short_and_in_the_user_s_words(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["migrate", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for jargon in ("UsageError", "(tasks)", "(plan)", "exit 2", "``"):
        assert jargon not in text
    assert len(text.splitlines()) <= 80
    assert "--in-place --finish" in text and "consolidated" in text
