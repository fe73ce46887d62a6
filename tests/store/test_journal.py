"""The one journal of resumable writes (numcodecs_ext.store.journal): keyed by a digest of what
the run writes, one object per finished run, journals of an older format resuming nothing."""

from __future__ import annotations

import json
import os
import pickle

import pytest

from numcodecs_ext.store.journal import (CONVERT_JOURNAL, MIGRATE_JOURNAL, OLD_MIGRATE_JOURNAL, Journal, digest,
                                         is_journal_key, journal_tool)
from numcodecs_ext.store.storage import Location


@pytest.fixture(params=["local", "memory"])
def loc(request, tmp_path):
    if request.param == "local":
        yield Location.parse(tmp_path / "out.zarr")
        return
    location = Location.parse(f"memory://journal-{os.getpid()}-{tmp_path.name}/out.zarr")
    yield location
    location.remove_tree()


def test_a_run_of_the_same_digest_resumes_and_another_starts_over(loc):
    plan = digest({"source": "a.nc", "options": [1]})
    j = Journal(loc, CONVERT_JOURNAL)
    j.create(plan, source="a.nc", about={"seed": 5})
    j.record(0, state="written", checked=0)
    j.record(1, state="verified", checked=2)
    again = Journal(loc, CONVERT_JOURNAL)
    assert again.load() and again.matches(plan) and again.source == "a.nc" and again.about == {"seed": 5}
    assert again.records() == {0: {"state": "written", "checked": 0}, 1: {"state": "verified", "checked": 2}}
    again.create(plan, source="a.nc")  # the same digest: its runs are kept
    assert set(again.records()) == {0, 1}
    other = Journal(loc, CONVERT_JOURNAL)
    other.create(digest({"source": "a.nc", "options": [2]}))  # a changed plan: none is trusted
    assert other.records() == {} and not other.matches(plan)
    assert Journal(loc, CONVERT_JOURNAL).load()


def test_groups_of_runs_keep_apart_whatever_their_names(loc):
    j = Journal(loc, MIGRATE_JOURNAL)
    j.create("d")
    for group in ("", "a", "a/b", "3", "x y/ü"):
        j.record(7, group, digest=f"of {group!r}")
    assert j.records("a/b") == {7: {"digest": "of 'a/b'"}}
    assert j.records("") == {7: {"digest": "of ''"}}
    assert {g: r[7]["digest"] for g, r in j.all_records().items()} == {
        g: f"of {g!r}" for g in ("", "a", "a/b", "3", "x y/ü")}
    j.forget("a")
    assert "a" not in j.all_records() and j.records("a/b")
    j.forget("")
    assert "" not in j.all_records() and j.records("3")
    j.forget()
    assert j.all_records() == {} and j.load() and j.matches("d")


def test_records_that_do_not_read_as_one_claim_nothing(loc):
    j = Journal(loc, CONVERT_JOURNAL)
    j.create("d")
    for run in range(4):
        j.record(run, state="written")
    loc.write(f"{CONVERT_JOURNAL}/runs/1", b"{not json")
    loc.write(f"{CONVERT_JOURNAL}/runs/2", b"[1, 2]")
    # a record of another group copied beside this one's: not trusted where it lies
    loc.write(f"{CONVERT_JOURNAL}/runs/3", json.dumps({"state": "written", "group": "elsewhere"}).encode())
    assert j.records() == {0: {"state": "written"}}


def test_the_end_leaves_nothing_and_a_journal_pickles_for_the_workers(loc):
    j = Journal(loc, CONVERT_JOURNAL)
    j.create("d")
    j.set_runs_total(3)
    pickle.loads(pickle.dumps(j)).record(2, state="verified")
    seen = Journal(loc, CONVERT_JOURNAL)
    assert seen.load() and seen.runs_total == 3 and seen.records() == {2: {"state": "verified"}}
    loc.write("zarr.json", b"{}")
    seen.committed()
    assert sorted(loc.walk().files) == ["zarr.json"]
    assert not Journal(loc, CONVERT_JOURNAL).load()


def test_a_journal_of_an_older_format_resumes_nothing(loc):
    # convert's stamp of before (no format), with a run mark
    loc.write(f"{CONVERT_JOURNAL}/stamp.json", json.dumps({"version": 1, "source": {"path": "a.nc"}}).encode())
    loc.write(f"{CONVERT_JOURNAL}/runs/0", json.dumps({"state": "verified", "checked": 1, "worst": 0.0}).encode())
    old = Journal(loc, CONVERT_JOURNAL)
    assert old.load() and old.digest is None and not old.matches("d")
    old.create("d")
    assert old.records() == {}
    # migrate's one document of before
    loc.write(OLD_MIGRATE_JOURNAL, json.dumps({"format": "numcodecs-ext migrate journal 1", "plan": "d",
                                              "runs": {"a": {"0": "x"}}}).encode())
    before = Journal(loc, MIGRATE_JOURNAL)
    assert before.load() and before.digest is None and not before.matches("d")
    before.create("d")
    assert not loc.exists(OLD_MIGRATE_JOURNAL) and Journal(loc, MIGRATE_JOURNAL).load()


def test_a_journal_that_cannot_be_read(loc):
    loc.write(OLD_MIGRATE_JOURNAL, b"{truncated")
    j = Journal(loc, MIGRATE_JOURNAL)
    assert not j.load()
    with pytest.raises(ValueError, match="not a journal"):
        j.load(strict=True)
    loc.write(f"{MIGRATE_JOURNAL}/stamp.json", b'"a string"')
    with pytest.raises(ValueError, match="not an object"):
        j.load(strict=True)


def test_which_keys_are_a_journals():
    assert journal_tool(".numcodecs-ext-convert/.stamp.json.0123456789abcdef.partial") == "convert"
    assert journal_tool(".numcodecs-ext-migrate/runs/g0/3") == "migrate"
    assert journal_tool(".numcodecs-ext-migrate.json.0123456789abcdef.partial") == "migrate"
    assert not is_journal_key(".numcodecs-ext-converted/zarr.json")
    assert not is_journal_key("a/.numcodecs-ext-convert/stamp.json")
