"""zarr v3 ``bitround`` (also read and written as ``numcodecs.bitround``).

The spec names ``numcodecs.bitround`` as a deprecated alias with the same configuration. zarr's
own adapter for that name takes floats only and reads integer arrays written under it (as zarrs
once wrote them) as zeros; ours takes every type the spec lists, so numcodecs_ext makes it zarr's
default for that name too (a ``codecs.numcodecs.bitround`` the user sets still wins). An array
read under one name is written back under the same name; new arrays get ``bitround``.

Examples
--------
>>> import numpy as np, zarr
>>> from numcodecs_ext.zarr3 import BitRound
>>> z = zarr.create_array({}, shape=(4,), dtype="uint8", filters=[BitRound(keepbits=3)])
>>> z[:] = np.array([11, 100, 209, 255], dtype="uint8")
>>> z[:]
array([ 12,  96, 224, 224], dtype=uint8)
>>> BitRound(keepbits=3).to_dict()
{'name': 'bitround', 'configuration': {'keepbits': 3}}
"""

from __future__ import annotations

import dataclasses

from ..codecs.bitround import BitRound as _BitRound
from ..core.bitround import BitRoundChunks
from ._base import ArrayArrayV3

__all__ = ["BitRound"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class BitRound(ArrayArrayV3):
    """zarr v3 ``bitround`` codec, e.g. ``BitRound(keepbits=10)``."""

    numcodecs_class = _BitRound
    spec_names = ("bitround", "numcodecs.bitround")

    keepbits: int

    def _make_chunk_work(self) -> BitRoundChunks:
        return BitRoundChunks(self.keepbits)
