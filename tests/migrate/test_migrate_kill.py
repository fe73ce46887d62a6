"""SIGKILL at random points of every write path of migrate and normalize.

Each write path is first run once with every file-changing operation counted (its kill points,
see killpoints.py); then, for a random sample of them (``KILL_POINTS=all`` runs every one, and
``KILL_SEED`` repeats a sample), a fresh copy of the store is migrated in a child process that
is killed with SIGKILL at that operation. Afterwards:

* the source's files hash the same as before (for the in-place paths: every chunk and every v2
  document that the path does not remove);
* whatever the destination holds either opens as zarr v3 complete and reading the source's
  values bit for bit, or does not open as an array or group;
* running the same command again (in this process) completes the migration.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main

from tests.helpers.killpoints import armed
from tests.helpers.migrate_helpers import build_v2, check_complete_or_absent, hashes, opens_as_v3, quiet, same
from tests.helpers import FULL, ROOT

SAMPLE = os.environ.get("KILL_POINTS", "4" if FULL else "1")
SEED = int(os.environ.get("KILL_SEED", random.SystemRandom().randrange(1 << 30)))
RUN_BYTES = "1"  # one chunk per run: as many journal records as chunks


@pytest.fixture(autouse=True)
def _small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", RUN_BYTES)


def _points(total: int, tested: list[int]) -> list[int]:
    """The kill points to try out of 1..total (+1: the run that is not killed)."""
    every = list(range(1, total + 1))
    if SAMPLE == "all":
        chosen = every
    else:
        chosen = sorted(random.Random(SEED + total).sample(every, min(int(SAMPLE), total)))
    tested.extend(chosen)
    return chosen


def _count(argv: list[str]) -> int:
    with armed(0) as state:
        assert main(argv) == 0
    return state["count"]


def _killed(argv: list[str], point: int, tmp: Path) -> int:
    """Run ``numcodecs-ext argv`` in a child killed at write operation ``point``; its status."""
    code = ("import sys; from tests.helpers import killpoints; "
            f"sys.exit(killpoints.main({point}, {str(tmp / 'count')!r}, *sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, *argv, "-q"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT,  # the repository root: tests.helpers is importable there
                          env={**os.environ, "NUMCODECS_EXT_RUN_BYTES": RUN_BYTES})
    assert done.returncode in (0, -9), done.stderr
    assert "Traceback" not in done.stderr
    return done.returncode


def _v2_store(tmp: Path) -> tuple[Path, dict[str, np.ndarray]]:
    src = tmp / "pristine.zarr"
    want = build_v2(src, chunks=6)
    return src, want


def _fresh(pristine: Path, tmp: Path, point: int) -> Path:
    work = tmp / f"k{point}"
    shutil.copytree(pristine, work / "src.zarr")
    return work


KILLED = {"points": 0}


@pytest.mark.parametrize("extra, again", [([], []), (["--rewrite"], ["--rewrite"]), ([], ["--wrap"])],
                         ids=["copy", "rewrite", "copy-then-other-options"])
def test_kill_migrate_to_a_new_store(tmp_path: Path, extra: list[str], again: list[str]) -> None:
    """Killed, then the same command (it resumes) or one with other options (it trusts nothing
    the killed run wrote, metadata included, and starts over)."""
    pristine, want = _v2_store(tmp_path)
    probe = tmp_path / "probe"
    shutil.copytree(pristine, probe / "src.zarr")
    total = _count(["migrate", str(probe / "src.zarr"), str(probe / "dst.zarr"), "-q", *extra])
    tested: list[int] = []
    for point in _points(total, tested):
        work = _fresh(pristine, tmp_path, point)
        src, dst = work / "src.zarr", work / "dst.zarr"
        before = hashes(src)
        argv = ["migrate", str(src), str(dst), *extra]
        status = _killed(argv, point, work)
        where = f"(seed {SEED}, kill point {point} of {total})"
        assert hashes(src) == before, where
        state = check_complete_or_absent(dst, want)
        if status == -9 and (state != "complete" or (dst / ".numcodecs-ext-migrate").exists()):
            assert main(["migrate", str(src), str(dst), *again, "-q"]) == 0, where  # resumes
        assert check_complete_or_absent(dst, want) == "complete", where
        assert not (dst / ".numcodecs-ext-migrate").exists(), where
        assert hashes(src) == before, where
    KILLED["points"] += len(tested)


def test_kill_migrate_in_place_and_finish(tmp_path: Path) -> None:
    pristine, want = _v2_store(tmp_path)
    probe = tmp_path / "probe"
    shutil.copytree(pristine, probe / "src.zarr")
    total = _count(["migrate", str(probe / "src.zarr"), "--in-place", "-q"])
    finish_total = _count(["migrate", str(probe / "src.zarr"), "--in-place", "--finish", "-q"])
    tested: list[int] = []
    for point in _points(total, tested):
        work = _fresh(pristine, tmp_path, point)
        src = work / "src.zarr"
        before = hashes(src)
        status = _killed(["migrate", str(src), "--in-place"], point, work)
        where = f"(seed {SEED}, in-place kill point {point} of {total})"
        after = hashes(src)
        assert {k: v for k, v in after.items() if k in before} == before, where
        assert all(k.endswith("zarr.json") or ".partial" in k for k in set(after) - set(before)), where
        for name, values in want.items():  # v2 reads as ever; v3 reads the same or not at all
            with quiet():
                assert same(zarr.open_array(str(src / name), mode="r", zarr_format=2)[...], values)
            v3 = opens_as_v3(src, name)
            assert v3 is None or same(v3[...], values), where
        if status == -9:
            assert main(["migrate", str(src), "--in-place", "-q"]) == 0, where
        assert check_complete_or_absent(src, want) == "complete", where
    migrated = tmp_path / "migrated.zarr"
    shutil.copytree(pristine, migrated)
    assert main(["migrate", str(migrated), "--in-place", "-q"]) == 0
    for point in _points(finish_total, tested):
        work = tmp_path / f"f{point}"
        shutil.copytree(migrated, work / "src.zarr")
        src = work / "src.zarr"
        chunks = {k: v for k, v in hashes(src).items() if not k.rpartition("/")[2].startswith((".z", "zarr.json"))}
        status = _killed(["migrate", str(src), "--in-place", "--finish"], point, work)
        where = f"(seed {SEED}, finish kill point {point} of {finish_total})"
        now = hashes(src)
        assert {k: now.get(k) for k in chunks} == chunks, where
        assert check_complete_or_absent(src, want) == "complete", where  # the v3 view, untouched
        if status == -9:
            assert main(["migrate", str(src), "--in-place", "--finish", "-q"]) == 0, where
        assert not [p for p in src.rglob(".z*")], where
        with warnings_as_errors():
            assert check_complete_or_absent(src, want) == "complete", where
    KILLED["points"] += len(tested)


class warnings_as_errors:  # noqa: N801 - a context manager
    """No warning at all when opening (zarr warns about stores with both metadata versions)."""

    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc: object) -> None:
        self._w.__exit__(*exc)


def _v3_adapter_store(path: Path) -> dict[str, np.ndarray]:
    with quiet():
        try:
            from zarr.codecs.numcodecs import AsType, FixedScaleOffset
        except ImportError:
            from numcodecs.zarr3 import AsType, FixedScaleOffset
        g = zarr.open_group(str(path), mode="w")
        out = {}
        for name, offset in (("a", 250), ("b", 260), ("c", 270)):
            z = g.create_array(name, shape=(40,), chunks=(8,), dtype="f4", fill_value=offset,
                               filters=[FixedScaleOffset(offset=offset, scale=100, dtype="<f4", astype="<u2")])
            z[:] = np.linspace(offset, offset + 50, 40, dtype="f4")
            out[name] = z[:]
        d = g.create_array("d", shape=(30,), chunks=(10,), dtype="f8", fill_value=0,
                           filters=[AsType(encode_dtype="<f4", decode_dtype="<f8")])
        d[:] = np.linspace(0, 1, 30)
        out["d"] = d[:]
        zarr.consolidate_metadata(str(path))  # normalize must bring it up to date, too
    return out


def test_kill_normalize(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine.zarr"
    want = _v3_adapter_store(pristine)
    probe = tmp_path / "probe.zarr"
    shutil.copytree(pristine, probe)
    total = _count(["normalize", str(probe), "-q"])
    tested: list[int] = []
    for point in _points(total, tested):
        work = tmp_path / f"k{point}"
        shutil.copytree(pristine, work / "s.zarr")
        store = work / "s.zarr"
        chunks = {k: v for k, v in hashes(store).items() if not k.endswith("zarr.json")}
        status = _killed(["normalize", str(store)], point, work)
        where = f"(seed {SEED}, normalize kill point {point} of {total})"
        now = hashes(store)
        assert {k: now.get(k) for k in chunks} == chunks, where
        for name, values in want.items():  # old or new metadata: the same values either way
            with quiet():
                assert same(zarr.open_array(str(store / name), mode="r")[...], values), where
        if status == -9:
            assert main(["normalize", str(store), "-q"]) == 0, where
        consolidated = json.loads((store / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
        for name in want:
            codecs = json.loads((store / name / "zarr.json").read_text())["codecs"]
            assert not any(c["name"].startswith("numcodecs.") for c in codecs), where
            assert consolidated[name]["codecs"] == codecs, where
        with quiet():
            g = zarr.open_consolidated(str(store), mode="r")
            assert all(same(g[name][...], values) for name, values in want.items()), where
    KILLED["points"] += len(tested)


def test_kill_points_were_tested() -> None:
    """(Runs last in this module: how many kill points the run above tested.)"""
    if KILLED["points"]:
        print(f"\nkill points tested: {KILLED['points']} (seed {SEED})")
