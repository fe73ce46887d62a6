"""zarr v3 ``scale_offset`` (alternative to zarr >= 3.2's built-in) and ``numcodecs.scale_offset``.

Unlike zarr 3.4.2's built-in, integer overflow is detected for int64 and uint64 too, offset/scale
may be any fill-value JSON, and each codec is validated against its own input dtype (so a
scale_offset after a dtype-changing cast_value works). It offers the built-in's Python surface
(``offset``, ``scale``, its constructor and method signatures) and reads every configuration the
built-in writes, numeric strings such as ``"0.5"`` included (written back as numbers).

Examples
--------
>>> from numcodecs_ext.zarr3 import ScaleOffset
>>> codec = ScaleOffset(offset=-10, scale="0.1")
>>> codec, codec.offset, codec.scale
(ScaleOffset(offset=-10, scale=0.1), -10, 0.1)
>>> ScaleOffset.from_dict({"name": "scale_offset"}).to_dict()
{'name': 'scale_offset'}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..codecs.scale_offset import ScaleOffset as _ScaleOffset
from ..core.scale_offset_chunks import ScaleOffsetChunks
from ._base import AdapterMixin, ArrayArrayV3, claim_fresh

__all__ = ["NumcodecsScaleOffset", "ScaleOffset"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _ScaleOffsetFields(ArrayArrayV3):
    """What zarr's own ScaleOffset exposes: ``offset`` and ``scale`` as JSON (a number, or a
    string such as ``"NaN"`` or ``"0x3f800000"``)."""

    numcodecs_class = _ScaleOffset

    offset: Any
    scale: Any

    def _make_chunk_work(self) -> ScaleOffsetChunks:
        # (dtype: the numcodecs-only key a numcodecs.scale_offset configuration may carry)
        return ScaleOffsetChunks(self.offset, self.scale, self.codec.dtype)

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
        return input_byte_length  # same dtype, same shape

    def _encode_chunk(self, arr: Any) -> Any:
        # (a temporary of the codec before us, such as a cast_value to float64: in place)
        return self.chunk_work.encode_chunk(arr, out=arr if claim_fresh(arr) else None)


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class ScaleOffset(_ScaleOffsetFields):
    """zarr v3 ``scale_offset`` codec, e.g. ``ScaleOffset(offset=-10, scale=0.1)``."""

    spec_names = ("scale_offset",)


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class NumcodecsScaleOffset(AdapterMixin, _ScaleOffsetFields):
    """``numcodecs.scale_offset``: the numcodecs codec under zarr's adapter naming."""

    spec_names = ()
