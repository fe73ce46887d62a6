"""migrate never writes into its source, writes metadata last, resumes what was interrupted, and
finishes an in-place migration only after proving it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place, plan_migration
from numcodecs_ext.migrate.runs import MigrationJournal
from numcodecs_ext.store.errors import ToolError, UsageError
from numcodecs_ext.store.storage import Location

from tests.helpers.migrate_helpers import (build_v2, check_complete_or_absent, chunk_files, hashes, opens_as_v3,
                             quiet, same)


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    src = tmp_path / "v2.zarr"
    return src, build_v2(src, chunks=8)


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")  # a run per chunk


class Interrupt(BaseException):
    """What a kill does to the Python code: it stops, nothing cleans up."""


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, method: str, calls: int) -> None:
    real = getattr(Location, method)
    count = {"n": 0}

    def op(self, *args, **kwargs):
        count["n"] += 1
        if count["n"] > calls:
            raise Interrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Location, method, op)


# -- never into the source --------------------------------------------------------------------


@pytest.mark.parametrize("where", ["same", "inside", "chunk key", "contains source", "link inside",
                                   "link to source", "dot-dot"])
def test_a_destination_overlapping_the_source_is_refused(store, where: str, capsys) -> None:
    src, _ = store
    outside = src.parent / "elsewhere"
    outside.mkdir()
    dst = {"same": src, "inside": src / "sub.zarr", "chunk key": src / "t" / "0.0",
           "contains source": src.parent, "link inside": outside / "link" / "x.zarr",
           "link to source": outside / "alias", "dot-dot": src / "t" / ".." / "new.zarr"}[where]
    if where == "link inside":
        (outside / "link").symlink_to(src / "sub")
    if where == "link to source":
        dst.symlink_to(src)
    before = hashes(src)
    assert main(["migrate", str(src), str(dst)]) == 2
    err = capsys.readouterr().err
    assert "overlaps" in err and "never writes into its source" in err
    assert hashes(src) == before
    with pytest.raises(UsageError, match="overlaps"):
        migrate(src, dst)
    assert hashes(src) == before


def test_dry_run_needs_no_destination(store, capsys) -> None:
    src, _ = store
    before = hashes(src)
    assert main(["migrate", str(src), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "t: float32 [32, 30], 8 chunks, keep chunks" in out and "dry run: nothing written" in out
    assert main(["migrate", str(src)]) == 2
    assert "a destination is needed" in capsys.readouterr().err
    assert hashes(src) == before


def test_in_place_with_another_destination_or_rewrite_is_refused(store, capsys) -> None:
    src, _ = store
    assert main(["migrate", str(src), str(src.parent / "x.zarr"), "--in-place"]) == 2
    assert "either a destination or --in-place" in capsys.readouterr().err
    with pytest.raises(UsageError, match="either a destination or --in-place"):
        plan_migration(src, src.parent / "x.zarr", in_place=True)
    with pytest.raises(UsageError, match="--rewrite needs a new store"):
        migrate_in_place(src, rewrite=True)
    assert main(["migrate", str(src), "--in-place", "--finish", "--wrap"]) == 2
    assert "no migration options" in capsys.readouterr().err
    with pytest.raises(TypeError, match="wrap"):  # finish_in_place has no migration options at all
        finish_in_place(src, wrap=True)


# -- metadata last, and resuming --------------------------------------------------------------


@pytest.mark.parametrize("rewrite", [False, True])
def test_an_interrupted_run_leaves_nothing_that_opens_and_resumes(store, small_runs, monkeypatch,
                                                                  rewrite: bool, capsys) -> None:
    """The issue's example: a --rewrite killed after 3 of 10 chunks left an array that opened
    and read the fill value for the 7 missing chunks."""
    src, want = store
    dst = src.parent / "v3.zarr"
    before = hashes(src)
    if rewrite:  # zarr writes the chunks: stop it in the middle of array t
        import zarr.storage

        real = zarr.storage.LocalStore.set
        count = {"n": 0}

        async def set_(self, key, value):
            count["n"] += 1
            if count["n"] > 3 and key.startswith("t/"):
                raise Interrupt
            return await real(self, key, value)

        monkeypatch.setattr(zarr.storage.LocalStore, "set", set_)
    else:
        _interrupt_after(monkeypatch, "copy_many", 9)
    with pytest.raises(Interrupt):
        migrate(src, dst, rewrite=rewrite)
    monkeypatch.undo()
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")  # undone with the rest at the end (it leaked into later tests)
    assert check_complete_or_absent(dst, want) == "absent"
    assert opens_as_v3(dst, "t") is None and not list(dst.rglob("zarr.json"))
    assert (dst / ".numcodecs-ext-migrate").exists()
    assert main(["migrate", str(src), str(dst), "-q", *(["--rewrite"] if rewrite else [])]) == 0
    out = capsys.readouterr().out
    assert "resumed the interrupted migration" in out and "verified" in out
    assert check_complete_or_absent(dst, want) == "complete"
    assert not (dst / ".numcodecs-ext-migrate").exists()
    assert hashes(src) == before
    # a complete destination is never written again
    assert main(["migrate", str(src), str(dst)]) == 2
    assert "exists and holds a zarr store" in capsys.readouterr().err


def test_resuming_with_other_options_trusts_nothing(store, small_runs, monkeypatch, capsys) -> None:
    src, want = store
    dst = src.parent / "v3.zarr"
    _interrupt_after(monkeypatch, "copy_many", 5)
    with pytest.raises(Interrupt):
        migrate(src, dst)
    monkeypatch.undo()
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")  # undone with the rest at the end (it leaked into later tests)
    report = migrate(src, dst, wrap=True)
    assert any("another plan" in n for n in report.notes) and report.resumed is None
    assert check_complete_or_absent(dst, want) == "complete"


def test_a_destination_that_is_not_ours_is_refused(store, tmp_path: Path, capsys) -> None:
    src, _ = store
    foreign = tmp_path / "foreign.zarr"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["migrate", str(src), str(foreign)]) == 2
    assert "remove it or choose another destination" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine" and len(list(foreign.iterdir())) == 1
    empty = tmp_path / "empty.zarr"
    empty.mkdir()  # an empty folder is as good as none
    assert main(["migrate", str(src), str(empty), "-q"]) == 0


def test_an_interrupted_run_with_a_stray_file_says_what_to_do(store, small_runs, monkeypatch, capsys) -> None:
    src, _ = store
    dst = src.parent / "v3.zarr"
    _interrupt_after(monkeypatch, "copy_many", 4)
    with pytest.raises(Interrupt):
        migrate(src, dst)
    monkeypatch.undo()
    (dst / "stray.txt").write_text("x")
    assert main(["migrate", str(src), str(dst)]) == 2
    err = capsys.readouterr().err
    assert "stray.txt" in err and f"remove {dst}" in err


def test_a_kept_array_whose_later_chunks_read_differently_is_rewritten(tmp_path: Path, small_runs) -> None:
    """AsType(i4 -> u2): the v2 store's later chunk holds codes beyond uint16, which numcodecs
    wraps when it reads them. The first chunk reads the same under the spec codecs, the later
    one not: the array is rewritten (with the values v2 reads), and says why."""
    src = tmp_path / "w.zarr"
    with quiet():
        z = zarr.create_array(str(src), shape=(20,), chunks=(10,), dtype="<u2", zarr_format=2,
                              fill_value=0, compressors=None,
                              filters=[numcodecs.AsType(encode_dtype="<i4", decode_dtype="<u2")])
        z[:] = np.arange(20, dtype="u2")
    (src / "1").write_bytes(np.arange(70000, 70010, dtype="<i4").tobytes())  # (no compressor)
    with quiet():
        want = zarr.open_array(str(src), mode="r", zarr_format=2)[:]
    assert want[10] == 70000 % 65536
    report = migrate(src, tmp_path / "w3.zarr")
    assert report.arrays[0].rewrite and "at [10:20]" in report.arrays[0].rewrite
    assert "--wrap" in report.arrays[0].rewrite and report.verified
    with quiet():
        assert same(zarr.open_array(str(tmp_path / "w3.zarr"), mode="r")[:], want)


# -- in place, and finishing it ---------------------------------------------------------------


def test_in_place_resumes_after_an_interruption(store, monkeypatch, capsys) -> None:
    src, want = store
    _interrupt_after(monkeypatch, "write", 3)  # 3 of 7 zarr.json documents written
    with pytest.raises(Interrupt):
        migrate_in_place(src)
    monkeypatch.undo()
    assert len(list(src.rglob("zarr.json"))) == 3 and opens_as_v3(src) is None
    assert main(["migrate", str(src), "--in-place", "-q"]) == 0
    out = capsys.readouterr().out
    assert "3 zarr.json documents an earlier run wrote equal the plan and were kept" in out
    assert "--in-place --finish" in out
    assert check_complete_or_absent(src, want) == "complete"


def test_in_place_explains_a_zarr_json_it_would_not_write(store, capsys) -> None:
    src, _ = store
    migrate_in_place(src)
    doc = json.loads((src / "t" / "zarr.json").read_text())
    doc["attributes"]["units"] = "degC"
    (src / "t" / "zarr.json").write_text(json.dumps(doc))
    before = hashes(src)
    assert main(["migrate", str(src), "--in-place"]) == 2
    err = capsys.readouterr().err
    assert "t/zarr.json differs in attributes" in err and "remove their zarr.json" in err
    assert hashes(src) == before


def test_in_place_refuses_when_an_array_would_read_differently(tmp_path: Path) -> None:
    src = tmp_path / "w.zarr"
    with quiet():
        z = zarr.create_array(str(src), shape=(20,), chunks=(10,), dtype="|u1", zarr_format=2,
                              fill_value=0, filters=[numcodecs.AsType(encode_dtype="|i1", decode_dtype="|u1")])
        z[:] = np.arange(20, dtype="u1") * 12  # 132 and above stored as negative codes
    before = hashes(src)
    with pytest.raises(ToolError, match=r"--in-place keeps the chunks .* at \[10:20\]"):
        migrate_in_place(src)
    assert hashes(src) == before
    migrate_in_place(src, wrap=True)  # numcodecs' wrapping kept: every chunk the same


def test_finish_proves_then_removes_the_v2_metadata(store, capsys) -> None:
    src, want = store
    with pytest.raises(UsageError, match="run `numcodecs-ext migrate .* --in-place` first"):
        finish_in_place(src)
    migrate_in_place(src)
    chunks = chunk_files(src)
    assert main(["migrate", str(src), "--in-place", "--finish", "--dry-run"]) == 0
    assert "would remove the v2 metadata" in capsys.readouterr().out and list(src.rglob(".zarray"))
    assert main(["migrate", str(src), "--in-place", "--finish"]) == 0
    out = capsys.readouterr().out
    assert "removed the v2 metadata" in out and "zarr v3 store only" in out
    assert not list(src.rglob(".z*")) and chunk_files(src) == chunks
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no more "both zarr.json and .zarray" warnings
        g = zarr.open_group(str(src), mode="r")
        for name, values in want.items():
            assert same(g[name][...], values)
    assert main(["migrate", str(src), "--finish"]) == 0  # nothing left to do
    assert "nothing to finish" in capsys.readouterr().out


def test_finish_keeps_everything_when_the_views_disagree(store, capsys) -> None:
    src, _ = store
    migrate_in_place(src)
    (src / "zarr.json").unlink()  # the root group has only v2 metadata again
    before = hashes(src)
    assert main(["migrate", str(src), "--finish"]) == 2
    assert "v2 metadata and no zarr.json: /" in capsys.readouterr().err
    migrate_in_place(src)
    with quiet():
        zarr.open_group(str(src), mode="r+", zarr_format=2).attrs["added"] = 1  # a v2 edit since
    before = hashes(src)
    assert main(["migrate", str(src), "--finish"]) == 2
    assert "/ (attribute added)" in capsys.readouterr().err
    assert hashes(src) == before
    doc = json.loads((src / "f" / "zarr.json").read_text())
    doc["fill_value"] = 1.0  # the v3 view now reads the missing chunks differently ...
    doc["shape"] = [5, 6]  # ... and has another shape
    (src / "f" / "zarr.json").write_text(json.dumps(doc))
    with quiet():
        zarr.open_group(str(src), mode="r+", zarr_format=3).attrs["added"] = 1
    before = hashes(src)
    assert main(["migrate", str(src), "--finish"]) == 2
    assert "f (shape, fill value)" in capsys.readouterr().err
    assert hashes(src) == before


def test_finish_resumes_after_an_interruption(store, monkeypatch) -> None:
    src, want = store
    migrate_in_place(src)
    _interrupt_after(monkeypatch, "remove", 4)
    with pytest.raises(Interrupt):
        finish_in_place(src)
    monkeypatch.undo()
    assert check_complete_or_absent(src, want) == "complete"
    assert list(src.rglob(".z*"))
    finish_in_place(src)
    assert not list(src.rglob(".z*")) and check_complete_or_absent(src, want) == "complete"


# -- beyond local folders, and broken inputs --------------------------------------------------


def test_migrate_and_normalize_work_on_fsspec_urls(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    src = tmp_path / "v2.zarr"
    want = build_v2(src, chunks=3)
    fs = fsspec.filesystem("memory")
    root = f"/store-{os.getpid()}-{tmp_path.name}"
    fs.put(str(src), f"{root}/src.zarr", recursive=True)
    try:
        report = migrate(f"memory://{root}/src.zarr", f"memory://{root}/dst.zarr")
        assert report.verified and not fs.find(f"{root}/dst.zarr/.numcodecs-ext-migrate")
        with pytest.raises(UsageError, match="overlaps"):
            migrate(f"memory://{root}/src.zarr", f"memory://{root}/src.zarr/x")
        with quiet():
            g = zarr.open_group(f"memory://{root}/dst.zarr", mode="r")
            for name, values in want.items():
                assert same(g[name][...], values)
        assert migrate_in_place(f"memory://{root}/src.zarr").verified
    finally:
        fs.rm(root, recursive=True)


def test_normalize_leaves_an_array_whose_chunks_cannot_be_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.zarr"
    with quiet():
        try:
            from zarr.codecs.numcodecs import FixedScaleOffset
        except ImportError:
            from numcodecs.zarr3 import FixedScaleOffset
        z = zarr.create_array(str(path), shape=(30,), chunks=(10,), dtype="f8", fill_value=250.0,
                              filters=[FixedScaleOffset(offset=250, scale=10, dtype="<f8", astype="<u2")])
        z[:] = np.linspace(250, 300, 30)
    (path / "c" / "2").write_bytes(b"not zstd at all")
    doc = (path / "zarr.json").read_bytes()
    assert main(["normalize", str(path), "-q"]) == 1
    err = capsys.readouterr().err
    assert "zarr cannot read the source at [20:30]" in err and "Traceback" not in err
    assert (path / "zarr.json").read_bytes() == doc


@pytest.mark.parametrize("argv, words", [
    (["--nan-code", ""], "give an integer code"),
    (["--nan-code", "t=1.5"], "give an integer code"),
    (["--nan-code", "1", "--nan-code", "2"], "given twice"),
    (["--nan-code", "=1"], "has no array / (its root); its arrays are"),
    (["--finish", "--rewrite"], "no migration options"),
    (["--finish", "--no-verify"], "cannot skip that"),
])
def test_bad_arguments_exit_2_before_anything_is_read(store, argv: list[str], words: str, capsys) -> None:
    src, _ = store
    before = hashes(src)
    assert main(["migrate", str(src), str(src.parent / "o.zarr"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert hashes(src) == before and not (src.parent / "o.zarr").exists()


def test_a_broken_v2_metadata_document_is_reported(tmp_path: Path, capsys) -> None:
    src = tmp_path / "b.zarr"
    build_v2(src, chunks=2)
    (src / "t" / ".zarray").write_text("{not json")
    assert main(["migrate", str(src), str(tmp_path / "o.zarr")]) == 1
    err = capsys.readouterr().err
    assert "t/.zarray: not readable JSON metadata" in err and "Traceback" not in err
    assert not (tmp_path / "o.zarr").exists()
    (src / "t" / ".zarray").write_text(json.dumps({"shape": [4], "chunks": [0], "dtype": "<f4"}))
    assert main(["migrate", str(src), str(tmp_path / "o.zarr")]) == 1
    assert "do not describe a chunk grid" in capsys.readouterr().err


def test_an_unreadable_journal_says_what_to_do(store, small_runs, monkeypatch, capsys) -> None:
    src, want = store
    dst = src.parent / "v3.zarr"
    _interrupt_after(monkeypatch, "copy_many", 3)
    with pytest.raises(Interrupt):
        migrate(src, dst)
    monkeypatch.undo()
    (dst / ".numcodecs-ext-migrate" / "stamp.json").write_text("{truncated")
    assert main(["migrate", str(src), str(dst)]) == 2
    err = capsys.readouterr().err
    assert "unreadable migration journal" in err and f"remove {dst}" in err
    assert check_complete_or_absent(dst, want) == "absent"


def test_the_work_on_a_run_can_travel_to_another_process(store) -> None:
    """What issue 26 hands to dask workers: a View (where, which node, staged metadata) is
    plain data that pickles, and opens the same array on the other side."""
    import pickle

    from numcodecs_ext.migrate.prove import candidate, plan_store
    from numcodecs_ext.migrate.runs import View, compare_run, runs

    src, want = store
    location = Location.parse(src)
    plan = next(p for p in plan_store(location).arrays if p.path == "t")
    views = [pickle.loads(pickle.dumps(v)) for v in (View(location, "t", 2), candidate(location, plan))]
    source, target = (v.open() for v in views)
    for _, sel in runs(plan.shape, plan.chunk_shape, itemsize=plan.itemsize):
        assert compare_run(source, target, sel, name="t") is None
    with quiet():
        assert same(target[...], want["t"])


def _two_plain_arrays(path: Path) -> None:
    """Two uncompressed arrays: a chunk rewritten with other values keeps its size."""
    with quiet():
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        for name in ("a", "b"):
            g.create_array(name, shape=(40,), chunks=(10,), dtype="<i4", compressors=None,
                           fill_value=0)[:] = np.arange(40)


@pytest.mark.parametrize("rewrite", [False, True])
def test_a_source_changed_since_the_interrupted_run_is_not_trusted(tmp_path: Path, small_runs,
                                                                   monkeypatch, rewrite: bool) -> None:
    """The runs the journal names were verified against the source as it was; a chunk of the
    source rewritten since (same key, same size: uncompressed) must not be taken on faith."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _two_plain_arrays(src)
    if rewrite:
        from zarr.storage import LocalStore

        real = LocalStore.set

        async def set_(self, key, value):
            if key.startswith("b/") and not key.endswith("/0"):
                raise Interrupt
            return await real(self, key, value)

        monkeypatch.setattr(LocalStore, "set", set_)
    else:
        _interrupt_after(monkeypatch, "copy_many", 5)  # a verified and journaled, b begun
    with pytest.raises(Interrupt):
        migrate(src, dst, rewrite=rewrite)
    monkeypatch.undo()
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")  # undone with the rest at the end (it leaked into later tests)
    assert 0 in MigrationJournal.read(Location.parse(str(dst))).runs["a"]
    size = (src / "a" / "0").stat().st_size
    with quiet():
        zarr.open_array(str(src / "a"), mode="r+", zarr_format=2)[:10] = np.arange(10) * 7
    assert (src / "a" / "0").stat().st_size == size
    report = migrate(src, dst, rewrite=rewrite)
    assert report.verified and report.resumed is None
    assert any("changed since" in n for n in report.notes)
    with quiet():
        got = zarr.open_array(str(dst / "a"), mode="r", zarr_format=3)[:]
    assert same(got, np.concatenate([np.arange(10) * 7, np.arange(10, 40)]).astype("<i4"))


