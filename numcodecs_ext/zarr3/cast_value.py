"""zarr v3 ``cast_value`` (alternative to zarr >= 3.2's built-in) and ``numcodecs.cast_value``.

Unlike zarr 3.4.2's built-in, this one needs no Rust package, rounds every conversion once
(float64 -> float16 directly), supports the ml_dtypes types, reads hex scalar_map entries, keeps
the first of repeated keys, and refuses a fill value that does not survive the round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codecs._base import typed
from ..codecs.cast_value import CastValue as _CastValue
from ..codecs.scale_offset import ScaleOffset as _ScaleOffset
from ..core import fused
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["CastValue", "NumcodecsCastValue"]


class _AfterScaleOffset(ArrayArrayV3):
    """Right after a scale_offset, the pair runs as one blocked pass (see zarr3._base)."""

    fuses_after = _ScaleOffset

    def fused_encode(self, before: Any, arr: np.ndarray) -> np.ndarray:
        off, sc = before._parameters(arr.dtype.newbyteorder("="))
        args = self.codec.cast_arguments(arr.dtype, "encode")  # type: ignore[attr-defined]
        return fused.encode(arr, off, sc, args.pop("dtype"), **args)

    def fused_decode(self, before: Any, arr: Any, shape: tuple[int, ...],
                     dtype: np.dtype) -> np.ndarray:
        off, sc = before._parameters(dtype)
        enc = typed(np.asarray(arr), self.codec.data_type).reshape(shape)  # type: ignore[attr-defined]
        args = self.codec.cast_arguments(dtype, "decode")  # type: ignore[attr-defined]
        return fused.decode(enc, args.pop("dtype"), off, sc, **args)


@dataclass(frozen=True, init=False, repr=False)
class CastValue(_AfterScaleOffset):
    """zarr v3 ``cast_value`` codec, e.g. ``CastValue(data_type="uint8", out_of_range="clamp")``."""

    numcodecs_class = _CastValue
    spec_names = ("cast_value",)


@dataclass(frozen=True, init=False, repr=False)
class NumcodecsCastValue(AdapterMixin, _AfterScaleOffset):
    """``numcodecs.cast_value``: the numcodecs codec under zarr's adapter naming."""

    numcodecs_class = _CastValue
    spec_names = ()
