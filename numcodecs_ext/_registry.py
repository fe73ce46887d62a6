"""Registration with numcodecs and zarr, in one place.

Entry points (``numcodecs.codecs``, ``zarr.codecs``) let both libraries find every codec without
importing numcodecs_ext; :func:`register_all` does the same explicitly when the package is
imported, so a codec constructed in code is usable at once.
"""

from __future__ import annotations

import importlib
from typing import Any

import numcodecs

#: numcodecs id -> "module:Class" of the numcodecs codec.
NUMCODECS: dict[str, str] = {
    "transpose": "numcodecs_ext.codecs.transpose:Transpose",
    "scale_offset": "numcodecs_ext.codecs.scale_offset:ScaleOffset",
    "cast_value": "numcodecs_ext.codecs.cast_value:CastValue",
    "zfp": "numcodecs_ext.codecs.zfp:Zfp",
    "zarrs.zfp": "numcodecs_ext.codecs.zfp:Zfp",
    "reshape": "numcodecs_ext.codecs.reshape:Reshape",
    # numcodecs owns "bitround" and "packbits" (floats only / bool only, another bit order)
    "numcodecs_ext.bitround": "numcodecs_ext.codecs.bitround:BitRound",
    "numcodecs_ext.packbits": "numcodecs_ext.codecs.packbits:PackBits",
}

#: zarr v3 codec name -> "module:Class" of our implementation.
ZARR: dict[str, str] = {
    "transpose": "numcodecs_ext.zarr3.transpose:Transpose",
    "numcodecs.transpose": "numcodecs_ext.zarr3.transpose:NumcodecsTranspose",
    "scale_offset": "numcodecs_ext.zarr3.scale_offset:ScaleOffset",
    "numcodecs.scale_offset": "numcodecs_ext.zarr3.scale_offset:NumcodecsScaleOffset",
    "cast_value": "numcodecs_ext.zarr3.cast_value:CastValue",
    "numcodecs.cast_value": "numcodecs_ext.zarr3.cast_value:NumcodecsCastValue",
    "zfp": "numcodecs_ext.zarr3.zfp:Zfp",
    "zarrs.zfp": "numcodecs_ext.zarr3.zfp:Zfp",
    "numcodecs.zfp": "numcodecs_ext.zarr3.zfp:NumcodecsZfp",
    "reshape": "numcodecs_ext.zarr3.reshape:Reshape",
    "numcodecs.reshape": "numcodecs_ext.zarr3.reshape:NumcodecsReshape",
    "bitround": "numcodecs_ext.zarr3.bitround:BitRound",
    "numcodecs.bitround": "numcodecs_ext.zarr3.bitround:BitRound",
    "packbits": "numcodecs_ext.zarr3.packbits:PackBits",
}

#: Names that zarr (>= 3.2) or other packages (cast-value) also implement and that zarr's default
#: config does not pin: with several implementations and no config entry zarr warns on every use
#: and picks one at random. We pin ours unless the user configured ``codecs.<name>``: it needs no
#: Rust package, and it follows the spec where zarr 3.4.2 does not (see README), while writing
#: byte-identical chunks wherever zarr is right, so arrays stay exchangeable both ways. The pin
#: is one of zarr's config *defaults* (donfig's ``update_defaults``): a value the user set (in
#: code, a YAML file or ``ZARR_CODECS__<NAME>``) wins, and ``zarr.config.reset()`` keeps it
#: (ours stand first among the defaults, which reset applies first-wins).
ZARR_DEFAULTS: dict[str, str] = {
    "scale_offset": ZARR["scale_offset"],
    "cast_value": ZARR["cast_value"],
    # zarr pins its own TransposeCodec, which checks ``order`` against the array's dimensions: a
    # transpose after a reshape (as the reshape spec suggests, and as zarrs writes it) sees the
    # reshaped chunk and could never be opened. Ours checks against the chunk it receives; its
    # chunks are byte-identical and it passes zarr's own transpose tests.
    "transpose": ZARR["transpose"],
    # zarr pins its numcodecs adapter here, which takes floats only and reads the integer arrays
    # zarrs wrote under this name as zeros; ours reads and writes every type the spec lists
    "numcodecs.bitround": ZARR["numcodecs.bitround"],
}


#: why each name of ZARR_DEFAULTS is pinned to ours, as ``numcodecs-ext info`` says it
_DEFAULT_REASONS: dict[str, str] = {
    "scale_offset": "spec-exact where zarr >= 3.2's own is not (int64 overflow, float overflow)",
    "cast_value": "spec-exact where zarr >= 3.2's own is not (rounding once, fill-value check), "
                  "and needs no Rust package (zarr's needs cast-value-rs)",
    "transpose": "checks order against the chunk it receives, so a transpose after a reshape opens "
                 "(zarr's TransposeCodec refuses it); identical metadata and bytes",
    "numcodecs.bitround": "reads and writes integer arrays (zarr's numcodecs adapter takes floats "
                          "only and reads integers written under this name as zeros)",
}


def load_class(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def register_numcodecs() -> None:
    """Register every numcodecs codec class under its id (and aliases)."""
    for codec_id, path in NUMCODECS.items():
        cls = load_class(path)
        if numcodecs.registry.codec_registry.get(codec_id) is not cls:
            numcodecs.register_codec(cls, codec_id=codec_id)


def register_zarr() -> None:
    """Register the zarr v3 classes with zarr's codec registry and pin defaults where needed."""
    try:
        from zarr import config
        from zarr.registry import fully_qualified_name, register_codec
    except ImportError:  # pragma: no cover - zarr is a dependency; stay importable without it
        return
    from .zarr3.dtypes import register_zarr_dtypes

    register_zarr_dtypes()  # zarr 3.1 never loads the zarr.data_type entry points
    for name, path in ZARR.items():
        register_codec(name, load_class(path))
    ours = {"codecs": {name: fully_qualified_name(load_class(path)) for name, path in ZARR_DEFAULTS.items()}}
    config.update_defaults(ours)
    # zarr.config.reset() re-applies donfig's list of defaults with the first one winning, which
    # would bring back zarr's own pins (transpose, numcodecs.bitround): ours go first
    config.defaults[:] = [ours] + [d for d in config.defaults if d != ours]


def register_all() -> None:
    register_numcodecs()
    register_zarr()


def zarr_choice(name: str) -> tuple[str, str]:
    """Which class zarr uses for the codec ``name`` and why: ``(class path, reason)``.

    >>> path, why = zarr_choice("scale_offset")
    >>> path
    'numcodecs_ext.zarr3.scale_offset.ScaleOffset'
    """
    import os

    from zarr import config
    from zarr.registry import fully_qualified_name, get_codec_class

    chosen = fully_qualified_name(get_codec_class(name))
    configured = config.get("codecs", {}).get(name)  # (names contain dots: no dotted lookup)
    env = f"ZARR_CODECS__{name.upper().replace('.', '_')}"
    if os.environ.get(env):
        why = f"set by the environment variable {env}"
    elif name in ZARR_DEFAULTS and configured == chosen == fully_qualified_name(load_class(ZARR[name])):
        why = (f"numcodecs_ext's default: {_DEFAULT_REASONS[name]}; choose another with "
               f"zarr.config.set({{'codecs.{name}': ...}}) or {env}")
    elif configured is not None:
        why = f"zarr's config codecs.{name}"
    else:
        why = "the only implementation registered"
    return chosen, why