def test_a_destination_that_cannot_be_made_is_a_usage_error(store, tmp_path: Path, capsys) -> None:
    """A destination below a file, or a link to nowhere, exited 1 with a bare errno text."""
    src, _ = store
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    for dst, words in ((tmp_path / "afile" / "x.zarr", "afile is a file"),
                       (tmp_path / "dangling", "a link to")):
        assert main(["migrate", str(src), str(dst), "-q"]) == 2, dst
        err = capsys.readouterr().err
        assert words in err and "Errno" not in err and "Traceback" not in err, err
    assert not (tmp_path / "nowhere").exists()


def test_a_dry_run_writes_nothing_into_an_interrupted_destination(store, monkeypatch, capsys) -> None:
    """A run interrupted while it wrote the metadata, then a dry run with other options: the
    dry run says what a real run would do, and removes nothing (it removed the metadata)."""
    src, want = store
    dst = src.parent / "v3.zarr"
    real, count = Location.write, {"n": 0}

    def write(self, key, data):
        if key.endswith("zarr.json"):
            count["n"] += 1
            if count["n"] > 2:
                raise Interrupt
        return real(self, key, data)

    monkeypatch.setattr(Location, "write", write)
    with pytest.raises(Interrupt):
        migrate(src, dst)
    monkeypatch.undo()
    before = hashes(dst)
    assert len([k for k in before if k.endswith("zarr.json")]) == 2
    assert main(["migrate", str(src), str(dst), "--dry-run", "--wrap", "-q"]) == 0
    assert "interrupted migration of another plan" in capsys.readouterr().err
    assert hashes(dst) == before
    assert main(["migrate", str(src), str(dst), "--wrap", "-q"]) == 0  # the real run redoes it all
    assert check_complete_or_absent(dst, want) == "complete"


