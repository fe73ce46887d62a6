"""zarr's GPU mode (issue 35): every codec of ours written and read through zarr with cupy.

For each codec chain: whole-array write and read through zarr on the CPU and in GPU mode
(``zarr.config.enable_gpu()``, a cupy array in, a cupy array out), in MiB/s, beside zarr's
built-in for the same name where zarr has one (transpose; scale_offset and cast_value from zarr
3.2; bitround through zarr's numcodecs adapter). Every GPU read is compared bit for bit with the
CPU read of the same chunks (``equal``); a chain that fails in GPU mode shows its error instead.
The issue's setup: float32, no compressor, a memory store, 256 MiB in 16 MiB chunks (``quick``:
4 MiB in 1 MiB chunks).

Needs cupy and a CUDA device for the GPU columns; without them the CPU columns run (which
checks that the script works) and the GPU columns are skipped with a note. The goals (issue
35): transpose at least zarr's built-in in GPU mode; scale_offset + cast_value and bitround
reading at 10x or more their CPU read speed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zarr
from zarr.storage import MemoryStore

from _util import interleaved
from numcodecs_ext import zarr3

MIB = 1 << 20

#: zarr's own implementations, for the names numcodecs_ext makes default to its own
BUILTIN_CONFIG = {
    "codecs.transpose": "zarr.codecs.transpose.TransposeCodec",
    "codecs.scale_offset": "zarr.codecs.scale_offset.ScaleOffset",
    "codecs.cast_value": "zarr.codecs.cast_value.CastValue",
    "codecs.numcodecs.bitround": "zarr.codecs.numcodecs.BitRound",
}
#: ours, whatever the user's configuration says
OURS_CONFIG = {
    "codecs.transpose": "numcodecs_ext.zarr3.transpose.Transpose",
    "codecs.scale_offset": "numcodecs_ext.zarr3.scale_offset.ScaleOffset",
    "codecs.cast_value": "numcodecs_ext.zarr3.cast_value.CastValue",
    "codecs.bitround": "numcodecs_ext.zarr3.bitround.BitRound",
    "codecs.numcodecs.bitround": "numcodecs_ext.zarr3.bitround.BitRound",
}


@dataclass
class Chain:
    """One codec chain: how to build its filters (and serializer) and the data it takes."""

    name: str
    filters: Callable[[], list[Any]]
    serializer: Callable[[], Any] | None = None
    dtype: str = "float32"
    #: zarr's built-in chain for the same names, or None where zarr has none
    builtin: Callable[[], list[Any]] | None = None
    data: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray] | None = None
    results: dict[str, Any] = field(default_factory=dict)


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * 100).astype(np.float32)


def _small_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 8, shape, dtype=np.uint8)


def _builtin_scale_cast() -> list[Any] | None:
    try:
        from zarr.codecs.cast_value import CastValue
        from zarr.codecs.scale_offset import ScaleOffset
    except ImportError:
        return None
    return [ScaleOffset.from_dict({"name": "scale_offset", "configuration": {"scale": 10}}),
            CastValue.from_dict({"name": "cast_value", "configuration": {
                "data_type": "int16", "out_of_range": "clamp"}})]


def _builtin_scale() -> list[Any] | None:
    try:
        from zarr.codecs.scale_offset import ScaleOffset
    except ImportError:
        return None
    return [ScaleOffset.from_dict({"name": "scale_offset", "configuration": {"offset": 1, "scale": 4}})]


def _builtin_cast() -> list[Any] | None:
    try:
        from zarr.codecs.cast_value import CastValue
    except ImportError:
        return None
    return [CastValue.from_dict({"name": "cast_value", "configuration": {
        "data_type": "int16", "out_of_range": "clamp", "rounding": "nearest-away"}})]


def _builtin_bitround() -> list[Any]:
    from zarr.codecs.numcodecs import BitRound
    return [BitRound(keepbits=10)]


def _builtin_transpose() -> list[Any]:
    from zarr.codecs import TransposeCodec
    return [TransposeCodec(order=(2, 0, 1))]


CHAINS = [
    Chain("transpose [2,0,1]", lambda: [zarr3.Transpose(order=[2, 0, 1])],
          builtin=_builtin_transpose),
    Chain("scale_offset + cast_value int16", lambda: [
        zarr3.ScaleOffset(scale=10), zarr3.CastValue(data_type="int16", out_of_range="clamp")],
        builtin=_builtin_scale_cast),
    Chain("scale_offset", lambda: [zarr3.ScaleOffset(offset=1, scale=4)], builtin=_builtin_scale),
    Chain("cast_value int16 nearest-away clamp", lambda: [
        zarr3.CastValue(data_type="int16", out_of_range="clamp", rounding="nearest-away")],
        builtin=_builtin_cast),
    Chain("bitround keepbits=10", lambda: [zarr3.BitRound(keepbits=10)], builtin=_builtin_bitround),
    Chain("reshape [-1]", lambda: [zarr3.Reshape(shape=[-1])]),
    Chain("packbits 3 bits", lambda: [], serializer=lambda: zarr3.PackBits(last_bit=2),
          dtype="uint8", data=_small_ints),
    Chain("zfp reversible (host)", lambda: [], serializer=lambda: zarr3.Zfp(mode="reversible")),
]


def _gpu() -> tuple[Any, str | None]:
    """(cupy, None), or (None, why the GPU columns are skipped)."""
    try:
        import cupy as cp
    except ImportError:
        return None, "cupy is not installed"
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None, "no CUDA device"
        cp.zeros(1).sum()
    except Exception as e:  # no driver, no device
        return None, f"no usable CUDA device ({type(e).__name__}: {e})"
    return cp, None


def _create(chain: Chain, data_shape: tuple[int, ...], chunks: tuple[int, ...], builtin: bool,
            dtype: str) -> Any:
    filters = chain.builtin() if builtin else chain.filters()  # type: ignore[misc]
    kwargs: dict[str, Any] = {"filters": filters, "compressors": None}
    if chain.serializer is not None:
        kwargs["serializer"] = chain.serializer()
    return zarr.create_array(MemoryStore(), shape=data_shape, chunks=chunks, dtype=dtype,
                             fill_value=0, **kwargs)


def _measure(chain: Chain, data: np.ndarray, chunks: tuple[int, ...], builtin: bool,
             cp: Any, repeat: int) -> dict[str, Any]:
    """MiB/s of write and read on the CPU and (cp given) in GPU mode; the reads compared."""
    config = BUILTIN_CONFIG if builtin else OURS_CONFIG
    mib = data.nbytes / MIB
    out: dict[str, Any] = {}
    with zarr.config.set(config):
        z = _create(chain, data.shape, chunks, builtin, chain.dtype)

        def write() -> None:
            z[...] = data

        def read() -> Any:
            return z[...]

        t_write, t_read = interleaved(write, read, repeat=repeat)
        cpu_result = read()
        out["cpu write"], out["cpu read"] = mib / t_write, mib / t_read
        out["lossless"] = bool(np.array_equal(cpu_result, data))
        if cp is None:
            return out
        try:
            with zarr.config.enable_gpu():
                device_data = cp.asarray(data)
                zg = _create(chain, data.shape, chunks, builtin, chain.dtype)

                def gwrite() -> None:
                    zg[...] = device_data
                    cp.cuda.Device().synchronize()

                def gread() -> Any:
                    result = zg[...]
                    cp.cuda.Device().synchronize()
                    return result

                g_write, g_read = interleaved(gwrite, gread, repeat=repeat)
                result = gread()
                out["gpu type"] = type(result).__module__.split(".")[0]
            stored_alike = _same_chunks(z, zg)
            host = cp.asnumpy(result)
            out["equal"] = (host.dtype == cpu_result.dtype and host.tobytes() == cpu_result.tobytes()
                            and stored_alike)
            out["gpu write"], out["gpu read"] = mib / g_write, mib / g_read
        except Exception as e:  # the failure is the result (issue 35's TypeError)
            out["gpu error"] = f"{type(e).__name__}: {str(e)[:60]}"
    return out


def _same_chunks(z_cpu: Any, z_gpu: Any) -> bool:
    """The GPU-mode write stored the very bytes the CPU write stored."""
    a, b = z_cpu.store, z_gpu.store
    keys = sorted(k for k in a._store_dict if k != "zarr.json")
    return all(bytes(a._store_dict[k].to_bytes()) == bytes(b._store_dict[k].to_bytes()) for k in keys)


def _fmt(v: Any) -> str:
    return f"{v:9.0f}" if isinstance(v, float) else f"{'-':>9}"


def run(quick: bool = False) -> None:
    cp, why = _gpu()
    shape, chunks = ((64, 128, 128), (16, 128, 128)) if quick else ((256, 512, 512), (16, 512, 512))
    repeat = 3 if quick else 7
    rng = np.random.default_rng(0)
    print(f"zarr GPU mode: whole-array write+read, {int(np.prod(shape)) * 4 / MIB:.0f} MiB float32 in "
          f"{int(np.prod(chunks)) * 4 / MIB:.0f} MiB chunks, no compressor, memory store (MiB/s)")
    if cp is None:
        print(f"  GPU columns skipped: {why}; the CPU columns only")
    print(f"  {'codec chain':38} {'impl':8} {'cpu wr':>9} {'cpu rd':>9} {'gpu wr':>9} {'gpu rd':>9}"
          f"  {'gpu/cpu rd':>10}  result")
    for chain in CHAINS:
        data = (chain.data or _normal)(rng, shape).astype(chain.dtype)
        for builtin in (False, True):
            if builtin and (chain.builtin is None or chain.builtin() is None):
                continue
            r = _measure(chain, data, chunks, builtin, cp, repeat)
            chain.results["builtin" if builtin else "ours"] = r
            gain = (f"{r['gpu read'] / r['cpu read']:9.1f}x" if "gpu read" in r else f"{'-':>10}")
            result = r.get("gpu error") or (
                ("equal" if r["equal"] else "DIFFERENT") + f", a {r['gpu type']} array"
                if "equal" in r else "")
            print(f"  {chain.name:38} {'zarr' if builtin else 'ours':8} {_fmt(r['cpu write'])} "
                  f"{_fmt(r['cpu read'])} {_fmt(r.get('gpu write'))} {_fmt(r.get('gpu read'))}  "
                  f"{gain}  {result}", flush=True)
    if cp is None:
        return
    print("goals (issue 35):")
    t = CHAINS[0].results
    if "gpu read" in t.get("ours", {}) and "gpu read" in t.get("builtin", {}):
        print(f"  transpose, GPU read: ours / zarr's = "
              f"{t['ours']['gpu read'] / t['builtin']['gpu read']:.2f} (goal >= 1)")
    for chain in (CHAINS[1], CHAINS[4]):
        r = chain.results.get("ours", {})
        if "gpu read" in r:
            print(f"  {chain.name}, GPU read / CPU read = {r['gpu read'] / r['cpu read']:.1f}x "
                  f"(goal >= 10), {'equal' if r.get('equal') else 'NOT EQUAL'}")


if __name__ == "__main__":
    run()
