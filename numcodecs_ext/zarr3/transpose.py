"""zarr v3 ``transpose`` (zarr's default once numcodecs_ext is installed) and ``numcodecs.transpose``.

Unlike zarr's built-in, which checks ``order`` against the array's dimensions, this one checks it
against the chunk it receives, so a ``transpose`` after a ``reshape`` opens. Both write identical
metadata and chunks; choose zarr's with
``zarr.config.set({"codecs.transpose": "zarr.codecs.transpose.TransposeCodec"})``.
``order`` is an explicit permutation, as the spec requires (it
dropped the constants ``"C"`` and ``"F"``); ``numcodecs.transpose`` keeps the numcodecs
configuration, where ``"C"``/``"F"`` are resolved when the codec meets its array.

Examples
--------
>>> from numcodecs_ext.zarr3 import Transpose
>>> codec = Transpose(order=(1, 0))
>>> codec, codec.order, codec.to_dict()
(Transpose(order=[1, 0]), (1, 0), {'name': 'transpose', 'configuration': {'order': [1, 0]}})
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..codecs.transpose import Transpose as _Transpose
from ..core.transpose import TransposeChunks
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["NumcodecsTranspose", "Transpose"]


def parse_spec_order(configuration: dict[str, Any]) -> None:
    """Refuse the numcodecs constants ``"C"``/``"F"``, which the zarr v3 spec dropped."""
    order = configuration.get("order")
    if isinstance(order, str):
        raise ValueError(
            f"order={order!r} is not valid in zarr v3: give an explicit permutation "
            "of 0..n-1 (the spec dropped 'C' and 'F'; 'F' is [n-1, ..., 1, 0])"
        )


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _TransposeFields(ArrayArrayV3):
    """What zarr's own TransposeCodec exposes: ``order``, the permutation (``"C"``/``"F"`` only
    in a ``numcodecs.transpose`` configuration that has not met its array yet)."""

    numcodecs_class = _Transpose

    order: tuple[int, ...] | str

    @staticmethod
    def _field_value(codec: Any, key: str) -> Any:
        order = codec.order
        return order if isinstance(order, str) else tuple(order)

    def _make_chunk_work(self) -> TransposeChunks:
        return TransposeChunks(self.order)

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
        return input_byte_length


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class Transpose(_TransposeFields):
    """zarr v3 ``transpose`` codec, e.g. ``Transpose(order=[1, 0])``."""

    spec_names = ("transpose",)

    @classmethod
    def _codec_from_configuration(cls, configuration: dict[str, Any]) -> Any:
        parse_spec_order(configuration)
        return super()._codec_from_configuration(configuration)


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class NumcodecsTranspose(AdapterMixin, _TransposeFields):
    """``numcodecs.transpose``: the numcodecs codec under zarr's adapter naming."""

    spec_names = ()
