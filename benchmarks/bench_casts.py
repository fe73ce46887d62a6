"""Speed and memory of scale_offset / cast_value against the anchors, measured in the same run.

Run: ``python benchmarks/bench_casts.py`` (64 MiB of float64 by default; ``--mib N`` to change).
MB/s are of the input of the timed direction (decode of the cast: of the uint8 input), median of
``--repeat`` runs; ratios compare with anchors timed in this same process. Missing anchors (zarr
without built-ins, cast-value-rs not installed) are skipped with a note.
"""

from __future__ import annotations

import argparse
import tracemalloc
from typing import Any, Callable

import numpy as np

from _util import best_seconds, interleaved
from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset

NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


def timeit(fn: Callable[[], Any], repeat: int) -> float:
    return best_seconds(fn, repeat=repeat)


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
    x = rng.uniform(-10.0, 2560.0, n)  # 2540 -> 255 after the pipeline; some out of range
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


def main(mib: int = 64, repeat: int = 7) -> list[tuple[str, float, float | None]]:
    x = data(mib)
    mb = x.nbytes
    rows: list[tuple[str, float, float | None]] = []

    def row(name: str, seconds: float, nbytes: float, anchor: float | None = None) -> float:
        rate = nbytes / 1e6 / seconds
        rows.append((name, rate, None if anchor is None else rate / anchor))
        ratio = "" if anchor is None else f"   {rate / anchor:5.2f}x anchor"
        print(f"{name:58s} {rate:9.0f} MB/s{ratio}")
        return rate

    floor_out = np.empty_like(x)
    row("memory floor: np.copyto into preallocated float64", timeit(lambda: np.copyto(floor_out, x), repeat), mb)

    cv = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)
    so = ScaleOffset(offset=-10, scale=0.1)
    enc = cv.encode_chunk(np.clip(x, 0, 255))
    u8mb = enc.nbytes
    zb = zarr_builtins()

    print("\n-- cast_value f64->u8, nearest-even, clamp, NaN->0 map --")
    a_enc = a_dec = None
    if isinstance(zb, str):
        print("zarr 3.4 + cast-value-rs:", zb)
    else:
        zcast, _ = zb
        a_enc = row("anchor zarr 3.4 cast_value + cast-value-rs encode",
                    timeit(lambda: zcast(x, "uint8", "encode"), repeat), mb)
        a_dec = row("anchor zarr 3.4 cast_value + cast-value-rs decode (of u8)",
                    timeit(lambda: zcast(enc, "float64", "decode"), repeat), u8mb)
    row("ours cast_value encode", timeit(lambda: cv.encode_chunk(x), repeat), mb, a_enc)
    row("ours cast_value decode (of u8)",
        timeit(lambda: cv.decode_chunk(enc, enc.shape, np.dtype("float64")), repeat), u8mb, a_dec)

    print("\n-- scale_offset(-10, 0.1) + cast_value(u8) pipeline --")
    import numcodecs

    fso = numcodecs.FixedScaleOffset(offset=-10, scale=0.1, dtype="f8", astype="u1")
    xf = np.nan_to_num(x, nan=0.0).clip(-10, 2540)  # FixedScaleOffset has no NaN handling
    f_enc = row("anchor numcodecs FixedScaleOffset encode", timeit(lambda: fso.encode(xf), repeat), mb)
    fenc = fso.encode(xf)
    f_dec = row("anchor numcodecs FixedScaleOffset decode (of u8)", timeit(lambda: fso.decode(fenc), repeat), u8mb)
    z_enc = z_dec = None
    if not isinstance(zb, str):
        zcast, (zso_enc, zso_dec) = zb
        z_enc = row("anchor zarr 3.4 pipeline encode",
                    timeit(lambda: zcast(zso_enc(x), "uint8", "encode"), repeat), mb)
        penc = zcast(zso_enc(x), "uint8", "encode")
        z_dec = row("anchor zarr 3.4 pipeline decode (of u8)",
                    timeit(lambda: zso_dec(zcast(penc, "float64", "decode")), repeat), u8mb)
    pipe_enc = lambda: cv.encode_chunk(so.encode_chunk(x))  # noqa: E731
    penc = pipe_enc()
    pipe_dec = lambda: so.decode_chunk(cv.decode_chunk(penc, penc.shape, np.dtype("float64")),  # noqa: E731
                                       penc.shape, np.dtype("float64"))
    r = row("ours pipeline encode", timeit(pipe_enc, repeat), mb, f_enc)
    if z_enc:
        print(f"{'':58s} {'':9s}      {r / z_enc:5.2f}x zarr 3.4")
    r = row("ours pipeline decode (of u8)", timeit(pipe_dec, repeat), u8mb, f_dec)
    if z_dec:
        print(f"{'':58s} {'':9s}      {r / z_dec:5.2f}x zarr 3.4")

    print("\n-- peak extra memory (tracemalloc), relative to the output size --")
    for name, fn in [("cast_value encode", lambda: cv.encode_chunk(x)),
                     ("cast_value decode", lambda: cv.decode_chunk(enc, enc.shape, np.dtype("float64"))),
                     ("scale_offset encode", lambda: so.encode_chunk(x))]:
        peak, out = peak_extra(fn)
        print(f"{name:58s} peak {peak / 1e6:8.1f} MB = {peak / out:5.2f} x output")
    return rows


def zarr_pipeline(repeat: int = 5) -> None:
    """Whole-array write and read through zarr (64 MiB float64, 8 MiB chunks, memory store)."""
    import warnings

    import zarr
    from zarr.storage import MemoryStore

    from numcodecs_ext import zarr3

    x = data(64).reshape(1024, 8192)
    xf = np.nan_to_num(x, nan=0.0).clip(-10, 2540)  # FixedScaleOffset cannot take NaN
    pipelines: dict[str, tuple[list[Any], np.ndarray, dict[str, str]]] = {
        "ours [scale_offset, cast_value]": (
            [zarr3.ScaleOffset(offset=-10, scale=0.1),
             zarr3.CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP)], x, {}),
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

    print("\n-- through zarr: 64 MiB float64, 8 MiB chunks, memory store (write / read MB/s) --")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3.1 warns about numcodecs codecs in v3 arrays
        fns = {name: writer(*spec) for name, spec in pipelines.items()}
        writes = interleaved(*(w for w, _ in fns.values()), repeat=repeat)
        reads = interleaved(*(r for _, r in fns.values()), repeat=repeat)
    mb = x.nbytes / 1e6
    ours_w, ours_r = writes[0], reads[0]
    for (name, _), w, r in zip(fns.items(), writes, reads):
        extra = "" if name.startswith("ours") else f"   ours: {w / ours_w:5.2f}x write, {r / ours_r:5.2f}x read"
        print(f"{name:58s} {mb / w:7.0f} / {mb / r:7.0f}{extra}")


def run() -> None:
    print("scale_offset and cast_value (64 MiB float64; MB/s of the timed direction's input)")
    main()
    zarr_pipeline()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    main(args.mib, args.repeat)
    zarr_pipeline()
