"""How the codecs scale with cores, against the numcodecs codecs they replace.

Prints, with every anchor measured in the same run:

1. **GIL-held time per 4 MiB chunk** for every codec operation, in the layouts zarr hands
   codecs (encoding: a contiguous chunk, or a view of the caller's array). This is what caps
   many-core speedup (Amdahl): while one thread holds the GIL no other thread runs Python. With a
   C compiler on Linux the script re-runs itself under an exact GIL accountant (``_gil.py``):
   the time held and the number of GIL releases per chunk (each release is a hand-off to a
   waiting thread, a wake-up that convoys threads on many cores); elsewhere a competing thread
   observes it, far more noisily.
2. **Per-call time on 64-element chunks** (the fixed cost of a call: setup, validation).
3. **Throughput through zarr** with ``threading.max_workers`` 1, 2, 4, ... up to the core count,
   for zarr's default pipeline and, where zarr has it, its ``FusedCodecPipeline`` (whose pool
   ``codec_pipeline.max_workers`` sizes, set to the same): MiB/s, the
   speedup over one worker, the ratio to the anchor at the same worker count, and the most threads
   alive during the run (codec threads must never exceed zarr's ``threading.max_workers``); and,
   accounted, the serial part of each run (GIL time of every thread per chunk, mostly zarr's
   own) with the throughput it caps on any number of cores.

Anchors: numcodecs ``FixedScaleOffset`` (float32 -> uint16) for scale_offset + cast_value,
zarr's own transpose (a view, copied by zarr's bytes codec) for transpose, numcodecs ``ZFPY``
(fixed_accuracy) for zfp, both through zarr's numcodecs adapter where zarr is involved.

Usage: ``python benchmarks/scaling.py [--quick] [--proxies] [--jobs]`` (``--proxies``: parts 1
and 2 only; ``--jobs``: the thread-pool table only). Run it from the repository root with
``PYTHONPATH=.`` to measure a working tree rather than the installed package.
A 2-core machine shows the proxies (1, 2) and the 1-2 worker speedups; the many-core sweep needs
a many-core machine.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _gil  # noqa: E402

warnings.filterwarnings("ignore", message=".*Numcodecs codecs are not in the Zarr version 3.*")

import numcodecs  # noqa: E402
import zarr  # noqa: E402
from zarr.storage import MemoryStore  # noqa: E402

from numcodecs_ext import zarr3  # noqa: E402
from numcodecs_ext.codecs.cast_value import CastValue  # noqa: E402
from numcodecs_ext.codecs.scale_offset import ScaleOffset  # noqa: E402
from numcodecs_ext.codecs.transpose import Transpose  # noqa: E402
from numcodecs_ext.codecs.zfp import Zfp  # noqa: E402

try:
    from numcodecs.zfpy import ZFPY
except ImportError:  # pragma: no cover - zfpy absent
    ZFPY = None

CHUNK = (1024, 1024)  # 4 MiB of float32
OFFSET, SCALE = 200.0, 100.0


def _field(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    y, x = np.meshgrid(*(np.linspace(0, 6, n) for n in shape[-2:]), indexing="ij")
    f = 280 + 20 * np.sin(x) * np.cos(y)
    return np.broadcast_to(f, shape).astype(np.float32) + rng.standard_normal(shape, np.float32) * 0.1


# --- 1. GIL-held time --------------------------------------------------------------------------

def _views(a: np.ndarray) -> dict[str, np.ndarray]:
    """A contiguous chunk, and the same values as a view into a larger array (what zarr hands
    codecs when the caller's array is bigger than a chunk)."""
    big = np.empty((a.shape[0], a.shape[1] * 2), a.dtype)
    big[:, : a.shape[1]] = a
    return {"contiguous": np.ascontiguousarray(a), "view": big[:, : a.shape[1]]}


def proxies(quick: bool = False) -> None:
    a = _field(CHUNK)
    so = ScaleOffset(offset=OFFSET, scale=SCALE, dtype="float32")
    cv = CastValue(data_type="uint16", out_of_range="clamp", dtype="float32")
    fso = numcodecs.FixedScaleOffset(offset=OFFSET, scale=SCALE, dtype="f4", astype="u2")
    tr = Transpose(order=[1, 0])
    codes = fso.encode(a)
    zfp = Zfp(mode="fixed_accuracy", tolerance=1e-3)
    zfp_bytes = zfp.encode(a)
    zfpy = ZFPY(mode=4, tolerance=1e-3) if ZFPY else None  # (constructed once, as zarr's are)
    transposed = np.ascontiguousarray(a.T)
    zfpy_bytes = zfpy.encode(a) if zfpy else None
    f32 = np.dtype("float32")
    # Encoding, zarr hands a codec either layout; decoding, always what the codec after it (or
    # the store) just produced: a fresh contiguous buffer, made here before the measurement.
    encode = ("contiguous", "view")
    decode = ("contiguous",)
    ops: list[tuple[str, Callable[[np.ndarray], Any], Callable[[np.ndarray], Any] | None,
                    tuple[str, ...]]] = [
        # (one codec after the other, as zarr runs them)
        ("scale_offset+cast_value encode", lambda x: cv.encode_chunk(so.encode_chunk(x)),
         fso.encode, encode),
        ("scale_offset+cast_value decode",
         lambda x: so.decode_chunk(cv.decode_chunk(codes, CHUNK, f32), CHUNK, f32),
         lambda x: fso.decode(codes), decode),
        ("transpose encode", tr.encode_chunk, lambda x: np.ascontiguousarray(x.T), encode),
        ("transpose decode", lambda x: tr.decode_chunk(transposed, CHUNK, f32),
         lambda x: np.ascontiguousarray(transposed.T), decode),
        ("zfp encode (fixed_accuracy)", zfp.encode_chunk,
         (lambda x: zfpy.encode(np.ascontiguousarray(x))) if zfpy else None, encode),
        ("zfp decode", lambda x: zfp.decode_chunk(zfp_bytes, CHUNK, f32),
         (lambda x: zfpy.decode(zfpy_bytes)) if zfpy else None, decode),
    ]
    what = "releases" if _gil.METHOD == "accounted" else "hand-offs"
    print(f"GIL held per 4 MiB chunk ({_gil.METHOD}): µs / {what} (lower is better)")
    print(f"  {'operation':42} {'layout':11} {'ours':>12} {'anchor':>12} {'ratio':>7}")
    for name, ours, anchor, layouts in ops:
        for layout, x in _views(a).items():
            if layout not in layouts:
                continue
            if anchor is not None:
                (o, oh), (an, ah) = _gil.measure_pair(lambda: ours(x), lambda: anchor(x), 9 if quick else 41)
            else:
                (o, oh), (an, ah) = _gil.measure(lambda: ours(x), 5 if quick else 21), (float("nan"), float("nan"))
            print(f"  {name:42} {layout:11} {o * 1e6:7.1f}/{oh:<4.0f} {an * 1e6:7.1f}/{ah:<4.0f} "
                  f"{o / an if an else float('nan'):7.2f}")


# --- 1b. the codec jobs in a thread pool ----------------------------------------------------------

#: the core count the issue's figures come from, predicted here from the GIL-held time
PREDICT_CORES = 16


def _jobs() -> list[tuple[str, Callable[[Any], Any], Callable[[Any], Any] | None,
                          Callable[[np.ndarray], tuple[Any, Any]] | None]]:
    """(name, ours, anchor, the inputs of ours and of the anchor made from the float32 chunk;
    None: the chunk itself) for the codec jobs."""
    from numcodecs_ext.core import fused

    so = ScaleOffset(offset=OFFSET, scale=SCALE, dtype="float32")
    cv = CastValue(data_type="uint16", out_of_range="clamp", scalar_map={"encode": [["NaN", 0]]},
                   dtype="float32")
    nan_map = {"out_of_range": "clamp", "scalar_map": [(np.nan, 0)]}
    # the core's fused pass, as a codec runs it chunk after chunk (set-up once, None: the general
    # pass, which also raises any error)
    encoder = fused.chunk_encoder("float32", CHUNK, "uint16", OFFSET, SCALE, **nan_map)

    def fused_encode(x: np.ndarray) -> np.ndarray:
        got = encoder(x) if encoder is not None else None
        return got if got is not None else fused.encode(x, OFFSET, SCALE, "uint16", **nan_map)

    fso = numcodecs.FixedScaleOffset(offset=OFFSET, scale=SCALE, dtype="f4", astype="u2")
    zfp = Zfp(mode="fixed_accuracy", tolerance=1e-3)
    zfpy = ZFPY(mode=4, tolerance=1e-3) if ZFPY else None
    f32 = np.dtype("float32")
    return [
        ("fused encode (f32->u16, NaN map)", fused_encode, fso.encode, None),
        ("two-step encode (ScaleOffset, CastValue)", lambda x: cv.encode(so.encode(x)), fso.encode,
         None),
        ("fused decode", lambda c: fused.decode(c, f32, OFFSET, SCALE, out_of_range="clamp"),
         fso.decode, lambda x: (fso.encode(x),) * 2),
        ("zfp encode (fixed_accuracy)", zfp.encode_chunk, zfpy.encode if zfpy else None, None),
        ("zfp decode", lambda b: zfp.decode_chunk(b, CHUNK, f32), zfpy.decode if zfpy else None,
         lambda x: (zfp.encode_chunk(x), zfpy.encode(x) if zfpy else None)),
    ]


def _pool_rate(fn: Callable[[np.ndarray], Any], inputs: list[Any], pool: Any) -> float:
    """MiB/s of float32 chunk data through ``fn`` over ``inputs`` in ``pool``."""
    t0 = time.perf_counter()
    list(pool.map(fn, inputs))
    return len(inputs) * CHUNK[0] * CHUNK[1] * 4 / 2**20 / (time.perf_counter() - t0)


def codec_jobs(quick: bool = False) -> None:
    """The codec jobs alone in a thread pool of 1, 2, 4 ... workers (as zarr's codec threads run
    them), ours and the anchor alternately, best of several runs (wall clock: a loaded machine
    lowers both; compare the ratios); then, per chunk on one thread, the CPU time and the
    GIL-held time with its releases (ours/anchor), and Amdahl's prediction at
    :data:`PREDICT_CORES` threads, ratio (MiB/s ours/anchor): a chunk's MiB over
    ``gil + (cpu - gil) / 16``. Memory bandwidth and clock changes are not in it: a many-core
    machine must confirm it."""
    from concurrent.futures import ThreadPoolExecutor

    cores = os.cpu_count() or 1
    workers = [1]
    while workers[-1] * 2 <= cores:
        workers.append(workers[-1] * 2)
    if workers[-1] != cores:
        workers.append(cores)
    a = _field(CHUNK)
    chunk_mib = a.nbytes / 2**20
    runs = 3 if quick else 7
    print(f"\ncodec jobs in a thread pool: 4 MiB float32 chunks, {cores} cores, best of {runs}; "
          "MiB/s ours / anchor (ratio); load average "
          + (" ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"))
    print(f"  {'job':42} " + "  ".join(f"{'w=' + str(w):>20}" for w in workers)
          + f"  {'CPU ms/chunk':>13} {'GIL µs/releases':>15}  predicted at {PREDICT_CORES} threads")
    for name, ours, anchor, prepare in _jobs():
        if anchor is None:
            print(f"  {name:42} (anchor not installed)")
            continue
        x, y = prepare(a) if prepare is not None else (a, a)
        cells = []
        for w in workers:
            n = w * (2 if quick else 4)
            best_o = best_a = 0.0
            with ThreadPoolExecutor(w) as pool:
                list(pool.map(ours, [x] * w))  # (warm: per-thread scratch, cached set-up)
                list(pool.map(anchor, [y] * w))
                for _ in range(runs):
                    best_o = max(best_o, _pool_rate(ours, [x] * n, pool))
                    best_a = max(best_a, _pool_rate(anchor, [y] * n, pool))
            cells.append(f"{best_o:6.0f}/{best_a:6.0f} ({best_o / best_a:4.2f})")
        t1 = _cpu_pair(lambda: ours(x), lambda: anchor(y), 5 if quick else 15)
        (go, ro), (ga, ra) = _gil.measure_pair(lambda: ours(x), lambda: anchor(y), 9 if quick else 21)
        pred = [chunk_mib / (g + max(t - g, 0.0) / PREDICT_CORES) for g, t in ((go, t1[0]), (ga, t1[1]))]
        print(f"  {name:42} " + "  ".join(cells)
              + f"  {t1[0] * 1e3:6.2f}/{t1[1] * 1e3:<6.2f} {go * 1e6:5.0f}/{ro:<2.0f} {ga * 1e6:5.0f}/{ra:<2.0f}"
              + f"  {pred[0] / pred[1]:5.2f} ({pred[0]:.0f}/{pred[1]:.0f})")


def _cpu_pair(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """The least CPU time of one call of ``a`` and of ``b``, alternating (this thread's CPU
    time: what other processes on a shared machine take from the wall clock is not in it)."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((a, b)):
            t0 = time.thread_time()
            fn()
            best[i] = min(best[i], time.thread_time() - t0)
    return best[0], best[1]


# --- 2. per-call time on tiny chunks ---------------------------------------------------------

def tiny(quick: bool = False) -> None:
    x = _field((8, 8))
    so = ScaleOffset(offset=OFFSET, scale=SCALE, dtype="float32")
    cv = CastValue(data_type="uint16", out_of_range="clamp", dtype="float32")
    fso = numcodecs.FixedScaleOffset(offset=OFFSET, scale=SCALE, dtype="f4", astype="u2")
    codes = fso.encode(x)
    zfp = Zfp(mode="fixed_accuracy", tolerance=1e-3)
    zenc = zfp.encode(x)
    zfpy = ZFPY(mode=4, tolerance=1e-3) if ZFPY else None
    transpose = Transpose(order=[1, 0])  # (constructed once, as zarr and the anchors are)
    ops = [
        ("scale_offset+cast_value encode", lambda: cv.encode_chunk(so.encode_chunk(x)),
         lambda: fso.encode(x)),
        ("scale_offset+cast_value decode",
         lambda: so.decode_chunk(cv.decode_chunk(codes, (8, 8), np.dtype("float32")), (8, 8),
                                 np.dtype("float32")), lambda: fso.decode(codes)),
        ("transpose encode", lambda: transpose.encode_chunk(x),
         lambda: np.ascontiguousarray(x.T)),
        ("zfp encode", lambda: zfp.encode_chunk(x), (lambda: zfpy.encode(x)) if zfpy else None),
        ("zfp decode", lambda: zfp.decode_chunk(zenc, (8, 8), np.dtype("float32")),
         (lambda e=zfpy.encode(x) if zfpy else None: zfpy.decode(e)) if zfpy else None),
    ]
    print("\nper call on a 64-element chunk, µs (the anchor in brackets)")
    for name, ours, anchor in ops:
        n = 200 if quick else 2000
        o = _per_call(ours, n)
        an = _per_call(anchor, n) if anchor else float("nan")
        print(f"  {name:42} {o:8.1f} {an:9.1f} {o / an if an else float('nan'):7.2f}x")


def _per_call(fn: Callable[[], Any], n: int = 2000) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


# --- 3. through zarr -----------------------------------------------------------------------------

def _pipelines() -> dict[str, Callable[[], dict[str, Any]]]:
    so = dict(offset=OFFSET, scale=SCALE)
    out = {
        "scale_offset+cast_value u16": lambda: {"filters": [zarr3.ScaleOffset(**so), zarr3.CastValue(
            data_type="uint16", out_of_range="clamp")], "compressors": None},
        "anchor FixedScaleOffset u16": lambda: {"filters": [_adapter("FixedScaleOffset", offset=OFFSET,
                                                 scale=SCALE, dtype="<f4", astype="<u2")], "compressors": None},
        "transpose (ours)": lambda: {"filters": [zarr3.Transpose(order=[1, 0])], "compressors": None},
        "anchor transpose (zarr's)": lambda: {"filters": [zarr.codecs.TransposeCodec(order=[1, 0])],
                                              "compressors": None},
        "zfp fixed_accuracy": lambda: {"serializer": zarr3.Zfp(mode="fixed_accuracy", tolerance=1e-3),
                                       "compressors": None},
    }
    if ZFPY is not None:
        out["anchor ZFPY"] = lambda: {"serializer": _adapter("ZFPY", mode=4, tolerance=1e-3),
                                      "compressors": None}
    return out


def _adapter(name: str, **config: Any) -> Any:
    import zarr.codecs.numcodecs as adapters

    return getattr(adapters, name)(**config)


def through_zarr(quick: bool) -> None:
    cores = os.cpu_count() or 1
    workers = [1]
    while workers[-1] * 2 <= cores:
        workers.append(workers[-1] * 2)
    shape = (8 * CHUNK[0], 2 * CHUNK[1]) if not quick else (4 * CHUNK[0], CHUNK[1])
    data = _field(shape)
    mib = data.nbytes / 2**20
    pipelines = ["default"]
    try:
        from zarr.core.codec_pipeline import FusedCodecPipeline  # noqa: F401

        pipelines.append("zarr.core.codec_pipeline.FusedCodecPipeline")
    except ImportError:
        pass
    print(f"\nthrough zarr: {mib:.0f} MiB float32 in 4 MiB chunks, {cores} cores; MiB/s write/read, "
          "speedup over 1 worker, ratio to the anchor, most threads alive")
    baseline_threads = threading.active_count()
    for pipeline in pipelines:
        print(f" pipeline: {pipeline}")
        results: dict[tuple[str, int], tuple[float, float, int, float, float]] = {}
        for name, placement in _pipelines().items():
            for w in workers:
                results[name, w] = _write_read(data, placement, w, pipeline, 1 if quick else 3)
        for name in _pipelines():
            anchor = _anchor_of(name)
            cells = []
            for w in workers:
                wr, rd, threads, _, _ = results[name, w]
                w1, r1, *_ = results[name, 1]
                ratio = ""
                if anchor and (anchor, w) in results:
                    aw, ar, *_ = results[anchor, w]
                    ratio = f" {wr / aw:4.2f}x/{rd / ar:4.2f}x"
                cells.append(f"w={w}: {wr:6.0f}/{rd:6.0f} ({wr / w1:3.1f}/{rd / r1:3.1f}){ratio} "
                             f"t{threads - baseline_threads}")
            print(f"  {name:30} " + "  ".join(cells))
        if _gil.METHOD == "accounted":
            _print_serial(results, workers)


def _print_serial(results: dict[tuple[str, int], tuple[float, float, int, float, float]],
                  workers: list[int]) -> None:
    """The serial part of each run: GIL time per chunk summed over every thread (zarr's event
    loop and workers, the codec's own Python), and the throughput it caps by Amdahl's law on
    any number of cores: a chunk's MiB over its serial seconds."""
    chunk_mib = CHUNK[0] * CHUNK[1] * 4 / 2**20
    print("  serial part (GIL held by any thread) per chunk, µs write/read, and the throughput "
          "it caps on any number of cores, MiB/s")
    for name in _pipelines():
        cells = []
        for w in workers:
            *_, sw, sr = results[name, w]
            cells.append(f"w={w}: {sw * 1e6:5.0f}/{sr * 1e6:5.0f} "
                         f"(≤ {chunk_mib / sw:6.0f}/{chunk_mib / sr:6.0f})")
        print(f"  {name:30} " + "  ".join(cells))


def _anchor_of(name: str) -> str | None:
    return {"scale_offset+cast_value u16": "anchor FixedScaleOffset u16",
            "transpose (ours)": "anchor transpose (zarr's)",
            "zfp fixed_accuracy": "anchor ZFPY" if ZFPY else None}.get(name)


def _write_read(data: np.ndarray, placement: Callable[[], dict[str, Any]], workers: int,
                pipeline: str, runs: int = 3) -> tuple[float, float, int, float, float]:
    settings: dict[str, Any] = {"threading.max_workers": workers}
    if pipeline != "default":  # (zarr 3.4's fused pipeline sizes its own pool by this setting)
        settings.update({"codec_pipeline.path": pipeline, "codec_pipeline.max_workers": workers})
    peak = [threading.active_count()]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.002):
            peak[0] = max(peak[0], threading.active_count())

    with zarr.config.set(settings):
        from zarr.core import sync

        sync.cleanup_resources() if hasattr(sync, "cleanup_resources") else None
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        times_w, times_r = [], []
        for _ in range(runs):
            store = MemoryStore()
            z = zarr.create_array(store, shape=data.shape, chunks=CHUNK, dtype=data.dtype,
                                  fill_value=OFFSET, **placement())
            t0 = time.perf_counter()
            z[...] = data
            times_w.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            z[...]
            times_r.append(time.perf_counter() - t0)
        stop.set()
        watcher.join()
        serial = [float("nan"), float("nan")]
        z = zarr.create_array(MemoryStore(), shape=data.shape, chunks=CHUNK, dtype=data.dtype,
                              fill_value=OFFSET, **placement())
        for i, run in enumerate((lambda: z.__setitem__(Ellipsis, data), lambda: z[...])):
            accounted = _gil.serial(run)  # (with no watcher thread)
            if accounted is not None:
                serial[i] = accounted[0] / z.nchunks
        if hasattr(sync, "cleanup_resources"):
            sync.cleanup_resources()
    mib = data.nbytes / 2**20
    return (mib / min(times_w), mib / min(times_r), peak[0] - 1,  # (the watcher itself)
            serial[0], serial[1])


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if "--jobs" in argv:  # the codec jobs only
        codec_jobs(quick)
        return 0
    proxies(quick)
    codec_jobs(quick)
    tiny(quick)
    if "--proxies" not in argv:
        through_zarr(quick)
    return 0


def run(quick: bool = False) -> None:
    """The runner's entry point: this script in a process of its own (where the GIL accountant
    can be preloaded); ``quick``: the sweep through zarr on a smaller array."""
    import subprocess

    # (the repository's package first, as the runner's own process has it: a script's path puts
    # benchmarks/ first, which would measure whatever numcodecs_ext is installed)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *(["--quick"] if quick else [])],
                          check=False, env=env)
    if done.returncode:
        raise SystemExit(done.returncode)


if __name__ == "__main__":
    _gil.preload(sys.argv)
    sys.exit(main(sys.argv[1:]))
