"""The ``numcodecs-ext`` command: a demonstration on an embedded sample, and ``info``.

``numcodecs-ext`` (or ``python -m numcodecs_ext``) writes a synthetic 3-D temperature field with a
NaN land mask through every available codec pipeline into a zarr v3 store, reads it back, checks
the result and prints compression ratio, maximum absolute error and encode/decode speed.
``numcodecs-ext info`` lists the registered codecs and library versions.

The tools that work on whole files and stores live with their code and are dispatched from here
(``numcodecs-ext TOOL --help`` for each): ``convert`` (a CF-packed netCDF file to zarr),
``suggest`` (choose a packing for an array), ``migrate`` (zarr v2 to v3) and ``normalize``
(numcodecs filters in a v3 store to the spec codecs) and ``inspect`` (what is inside a store).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


def sample_field(shape: tuple[int, int, int] = (24, 181, 360), seed: int = 0) -> np.ndarray:
    """A realistic air-temperature-like field in kelvin: (time, lat, lon), NaN over land.

    Smooth latitude gradient, a seasonal cycle, travelling waves and a little noise, with a fixed
    land mask of NaN values (as ocean-only variables have).

    >>> a = sample_field((2, 19, 36))
    >>> a.shape, a.dtype, bool(np.isnan(a).any()), bool(200 < np.nanmin(a) < np.nanmax(a) < 320)
    ((2, 19, 36), dtype('float64'), True, True)
    """
    nt, ny, nx = shape
    rng = np.random.default_rng(seed)
    t = np.arange(nt)[:, None, None]
    lat = np.linspace(-90, 90, ny)[None, :, None]
    lon = np.linspace(0, 360, nx, endpoint=False)[None, None, :]
    field = (
        288.0
        - 35.0 * np.sin(np.radians(lat)) ** 2
        + 8.0 * np.sin(np.radians(lat)) * np.cos(2 * np.pi * t / 12.0)
        + 3.0 * np.sin(np.radians(3 * lon - 20 * t)) * np.cos(np.radians(lat))
        + 0.05 * rng.standard_normal(shape)
    )
    land = (np.sin(np.radians(2 * lon)) * np.cos(np.radians(3 * lat)) > 0.55)[0]
    field[:, land] = np.nan
    return field


@dataclass
class Pipeline:
    name: str
    #: Returns the zarr.create_array keyword arguments (filters/serializer/compressors).
    codecs: Callable[[], dict[str, Any]]
    #: The largest absolute error the pipeline promises (0: lossless, NaN positions kept).
    max_error: float
    #: What the pipeline is given, from the sample (lossy zfp cannot take NaN: land filled).
    prepare: Callable[[np.ndarray], np.ndarray] = lambda a: a


def _zstd() -> Any:
    from zarr.codecs import ZstdCodec

    return ZstdCodec(level=3)


def _pipelines() -> list[Pipeline]:
    from .zarr3 import Transpose

    pipelines = [
        Pipeline("zstd (reference)", lambda: {"compressors": [_zstd()]}, 0),
        Pipeline("transpose [2, 1, 0] + zstd",
                 lambda: {"filters": [Transpose(order=[2, 1, 0])], "compressors": [_zstd()]}, 0),
    ]
    pipelines += _optional_pipelines()
    return pipelines


def _optional_pipelines() -> list[Pipeline]:
    """Pipelines whose codecs may be absent (zfp needs libzfp)."""
    found: list[Pipeline] = []
    try:
        from .zarr3 import CastValue, ScaleOffset
    except ImportError:
        pass
    else:
        found.append(Pipeline(
            "scale_offset+cast_value u16 + zstd",
            lambda: {
                "filters": [
                    ScaleOffset(offset=200, scale=100),
                    CastValue(data_type="uint16", rounding="nearest-even",
                              scalar_map={"encode": [["NaN", 65535]], "decode": [[65535, "NaN"]]}),
                ],
                "compressors": [_zstd()],
            },
            0.005,  # half a step of 1/scale
        ))
    from .core import _libzfp
    from .zarr3 import Transpose, Zfp

    try:
        _libzfp.load()
    except ImportError as exc:
        print(f"zfp pipelines skipped: {exc}", file=sys.stderr)
        return found
    found += [
        Pipeline("zfp reversible", lambda: {"serializer": Zfp(mode="reversible"), "compressors": None}, 0),
        Pipeline("transpose [2, 1, 0] + zfp reversible", lambda: {
            "filters": [Transpose(order=[2, 1, 0])], "serializer": Zfp(mode="reversible"),
            "compressors": None}, 0),
        # Lossy zfp refuses NaN (it would decode as garbage), so this one gets the land filled in.
        Pipeline("zfp fixed_accuracy 1e-3 (land filled)",
                 lambda: {"serializer": Zfp(mode="fixed_accuracy", tolerance=1e-3), "compressors": None},
                 1e-3, lambda a: np.where(np.isnan(a), 273.15, a)),
    ]
    return found


def run_demo(out: Path | None, quiet: bool = False) -> int:
    import zarr
    from zarr.storage import LocalStore

    sample = sample_field()
    mb = sample.nbytes / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out) if out is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        pipelines = _pipelines()
        for i, pipeline in enumerate(pipelines, 1):
            if not quiet:
                print(f"[{i}/{len(pipelines)}] {pipeline.name} ...", file=sys.stderr, flush=True)
            path = root / f"{i:02d}.zarr"
            data = pipeline.prepare(sample)
            z = zarr.create_array(LocalStore(path), shape=data.shape, chunks=(6, 181, 360), dtype=data.dtype,
                                  fill_value=float("nan"), overwrite=True, **pipeline.codecs())
            t0 = time.perf_counter()
            z[...] = data
            t1 = time.perf_counter()
            back = zarr.open_array(LocalStore(path), mode="r")[...]
            t2 = time.perf_counter()
            stored = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "zarr.json")
            same_nan = bool(np.array_equal(np.isnan(back), np.isnan(data)))
            err = float(np.nanmax(np.abs(back - data))) if same_nan else float("inf")
            ok = same_nan and err <= pipeline.max_error
            rows.append((pipeline.name, data.nbytes / stored, err, mb / (t1 - t0), mb / (t2 - t1), ok))
    header = f"{'pipeline':40} {'ratio':>7} {'max abs err':>12} {'enc MB/s':>9} {'dec MB/s':>9}  check"
    print(f"sample: {sample.shape} float64 temperature field, {np.isnan(sample).mean():.0%} NaN land mask, "
          f"{mb:.1f} MB")
    print(header)
    print("-" * len(header))
    for name, ratio, err, enc, dec, ok in rows:
        print(f"{name:40} {ratio:7.2f} {err:12.3g} {enc:9.0f} {dec:9.0f}  {'ok' if ok else 'FAILED'}")
    if out is not None:
        print(f"stores written under {out}")
    return 0 if all(r[-1] for r in rows) else 1


def info() -> int:
    import numcodecs
    import zarr

    from . import __version__
    from ._registry import NUMCODECS, ZARR, zarr_choice

    print(f"numcodecs_ext {__version__}")
    print(f"numpy {np.__version__}, numcodecs {numcodecs.__version__}, zarr {zarr.__version__}")
    try:
        import ml_dtypes

        print(f"ml_dtypes {ml_dtypes.__version__}")
    except ImportError:
        print("ml_dtypes: not installed (bfloat16/float8/int4 unavailable)")
    from .core import _libzfp, _native

    print(f"kernels (scale_offset, cast_value, transpose, zfp checks, bitround): {_native.status()}")
    try:
        print(f"libzfp: {_libzfp.load()!r}")
    except ImportError as exc:
        print(f"libzfp: unavailable ({exc})")
    print("numcodecs ids:", ", ".join(NUMCODECS))
    print("zarr v3 names:", ", ".join(ZARR))
    print("implementation zarr uses for each name:")
    for name in (n for n in ZARR if not n.startswith("numcodecs.")):
        chosen, why = zarr_choice(name)
        print(f"  {name:13} {chosen}  ({why})")
    return 0


# command -> the module that implements it, with ``add_arguments(parser)`` and ``run(args) -> int``;
# imported only when its command runs, so its optional dependencies stay optional.
TOOLS = {
    "convert": "numcodecs_ext.cf.convert",
    "suggest": "numcodecs_ext.cf.suggest",
    "migrate": "numcodecs_ext.migrate.v2",
    "normalize": "numcodecs_ext.migrate.normalize",
    "inspect": "numcodecs_ext.tools.inspect",
}


def _run_tool(name: str, argv: list[str]) -> int:
    module = importlib.import_module(TOOLS[name])
    parser = argparse.ArgumentParser(
        prog=f"numcodecs-ext {name}",
        description=(module.__doc__ or "").strip().split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TOOLS:
        return _run_tool(argv[0], argv[1:])
    parser = argparse.ArgumentParser(
        prog="numcodecs-ext",
        description=__doc__.splitlines()[0],
        epilog="tools: " + ", ".join(TOOLS) + " (numcodecs-ext TOOL --help)",
    )
    parser.add_argument("command", nargs="?", choices=["demo", "info"], default="demo",
                        help="demo (default): run every pipeline on the embedded sample; info: versions")
    parser.add_argument("--out", type=Path, default=None, help="write the zarr stores here (default: a temp dir)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    return run_demo(args.out, args.quiet)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
