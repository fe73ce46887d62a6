"""zarr v3 ``zfp`` (also read and written as ``zarrs.zfp``) and ``numcodecs.zfp``.

An array -> bytes codec that takes the chunk's shape and dtype from the chunk spec. ``Zfp`` writes
the name it was read or created with: ``zfp`` by default, ``Zfp(name="zarrs.zfp", ...)`` for
readers that only know the old name. Chunks are byte-identical to zarrs'.

Examples
--------
>>> import numpy as np, zarr
>>> from numcodecs_ext.zarr3.zfp import Zfp
>>> z = zarr.create_array({}, shape=(8, 8), chunks=(4, 4), dtype="float32",
...                       serializer=Zfp(mode="fixed_accuracy", tolerance=1e-3))
>>> z[:] = np.linspace(0, 1, 64, dtype="float32").reshape(8, 8)
>>> bool(np.abs(z[:] - np.linspace(0, 1, 64).reshape(8, 8)).max() <= 1e-3)
True
>>> Zfp(mode="reversible", name="zarrs.zfp").to_dict()
{'name': 'zarrs.zfp', 'configuration': {'mode': 'reversible'}}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..codecs.zfp import Zfp as _Zfp
from ..core.zfp_chunks import ZfpChunks
from ..core.zfp_mode import check_config
from ._base import ADAPTER_PREFIX, AdapterMixin, ArrayBytesV3

__all__ = ["NumcodecsZfp", "Zfp"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _ZfpFields(ArrayBytesV3):
    """The configuration: ``mode`` and that mode's parameters (the others None)."""

    numcodecs_class = _Zfp

    mode: str
    tolerance: float | None
    rate: float | None
    precision: int | None
    minbits: int | None
    maxbits: int | None
    maxprec: int | None
    minexp: int | None

    def _make_chunk_work(self) -> ZfpChunks:
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name not in ("name", "mode") and getattr(self, f.name) is not None}
        return ZfpChunks(check_config({"mode": self.mode, **params}))


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class Zfp(_ZfpFields):
    """zarr v3 ``zfp`` codec, e.g. ``Zfp(mode="fixed_rate", rate=8)`` (or ``name="zarrs.zfp"``)."""

    spec_names = ("zfp", "zarrs.zfp")


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class NumcodecsZfp(AdapterMixin, _ZfpFields):
    """``numcodecs.zfp``: the numcodecs codec under zarr's adapter naming and configuration."""

    spec_names = ()

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return (ADAPTER_PREFIX + "zfp",)

    def _configuration(self) -> dict[str, Any]:
        # shape/dtype come from the chunk spec in zarr v3; keep them out of the metadata.
        config = super()._configuration()
        config.pop("shape", None)
        config.pop("dtype", None)
        return config
