"""zarr v3 ``transpose`` (an alternative to zarr's built-in) and ``numcodecs.transpose``.

zarr's built-in stays the default for ``transpose``; choose this one with
``zarr.config.set({"codecs.transpose": "numcodecs_ext.zarr3.transpose.Transpose"})``. Both write
identical metadata and chunks. ``"C"``/``"F"`` orders are resolved to an explicit permutation when
the codec meets its array, so the stored metadata is what every zarr v3 implementation reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codecs.transpose import Transpose as _Transpose
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["NumcodecsTranspose", "Transpose"]


@dataclass(frozen=True, init=False, repr=False)
class Transpose(ArrayArrayV3):
    """zarr v3 ``transpose`` codec, e.g. ``Transpose(order=[1, 0])``."""

    numcodecs_class = _Transpose
    spec_names = ("transpose",)


@dataclass(frozen=True, init=False, repr=False)
class NumcodecsTranspose(AdapterMixin, ArrayArrayV3):
    """``numcodecs.transpose``: the numcodecs codec under zarr's adapter naming."""

    numcodecs_class = _Transpose
    spec_names = ()
