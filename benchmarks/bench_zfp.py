"""zfp speed: numcodecs_ext against raw libzfp (ctypes) and numcodecs.ZFPY, and zarr thread scaling.

Prints ratios against anchors measured in the same run:

* ``encode``/``decode`` of one 16 MiB float32 array (single thread) in MB/s of raw data, for
  numcodecs_ext's core, the same libzfp called through ctypes with the fewest calls possible (no
  validation, no padding copy, no truncation check), and ``numcodecs.ZFPY`` (lossy modes only: zfpy
  has no reversible mode);
* writing a zarr v3 array of many zfp chunks with ``threading.max_workers`` 1 and 2.

Run ``python benchmarks/bench_zfp.py [--quick]`` (a few seconds), or ``run(quick, report)`` from
``benchmarks/run.py``, where ``report(name, value, unit)`` records one figure.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from numcodecs_ext.core import _libzfp
from numcodecs_ext.core import zfp as core

CASES = [
    {"mode": "reversible"},
    {"mode": "fixed_accuracy", "tolerance": 1e-3},
    {"mode": "fixed_precision", "precision": 16},
    {"mode": "fixed_rate", "rate": 8},
]


def _data(shape: tuple[int, ...] = (64, 256, 256)) -> np.ndarray:
    rng = np.random.default_rng(0)
    z, y, x = np.meshgrid(*(np.linspace(0, 4, n) for n in shape), indexing="ij")
    return (np.sin(x * 3 + y) * np.cos(z * 2) + 0.01 * rng.standard_normal(shape)).astype(np.float32)


def _best(fn: Callable[[], Any], repeat: int = 5) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


class _Raw:
    """libzfp through ctypes, minimal: what any binding must at least do."""

    def __init__(self, cfg: dict[str, Any], a: np.ndarray) -> None:
        self.lib = _libzfp.load()
        self.cfg = cfg
        self.a = a

    def _stream(self) -> int:
        lib, cfg = self.lib, self.cfg
        zs = lib.zfp_stream_open(None)
        m = cfg["mode"]
        if m == "reversible":
            lib.zfp_stream_set_reversible(zs)
        elif m == "fixed_accuracy":
            lib.zfp_stream_set_accuracy(zs, cfg["tolerance"])
        elif m == "fixed_precision":
            lib.zfp_stream_set_precision(zs, cfg["precision"])
        else:
            lib.zfp_stream_set_rate(zs, cfg["rate"], _libzfp.ZFP_TYPE_FLOAT, 3, 0)
        return zs

    def _field(self, ptr: int) -> int:
        nz, ny, nx = self.a.shape
        return self.lib.zfp_field_3d(ptr, _libzfp.ZFP_TYPE_FLOAT, nx, ny, nz)

    def encode(self) -> bytes:
        lib = self.lib
        zs = self._stream()
        field = self._field(self.a.ctypes.data)
        cap = lib.zfp_stream_maximum_size(zs, field)
        out = np.empty(cap, np.uint8)
        bs = lib.stream_open(out.ctypes.data, cap)
        lib.zfp_stream_set_bit_stream(zs, bs)
        n = lib.zfp_compress(zs, field)
        lib.stream_close(bs)
        lib.zfp_field_free(field)
        lib.zfp_stream_close(zs)
        return out[:n].tobytes()

    def decode(self, buf: bytes) -> np.ndarray:
        lib = self.lib
        res = np.empty(self.a.shape, np.float32)
        zs = self._stream()
        field = self._field(res.ctypes.data)
        bs = lib.stream_open(buf, len(buf))  # unsafe on corrupt input: no padding
        lib.zfp_stream_set_bit_stream(zs, bs)
        lib.zfp_decompress(zs, field)
        lib.stream_close(bs)
        lib.zfp_field_free(field)
        lib.zfp_stream_close(zs)
        return res


def _zfpy_codec(cfg: dict[str, Any]) -> Any:
    try:
        import zfpy
        from numcodecs.zfpy import ZFPY
    except ImportError:
        return None
    if cfg["mode"] == "fixed_accuracy":
        return ZFPY(mode=zfpy.mode_fixed_accuracy, tolerance=cfg["tolerance"])
    if cfg["mode"] == "fixed_precision":
        return ZFPY(mode=zfpy.mode_fixed_precision, precision=cfg["precision"])
    return None  # no reversible mode; its fixed_rate does not pass dims/type like zarrs


def bench_single_thread(report: Callable[[str, float, str], None], shape: tuple[int, ...] = (64, 256, 256),
                        repeat: int = 5) -> None:
    a = _data(shape)
    mb = a.nbytes / 1e6
    for cfg in CASES:
        mode = cfg["mode"]
        params = {k: v for k, v in cfg.items() if k != "mode"}
        raw = _Raw(cfg, a)
        enc = core.compress(a, mode, **params)
        assert raw.encode() == enc
        t_ours_e = _best(lambda: core.compress(a, mode, **params), repeat)
        t_raw_e = _best(raw.encode, repeat)
        t_ours_d = _best(lambda: core.decompress(enc, a.shape, a.dtype, mode, **params), repeat)
        t_raw_d = _best(lambda: raw.decode(enc), repeat)
        report(f"zfp {mode} encode MB/s", mb / t_ours_e, "MB/s")
        report(f"zfp {mode} decode MB/s", mb / t_ours_d, "MB/s")
        report(f"zfp {mode} encode vs raw libzfp", t_raw_e / t_ours_e, "x")
        report(f"zfp {mode} decode vs raw libzfp", t_raw_d / t_ours_d, "x")
        zc = _zfpy_codec(cfg)
        if zc is not None:
            zenc = zc.encode(a)
            t_z_e = _best(lambda: zc.encode(a), repeat)
            t_z_d = _best(lambda: zc.decode(zenc), repeat)
            report(f"zfp {mode} encode vs numcodecs.ZFPY", t_z_e / t_ours_e, "x")
            report(f"zfp {mode} decode vs numcodecs.ZFPY", t_z_d / t_ours_d, "x")


_ZARR_WRITE = """
import sys, time, numpy as np, zarr
sys.path[:0] = [{path!r}]
from bench_zfp import _data, _best
from numcodecs_ext.zarr3.zfp import Zfp
assert zarr.config.get("threading.max_workers") == {workers}
a = _data({shape})
def write():
    z = zarr.create_array({{}}, shape=a.shape, chunks={chunks}, dtype="float32",
                          serializer=Zfp(mode="fixed_precision", precision=20),
                          compressors=None, fill_value=0)
    z[:] = a
