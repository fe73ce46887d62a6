"""Codecs in words, and who can read them: the vocabulary of ``numcodecs-ext inspect``.

Works from the metadata JSON alone (zarr v3 ``{"name", "configuration"}`` dicts and zarr v2
numcodecs ``{"id", ...}`` dicts), so codecs nobody here implements are still described.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["describe_codec", "number_text", "readers", "zarr_implementation"]

# zarr-python's own codecs (every 3.x), and the ones it gained in 3.2
_ZARR_BUILTIN = {"blosc", "bytes", "endian", "crc32c", "gzip", "sharding_indexed", "zstd", "vlen-utf8",
                 "vlen-bytes", "transpose"}
_ZARR_32 = {"scale_offset", "cast_value"}
# codecs zarrs (Rust) 0.23 reads, as the interop matrix measures it through zarrs-python and
# zarrista (docs/interop.md): spec names, aliases, numcodecs names. Not scale_offset nor
# cast_value (0.23 has neither); zfp only in builds with its zfp feature, which no Python wheel has.
_ZARRS = {"blosc", "bytes", "crc32c", "gzip", "sharding_indexed", "zstd", "vlen-utf8", "vlen-bytes",
          "transpose", "bitround", "numcodecs.bitround", "packbits", "reshape",
          "squeeze", "zarrs.squeeze", "numcodecs.bz2",
          "numcodecs.fixedscaleoffset", "numcodecs.pcodec", "numcodecs.shuffle", "numcodecs.zlib",
          "numcodecs.adler32", "numcodecs.fletcher32", "numcodecs.crc32c", "zarrs.gdeflate",
          "zarrs.vlen", "zarrs.vlen_v2"}

# codecs zarrita.js 0.7.5 (JavaScript, browser viewers) reads, from its codec registry; the interop
# matrix measures the ones we write (docs/interop.md). Not packbits, reshape nor zfp.
_ZARRITA = {"blosc", "lz4", "zstd", "gzip", "zlib", "transpose", "bytes", "crc32c", "vlen-utf8", "json2",
            "bitround", "cast_value", "scale_offset", "sharding_indexed",
            "numcodecs.blosc", "numcodecs.lz4", "numcodecs.zstd", "numcodecs.gzip", "numcodecs.zlib",
            "numcodecs.vlen-utf8", "numcodecs.shuffle", "numcodecs.delta", "numcodecs.bitround",
            "numcodecs.json2"}


def _zarr_version() -> tuple[int, int]:
    import zarr

    major, minor = (int(p) for p in zarr.__version__.split(".")[:2])
    return major, minor


def zarr_implementation(name: str) -> str | None:
    """The class zarr-python in this environment uses for the v3 codec ``name`` (None: none)."""
    try:
        from zarr.registry import get_codec_class

        cls = get_codec_class(name)
    except Exception:  # KeyError, or a plugin that fails to import  # noqa: BLE001 - foreign metadata: described, never raised
        return None
    return f"{cls.__module__}.{cls.__qualname__}"


def readers(name: str, *, integer_data: bool = False) -> list[str]:
    """Who reads the v3 codec ``name``: numcodecs_ext, zarr-python (built in, or through its
    numcodecs adapter), zarrs, zarrita.js."""
    from .._registry import ZARR

    out = []
    if name in ZARR:
        out.append("numcodecs_ext")
    if name in _ZARR_BUILTIN or (name in _ZARR_32 and _zarr_version() >= (3, 2)):
        out.append("zarr-python (with cast-value-rs)" if name == "cast_value" else "zarr-python")
    elif name.startswith("numcodecs."):
        implementation = zarr_implementation(name)
        builtin_adapter = name != "numcodecs.bitround" or not integer_data  # floats only, see README
        if (builtin_adapter and implementation is not None and not implementation.startswith("numcodecs_ext")
                or builtin_adapter and name.removeprefix("numcodecs.") in _numcodecs_ids()):
            out.append("zarr-python (numcodecs adapter)")
    if name in _ZARRS:
        out.append("zarrs")
    elif name in {"zfp", "zarrs.zfp", "numcodecs.zfpy"}:
        out.append("zarrs (Rust builds with its zfp feature; not zarrs-python or zarrista)")
    if name in _ZARRITA:
        out.append("zarrita.js")
    return out


def _numcodecs_ids() -> set[str]:
    import numcodecs

    from .._registry import NUMCODECS

    return set(numcodecs.registry.codec_registry) - set(NUMCODECS)


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"{value}"


#: the spec's JSON spellings of the non-finite floats
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _number(value: Any) -> float | int | None:
    """``value`` as a number, where it is one (the spec's "NaN"/"Infinity" strings included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    return _SPECIAL.get(value) if isinstance(value, str) else None


def number_text(value: Any) -> str:
    """A number as a reader reads it: the shortest text that gives it back (``-1.46875``,
    ``1e-300``), NaN and Infinity bare; anything else as it stands.

    >>> number_text(-1.46875), number_text("NaN"), number_text(1e300), number_text("0x7fc00000")
    ('-1.46875', 'NaN', '1e+300', "'0x7fc00000'")
    """
    n = _number(value)
    if n is None:
        return _fmt(value)
    if isinstance(n, float) and n != n:
        return "NaN"
    if n in (float("inf"), float("-inf")):
        return "Infinity" if n > 0 else "-Infinity"
    return repr(n)


def _plus(value: Any) -> str:
    """`` + v`` or `` - |v|``: a term added, its sign folded into the operator."""
    n = _number(value)
    if n is not None and n == n and n < 0:
        return f" - {number_text(-n)}"
    return f" + {number_text(value)}"


def _minus(value: Any) -> str:
    """`` - v`` or `` + |v|``: a term subtracted, its sign folded into the operator."""
    n = _number(value)
    if n is not None and n == n and n < 0:
        return f" + {number_text(-n)}"
    return f" - {number_text(value)}"


def _factor(value: Any) -> str:
    """A multiplier or divisor: in parentheses when negative (``* (-2092.83)``)."""
    n = _number(value)
    text = number_text(value)
    return f"({text})" if n is not None and n == n and n < 0 else text


def _affine(offset: Any, scale: Any, *, rounded: bool = False) -> tuple[str, str]:
    """The stored and read formulas of ``(x - offset) * scale``, an offset of 0 or a scale of 1
    left out, signs folded (``(x + 1.46875) * (-2092.83)``, not ``(x - -1.46875) * -2092.83``)."""
    no_offset, unit = _number(offset) == 0, _number(scale) == 1
    shifted = "x" if no_offset else f"x{_minus(offset)}"
    stores = shifted if unit else f"({shifted}) * {_factor(scale)}" if not no_offset else f"x * {_factor(scale)}"
    if rounded:
        stores = f"round({stores})"
    reads = "x" if unit else f"x / {_factor(scale)}"
    if not no_offset:
        reads += _plus(offset)
    return stores, reads


def _scale_offset(c: Mapping[str, Any]) -> str:
    stores, reads = _affine(c.get("offset", 0), c.get("scale", 1))
    return f"stores {stores}; reads {reads}"


def _cast_value(c: Mapping[str, Any]) -> str:
    words = [f"stored as {c.get('data_type')}", f"rounding {c.get('rounding', 'nearest-even')}",
             f"out of range: {c.get('out_of_range') or 'an error'}"]
    smap = c.get("scalar_map") or {}
    for k, v in smap.get("encode", []):
        words.append(f"{number_text(k)} stored as {number_text(v)}")
    for k, v in smap.get("decode", []):
        words.append(f"{number_text(k)} read as {number_text(v)}")
    return ", ".join(words)


def _zfp(c: Mapping[str, Any]) -> str:
    mode = c.get("mode")
    detail = {"fixed_rate": f"rate {c.get('rate')} bits/value (3-D rate, as zarrs)",
              "fixed_accuracy": f"absolute error <= {c.get('tolerance')}",
              "fixed_precision": f"{c.get('precision')} bit planes",
              "reversible": "lossless",
              "expert": f"minbits {c.get('minbits')}, maxbits {c.get('maxbits')}, maxprec {c.get('maxprec')}, "
                        f"minexp {c.get('minexp')}"}.get(mode, "")
    return f"zfp {mode}: {detail}".rstrip(": ")


_PADDING = {"none": "no padding byte", "first_byte": "a first byte holding the number of padding bits",
            "last_byte": "a last byte holding the number of padding bits",
            # the spec's JSON schema spells them so
            "start_byte": "a first byte holding the number of padding bits",
            "end_byte": "a last byte holding the number of padding bits"}


def _packbits(c: Mapping[str, Any]) -> str:
    """The spec's packbits (ours writes its text's key names; the schema's are read too)."""
    first = c.get("first_bit", c.get("start_bit", 0))
    last = c.get("last_bit", c.get("end_bit"))
    bits = "every bit" if last is None else f"bits {first}..{last}"
    padding = c.get("padding_encoding", "none")  # the spec's default
    order = "most" if c.get("bit_order") == "big" else "least"
    return f"packs {bits} of each value, {order} significant first; {_PADDING.get(padding, f'padding {padding}')}"


_V3: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "scale_offset": _scale_offset,
    "cast_value": _cast_value,
    "zfp": _zfp,
    "zarrs.zfp": _zfp,
    "transpose": lambda c: f"axes in the order {c.get('order')}",
    "bitround": lambda c: f"keeps {c.get('keepbits')} mantissa bits (rounds to nearest)",
    "numcodecs.bitround": lambda c: f"keeps {c.get('keepbits')} mantissa bits (rounds to nearest)",
    "packbits": _packbits,
    "numcodecs.packbits": lambda c: ("numcodecs PackBits: bools, 8 per byte, most significant first; a first "
                                     "byte holding the number of padding bits"),
    "reshape": lambda c: f"reshaped to {c.get('shape')}",
    "bytes": lambda c: f"{c.get('endian', 'no')}-endian bytes" if c.get("endian") else "bytes",
    "zstd": lambda c: f"zstd level {c.get('level', 0)}" + (", checksum" if c.get("checksum") else ""),
    "gzip": lambda c: f"gzip level {c.get('level')}",
    "blosc": lambda c: (f"blosc {c.get('cname')} level {c.get('clevel')}, shuffle {c.get('shuffle')}"
                        + (f", typesize {c['typesize']}" if c.get("typesize") else "")),
    "crc32c": lambda c: "crc32c checksum",
    "numcodecs.fixedscaleoffset": lambda c: (
        f"numcodecs FixedScaleOffset: stores {_affine(c.get('offset'), c.get('scale'), rounded=True)[0]} as "
        f"{c.get('astype')} (wraps silently)"),
    "numcodecs.astype": lambda c: f"numcodecs AsType: stored as {c.get('encode_dtype')}",
}