def test_the_source_stamps_see_a_rewrite_on_fsspec_stores_too(tmp_path: Path) -> None:
    """What a resumed run trusts on object stores: the listing's ETag, generation or time (the
    memory filesystem has its creation time), never the size alone."""
    import time

    from numcodecs_ext.store.journal import source_stamps

    root = f"memory://stamps-{os.getpid()}-{tmp_path.name}"
    location = Location.parse(root)
    try:
        location.write("a/0", b"abc")
        before = source_stamps(location, ["a/0"])
        assert before is not None and before == source_stamps(location, ["a/0"])
        time.sleep(0.01)  # (the memory filesystem's clock: a new object is a later one)
        location.write("a/0", b"xyz")
        assert source_stamps(location, ["a/0"]) != before
        assert source_stamps(location, ["a/1"]) != source_stamps(location, ["a/0"])  # gone
    finally:
        location.fs.rm(location.root, recursive=True)


def test_a_journal_of_the_older_format_starts_over(store, small_runs, monkeypatch, capsys) -> None:
    """migrate's journal of before (one document, ``.numcodecs-ext-migrate.json``) is a journal of
    another plan: nothing it names is trusted, every chunk is written again, and it is gone at the end."""
    src, want = store
    dst = src.parent / "v3.zarr"
    _interrupt_after(monkeypatch, "copy_many", 3)
    with pytest.raises(Interrupt):
        migrate(src, dst)
    monkeypatch.undo()
    journal = MigrationJournal.read(Location.parse(str(dst)))
    assert journal.runs  # runs were verified and recorded
    old = {"format": "numcodecs-ext migrate journal 1", "plan": journal.plan, "source": str(src),
           "modes": journal.modes, "runs": {a: {str(n): d for n, d in r.items()} for a, r in journal.runs.items()}}
    Location.parse(str(dst)).remove_tree(".numcodecs-ext-migrate")
    (dst / ".numcodecs-ext-migrate.json").write_text(json.dumps(old))
    assert main(["migrate", str(src), str(dst)]) == 0
    seen = capsys.readouterr()
    out = seen.out + seen.err
    assert "interrupted migration of another plan" in out and "resumed" not in out, out
    assert check_complete_or_absent(dst, want) == "complete"
    assert not (dst / ".numcodecs-ext-migrate.json").exists() and not (dst / ".numcodecs-ext-migrate").exists()


def test_a_run_is_recorded_with_the_mode_of_its_array(tmp_path) -> None:
    """A run's record never lies on disk without its array's mode (a resumed run trusts records
    only under the mode they were made in, and forgets them otherwise): a kill in the first array
    keeps its runs."""
    loc = Location.parse(str(tmp_path / "dst.zarr"))
    journal = MigrationJournal(loc, plan="d", source="src")
    journal.totals = {"a": 2, "b": 1}
    journal.save()
    journal.modes["a"] = "keep"
    journal.done("a", 0, "x")  # (the kill comes here: the array's end, which saves, never does)
    seen = MigrationJournal.read(loc)
    assert seen.modes == {"a": "keep"} and seen.runs == {"a": {0: "x"}} and seen.plan == "d"
    assert seen.totals == {"a": 2, "b": 1} and seen.seed is None
