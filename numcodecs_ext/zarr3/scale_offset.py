"""zarr v3 ``scale_offset`` (alternative to zarr >= 3.2's built-in) and ``numcodecs.scale_offset``.

Unlike zarr 3.4.2's built-in, integer overflow is detected for int64 and uint64 too, offset/scale
may be any fill-value JSON, and each codec is validated against its own input dtype (so a
scale_offset after a dtype-changing cast_value works).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codecs.scale_offset import ScaleOffset as _ScaleOffset
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["NumcodecsScaleOffset", "ScaleOffset"]


@dataclass(frozen=True, init=False, repr=False)
class ScaleOffset(ArrayArrayV3):
    """zarr v3 ``scale_offset`` codec, e.g. ``ScaleOffset(offset=-10, scale=0.1)``."""

    numcodecs_class = _ScaleOffset
    spec_names = ("scale_offset",)


@dataclass(frozen=True, init=False, repr=False)
class NumcodecsScaleOffset(AdapterMixin, ArrayArrayV3):
    """``numcodecs.scale_offset``: the numcodecs codec under zarr's adapter naming."""

    numcodecs_class = _ScaleOffset
    spec_names = ()
