"""Speed and memory of scale_offset / cast_value against the anchors, measured in the same run.

Run: ``python benchmarks/bench_casts.py`` (64 MiB of float64 by default; ``--mib N`` to change).
MB/s are of the input of the timed direction (decode of the cast: of the uint8 input), median of
``--repeat`` runs; ratios compare with anchors timed in this same process. Missing anchors (zarr
without built-ins, cast-value-rs not installed) are skipped with a note.
"""

from __future__ import annotations

import argparse
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from _util import interleaved

from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.core import _native, fused

NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


def peak_extra(fn: Callable[[], Any]) -> tuple[int, int]:
    """(peak bytes allocated during fn, bytes of its result) via tracemalloc (numpy reports)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    res = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, int(np.asarray(res).nbytes)


def data(mib: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    n = mib * 1024 * 1024 // 8
    # 2540 -> 255 after the pipeline, some out of range (clamped); none on code 0, which the NaN
    # map reserves (cast_value refuses a value that would read back as NaN)
    x = rng.uniform(1.0, 2560.0, n)
    x[rng.random(n) < 0.01] = np.nan
    return x


def zarr_builtins() -> tuple[Any, Any] | str:
    try:
        import cast_value_rs  # noqa: F401
        from zarr.codecs.cast_value import CastValue as ZCast
        from zarr.codecs.scale_offset import _decode, _encode
    except ImportError as e:
        return f"skipped (zarr built-ins or cast-value-rs missing: {e})"

    def cast(arr: np.ndarray, tgt: str, direction: str) -> np.ndarray:
        codec = ZCast(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)
        return codec._do_cast(arr, target_dtype=np.dtype(tgt),
                              scalar_map=codec._get_scalar_map(direction))

    def so_enc(arr: np.ndarray) -> np.ndarray:
        return _encode(arr, np.float64(-10), np.float64(0.1))

    def so_dec(arr: np.ndarray) -> np.ndarray:
        return _decode(arr, np.float64(-10), np.float64(0.1), scale_repr=0.1)

    return cast, (so_enc, so_dec)


def _group(title: str, entries: list[tuple[str, Callable[[], Any], float]], repeat: int) -> dict[str, float]:
    """Time a group in alternation (see _util.interleaved); print MB/s and ratios to each anchor."""
    print(f"\n-- {title} --")
    seconds = interleaved(*(fn for _, fn, _ in entries), repeat=repeat)
    rates = {name: nbytes / 1e6 / t for (name, _, nbytes), t in zip(entries, seconds)}
    anchors = {n: r for n, r in rates.items() if n.startswith("anchor")}
    for name, rate in rates.items():
        ratios = "" if name.startswith("anchor") else "".join(
            f"   {rate / a:5.2f}x {n.removeprefix('anchor ').split(' encode')[0].split(' decode')[0]}"
            for n, a in anchors.items() if ("encode" in n) == ("encode" in name))
        print(f"{name:58s} {rate:7.0f} MB/s{ratios}")
    return rates


def numpy_only(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` run with the numpy kernels alone (what an install without a C compiler gets)."""

    def run() -> Any:
        saved, _native.ENABLED = _native.ENABLED, False
        try:
            return fn()
        finally:
            _native.ENABLED = saved

    return run


