"""One netCDF-C handle per file per process (numcodecs_ext.cf.handles).

netCDF-C crashes the process (SIGSEGV in HDF5's H5F_addr_decode) when a file holding string
variables is open through two handles at once; convert opened its source up to four times at once
(stored and decoded values, then both again to verify), and a CI run died of it. These tests hold
every opening the tools make to one handle, and run the conversion that crashed many times over.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.helpers.cf_files import write_strings, write_variable
from numcodecs_ext.cf.handles import (NETCDF_LOCK, handles_open, open_netcdf4, open_source, shared_dataset,
                                      shared_file)

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")


def _strings(path):
    return write_strings(path, group=True)


def test_every_opening_shares_one_handle(tmp_path):
    src = _strings(tmp_path / "s.nc")
    decoded = open_source(str(src), "netcdf4")
    raw = open_netcdf4(src, mask_and_scale=False)
    group = open_netcdf4(src, "g")
    with shared_file(src) as nc:
        assert handles_open(src) == 1
        assert list(nc.variables) == ["names", "chars"]
    assert list(decoded["names"].values) == ["a", "bé", "c"]
    assert list(group["labels"].values) == ["p", "q"]
    assert list(raw["chars"].values) == [b"ab", b"cd", b"ef"]
    assert handles_open(src) == 1
    decoded.close()
    raw.close()
    assert handles_open(src) == 1  # the group's dataset still has it
    assert list(group["labels"].values) == ["p", "q"]
    group.close()
    assert handles_open(src) == 0


def test_a_closed_dataset_reopens_on_its_next_read(tmp_path):
    src = _strings(tmp_path / "s.nc")
    ds = open_netcdf4(src)
    other = open_netcdf4(src)
    other.close()  # closes the shared handle's sharer, not the file under ds
    assert list(ds["names"].values) == ["a", "bé", "c"]
    ds.close()
    assert handles_open(src) == 0


def test_a_file_replaced_at_the_same_path_is_read_anew(tmp_path):
    src, new = tmp_path / "v.nc", tmp_path / "new.nc"
    write_variable(src, "NETCDF4", np.arange(3, dtype="int16"), {})
    write_variable(new, "NETCDF4", np.arange(5, dtype="int16"), {})
    first = open_netcdf4(src)
    assert list(first["v"].values) == [0, 1, 2]
    os.replace(new, src)
    second = open_netcdf4(src)
    assert list(second["v"].values) == [0, 1, 2, 3, 4]
    first.close()
    second.close()
    assert handles_open(src) == 0


def test_datasets_pickle_and_read_through_the_receiving_process_handle(tmp_path):
    src = _strings(tmp_path / "s.nc")
    ds = open_netcdf4(src)
    copy = pickle.loads(pickle.dumps(ds["names"].variable))  # what a dask worker receives
    assert list(np.asarray(copy.values)) == ["a", "bé", "c"]
    assert handles_open(src) == 1
    assert pickle.loads(pickle.dumps(NETCDF_LOCK)) is NETCDF_LOCK
    ds.close()
    del copy
    with NETCDF_LOCK:  # a dropped sharer lets go at the next opening or closing
        pass
    open_netcdf4(src).close()
    assert handles_open(src) == 0


def test_letting_go_never_waits_for_another_thread_in_netcdf(tmp_path):
    # xarray closes files it evicts from its cache in whatever thread, holding its own locks: a
    # close that waited for ours could deadlock against a thread holding ours and waiting for xarray's
    import threading

    src = _strings(tmp_path / "s.nc")
    nc = shared_dataset(src)
    held, done = threading.Event(), threading.Event()

    def hold():
        with NETCDF_LOCK:
            held.set()
            done.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(30)
    closer = threading.Thread(target=nc.close)
    closer.start()
    closer.join(30)
    assert not closer.is_alive()  # returned at once, the lock still held by the other thread
    done.set()
    t.join()
    assert handles_open(src) == 0  # let go of by the next call that holds the lock


@pytest.mark.full
def test_converting_a_file_with_strings_many_times_in_one_process(tmp_path):
    # before the shared handle this crashed within 1 to 15 conversions (6 runs of 30 out of 6)
    src = _strings(tmp_path / "s.nc")
    code = textwrap.dedent(f"""
        import shutil
        from numcodecs_ext.cf.convert import convert
        for i in range(25):
            dst = {str(tmp_path)!r} + f"/out{{i % 2}}.zarr"
            shutil.rmtree(dst, ignore_errors=True)
            assert convert({str(src)!r}, dst, zarr_format=3 if i % 2 else 2).verified
        print("converted 25 times")
    """)
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "converted 25 times" in done.stdout


def test_an_opening_reads_the_file_under_the_lock(tmp_path):
    # netCDF-C is not thread-safe: the metadata an opening reads (variables, attributes,
    # dimensions, encodings) must be read holding NETCDF_LOCK like every later read, or an opening
    # in one thread (convert's plan, suggest) runs beside another thread's reads of any file
    src = _strings(tmp_path / "s.nc")
    open_netcdf4(src).close()  # xarray's modules imported: what follows is the opening itself
    unlocked = set()

    def watch(frame, event, arg):
        code = frame.f_code
        if event == "call" and (code.co_filename.endswith(os.path.join("backends", "netCDF4_.py"))
                                or os.sep + "netCDF4" + os.sep in code.co_filename):
            if not NETCDF_LOCK._lock._is_owned():
                unlocked.add(code.co_name)

    sys.setprofile(watch)
    try:
        ds = open_netcdf4(src, "g")
        group = open_source(str(src), "netcdf4", None, mask_and_scale=False)
    finally:
        sys.setprofile(None)
    ds.close()
    group.close()
    store_reads = {"get_variables", "get_attrs", "get_dimensions", "get_encoding", "open_store_variable",
                   "_find_dim"}
    assert not unlocked & store_reads, sorted(unlocked & store_reads)


def test_one_file_under_two_names_or_touched_is_one_handle(tmp_path):
    # HDF5 shares one file's state between all its openings in a process (by device and inode),
    # which is what crashes: a hard link, or the same file with a new modification time, is the
    # same file to HDF5 and must share the one handle too
    src = _strings(tmp_path / "s.nc")
    link = tmp_path / "link.nc"
    os.link(src, link)
    a = shared_dataset(src)
    assert handles_open(link) == 1
    b = shared_dataset(link)
    assert b.filepath() == a.filepath()  # the very handle opened first
    st = os.stat(src)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched: the same bytes
    assert handles_open(src) == 1
    a.close()
    b.close()
    assert handles_open(src) == 0 and handles_open(link) == 0


def test_a_side_that_cannot_be_opened_lets_go_of_the_others(tmp_path):
    # verify.opened opens the source twice, then the store: a store that cannot be opened (gone,
    # unreachable) left both source datasets open for as long as the exception lived (a notebook
    # keeps the last one), and with them the file's handle
    from numcodecs_ext.cf.verify import opened

    src = _strings(tmp_path / "s.nc")
    with pytest.raises(FileNotFoundError) as caught:
        with opened(str(src), "netcdf4", str(tmp_path / "gone.zarr"), None):
            pass
    assert caught.value is not None  # the exception, its traceback and its frames still alive
    assert handles_open(src) == 0


def test_no_engine_named_reads_a_local_file_through_the_shared_handle(tmp_path):
    # open_source (and so verify.opened / verify_group) takes engine None, as xarray does: xarray's
    # own choice for a netCDF file is netCDF-C, which then opened a handle of its own per dataset
    src = _strings(tmp_path / "s.nc")
    decoded, raw = open_source(str(src), None), open_source(src, None, mask_and_scale=False)
    assert handles_open(src) == 1
    assert list(decoded["names"].values) == ["a", "bé", "c"]
    assert list(raw["chars"].values) == [b"ab", b"cd", b"ef"]
    decoded.close()
    raw.close()
    assert handles_open(src) == 0
