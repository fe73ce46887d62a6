"""zarr v3 ``packbits``: store each value in the bits it needs.

An array -> bytes codec (it takes the place of ``bytes``). Bits are packed least-significant
first, as the spec and zarrs do; numcodecs' ``PackBits`` (zarr's ``numcodecs.packbits``) packs
bool most-significant first, so its chunks are not interchangeable with these.

Examples
--------
>>> import numpy as np, zarr
>>> from numcodecs_ext.zarr3 import PackBits
>>> z = zarr.create_array({}, shape=(1000,), dtype="bool", serializer=PackBits(), compressors=None)
>>> z[:] = np.arange(1000) % 3 == 0
>>> int(z[:].sum())
334
>>> PackBits().chunk_work.encode_chunk(np.ones(1000, dtype=bool)).nbytes  # the chunk: 1 bit per value
125
>>> PackBits(last_bit=3, padding_encoding="first_byte").to_dict()
{'name': 'packbits', 'configuration': {'padding_encoding': 'first_byte', 'last_bit': 3}}
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ..codecs.packbits import PackBits as _PackBits
from ..core.packbits_chunks import PackBitsChunks
from ._base import ArrayBytesV3, native_dtype

__all__ = ["PackBits"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class PackBits(ArrayBytesV3):
    """zarr v3 ``packbits`` codec, e.g. ``PackBits(first_bit=0, last_bit=3)``."""

    numcodecs_class = _PackBits
    spec_names = ("packbits",)
    is_fixed_size: ClassVar[bool] = True

    padding_encoding: str
    first_bit: int | None
    last_bit: int | None

    def _make_chunk_work(self) -> PackBitsChunks:
        return PackBitsChunks(self.padding_encoding, self.first_bit, self.last_bit)

    def _encode_sync(self, chunk_array: Any, chunk_spec: Any) -> Any:
        self._check_fill(chunk_spec)  # the fill value must fit the stored bits, like the data
        return super()._encode_sync(chunk_array, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        return self.chunk_work.encoded_size(chunk_spec.shape, native_dtype(chunk_spec))  # type: ignore[no-any-return]