def main(mib: int = 64, repeat: int = 7) -> dict[str, float]:
    print(f"kernels: {_native.status()}")
    x = data(mib)
    mb = x.nbytes
    f8 = np.dtype("float64")
    floor_out = np.empty_like(x)
    rates = _group("memory floor", [("np.copyto into a preallocated float64 array",
                                     lambda: np.copyto(floor_out, x), mb)], repeat)

    cv = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)
    so = ScaleOffset(offset=-10, scale=0.1)
    enc = cv.encode_chunk(np.clip(x, 1, 255))
    u8mb = enc.nbytes
    zb = zarr_builtins()
    if isinstance(zb, str):
        print("zarr 3.4 + cast-value-rs:", zb)

    entries: list[tuple[str, Callable[[], Any], float]] = []
    if not isinstance(zb, str):
        zcast, (zso_enc, zso_dec) = zb
        entries += [("anchor zarr 3.4 + cast-value-rs encode", lambda: zcast(x, "uint8", "encode"), mb),
                    ("anchor zarr 3.4 + cast-value-rs decode", lambda: zcast(enc, "float64", "decode"), u8mb)]
    entries += [("ours cast_value encode", lambda: cv.encode_chunk(x), mb),
                ("ours cast_value decode (MB/s of the uint8 input)",
                 lambda: cv.decode_chunk(enc, enc.shape, f8), u8mb)]
    rates |= _group("cast_value f64->u8, nearest-even, clamp, NaN->0 map", entries, repeat)

    import numcodecs

    fso = numcodecs.FixedScaleOffset(offset=-10, scale=0.1, dtype="f8", astype="u1")
    xf = np.nan_to_num(x, nan=0.0).clip(-10, 2540)  # FixedScaleOffset has no NaN handling
    fenc = fso.encode(xf)
    penc = cv.encode_chunk(so.encode_chunk(x))
    entries = [("anchor FixedScaleOffset encode", lambda: fso.encode(xf), mb),
               ("anchor FixedScaleOffset decode", lambda: fso.decode(fenc), u8mb)]
    if not isinstance(zb, str):
        zpenc = zcast(zso_enc(x), "uint8", "encode")
        entries += [("anchor zarr 3.4 pipeline encode", lambda: zcast(zso_enc(x), "uint8", "encode"), mb),
                    ("anchor zarr 3.4 pipeline decode",
                     lambda: zso_dec(zcast(zpenc, "float64", "decode")), u8mb)]
    fenc_args = cv.cast_arguments(f8, "encode")
    fdec_args = cv.cast_arguments(f8, "decode")
    entries += [("ours pipeline encode", lambda: cv.encode_chunk(so.encode_chunk(x)), mb),
                ("ours pipeline decode (MB/s of the uint8 input)",
                 lambda: so.decode_chunk(cv.decode_chunk(penc, penc.shape, f8), penc.shape, f8), u8mb),
                ("ours fused encode (zarr v3 chains)",
                 lambda: fused.encode(x, -10.0, 0.1, **fenc_args), mb),
                ("ours fused decode (zarr v3 chains)",
                 lambda: fused.decode(penc, offset=-10.0, scale=0.1, **fdec_args), u8mb),
                ("ours fused encode, no map (FixedScaleOffset's work)",
                 lambda: fused.encode(xf, -10.0, 0.1, "uint8", out_of_range="clamp"), mb),
                ("ours fused decode, no map (FixedScaleOffset's work)",
                 lambda: fused.decode(fenc, "float64", -10.0, 0.1), u8mb)]
    rates |= _group("scale_offset(-10, 0.1) + cast_value(u8) pipeline", entries, repeat)

    if _native.kernels() is not None:
        def fenc() -> np.ndarray:
            return fused.encode(x, -10.0, 0.1, **fenc_args)

        def fdec() -> np.ndarray:
            return fused.decode(penc, offset=-10.0, scale=0.1, **fdec_args)

        entries = [("anchor numpy kernels only: fused encode", numpy_only(fenc), mb),
                   ("anchor numpy kernels only: fused decode", numpy_only(fdec), u8mb),
                   ("compiled kernels: fused encode", fenc, mb),
                   ("compiled kernels: fused decode", fdec, u8mb)]
        rates |= _group("the compiled kernels against the numpy kernels (same results)", entries,
                        repeat)

    print("\n-- peak extra memory (tracemalloc), relative to the output size --")
    for name, fn in [("cast_value encode", lambda: cv.encode_chunk(x)),
                     ("cast_value decode", lambda: cv.decode_chunk(enc, enc.shape, f8)),
                     ("scale_offset encode", lambda: so.encode_chunk(x))]:
        peak, out = peak_extra(fn)
        print(f"{name:58s} peak {peak / 1e6:8.1f} MB = {peak / out:5.2f} x output")
    return rates