def describe_codec(codec: Mapping[str, Any]) -> str:
    """One codec (v3 ``{"name", "configuration"}`` or v2 numcodecs ``{"id", ...}``) in words.

    Examples
    --------
    >>> describe_codec({"name": "scale_offset", "configuration": {"offset": 10, "scale": 4}})
    'stores (x - 10) * 4; reads x / 4 + 10'
    >>> describe_codec({"id": "zstd", "level": 3})
    'zstd level 3'
    """
    if "name" in codec:
        name, config = str(codec["name"]), dict(codec.get("configuration") or {})
    else:
        name, config = str(codec.get("id")), {k: v for k, v in codec.items() if k != "id"}
        name = {"fixedscaleoffset": "numcodecs.fixedscaleoffset", "astype": "numcodecs.astype",
                "bitround": "numcodecs.bitround", "numcodecs_ext.bitround": "bitround",
                "packbits": "numcodecs.packbits"}.get(name, name)
        if name == "numcodecs_ext.packbits":  # ours in zarr v2 (bit_order "big": numcodecs' layout)
            name = "packbits"
    describer = _V3.get(name)
    if describer is None:
        return ", ".join(f"{k}={v}" for k, v in config.items()) or "(no configuration)"
    try:
        return describer(config)
    except Exception:  # foreign configuration: show it as it is  # noqa: BLE001 - foreign metadata: described, never raised
        return ", ".join(f"{k}={v}" for k, v in config.items())
