"""The ``cast_value`` codec for numcodecs (zarr v2 filters, standalone use) and zarr v3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import device
from ..core.cast_value import OUT_OF_RANGE_MODES, ROUNDING_MODES, CastError, cast_array, is_exact_cast
from ..core.cast_value import numeric_info, reserved_codes
from ..core.dtypes import dtype_kind, dtype_name, is_nan, scalar_text, v3_dtype_from_json
from ..core.scalar_json import check_numeric_json, parameter_to_json
from ..core.parameters import check_numeric_dtype
from ..core.scalar_map import ExactBits, PreparedMap
from ._base import ConfigurationError, ConfigurationTypeError, ExtCodec, check_keys, parse_decoded_dtype
from ._base import refusing, representable, show
from ._buffers import as_array, decode_elementwise, fortran_only, out_dtype, typed

__all__ = ["CastValue", "check_numeric_dtype", "json_scalar"]

_SPEC_KEYS = ["data_type", "rounding", "out_of_range", "scalar_map"]
#: entries a scalar_map may have per direction: preparing one costs ~45 us and ~2 KB per entry
MAX_MAP_ENTRIES = 65536


def json_scalar(value: Any, codec_id: str, key: str) -> Any:
    """A parameter as dtype-free spec JSON (numpy scalars become numbers, "+Infinity" is
    "Infinity"; numeric strings and booleans, which zarr-python writes, become numbers)."""
    with refusing(codec_id):
        return parameter_to_json(value, what=key)


def _parse_scalar_map(value: Any) -> dict[str, list[list[Any]]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigurationTypeError(
            "cast_value", f"scalar_map={show(value)} must be an object with optional keys "
            f"'encode' and 'decode', each a list of [input, output] pairs"
        )
    unknown = sorted(set(value) - {"encode", "decode"})
    if unknown:
        raise ConfigurationError(
            "cast_value", f"scalar_map has unknown key(s) {unknown}; valid keys are "
            f"'encode' and 'decode'"
        )
    out: dict[str, list[list[Any]]] = {}
    for direction in ("encode", "decode"):
        if direction not in value:
            continue
        entries = value[direction]
        if isinstance(entries, Mapping):
            entries = list(entries.items())
        if not isinstance(entries, Sequence) or isinstance(entries, str):
            raise ConfigurationTypeError(
                "cast_value", f"scalar_map[{show(direction)}]={show(entries)} must be a list of "
                f"[input, output] pairs"
            )
        if len(entries) > MAX_MAP_ENTRIES:
            raise ConfigurationError(
                "cast_value", f"scalar_map[{show(direction)}] has {len(entries)} entries; at most "
                f"{MAX_MAP_ENTRIES} are allowed (enough to map every code of a 16-bit type)"
            )
        parsed = []
        for entry in entries:
            if isinstance(entry, str) or not isinstance(entry, Sequence) or len(entry) != 2:
                raise ConfigurationError(
                    "cast_value", f"scalar_map[{show(direction)}] entry {show(entry)} must be a "
                    f"pair [input, output]"
                )
            key = f"scalar_map[{show(direction)}]"
            parsed.append([json_scalar(entry[0], "cast_value", key),
                           json_scalar(entry[1], "cast_value", key)])
        out[direction] = parsed
    return out


def _map_scalar(data: Any, dtype: np.dtype, direction: str, role: str, i: int) -> Any:
    """One scalar_map key or value decoded for its dtype, or a ValueError naming it. A NaN key
    written as hex matches exactly that bit pattern (:class:`~..core.scalar_map.ExactBits`)."""
    with refusing("cast_value"):
        scalar = representable(data, dtype, f"scalar_map {direction} {role}", f" (entry {i})")
    if role == "key" and isinstance(data, str) and data.startswith("0x") and \
            dtype_kind(dtype) == "float" and is_nan(scalar):
        return ExactBits(scalar)
    return scalar


class CastValue(ExtCodec):
    """Convert values to another numeric data type (zarr ``cast_value`` codec).

    Each element is (1) replaced if it matches a ``scalar_map`` key, else (2) kept if the target
    holds it exactly, else (3) rounded with ``rounding`` and then brought into range with
    ``out_of_range``; anything else is an error. Every conversion rounds once, correctly.

    Parameters
    ----------
    data_type : str
        Target type: a zarr v3 name (``"uint8"``, ``"bfloat16"``, ``"float8_e4m3"``, ``"int4"``...)
        or a numpy spelling (``"<u2"``); written back as the zarr v3 name.
    rounding : str
        ``"nearest-even"`` (default), ``"towards-zero"``, ``"towards-positive"``,
        ``"towards-negative"`` or ``"nearest-away"``.
    out_of_range : {"clamp", "wrap"}, optional
        ``"clamp"`` saturates (to ±Infinity for float targets that have it), ``"wrap"`` is
        two's-complement wrapping (integer targets only). Unset: out-of-range values are errors.
    scalar_map : dict, optional
        ``{"encode": [[in, out], ...], "decode": [[in, out], ...]}`` with scalars as zarr v3
        fill-value JSON (``"NaN"`` matches every NaN; a hex NaN matches its exact bit pattern;
        other keys match by value). The first entry with a given key wins; entries never chain.
    dtype : str, optional
        numcodecs only: the decoded (source) dtype, which standalone and zarr v2 decoding need to
        interpret bytes. zarr v3 takes it from the array.

    Examples
    --------
    >>> import numpy as np
    >>> codec = CastValue(data_type="uint8", out_of_range="clamp",
    ...                   scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]},
    ...                   dtype="float64")
    >>> enc = codec.encode(np.array([np.nan, 1.4, 2.5, 300.0]))
    >>> enc
    array([  0,   1,   2, 255], dtype=uint8)
    >>> codec.decode(enc)
    array([ nan,   1.,   2., 255.])
    """

    codec_id = "cast_value"
    elementwise = True

    def __init__(
        self,
        data_type: Any,
        rounding: str = "nearest-even",
        out_of_range: str | None = None,
        scalar_map: Mapping[str, Any] | None = None,
        dtype: Any = None,
    ) -> None:
        self.data_type = check_numeric_dtype(self.codec_id, "data_type", data_type)
        if rounding not in ROUNDING_MODES:
            raise ConfigurationError(
                "cast_value", f"rounding={show(rounding)} is not valid; valid values are "
                f"{', '.join(map(repr, ROUNDING_MODES))}"
            )
        if out_of_range is not None and out_of_range not in OUT_OF_RANGE_MODES:
            raise ConfigurationError(
                "cast_value", f"out_of_range={show(out_of_range)} is not valid; valid values "
                f"are 'clamp', 'wrap', or leaving it unset (out-of-range values are errors)"
            )
        if out_of_range == "wrap" and dtype_kind(self.data_type) == "float":
            raise ConfigurationError(
                "cast_value", f"out_of_range='wrap' is only valid for integer targets, "
                f"not data_type={show(dtype_name(self.data_type))}; use 'clamp' or leave it unset"
            )
        self.rounding = rounding
        self.out_of_range = out_of_range
        self.scalar_map = _parse_scalar_map(scalar_map)
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(
                dtype, lambda v: check_numeric_dtype(self.codec_id, "dtype", v))
        self._maps: dict[tuple[np.dtype, str], list[tuple[Any, Any]]] = {}
        # the target side of every entry is known now; the source side when the source is
        self._entries(None, "encode")
        self._entries(None, "decode")
        if self.dtype is not None:
            self._entries(self.dtype, "encode")
            self._entries(self.dtype, "decode")

    # --- configuration ----------------------------------------------------------------------
    def _spec_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"data_type": dtype_name(self.data_type)}
        if self.rounding != "nearest-even":
            config["rounding"] = self.rounding
        if self.out_of_range is not None:
            config["out_of_range"] = self.out_of_range
        if self.scalar_map is not None:
            config["scalar_map"] = {k: [list(e) for e in v] for k, v in self.scalar_map.items()}
        return config

    def v3_configuration(self) -> dict[str, Any]:
        """The zarr v3 ``cast_value`` configuration (only non-default keys, no ``dtype``)."""
        return self._spec_config()

    @classmethod
    def from_v3_configuration(cls, configuration: Mapping[str, Any]) -> CastValue:
        """Build from a zarr v3 configuration; any key the spec does not define is an error."""
        config = dict(configuration)
        check_keys(cls.codec_id, config, _SPEC_KEYS, required=("data_type",))
        with refusing(cls.codec_id):
            config["data_type"] = v3_dtype_from_json(config["data_type"], what="data_type")
        return cls(**config)

    # --- scalar map -----------------------------------------------------------------------------
    def _entries(self, source: np.dtype | None, direction: str) -> Any:
        """Decoded (key, value) pairs for ``direction`` and source dtype (validated once)."""
        cache_key = (source, direction)
        if cache_key in self._maps:
            return self._maps[cache_key]
        raw = (self.scalar_map or {}).get(direction, [])
        entries = []
        for i, (k, v) in enumerate(raw):
            where = f"scalar_map[{show(direction)}][{i}]"
            kdt, vdt = (source, self.data_type) if direction == "encode" else (self.data_type, source)
            with refusing(self.codec_id):
                if kdt is None:  # the source dtype is not known yet: check what can be checked
                    check_numeric_json(k, what=f"{where} input")
                if vdt is None:
                    check_numeric_json(v, what=f"{where} output")
            key = _map_scalar(k, kdt, direction, "key", i) if kdt is not None else None
            val = _map_scalar(v, vdt, direction, "value", i) if vdt is not None else None
            entries.append((key, val))
        if source is not None:  # prepared once for every call (a lookup table for large maps)
            src, tgt = (source, self.data_type) if direction == "encode" else (self.data_type, source)
            # codes the decode map reads as something else: an unmapped value must not become one
            reserved = reserved_codes(self._entries(source, "decode"), tgt, src, self.rounding,
                                      self._mode(source, "decode")) if direction == "encode" else ()
            entries = PreparedMap(entries, src, tgt, reserved)
        self._maps[cache_key] = entries
        return entries

    # --- the codec ------------------------------------------------------------------------------
    def _source_for(self, dtype: np.dtype) -> np.dtype:
        dt = check_numeric_dtype(self.codec_id, "array dtype", dtype)
        if self.dtype is not None and dt != self.dtype:
            raise ConfigurationError(
                "cast_value", f"configured dtype={show(dtype_name(self.dtype))} but the array "
                f"is {show(dtype_name(dt))}"
            )
        return dt

    def cast_arguments(self, dtype: np.dtype, direction: str) -> dict[str, Any]:
        """:func:`~numcodecs_ext.core.cast_value.cast_array` arguments (``dtype`` included) for
        an array of ``dtype`` (the codec's input) in ``direction`` ("encode" or "decode")."""
        src = self._source_for(dtype)
        return {"dtype": self.data_type if direction == "encode" else src,
                "rounding": self.rounding, "out_of_range": self._mode(src, direction),
                "scalar_map": self._entries(src, direction)}

    def _mode(self, src: np.dtype, direction: str) -> str | None:
        if direction == "decode" and self.out_of_range == "wrap" and dtype_kind(src) == "float":
            return None  # wrap only applies to integer outputs; to a float, out-of-range errors
        return self.out_of_range

    def _encode_array(self, arr: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return cast_array(arr, **self.cast_arguments(arr.dtype, "encode"), out=out)

    def _decode_array(self, arr: np.ndarray, dtype: np.dtype,
                      out: np.ndarray | None = None) -> np.ndarray:
        return cast_array(arr, **self.cast_arguments(dtype, "decode"), out=out)

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The encoded chunk spec; the fill value must survive encode then decode unchanged.

        ``fill_value=None`` resolves only the shape and dtype. With ``strict=False`` (reading an
        array, which never encodes the fill value) a fill value that does not survive is not an
        error: it resolves to its encoding where there is one, else None.
        """
        src = self._source_for(dtype)
        self._entries(src, "encode")  # the map's errors first, in their own words
        self._entries(src, "decode")
        if fill_value is None:
            return shape, self.data_type, None
        fill = np.array(fill_value, dtype=src) if not isinstance(fill_value, np.ndarray) else (
            fill_value.astype(src))
        enc = None
        try:
            enc = self._encode_array(fill)
            dec = self._decode_array(enc, src)
        except ValueError as e:
            if not strict:
                return shape, self.data_type, None if enc is None else enc[()]
            option = "--nan-code" if is_nan(fill[()]) else "--fill-code"
            raise ConfigurationError(
                "cast_value", f"the fill value {scalar_text(fill[()], src)} cannot be cast to "
                f"{dtype_name(self.data_type)} and back: {e.reason if isinstance(e, CastError) else e}; "
                f"fix: `numcodecs-ext normalize STORE {option} auto`"
            ) from None
        same = bool(dec == fill) or (is_nan(dec) and is_nan(fill))
        if not same and strict:
            raise ConfigurationError(
                "cast_value", f"the fill value {scalar_text(fill[()], src)} does not survive the round "
                f"trip ({dtype_name(src)} -> {scalar_text(enc[()], self.data_type)} -> "
                f"{scalar_text(dec[()], src)}); use one the target holds, or map it both ways in scalar_map"
            )
        return shape, self.data_type, enc[()]

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self._encode_array(np.asarray(arr))

    device_support = "device"

    def _device(self, xp: Any, arr: Any, dtype: np.dtype, direction: str) -> Any:
        args = self.cast_arguments(dtype, direction)
        src = dtype if direction == "encode" else self.data_type
        tgt = args.pop("dtype")
        exact = is_exact_cast(numeric_info(src), numeric_info(tgt))
        return device.cast(xp, arr, src, tgt, exact=exact, **args)

    def device_encode(self, xp: Any, arr: Any) -> Any:
        dt = device.numpy_dtype(xp, arr.dtype)
        return None if dt is None else self._device(xp, arr, dt, "encode")

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        if device.numpy_dtype(xp, arr.dtype) != self.data_type or tuple(arr.shape) != tuple(shape):
            return None
        return self._device(xp, arr, np.dtype(dtype), "decode")

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        enc = typed(np.asarray(arr), self.data_type).reshape(shape)
        return self._decode_array(enc, np.dtype(dtype))

    # numcodecs API (element-wise: a Fortran-ordered array gives a Fortran-ordered result)
    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        self._require_for_decode(arr, ("dtype",), "decoding needs the array's dtype")
        self._check_encode_input(arr)
        return self._encode_array(arr.T).T if fortran_only(arr) else self._encode_array(arr)

    def decode(self, buf: Any, out: Any = None) -> Any:
        enc = typed(as_array(buf), self.data_type)
        if out is not None:
            dt = self.dtype if self.dtype is not None else out_dtype(out, None)
            if dt is None:
                raise ConfigurationError(
                    "cast_value", "decoding into a raw buffer needs the decoded dtype; "
                    "configure dtype=... or pass an ndarray of the decoded dtype as out"
                )
            return decode_elementwise(
                enc, out, dt, lambda e, t: self._decode_array(e, dt, out=t), self.codec_id)
        if self.dtype is None:
            raise ConfigurationError(
                "cast_value", "decoding needs the decoded dtype; configure dtype=... or "
                "pass out= (an array of the decoded dtype and shape)"
            )
        if fortran_only(enc):
            return self._decoded(self._decode_array(enc.T, self.dtype).T)
        return self._decoded(self._decode_array(enc, self.dtype))
