"""``numcodecs-ext info``: the versions in use, the compiled kernels and libzfp, the registered
codecs, and the implementation zarr uses for each of our codec names, with the reason.

Examples::

    numcodecs-ext info
    numcodecs-ext info --json
"""

from __future__ import annotations

from typing import Any

__all__ = ["format_info", "info"]


def info() -> dict[str, Any]:
    """What this installation holds, as data.

    Returns
    -------
    dict
        ``versions`` (numcodecs_ext, numpy, numcodecs, zarr, ml_dtypes: None when missing),
        ``kernels`` (which compiled kernels run, or why none), ``libzfp`` (the library loaded, or
        None) and ``libzfp_error``, ``numcodecs_ids`` (numcodecs id -> our class), and
        ``zarr_names`` (every zarr v3 name we register, ``numcodecs.*`` included -> ``ours``, the
        class zarr ``uses`` for it, ``why``, and ``gpu``: how ours runs in zarr's GPU mode,
        ``"device"`` (on the chunk's own device) or ``"host"`` (moved to the host and back)).

    Examples
    --------
    >>> found = info()
    >>> found["zarr_names"]["transpose"]["uses"] == found["zarr_names"]["transpose"]["ours"]
    True
    >>> "numcodecs.scale_offset" in found["zarr_names"], "zfp" in found["numcodecs_ids"]
    (True, True)
    """
    import numcodecs
    import numpy as np
    import zarr

    from .. import __version__
    from .._registry import NUMCODECS, ZARR, zarr_choice
    from ..core import _libzfp, _native

    try:
        import ml_dtypes

        ml_version: str | None = ml_dtypes.__version__
    except ImportError:
        ml_version = None
    try:
        libzfp, libzfp_error = repr(_libzfp.load()), None
    except ImportError as exc:
        libzfp, libzfp_error = None, str(exc)
    from .._registry import load_class

    names = {}
    for name, path in ZARR.items():
        uses, why = zarr_choice(name)
        gpu = load_class(path).numcodecs_class.device_support
        names[name] = {"ours": path.replace(":", "."), "uses": uses, "why": why, "gpu": gpu}
    return {
        "versions": {"numcodecs_ext": __version__, "numpy": np.__version__,
                     "numcodecs": numcodecs.__version__, "zarr": zarr.__version__,
                     "ml_dtypes": ml_version},
        "kernels": _native.status(),
        "libzfp": libzfp,
        "libzfp_error": libzfp_error,
        "numcodecs_ids": {codec_id: path.replace(":", ".") for codec_id, path in NUMCODECS.items()},
        "zarr_names": names,
    }


def format_info(found: dict[str, Any]) -> list[str]:
    """:func:`info`'s result as the lines ``numcodecs-ext info`` prints."""
    v = found["versions"]
    lines = [f"numcodecs_ext {v['numcodecs_ext']}",
             f"numpy {v['numpy']}, numcodecs {v['numcodecs']}, zarr {v['zarr']}",
             f"ml_dtypes {v['ml_dtypes']}" if v["ml_dtypes"]
             else "ml_dtypes: not installed (bfloat16/float8/int4 unavailable)",
             f"kernels (scale_offset, cast_value, transpose, zfp checks, bitround): {found['kernels']}",
             f"libzfp: {found['libzfp']}" if found["libzfp"] else f"libzfp: unavailable ({found['libzfp_error']})",
             "numcodecs ids: " + ", ".join(found["numcodecs_ids"]),
             "zarr v3 names: " + ", ".join(found["zarr_names"]),
             *_gpu_lines(found["zarr_names"]),
             "implementation zarr uses for each name:"]
    width = max(map(len, found["zarr_names"]))
    for name, entry in found["zarr_names"].items():
        lines.append(f"  {name:{width}}  {entry['uses']}  ({entry['why']})")
    return lines


def _gpu_lines(names: dict[str, Any]) -> list[str]:
    by = {kind: [n for n, e in names.items() if e.get("gpu") == kind] for kind in ("device", "host")}
    return ["zarr's GPU mode (zarr.config.enable_gpu(), cupy chunks):",
            "  on the device: " + ", ".join(by["device"])
            + " (a chunk their device kernels decline, e.g. one with an out-of-range value, "
              "goes through the host and gives the CPU result or error)",
            "  through the host (copied there and back explicitly): " + ", ".join(by["host"])]
