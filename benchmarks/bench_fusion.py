"""scale_offset + cast_value through zarr, end to end: is fusing the pair worth it?

Run: ``python benchmarks/bench_fusion.py`` (256 MiB of float32 in 4 MiB chunks by default;
``--mib N`` to change, ``--repeat R``). Writes and reads an in-memory array with
``filters=[ScaleOffset(offset=0, scale=100), CastValue(data_type="uint16")]``, without a compressor
and with zstd, at zarr ``threading.max_workers`` 1 and the machine's core count (each in its own
process: zarr sizes its pool once per process). MB/s are of the float32 array; each ratio compares
with the anchor, our unfused chain, timed in alternation in the same process.

Rows: ``ours`` (numcodecs_ext's zarr v3 classes, run one codec after the other as zarr runs any
chain); ``ours, fused`` where this version of numcodecs_ext still links the pair (it did up to the
zarr3 redesign, by overriding zarr's private ``NDBuffer._data``; the redesign measured it and
dropped it, see docs/codecs/scale-offset-cast-value.md); ``zarr built-ins`` where zarr has
them (zarr >= 3.2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

MIB = 1 << 20


def child(mib: int, repeat: int, workers: int, pipeline: str | None) -> dict[str, dict[str, float]]:
    import numpy as np
    import zarr
    from _util import interleaved

    zarr.config.set({"threading.max_workers": workers})
    if pipeline:
        zarr.config.set({"codec_pipeline.path": pipeline, "codec_pipeline.max_workers": workers})
    from numcodecs_ext import zarr3

    side = int((mib * MIB // 4) ** 0.5)
    chunk = 1024  # 4 MiB of float32
    rng = np.random.default_rng(0)
    data = (rng.random((side, side), dtype=np.float32) * 600).astype(np.float32)

    def ours() -> list:
        return [zarr3.ScaleOffset(offset=0, scale=100), zarr3.CastValue(data_type="uint16")]

    def builtins() -> list:
        from zarr.codecs import CastValue, ScaleOffset  # type: ignore[attr-defined]
        return [ScaleOffset(offset=0, scale=100), CastValue(data_type="uint16")]

    fusion = getattr(zarr3.cast_value, "_AfterScaleOffset", None)  # (absent since the redesign)

    unfused = None
    if fusion is not None:  # the same class, never linked to the scale_offset before it
        unfused = type("CastValue", (zarr3.CastValue,), {"fuses_after": None})

    def ours_unfused() -> list:
        first, second = ours()
        return [first, second if unfused is None else unfused(codec=second.codec)]

    def make(filters_fn, compressors):
        z = zarr.create_array(zarr.storage.MemoryStore(), shape=data.shape, chunks=(chunk, chunk),
                              dtype="float32", filters=filters_fn(), compressors=compressors,
                              fill_value=0)
        z[:] = data
        return z

    variants = [("ours", ours_unfused)]
    if fusion is not None:
        variants.append(("ours, fused", ours))
    try:
        builtins()
        variants.append(("zarr built-ins", builtins))
    except ImportError:
        pass
    results: dict[str, dict[str, float]] = {}
    for cname, compressors in (("none", None), ("zstd", zarr.codecs.ZstdCodec(level=1))):
        arrays = [(label, make(fn, compressors)) for label, fn in variants]
        writes = [lambda z=z: z.__setitem__(slice(None), data) for _, z in arrays]
        reads = [lambda z=z: z[:] for _, z in arrays]
        for direction, fns in (("write", writes), ("read", reads)):
            seconds = interleaved(*fns, repeat=repeat)
            for (label, _), s in zip(arrays, seconds):
                results[f"{cname} {direction} {label}"] = {"mbps": data.nbytes / MIB / s}
        first = arrays[0][1][:]
        for label, z in arrays[1:]:
            if not np.array_equal(z[:], first):
                raise SystemExit(f"{label} read back other values than ours ({cname})")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="*", default=None,
                        help="zarr threading.max_workers values (default: 1 and the core count)")
    parser.add_argument("--child", type=str, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        workers, pipeline = json.loads(args.child)
        results = child(args.mib, args.repeat, workers, pipeline)
        import numcodecs_ext
        print(json.dumps({"module": numcodecs_ext.__file__, "results": results}))
        return
    run(mib=args.mib, repeat=args.repeat, workers=args.workers)


def run(quick: bool = False, mib: int = 256, repeat: int = 3, workers: list[int] | None = None) -> None:
    """Print the table (``quick``: 32 MiB, one repeat, for CI's smoke run)."""
    if quick:
        mib, repeat = 32, 1
    import zarr

    pipelines: list[str | None] = [None]
    try:
        from zarr.core.codec_pipeline import FusedCodecPipeline  # noqa: F401
        pipelines.append("zarr.core.codec_pipeline.FusedCodecPipeline")
    except ImportError:
        pass
    workers = workers or sorted({1, os.cpu_count() or 1})
    print(f"scale_offset + cast_value(float32 -> uint16) through zarr {zarr.__version__}, "
          f"Python {sys.version.split()[0]}")
    print(f"{mib} MiB float32 in 4 MiB chunks, MemoryStore, median of {repeat}")
    here = os.path.dirname(os.path.abspath(__file__))
    for pipeline in pipelines:
        for n in workers:
            out = subprocess.run(
                [sys.executable, os.path.join(here, "bench_fusion.py"), "--mib", str(mib),
                 "--repeat", str(repeat), "--child", json.dumps([n, pipeline])],
                check=True, capture_output=True, text=True, cwd=os.getcwd(),
                env={**os.environ, "PYTHONPATH": os.pathsep.join(
                    [here, os.getcwd(), os.environ.get("PYTHONPATH", "")])})
            reply = json.loads(out.stdout.strip().splitlines()[-1])
            results = reply["results"]
            if pipeline is None and n == workers[0]:
                print(f"numcodecs_ext from {os.path.dirname(reply['module'])}")
            print(f"pipeline {(pipeline or 'default').rsplit('.', 1)[-1]}, max_workers {n}:")
            for key, value in results.items():
                cname, direction, label = key.split(" ", 2)
                anchor = results[f"{cname} {direction} ours"]["mbps"]
                ratio = "" if label == "ours" else f"   {value['mbps'] / anchor:5.2f}x ours"
                print(f"  {cname:5} {direction:5} {label:16} {value['mbps']:8.0f} MB/s{ratio}")


if __name__ == "__main__":
    main()
