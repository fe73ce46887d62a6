"""The ``numcodecs-ext`` command: a demonstration on an embedded sample, ``info`` and the tools.

``numcodecs-ext`` (or ``python -m numcodecs_ext``) writes a synthetic 3-D temperature field with a
NaN land mask through every available codec pipeline into zarr v3 stores, reads it back, checks
the result and prints compression ratio, maximum absolute error and encode/decode speed, with a
legend and the code of each pipeline (:mod:`numcodecs_ext.tools.demo`). ``numcodecs-ext info``
lists the registered codecs and library versions.

The tools that work on whole files and stores live with their code and are dispatched from here
(``numcodecs-ext TOOL --help`` for each): ``convert`` (a CF-packed netCDF file to zarr),
``suggest`` (choose a packing for an array), ``migrate`` (zarr v2 to v3), ``normalize``
(numcodecs filters in a v3 store to the spec codecs) and ``inspect`` (what is inside a store).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

from .tools.demo import run_demo, sample_field

__all__ = ["main", "sample_field"]

DESCRIPTION = """Spec-exact array codecs for zarr and numcodecs.

Without a command: write an embedded temperature field through every codec pipeline, read it back,
check it, and print compression ratio, error and speed, with a legend and each pipeline's code."""


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
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="tools (numcodecs-ext TOOL --help): " + ", ".join(TOOLS),
    )
    parser.add_argument("command", nargs="?", choices=["demo", "info"], default="demo",
                        help="demo (default): every pipeline on the embedded sample; info: versions and codecs")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep the zarr stores here, one per pipeline (default: a temporary folder)")
    parser.add_argument("--plot", type=Path, default=None, metavar="FILE.png",
                        help="also draw compression ratio against error for the lossy pipelines "
                             "(needs matplotlib)")
    parser.add_argument("--no-code", action="store_true", help="do not print each pipeline's code")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    status = run_demo(args.out, args.quiet, show_code=not args.no_code)
    if args.plot is not None:
        try:
            from .tools.demo import plot_tradeoff

            points = plot_tradeoff(args.plot, quiet=args.quiet)
        except ImportError as exc:
            print(f"--plot needs matplotlib ({exc}): pip install \"numcodecs_ext[plot]\"", file=sys.stderr)
            return 2
        print(f"\nplot of {len(points)} configurations written to {args.plot}")
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
