"""numcodecs-ext suggest reads in bounded, chunk-aligned blocks, proposes chunks from the data's
own chunking, and ends every hostile input with a message and an exit status."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cf import blocks
from numcodecs_ext.cf.suggest import open_arrays, suggest, suggest_array
from numcodecs_ext.cli import main


class Virtual:
    """An array of any size that exists only where it is read (a ramp): what a huge zarr array
    or netCDF variable looks like to the reader. Records every read."""

    def __init__(self, shape, dtype="float64", chunks=None):
        self.shape, self.dtype, self.reads = tuple(shape), np.dtype(dtype), []
        if chunks is not None:
            self.chunks = tuple(chunks)

    def __getitem__(self, key):
        ranges = [np.arange(*k.indices(n)) for k, n in zip(key, self.shape)]
        self.reads.append((key, math.prod(len(r) for r in ranges) * self.dtype.itemsize))
        flat = np.zeros([len(r) for r in ranges])
        for axis, r in enumerate(ranges):  # each value is its flat index in the whole array
            stride = math.prod(self.shape[axis + 1:])
            flat = flat + (r * stride).reshape([-1 if a == axis else 1 for a in range(len(ranges))])
        return flat.astype(self.dtype)


def _within_chunks(key, chunks) -> bool:
    """Whether a read covers whole chunks from a chunk boundary, or stays inside one chunk."""
    return all(s.start % c == 0 or s.start // c == (s.stop - 1) // c for s, c in zip(key, chunks))


@pytest.mark.parametrize("shape, chunks", [
    ((2, 10**8), None), ((2, 10**8), (1, 10**8)), ((2, 10**8), (2, 10**7)), ((10**9,), (10**6,)),
    ((1, 1, 10**9), None), ((10**5, 10**5), (1000, 1000)), ((3, 7, 11), None), ((50, 40, 30, 20), (7, 40, 30, 20)),
])
def test_sample_is_bounded_in_bytes_for_any_shape(shape, chunks) -> None:
    a = Virtual(shape, chunks=chunks)
    pieces = blocks.sample(a)
    assert sum(p.nbytes for p in pieces) <= blocks.SAMPLE_BYTES
    assert sum(n for _, n in a.reads) <= blocks.SAMPLE_BYTES and len(pieces) >= 1
    if math.prod(shape) * 8 > blocks.SAMPLE_BYTES:  # a real sample, spread: not only the start
        assert sum(p.nbytes for p in pieces) >= blocks.SAMPLE_BYTES // 8
        assert len(pieces) == 1 or any(k[0].start or any(s.start for s in k) for k, _ in a.reads[1:])
    for key, _ in a.reads:  # aligned to the chunks: no read straddles two of them
        assert _within_chunks(key, chunks or (1,) * len(shape)), key


@pytest.mark.parametrize("shape, chunks", [
    ((2, 4 * 10**6), None), ((2, 4 * 10**6), (1, 4 * 10**6)), ((4000, 3000), (1000, 1000)),
    ((4000, 3000), (4000, 3000)), ((64, 64, 64, 64), (8, 64, 64, 64)),
])
def test_range_streams_in_bounded_chunk_aligned_blocks(shape, chunks) -> None:
    a = Virtual(shape, chunks=chunks)
    budget = 1 << 20
    lo, hi, nan, count = blocks.data_range(a, budget=budget)
    assert (lo, hi, nan, count) == (0.0, float(math.prod(shape) - 1), False, math.prod(shape))
    chunk_bytes = math.prod(chunks) * 8 if chunks else 8
    biggest = max(n for _, n in a.reads)
    # a block is at most the budget, or one stored chunk where that is larger (decoded whole anyway)
    assert biggest <= max(budget, chunk_bytes if chunk_bytes <= blocks.WHOLE_CHUNK_BYTES else budget)
    assert sum(n for _, n in a.reads) == math.prod(shape) * 8  # every value read once
    if chunks:
        for key, _ in a.reads:
            assert _within_chunks(key, chunks), (key, chunks)


def test_block_shapes_cut_every_axis_and_grow_by_whole_chunks() -> None:
    assert blocks.block_shape((3, 5, 10**6), 8, None, 800) == (1, 1, 100)
    assert blocks.block_shape((3, 5, 10**6), 8, (3, 5, 10**6), 800) == (1, 1, 100)
    assert blocks.block_shape((100, 100), 8, (10, 10), 8 * 10 * 100 * 3) == (30, 100)
    assert blocks.block_shape((100, 100), 8, (10, 10), 8 * 10 * 10 * 3) == (10, 30)
    # a stored chunk up to WHOLE_CHUNK_BYTES is one block (zarr decodes it whole anyway)
    assert blocks.block_shape((4, 10**6), 8, (1, 10**6), 1 << 20, blocks.WHOLE_CHUNK_BYTES) == (1, 10**6)
    assert list(blocks.blocks((5,), (2,))) == [(slice(0, 2),), (slice(2, 4),), (slice(4, 5),)]


def test_a_chunk_too_big_to_read_whole_is_read_in_eight_pieces(monkeypatch) -> None:
    monkeypatch.setattr(blocks, "WHOLE_CHUNK_BYTES", 4 << 20)  # (256 MB by default)
    n = 4 * 10**6  # (2, n) float64 in chunks of one row: 32 MB each
    a = Virtual((2, n), chunks=(1, n))
    lo, hi, _, count = blocks.data_range(a, budget=1 << 20)
    assert (lo, hi, count) == (0.0, 2.0 * n - 1, 2 * n)
    assert len(a.reads) == 16 and max(size for _, size in a.reads) <= n * 8 // 8
    assert all(key[0].stop - key[0].start == 1 for key, _ in a.reads)  # never across the two rows


def test_proposed_chunks_follow_the_stored_ones() -> None:
    # sensible stored chunks are kept; small ones grow by whole multiples; none: ~8 MB, trailing whole
    assert blocks.propose_chunks((8760, 721, 1440), 4, (1, 721, 1440)) == (1, 721, 1440)
    assert blocks.propose_chunks((8760, 721, 1440), 4, (1, 1, 1440)) == (2, 721, 1440)
    assert blocks.propose_chunks((8760, 721, 1440), 4, None) == (2, 721, 1440)
    assert blocks.propose_chunks((100, 10**8), 8, (1, 10**8)) == (1, 1048576)  # 800 MB chunks are cut
    assert blocks.propose_chunks((10, 10), 8, None) == (10, 10)
    assert blocks.propose_chunks((), 8, None) == ()


def _netcdf(path: Path, shape, chunks, dtype="f4") -> np.ndarray:
    netCDF4 = pytest.importorskip("netCDF4")
    x = (250 + 60 * np.random.default_rng(0).random(shape)).astype(dtype)
    x.flat[::97] = np.nan
    with netCDF4.Dataset(path, "w") as ds:
        for name, n in zip("tyx", shape):
            ds.createDimension(name, n)
        kw = {"chunksizes": chunks} if chunks else {"contiguous": True}
        v = ds.createVariable("t2m", dtype, tuple("tyx"[: len(shape)]), fill_value=np.float32(np.nan), **kw)
        v[:] = x
    return x


def test_netcdf_chunks_come_from_the_file(tmp_path: Path, capsys) -> None:
    shape = (40, 300, 400)  # 19 MB of float32
    _netcdf(tmp_path / "chunked.nc", shape, (4, 300, 400))  # 1.9 MB chunks: kept
    _netcdf(tmp_path / "small.nc", shape, (1, 30, 400))  # 48 kB chunks: whole multiples of them
    x = _netcdf(tmp_path / "contiguous.nc", shape, None)  # no chunks: ~8 MB, trailing dims whole
    want = {"chunked.nc": (4, 300, 400), "small.nc": (17, 300, 400), "contiguous.nc": (17, 300, 400)}
    for name, chunks in want.items():
        assert main(["suggest", str(tmp_path / name), "--tolerance", "0.01", "-q"]) == 0
        out = capsys.readouterr().out
        assert f"shape=(40, 300, 400), chunks={chunks!r}" in out, out
    # the same data in zarr: its own chunks
    z = zarr.create_array(str(tmp_path / "t.zarr"), shape=shape, chunks=(8, 150, 400), dtype="f4",
                          fill_value=np.nan)
    z[:] = x
    assert main(["suggest", str(tmp_path / "t.zarr"), "--tolerance", "0.01", "-q", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["t.zarr"]
    assert result["chunks"] == [8, 150, 400]
    with open_arrays(tmp_path / "chunked.nc") as arrays:
        assert blocks.chunks_of(arrays["t2m"]) == (4, 300, 400)


def test_netcdf_is_read_in_blocks_of_its_chunks(tmp_path: Path, monkeypatch) -> None:
    from numcodecs_ext.cf import suggest as module

    x = _netcdf(tmp_path / "c.nc", (40, 300, 400), (4, 300, 400))
    monkeypatch.setattr(blocks, "RANGE_BYTES", 4 << 20)
    monkeypatch.setattr(blocks.data_range, "__kwdefaults__", {"budget": 4 << 20})
    reads = []
    original = module._Variable.__getitem__

    def recording(self, key):
        out = original(self, key)
        reads.append((key, out.nbytes))
        return out

    monkeypatch.setattr(module._Variable, "__getitem__", recording)
    with open_arrays(tmp_path / "c.nc") as arrays:
        result = suggest_array(arrays["t2m"], tolerance=0.01)
    r = result["range"]
    assert (r.min, r.max, r.has_nan, r.count) == (float(np.nanmin(x)), float(np.nanmax(x)), True, x.size)
    assert max(n for _, n in reads) <= 4 << 20
    for key, _ in reads:
        assert _within_chunks(key, (4, 300, 400)), key


def test_suggest_array_on_numpy_dask_and_zarr_agree(tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    x = np.linspace(-3, 9, 60_000, dtype="float32").reshape(300, 200)
    x[5, 5] = np.nan
    z = zarr.create_array(str(tmp_path / "r.zarr"), shape=x.shape, chunks=(30, 200), dtype="f4", fill_value=np.nan)
    z[:] = x
    results = [suggest_array(a, dtype="int16") for a in (x, da.from_array(x, chunks=(70, 50)), z)]
    assert len({(r["range"], r["choice"].offset, r["choice"].scale) for r in results}) == 1
    # 24 kB of stored chunks grow to the whole (small) array
    assert results[2]["chunks"] == (300, 200) and results[1]["chunks"] == (300, 200)


def _hostile_store(root: Path) -> dict[str, Path]:
    g = zarr.open_group(str(root / "s.zarr"), mode="w")
    g.create_array("t", shape=(100, 50), chunks=(10, 50), dtype="f4")[:] = np.linspace(0, 1, 5000).reshape(100, 50)
    g.create_array("ints", shape=(3,), dtype="i4")[:] = [1, 2, 3]
    g.create_array("empty", shape=(0, 5), dtype="f8")
    g.create_array("allnan", shape=(4,), dtype="f8", fill_value=np.nan)
    g.create_array("inf", shape=(3,), dtype="f8")[:] = [1, np.inf, 2]
    g.create_group("sub").create_array("deep", shape=(5,), dtype="f2")[:] = [1, 2, 3, 4, 5]
    zarr.open_group(str(root / "ints.zarr"), mode="w").create_array("i", shape=(3,), dtype="i4")[:] = [1, 2, 3]
    c = zarr.create_array(str(root / "corrupt.zarr"), shape=(20,), chunks=(10,), dtype="f8")
    c[:] = np.arange(20.0)
    (root / "corrupt.zarr" / "c" / "1").write_bytes(b"garbage")
    (root / "notnc.nc").write_text("hello")
    (root / "empty_dir").mkdir()
    return {"s": root / "s.zarr"}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_hostile_inputs_end_with_a_message_and_a_status(tmp_path: Path, capsys) -> None:
    _hostile_store(tmp_path)
    s = str(tmp_path / "s.zarr")
    catalogue = [
        ([s, "--tolerance", "0"], 2, "--tolerance 0 is not valid"),
        ([s, "--tolerance", "-1"], 2, "--tolerance -1 is not valid"),
        ([s, "--tolerance", "nan"], 2, "--tolerance nan is not valid"),
        ([s, "--tolerance", "inf"], 2, "--tolerance inf is not valid"),
        ([s, "--tolerance", "1e309"], 2, "--tolerance inf is not valid"),
        ([s, "--tolerance", "abc"], 2, "invalid float value"),
        ([s, "--dtype", "int64"], 2, "invalid choice"),
        ([s, "--array", "nope"], 2, "no array 'nope'"),
        ([s, "--array", "ints"], 2, "only float arrays"),
        ([str(tmp_path / "ints.zarr")], 2, "has no float arrays to pack"),
        ([str(tmp_path / "missing.zarr")], 2, "does not exist"),
        ([str(tmp_path / "notnc.nc")], 2, "not a netCDF file"),
        ([str(tmp_path / "empty_dir")], 2, "not a zarr store or netCDF file"),
        ([str(tmp_path / "corrupt.zarr")], 1, "cannot be read"),
        ([s, "--array", "empty"], 1, "no packing for empty"),
        ([s, "--array", "allnan"], 1, "no packing for allnan"),
        ([s, "--array", "inf"], 1, "no packing for inf"),
        ([s, "--array", "t", "--tolerance", "1e-300"], 1, "no packing meets --tolerance 1e-300 for t"),
        ([s, "--array", "t", "--tolerance", "1e308"], 0, ""),
        ([s, "--array", "sub/deep", "--dtype", "int8"], 0, ""),
    ]
    for argv, status, message in catalogue:
        try:
            got = main(["suggest", *argv, "-q"])
        except SystemExit as e:  # argparse's own usage errors
            got = e.code
        assert got == status, argv
        captured = capsys.readouterr()
        assert message in captured.err, (argv, captured.err)
        assert "Traceback" not in captured.err + captured.out and "unexpected" not in captured.err, argv
    # the whole store: the arrays that can be packed are, the others are said, and the status is 1
    assert main(["suggest", s, "--tolerance", "0.01", "-q"]) == 1
    captured = capsys.readouterr()
    assert "t: float32 in [0, 1]" in captured.out and "sub/deep: float16" in captured.out
    assert "inf: cannot suggest a packing: the data holds ±Infinity" in captured.out
    assert "no packing for inf, allnan, empty" in captured.err or "no packing for" in captured.err


def test_library_function_refuses_bad_arguments_as_value_errors(tmp_path: Path) -> None:
    from numcodecs_ext.store.errors import UsageError

    _hostile_store(tmp_path)
    for kwargs in [{"tolerance": 0}, {"tolerance": float("nan")}, {"tolerance": "0.1"}, {"dtype": "int64"},
                   {"array": "nope"}]:
        with pytest.raises(UsageError):
            suggest(tmp_path / "s.zarr", **kwargs)
    result = suggest(tmp_path / "s.zarr", array="inf")
    assert "Infinity" in result["inf"]["error"]


def test_progress_bar_on_stderr_unless_quiet(tmp_path: Path, capsys) -> None:
    _hostile_store(tmp_path)
    assert main(["suggest", str(tmp_path / "s.zarr"), "--array", "t"]) == 0
    assert "range" in capsys.readouterr().err
    assert main(["suggest", str(tmp_path / "s.zarr"), "--array", "t", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
