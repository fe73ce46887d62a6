"""SIGKILL at random points of migrate's write paths on a source with consolidated metadata (kept:
the group's zarr.json, written last, carries zarr v3's). See test_migrate_kill.py (``KILL_POINTS``,
``KILL_SEED``). Whatever is left opens complete, with consolidated metadata that is right, or not
at all; the same command then completes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import zarr

from numcodecs_ext.cli import main

from tests.helpers.migrate_helpers import build_v2, check_complete_or_absent, hashes, quiet
from tests.migrate.test_migrate_kill import _count, _fresh, _killed, _points, SEED  # noqa: F401 - its fixture too
from tests.migrate.test_migrate_kill import _small_runs  # noqa: F401


def _consolidated(tmp: Path):
    src = tmp / "pristine.zarr"
    want = build_v2(src, chunks=4)
    with quiet():
        zarr.consolidate_metadata(str(src), zarr_format=2)
    return src, want


def _consolidation_right(store: Path) -> None:
    """The root's consolidated metadata is what zarr consolidates from the nodes as they are."""
    from numcodecs_ext.migrate.consolidated import stale_entries

    docs = {}
    for p in store.rglob("zarr.json"):
        rel = p.parent.relative_to(store).as_posix()
        docs["" if rel == "." else rel] = json.loads(p.read_text())
    assert docs[""].get("consolidated_metadata")
    assert stale_entries(docs[""], "", docs) == []


@pytest.mark.parametrize("in_place", [False, True], ids=["new-store", "in-place"])
def test_kill_migrate_of_a_consolidated_store(tmp_path: Path, in_place: bool) -> None:
    pristine, want = _consolidated(tmp_path)
    probe = tmp_path / "probe"
    shutil.copytree(pristine, probe / "src.zarr")
    dst_of = (lambda work: work / "src.zarr") if in_place else (lambda work: work / "dst.zarr")
    args = (lambda work: ["migrate", str(work / "src.zarr"), "--in-place"]) if in_place else \
        (lambda work: ["migrate", str(work / "src.zarr"), str(work / "dst.zarr")])
    total = _count([*args(probe), "-q"])
    for point in _points(total, []):
        work = _fresh(pristine, tmp_path, point)
        status = _killed(args(work), point, work)
        where = f"(seed {SEED}, kill point {point} of {total})"
        state = check_complete_or_absent(dst_of(work), want)
        if state == "complete":
            _consolidation_right(dst_of(work))
        if status == -9:
            assert main([*args(work), "-q"]) == 0, where
        assert check_complete_or_absent(dst_of(work), want) == "complete", where
        _consolidation_right(dst_of(work))
    if in_place:
        before = hashes(probe / "src.zarr")
        assert main(["migrate", str(probe / "src.zarr"), "--in-place", "--finish", "-q"]) == 0
        assert not (probe / "src.zarr/.zmetadata").exists() and hashes(probe / "src.zarr") != before
        _consolidation_right(probe / "src.zarr")