write()
print(_best(write, repeat={repeat}))
"""


def bench_zarr_threads(report: Callable[[str, float, str], None], quick: bool = False) -> None:
    """zarr sizes its thread pool once per process, so each setting runs in its own process."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    shape = (16, 128, 128) if quick else (64, 256, 256)
    nbytes = shape[0] * shape[1] * shape[2] * 4
    # 64 chunks of 256 KiB (small for zarr) and 16 chunks of 1 MiB (zarr's usual advice); quick: 16 and 4
    for chunks, label in (((16, 64, 64), "chunks of 256 KiB"), ((16, 128, 128), "chunks of 1 MiB")):
        timings = {}
        for workers in (1, 2):
            env = dict(os.environ, ZARR_THREADING__MAX_WORKERS=str(workers))
            code = _ZARR_WRITE.format(path=here, workers=workers, chunks=chunks, shape=shape,
                                      repeat=2 if quick else 5)
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            timings[workers] = float(res.stdout.split()[-1])
        report(f"zarr write, {label}, 1 thread", nbytes / 1e6 / timings[1], "MB/s")
        report(f"zarr write, {label}, speed-up with 2 threads", timings[1] / timings[2], "x")


def _print(name: str, value: float, unit: str) -> None:
    print(f"  {name:52s} {value:10.2f} {unit}")


def run(quick: bool = False, report: Callable[[str, float, str], None] = _print) -> None:
    """Every measurement; ``quick``: 1 MiB arrays, 2 repeats (to check the benchmark runs)."""
    print("zfp (single thread vs raw libzfp and numcodecs.ZFPY; zarr thread scaling)")
    bench_single_thread(report, (16, 128, 128) if quick else (64, 256, 256), 2 if quick else 5)
    bench_zarr_threads(report, quick)


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv[1:])
