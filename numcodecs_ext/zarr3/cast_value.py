"""zarr v3 ``cast_value`` (alternative to zarr >= 3.2's built-in) and ``numcodecs.cast_value``.

Unlike zarr 3.4.2's built-in, this one needs no Rust package, rounds every conversion once
(float64 -> float16 directly), supports the ml_dtypes types, reads hex scalar_map entries, keeps
the first of repeated keys, and refuses a fill value that does not survive the round trip.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codecs.cast_value import CastValue as _CastValue
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["CastValue", "NumcodecsCastValue"]


@dataclass(frozen=True, init=False, repr=False)
class CastValue(ArrayArrayV3):
    """zarr v3 ``cast_value`` codec, e.g. ``CastValue(data_type="uint8", out_of_range="clamp")``."""

    numcodecs_class = _CastValue
    spec_names = ("cast_value",)


@dataclass(frozen=True, init=False, repr=False)
class NumcodecsCastValue(AdapterMixin, ArrayArrayV3):
    """``numcodecs.cast_value``: the numcodecs codec under zarr's adapter naming."""

    numcodecs_class = _CastValue
    spec_names = ()