def zarr_pipeline(repeat: int = 5, mib: int = 64) -> None:
    """Whole-array write and read through zarr (64 MiB float64, 8 MiB chunks, memory store)."""
    import warnings

    import zarr
    from zarr.storage import MemoryStore

    from numcodecs_ext import zarr3

    x = data(mib).reshape(16 * mib, 8192)
    xf = np.nan_to_num(x, nan=0.0).clip(-10, 2540)  # FixedScaleOffset cannot take NaN
    pipelines: dict[str, tuple[list[Any], np.ndarray, dict[str, str]]] = {
        "ours [scale_offset, cast_value]": (
            [zarr3.ScaleOffset(offset=-10, scale=0.1),
             zarr3.CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)], x, {}),
        "ours, no scalar_map (FixedScaleOffset's work)": (
            [zarr3.ScaleOffset(offset=-10, scale=0.1),
             zarr3.CastValue(data_type="uint8", out_of_range="clamp")], xf, {}),
        "anchor numcodecs.fixedscaleoffset (zarr adapter)": (
            [zarr.codecs.numcodecs.FixedScaleOffset(offset=-10, scale=0.1, dtype="f8", astype="u1")],
            xf, {}),
    }
    zb = zarr_builtins()
    if not isinstance(zb, str):
        from zarr.codecs.cast_value import CastValue as ZCast
        from zarr.codecs.scale_offset import ScaleOffset as ZScale

        pipelines["anchor zarr 3.4 built-ins (cast-value-rs)"] = (
            [ZScale(offset=-10, scale=0.1), ZCast(data_type="uint8", out_of_range="clamp",
                                                  scalar_map=NAN_MAP)], x,
            {"codecs.cast_value": "zarr.codecs.cast_value.CastValue",
             "codecs.scale_offset": "zarr.codecs.scale_offset.ScaleOffset"})
    else:
        print("zarr built-ins:", zb)

    def writer(filters: list[Any], arr: np.ndarray, cfg: dict[str, str]) -> tuple[Any, Any]:
        z = zarr.create_array(MemoryStore(), shape=arr.shape, chunks=(128, 8192), dtype="f8",
                              filters=filters, compressors=None, fill_value=0)

        def write() -> None:
            with zarr.config.set(cfg):
                z[...] = arr

        def read() -> None:
            with zarr.config.set(cfg):
                z[...]

        write()
        return write, read

    print(f"\n-- through zarr: {mib} MiB float64, 8 MiB chunks, memory store (write / read MB/s) --")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3.1 warns about numcodecs codecs in v3 arrays
        fns = {name: writer(*spec) for name, spec in pipelines.items()}
        writes = interleaved(*(w for w, _ in fns.values()), repeat=repeat)
        reads = interleaved(*(r for _, r in fns.values()), repeat=repeat)
    mb = x.nbytes / 1e6
    times = dict(zip(fns, zip(writes, reads)))
    ours = {name: t for name, t in times.items() if name.startswith("ours")}
    for name, (w, r) in times.items():
        print(f"{name:58s} {mb / w:7.0f} / {mb / r:7.0f}")
        if not name.startswith("ours"):
            for oname, (ow, orr) in ours.items():
                print(f"    {oname:54s} {w / ow:5.2f}x write, {r / orr:5.2f}x read")


def zarr_v2_filters(repeat: int = 5, mib: int = 64) -> None:
    """The same through zarr v2 ``filters``: two separate numcodecs calls per chunk, each of
    which must return a fresh array (nothing can be fused), against one FixedScaleOffset call."""
    import warnings

    import numcodecs
    import zarr
    from zarr.storage import MemoryStore

    x = data(mib).reshape(16 * mib, 8192)
    xf = np.nan_to_num(x, nan=0.0).clip(-10, 2540)
    filters = {
        "ours [ScaleOffset, CastValue]": (
            [ScaleOffset(offset=-10, scale=0.1, dtype="f8"),
             CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP, dtype="f8")],
            x),
        "anchor FixedScaleOffset": (
            [numcodecs.FixedScaleOffset(offset=-10, scale=0.1, dtype="f8", astype="u1")], xf),
    }

    def writer(flt: list[Any], arr: np.ndarray) -> tuple[Any, Any]:
        z = zarr.create_array(MemoryStore(), shape=arr.shape, chunks=(128, 8192), dtype="f8",
                              filters=flt, compressors=None, fill_value=0, zarr_format=2)
        z[...] = arr
        return (lambda: z.__setitem__(Ellipsis, arr)), (lambda: z[...])

    print("\n-- zarr v2 filters: 64 MiB float64, 8 MiB chunks, memory store (write / read MB/s) --")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fns = {name: writer(*spec) for name, spec in filters.items()}
        writes = interleaved(*(w for w, _ in fns.values()), repeat=repeat)
        reads = interleaved(*(r for _, r in fns.values()), repeat=repeat)
    mb = x.nbytes / 1e6
    (ow, orr), (aw, ar) = zip(writes, reads)
    for name, (w, r) in zip(fns, zip(writes, reads)):
        print(f"{name:58s} {mb / w:7.0f} / {mb / r:7.0f}")
    print(f"    ours vs FixedScaleOffset {aw / ow:5.2f}x write, {ar / orr:5.2f}x read")


def run(quick: bool = False) -> None:
    """Every measurement; ``quick``: 8 MiB and 3 repeats (to check the benchmark runs)."""
    mib, repeat = (8, 3) if quick else (64, 7)
    print(f"scale_offset and cast_value ({mib} MiB float64; MB/s of the timed direction's input)")
    main(mib, repeat)
    zarr_pipeline(min(repeat, 5), mib)
    zarr_v2_filters(min(repeat, 5), mib)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="small sizes, to check the benchmark runs")
    args = p.parse_args()
    if args.quick:
        run(quick=True)
    else:
        main(args.mib, args.repeat)
        zarr_pipeline(mib=args.mib)
        zarr_v2_filters(mib=args.mib)
