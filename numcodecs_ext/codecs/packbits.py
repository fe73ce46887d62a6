"""The ``packbits`` codec (zarr v3 spec name) for numcodecs: id ``numcodecs_ext.packbits``.

numcodecs owns the id ``packbits`` (its ``PackBits``: bool only, a leading padding byte, bits
packed most-significant first). Ours is the zarr v3 codec: every type the spec lists, any bit
range, bits packed least-significant first. ``bit_order="big"`` with
``padding_encoding="first_byte"`` writes and reads numcodecs' layout for bool arrays.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import packbits as core
from ..core.dtypes import parse_dtype
from ..core.packbits_chunks import PackBitsChunks
from ._base import ConfigurationError, ExtCodec, check_keys, parse_decoded_dtype, show
from ._buffers import as_array, deliver, out_dtype

__all__ = ["PackBits"]

_SPEC_KEYS = ["padding_encoding", "first_bit", "last_bit"]
#: the spec's JSON schema spells what its text calls first_bit/last_bit and first_byte/last_byte
#: differently; metadata written from the schema is read (and written back in the text's words)
_SCHEMA_KEYS = {"start_bit": "first_bit", "end_bit": "last_bit"}
_SCHEMA_PADDINGS = {"start_byte": "first_byte", "end_byte": "last_byte"}
_BIT_ORDERS = ("little", "big")


def _check_bit(key: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < 64:
        raise ConfigurationError("packbits", f"{key}={show(value)} is not valid; {key} must be null or "
                         "a bit index from 0 (the least significant bit) to 63")
    return int(value)


def _check_dtype(dtype: Any) -> np.dtype:
    dt = parse_dtype(dtype)
    core.component_bits(dt)  # TypeError naming what is supported
    return dt


class PackBits(ExtCodec):
    """Pack each value into the bits it needs (zarr v3 ``packbits``, an array -> bytes codec).

    Parameters
    ----------
    padding_encoding : {"none", "first_byte", "last_byte"}
        Where a byte recording the number of padding bits goes (``"none"``: no such byte).
    first_bit, last_bit : int, optional
        The bit range of each value (component, for complex types) that is stored, counted from
        the least significant bit; default: all bits. Signed integers are sign-extended from
        ``last_bit`` when decoded, other types zero-extended; bits below ``first_bit`` decode as 0.
    bit_order : {"little", "big"}
        numcodecs only: ``"big"`` fills each byte from its most significant bit (numcodecs'
        ``PackBits`` layout). zarr v3 arrays always use ``"little"``.
    dtype : str
        numcodecs only: the array's dtype, which decoding needs (encoding refuses without it).
    shape : sequence of int, optional
        numcodecs only: the decoded shape. Needed to decode when the element count cannot be
        read from the bytes (``padding_encoding="none"`` with values narrower than a byte).

    Examples
    --------
    >>> import numpy as np
    >>> codec = PackBits(dtype="uint8", last_bit=1, padding_encoding="last_byte")
    >>> enc = codec.encode(np.array([1, 2, 3, 0, 1], dtype="uint8"))
    >>> bytes(enc).hex()
    '390106'
    >>> codec.decode(enc)
    array([1, 2, 3, 0, 1], dtype=uint8)
    """

    codec_id = "numcodecs_ext.packbits"
    elementwise = False

    def __init__(self, padding_encoding: str = "none", first_bit: int | None = None,
                 last_bit: int | None = None, bit_order: str = "little", dtype: Any = None,
                 shape: Sequence[int] | None = None) -> None:
        if padding_encoding not in core.PADDING_ENCODINGS:
            raise ConfigurationError("packbits", f"padding_encoding={show(padding_encoding)} is not "
                             f"valid; use one of {', '.join(map(repr, core.PADDING_ENCODINGS))}")
        self.padding_encoding = padding_encoding
        self.first_bit = _check_bit("first_bit", first_bit)
        self.last_bit = _check_bit("last_bit", last_bit)
        if self.first_bit is not None and self.last_bit is not None and self.last_bit < self.first_bit:
            raise ConfigurationError("packbits", f"last_bit={self.last_bit} is less than "
                             f"first_bit={self.first_bit}; last_bit is the inclusive upper end")
        if bit_order not in _BIT_ORDERS:
            raise ConfigurationError("packbits", f"bit_order={show(bit_order)} is not valid; use "
                             "'little' (the zarr v3 layout) or 'big' (numcodecs' PackBits layout)")
        self.bit_order = bit_order
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(dtype, _check_dtype)
            self._bits(self.dtype)
        if shape is not None:
            if (isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not all(
                    isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0
                    for s in shape)):
                raise ConfigurationError("packbits", f"shape={show(shape)} must be a list of "
                                 "non-negative integers")
            shape = tuple(int(s) for s in shape)
        self.shape = shape

    @property
    def chunk_work(self) -> PackBitsChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.packbits_chunks.PackBitsChunks`)."""
        config = (self.padding_encoding, self.first_bit, self.last_bit, self.bit_order)
        return self._chunk_work_of(config, PackBitsChunks)  # type: ignore[no-any-return]

    def _bits(self, dtype: np.dtype) -> tuple[int, int]:
        """first_bit and last_bit resolved for ``dtype`` (ValueError if out of its range)."""
        return self.chunk_work.bits(dtype)

    def _kw(self, dtype: np.dtype) -> dict[str, Any]:
        return self.chunk_work.pack_keywords(dtype)

    # --- configuration ------------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.padding_encoding != "none":
            config["padding_encoding"] = self.padding_encoding
        if self.first_bit is not None:
            config["first_bit"] = self.first_bit
        if self.last_bit is not None:
            config["last_bit"] = self.last_bit
        return config

    def _config(self) -> dict[str, Any]:
        config = super()._config()
        if self.bit_order != "little":
            config["bit_order"] = self.bit_order
        return config

    @classmethod
    def from_v3_configuration(cls, configuration: Mapping[str, Any]) -> PackBits:
        config = dict(configuration)
        for schema, text in _SCHEMA_KEYS.items():
            if schema in config:
                if text in config:
                    raise ConfigurationError("packbits", f"both {show(schema)} and {show(text)} are given; "
                                     f"they are two spellings of the same key, give {show(text)} only")
                config[text] = config.pop(schema)
        check_keys("packbits", config, _SPEC_KEYS)
        padding = config.get("padding_encoding")
        if isinstance(padding, str) and padding in _SCHEMA_PADDINGS:
            config["padding_encoding"] = _SCHEMA_PADDINGS[padding]
        return cls(**config)

    # --- zarr v3 ------------------------------------------------------------------------------
    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Check the bit range against the dtype (and, to write, the fill value); nothing
        changes."""
        return self.chunk_work.resolve_spec(shape, dtype, fill_value, strict)

    def encoded_size(self, shape: Sequence[int], dtype: np.dtype) -> int:
        """The length in bytes of an encoded chunk."""
        return self.chunk_work.encoded_size(shape, dtype)

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self.chunk_work.encode_chunk(arr)

    device_support = "device"

    def device_encode(self, xp: Any, arr: Any) -> Any:
        return self.chunk_work.device_encode(xp, arr)

    def device_decode(self, xp: Any, data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.chunk_work.device_decode(xp, data, shape, dtype)

    def decode_chunk(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self.chunk_work.decode_chunk(as_array(buf), shape, dtype)

    # --- numcodecs API ------------------------------------------------------------------------
    def _count_known(self, dtype: np.dtype) -> bool:
        """Whether the element count can be read from the encoded bytes alone."""
        if self.padding_encoding != "none":
            return True
        first, last = self._bits(dtype)
        # fewer than 8 padding bits: a byte-wide or wider value cannot hide in them
        return (last - first + 1) * core.component_bits(dtype)[1] >= 8

    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        if self.shape is not None and not isinstance(buf, np.ndarray):
            arr = arr.reshape(self.shape)
        arr = self._conform(arr)
        self._require_for_decode(arr, ("dtype",), "decoding needs the array's dtype")
        if not self._count_known(self.dtype):  # type: ignore[arg-type]
            self._require_for_decode(
                arr, ("shape",), "sub-byte values with padding_encoding='none' do not record their count",
                ", or use padding_encoding='first_byte'")
        self._check_encode_input(arr)
        return self.encode_chunk(arr)

    def decode(self, buf: Any, out: Any = None) -> Any:
        data = as_array(buf)
        dtype = self.dtype if self.dtype is not None else out_dtype(out, None)
        if dtype is None:
            raise ConfigurationError("numcodecs_ext.packbits", "decoding needs the dtype; configure "
                             "dtype=... or pass out= (an array of the decoded dtype and shape)")
        if isinstance(out, np.ndarray) and out_dtype(out, dtype) is not None:
            shape: tuple[int, ...] | None = out.shape
        else:
            shape = self.shape
        if self.shape is not None and shape is not None and math.prod(shape) != math.prod(self.shape):
            shape = self.shape
        count = None if shape is None else math.prod(shape)
        result = core.unpack(data, dtype, count, **self._kw(dtype))
        if shape is not None:
            result = result.reshape(shape)
        if out is not None:
            return deliver(result, out)
        return self._decoded(result)
