"""The chunk work of one ``packbits`` configuration (:class:`PackBitsChunks`), which the
numcodecs class and the zarr v3 class both run: the bit range resolved per dtype, values and
fill values that the stored bits cannot hold refused, chunks packed and unpacked (on the CPU
by :mod:`numcodecs_ext.core.packbits`, on other devices by :mod:`numcodecs_ext.core.device`).

Examples
--------
>>> import numpy as np
>>> work = PackBitsChunks(last_bit=3)
>>> packed = work.encode_chunk(np.array([1, 2, 3, 0], dtype="uint8"))
>>> packed.nbytes, work.decode_chunk(packed, (4,), np.dtype("uint8")).tolist()
(2, [1, 2, 3, 0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import device
from . import packbits as core
from .chunk_paths import ChunkPaths, fill_key
from .dtypes import dtype_name, show
from .errors import ConfigurationError

__all__ = ["PackBitsChunks"]


def _name(dtype: np.dtype) -> str:
    try:
        return dtype_name(dtype)
    except ValueError:
        return str(dtype)


@dataclass(frozen=True)
class PackBitsChunks:
    """The chunk work of one ``packbits`` configuration: ``padding_encoding``, the bit range
    ``first_bit`` .. ``last_bit`` (None: the dtype's own end) and ``bit_order`` ("big" only
    in numcodecs' layout, which has no device kernels)."""

    padding_encoding: str = "none"
    first_bit: int | None = None
    last_bit: int | None = None
    bit_order: str = "little"
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    def bits(self, dtype: np.dtype) -> tuple[int, int]:
        """first_bit and last_bit resolved for ``dtype`` (ValueError if out of its range)."""
        try:
            return core.check_bits(dtype, self.first_bit, self.last_bit)
        except TypeError as e:
            raise ValueError(str(e)) from None

    def pack_keywords(self, dtype: np.dtype) -> dict[str, Any]:
        """The keywords :func:`~numcodecs_ext.core.packbits.pack` / ``unpack`` take for ``dtype``."""
        first, last = self.bits(dtype)
        return {"first_bit": first, "last_bit": last, "padding_encoding": self.padding_encoding,
                "bit_order": self.bit_order}

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Check the bit range against the dtype (and, to write, the fill value); nothing
        changes."""
        dt = np.dtype(dtype)
        self.bits(dt)
        if strict and fill_value is not None:
            self.check_fill_survives(np.array(fill_value, dtype=dt))
        return tuple(shape), dt, fill_value

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def check_fill_survives(self, fill: np.ndarray) -> None:
        """The fill value must decode to itself (the spec: an error otherwise), or unwritten parts
        of chunks would read back as another value. Unlike data, whose bits below ``first_bit``
        are dropped by design, a fill value that has such bits set is refused."""
        self.check_fits(fill, "the array's fill value")
        back = self.decode_chunk(self.encode_chunk(fill.reshape(1)), (1,), fill.dtype)
        if back.tobytes() != fill.reshape(1).tobytes():
            first, last = self.bits(fill.dtype.newbyteorder("="))
            raise ConfigurationError(
                "packbits", f"the array's fill value {show(fill.item())} has bits set below "
                f"first_bit={first}, which packbits drops (it would read back as "
                f"{show(back[0].item())}); use e.g. {show(back[0].item())}, or lower first_bit"
            )

    def check_fits(self, arr: np.ndarray, what: str = "value") -> None:
        """Refuse values the stored bits cannot hold: the spec drops their other bits, which
        would silently give another value back."""
        bad = core.first_unrepresentable(arr, self.first_bit, self.last_bit)
        if bad is not None:
            first, last = self.bits(arr.dtype.newbyteorder("="))
            raise ConfigurationError(
                "packbits", f"{what} {show(bad[0])} does not fit in bits {first}..{last} of "
                f"{_name(arr.dtype)} (it would decode as {show(bad[1])}); widen last_bit, or bring the "
                "values into range (scale_offset, cast_value)"
            )

    def encoded_size(self, shape: Sequence[int], dtype: np.dtype) -> int:
        """The length in bytes of an encoded chunk."""
        return core.packed_size(math.prod(shape), dtype, **{
            k: v for k, v in self.pack_keywords(dtype).items() if k != "bit_order"})

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        arr = np.asarray(arr)
        kw = self.pack_keywords(arr.dtype.newbyteorder("="))
        self.check_fits(arr)
        return core.pack(arr, **kw)

    def decode_chunk(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """``buf``: the packed bytes (an ndarray, read as raw bytes, or any buffer)."""
        dt = np.dtype(dtype)
        return core.unpack(buf, dt, math.prod(shape), **self.pack_keywords(dt)).reshape(shape)

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``), or None."""
        dt = device.numpy_dtype(xp, arr.dtype)
        if dt is None or self.bit_order != "little":
            return None
        kw = self.pack_keywords(dt)
        return device.pack(xp, arr, dt, kw["first_bit"], kw["last_bit"], self.padding_encoding)

    def device_decode(self, xp: Any, data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        dt = np.dtype(dtype)
        if self.bit_order != "little":
            return None
        kw = self.pack_keywords(dt)
        values = device.unpack(xp, data, dt, math.prod(shape), kw["first_bit"], kw["last_bit"],
                               self.padding_encoding)
        return None if values is None else device.reshape(xp, values, shape)
