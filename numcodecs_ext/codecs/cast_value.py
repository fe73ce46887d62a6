"""The ``cast_value`` codec for numcodecs (zarr v2 filters, standalone use) and zarr v3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.cast_value import OUT_OF_RANGE_MODES, ROUNDING_MODES
from ..core.dtypes import dtype_kind, dtype_name, v3_dtype_from_json
from ..core.scalar_json import parameter_to_json
from ..core.cast_value_chunks import CastValueChunks
from ..core.parameters import check_numeric_dtype
from ._base import ConfigurationError, ConfigurationTypeError, ExtCodec, check_keys, parse_decoded_dtype
from ._base import refusing, show
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

    # --- chunk work: the core's of this configuration -----------------------------------------
    @property
    def chunk_work(self) -> CastValueChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.cast_value_chunks.CastValueChunks`)."""
        config = (self.data_type, self.rounding, self.out_of_range, self.scalar_map, self.dtype)
        return self._chunk_work_of(config, CastValueChunks)  # type: ignore[no-any-return]

    def _entries(self, source: np.dtype | None, direction: str) -> Any:
        """Decoded (key, value) pairs for ``direction`` and source dtype (validated once)."""
        return self.chunk_work.entries(source, direction)

    def cast_arguments(self, dtype: np.dtype, direction: str) -> dict[str, Any]:
        """:func:`~numcodecs_ext.core.cast_value.cast_array` arguments (``dtype`` included) for
        an array of ``dtype`` (the codec's input) in ``direction`` ("encode" or "decode")."""
        return self.chunk_work.cast_arguments(dtype, direction)

    def _decode_array(self, arr: np.ndarray, dtype: np.dtype,
                      out: np.ndarray | None = None) -> np.ndarray:
        return self.chunk_work.decode_array(arr, dtype, out)

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The encoded chunk spec; the fill value must survive encode then decode unchanged
        (see :meth:`numcodecs_ext.core.cast_value_chunks.CastValueChunks.resolve_spec`)."""
        return self.chunk_work.resolve_spec(shape, dtype, fill_value, strict)

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self.chunk_work.encode_chunk(arr)

    device_support = "device"

    def device_encode(self, xp: Any, arr: Any) -> Any:
        return self.chunk_work.device_encode(xp, arr)

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.chunk_work.device_decode(xp, arr, shape, dtype)

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self.chunk_work.decode_chunk(arr, shape, dtype)

    # numcodecs API (element-wise: a Fortran-ordered array gives a Fortran-ordered result)
    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        self._require_for_decode(arr, ("dtype",), "decoding needs the array's dtype")
        self._check_encode_input(arr)
        return self.chunk_work.encode_array(arr.T).T if fortran_only(arr) else self.chunk_work.encode_array(arr)

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
