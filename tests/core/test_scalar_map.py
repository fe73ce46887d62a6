"""Large scalar maps: the sorted-table path gives exactly what the per-entry path gives, in time
and memory that do not grow with the number of entries."""

from __future__ import annotations

import time
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from numcodecs_ext import CastValue
from numcodecs_ext.core import scalar_map as sm
from numcodecs_ext.core.cast_value import cast_array

rng = np.random.default_rng(3)


def _both(monkeypatch, x, dtype, **kw):
    """(table path, per-entry path) results, or the error each raised."""
    results = []
    for small in (sm.SMALL_MAP, 10**9):
        monkeypatch.setattr(sm, "SMALL_MAP", small)
        try:
            results.append(cast_array(x, dtype, **kw).tobytes())
        except ValueError as e:
            results.append(str(e))
    monkeypatch.undo()
    return results


def _f(dtype, v):
    return np.array(v, dtype=dtype)[()]


def _float_map(src, tgt, n=40):
    """n numeric keys, ±0, ±inf, a NaN payload key, "NaN", and repeated keys (first wins)."""
    keys = list(rng.uniform(-300, 300, n).round())
    pairs = [(_f(src, k), _f(tgt, i % 100)) for i, k in enumerate(keys)]
    pairs += [(_f(src, -0.0), _f(tgt, 1)), (_f(src, 0.0), _f(tgt, 2)),
              (_f(src, np.inf), _f(tgt, 3)), (_f(src, -np.inf), _f(tgt, 4))]
    bits = np.dtype(f"u{np.dtype(src).itemsize}")
    payload = np.array(np.nan, src).view(bits) | bits.type(1)
    pairs.insert(5, (payload.view(src)[()], _f(tgt, 5)))
    pairs.append((_f(src, np.nan), _f(tgt, 6)))
    pairs.append((pairs[0][0], _f(tgt, 7)))  # repeated key: ignored
    return pairs, keys


@pytest.mark.parametrize("src", ["float64", "float32"])
@pytest.mark.parametrize("tgt", ["uint8", "int16", "float16", "bfloat16", "int4"])
@pytest.mark.parametrize("mode", [None, "clamp"])
def test_table_path_equals_per_entry_path(monkeypatch, src, tgt, mode) -> None:
    tgt_dt = np.dtype(getattr(ml_dtypes, tgt)) if tgt in ("bfloat16", "int4") else np.dtype(tgt)
    pairs, keys = _float_map(src, tgt_dt if tgt != "int4" else np.dtype("int8"))
    if tgt == "int4":
        pairs = [(k, np.array(int(v) % 8, tgt_dt)[()]) for k, v in pairs]
    x = np.concatenate([np.array(keys, src), rng.uniform(-5, 5, 300).round().astype(src),
                        np.array([np.nan, -0.0, 0.0, np.inf, -np.inf], src)])
    bits = np.dtype(f"u{np.dtype(src).itemsize}")
    x = np.concatenate([x, (np.array(np.nan, src).view(bits) | bits.type(1)).reshape(1).view(src)])
    rng.shuffle(x)
    big, small = _both(monkeypatch, x, tgt_dt, out_of_range=mode, scalar_map=pairs)
    assert big == small


@pytest.mark.parametrize("src,tgt", [("int32", "int8"), ("uint64", "float32"), ("int64", "uint16"),
                                     ("uint16", "uint8")])
def test_integer_sources(monkeypatch, src, tgt) -> None:
    info = np.iinfo(src)
    keys = sorted({int(k) for k in rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), 30)})
    keys += [int(info.max), int(info.min)]
    pairs = [(_f(src, k), _f(tgt, i % 100)) for i, k in enumerate(keys)]
    x = np.array(keys + list(rng.integers(0, 100, 200)), src)
    for mode in ("clamp", None):
        big, small = _both(monkeypatch, x, tgt, out_of_range=mode, scalar_map=pairs)
        assert big == small


def test_twenty_thousand_entries_bounded_time_and_memory() -> None:
    """A 20,000-entry map on an 8 MB chunk: memory within a few chunk sizes, not per entry."""
    n = 20000
    config = {"encode": [[float(i), i % 256] for i in range(n)],
              "decode": [[i, float(i)] for i in range(256)]}
    codec = CastValue(data_type="uint8", dtype="float64", out_of_range="clamp", scalar_map=config)
    x = rng.uniform(0, n - 1, 1_000_000).round()
    codec.encode(x[:10])  # the prepared map is built once per configuration
    tracemalloc.start()
    t = time.perf_counter()
    enc = codec.encode(x)
    elapsed = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert np.array_equal(enc, (x % 256).astype(np.uint8))
    assert peak < 4 * x.nbytes, f"peak {peak / 2**20:.0f} MiB"
    assert elapsed < 10  # generous: a pass per entry took minutes


def test_repeated_keys_first_wins_in_the_table() -> None:
    pairs = [(np.float64(i), np.uint8(i)) for i in range(20)] + [(np.float64(3), np.uint8(99))]
    assert cast_array(np.array([3.0]), "uint8", scalar_map=pairs).tolist() == [3]


def test_codec_with_prepared_plans_pickles() -> None:
    """A codec that has run (its map prepared, conversion plans cached) still pickles, as dask
    needs; the copy prepares its own plans."""
    import pickle

    config = {"encode": [[float(i), i] for i in range(40)] + [["NaN", 255]]}
    codec = CastValue(data_type="uint8", dtype="float64", scalar_map=config)
    x = np.array([1.0, np.nan, 39.0])
    expected = codec.encode(x)
    clone = pickle.loads(pickle.dumps(codec))
    assert clone == codec and np.array_equal(clone.encode(x), expected)
