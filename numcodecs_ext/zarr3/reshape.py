"""zarr v3 ``reshape`` and ``numcodecs.reshape``.

Every constraint the spec says MUST be an error is checked when the codec meets its array (zarr
resolves the chain when an array is created or opened). Chunks are reshaped as views.

Examples
--------
>>> import numpy as np, zarr
>>> from numcodecs_ext.zarr3 import Reshape
>>> z = zarr.create_array({}, shape=(4, 6, 2), chunks=(2, 3, 2), dtype="int32",
...                       filters=[Reshape(shape=[[0, 1], -1])])
>>> z[:] = np.arange(48, dtype="int32").reshape(4, 6, 2)
>>> int(z[3, 5, 1])
47
>>> zarr.create_array({}, shape=(4, 6), chunks=(2, 3), dtype="int32",
...                   filters=[Reshape(shape=[4, -1])])
Traceback (most recent call last):
...
ValueError: codec 'reshape': shape=[4, -1] cannot hold chunks of shape [2, 3] (6 elements): 6 is not a multiple of 4
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from ..codecs.reshape import Reshape as _Reshape
from ..core.reshape import ReshapeChunks, parse_spec
from ._base import AdapterMixin, ArrayArrayV3

__all__ = ["NumcodecsReshape", "Reshape"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _ReshapeFields(ArrayArrayV3):
    """``shape``: the configuration (sizes, -1 and lists of input dimensions)."""

    numcodecs_class = _Reshape

    shape: list[Any]

    def _make_chunk_work(self) -> ReshapeChunks:
        return ReshapeChunks(parse_spec(self.shape))

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
        return input_byte_length

    def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
        """Check the configuration against the chunks, when the array is created or opened.

        ``shape`` is the array's shape as the codecs before this one leave it, and the chunk
        grid is the array's. A codec before this one may have permuted the dimensions
        (transpose), so the chunks are refused only if no order of the chunk's dimensions
        (that fits the array's) satisfies the configuration; whatever passes here is checked
        again, exactly, when each chunk is encoded or decoded.
        """
        chunk_shape = getattr(chunk_grid, "chunk_shape", None)
        if chunk_shape is None or len(chunk_shape) != len(shape):
            chunk_shape = tuple(shape)  # (no regular grid: the dimensions alone are checked)
            for entry in self.chunk_work.spec:
                if isinstance(entry, tuple) and entry and entry[-1] >= len(shape):
                    self.chunk_work.output_shape(chunk_shape)
            return
        chunk_shape = tuple(int(c) for c in chunk_shape)
        first_error: ValueError | None = None
        orders = itertools.islice(itertools.permutations(range(len(chunk_shape))), 5040)
        for order in orders:
            candidate = tuple(chunk_shape[i] for i in order)
            if any(c > max(s, 1) for c, s in zip(candidate, shape)) and order != tuple(range(len(order))):
                continue
            try:
                self.chunk_work.output_shape(candidate)
                return
            except ValueError as e:
                first_error = first_error or e
        if first_error is not None:
            raise first_error


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class Reshape(_ReshapeFields):
    """zarr v3 ``reshape`` codec, e.g. ``Reshape(shape=[[0, 1], [2], 3])``."""

    spec_names = ("reshape",)


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class NumcodecsReshape(AdapterMixin, _ReshapeFields):
    """``numcodecs.reshape``: the numcodecs codec under zarr's adapter naming."""

    spec_names = ()

    def _configuration(self) -> dict[str, Any]:
        config = super()._configuration()
        config.pop("input_shape", None)  # the chunk spec carries it in zarr v3
        config.pop("dtype", None)
        return config
