"""Reshaping (zarr v3 ``reshape``): a new shape, C order kept, a view wherever numpy can make one.

The configuration lists one entry per output dimension:

* a positive integer: that size;
* ``-1`` (at most once): whatever size makes the element counts agree;
* a list of input dimensions ``[d0, ..., dk]``: the product of their sizes. Over all such lists
  the dimensions must increase strictly, and the output dimensions before (after) the entry must
  hold exactly as many elements as the input dimensions before ``d0`` (after ``dk``), so that the
  entry really is those input dimensions raveled together.

Examples
--------
>>> spec = parse_spec([[0, 1], [2], 3])
>>> output_shape(spec, (100, 50, 64, 3))
(5000, 64, 3)
>>> output_shape(parse_spec([-1, 4]), (2, 3, 4))
(6, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import device
from .buffers import typed
from .chunk_paths import ChunkPaths, fill_key
from .dtypes import show

__all__ = ["Entry", "ReshapeChunks", "output_shape", "parse_spec", "reshape", "spec_to_json"]

#: an output dimension: a size, -1, or a tuple of input dimensions
Entry = int | tuple[int, ...]

_WHAT = (
    "each entry of shape must be a positive integer, -1 (at most once) or a list of input "
    "dimensions such as [0, 1]"
)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def parse_spec(shape: Any) -> tuple[Entry, ...]:
    """Validate the ``shape`` configuration on its own (the checks that need no array).

    >>> parse_spec([[1], [0]])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: shape=[[1], [0]] is not valid: the input dimensions listed must increase
    strictly over all entries (the reshape codec never transposes); got 1 before 0
    """
    if isinstance(shape, np.ndarray) and shape.ndim == 1:
        shape = shape.tolist()
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise ValueError(f"shape={_show(shape)} must be a list; {_WHAT}")
    entries: list[Entry] = []
    autos = 0
    previous: int | None = None
    for item in shape:
        if _is_int(item):
            size = int(item)
            if size == -1:
                autos += 1
            elif size < 1:
                raise ValueError(f"shape={_show(shape)} has entry {size}; {_WHAT}")
            entries.append(size)
        elif isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and all(
                _is_int(d) and d >= 0 for d in item):
            dims = tuple(int(d) for d in item)
            for d in dims:
                if previous is not None and d <= previous:
                    raise ValueError(
                        f"shape={_show(shape)} is not valid: the input "
                        "dimensions listed must increase strictly over all entries (the reshape "
                        f"codec never transposes); got {previous} before {d}"
                    )
                previous = d
            entries.append(dims)
        else:
            raise ValueError(f"shape={_show(shape)} has entry {_show(item)}; {_WHAT}")
    if autos > 1:
        raise ValueError(f"shape={_show(shape)} has -1 more than once; {_WHAT}")
    return tuple(entries)


def spec_to_json(spec: Sequence[Entry]) -> list[Any]:
    """The configuration as JSON (lists for input-dimension entries)."""
    return [list(e) if isinstance(e, tuple) else e for e in spec]


def _show(shape: Any) -> str:
    try:
        return repr(spec_to_json([tuple(e) if isinstance(e, (list, tuple)) else e for e in shape]))
    except TypeError:
        return show(shape)


def output_shape(spec: Sequence[Entry], input_shape: Sequence[int]) -> tuple[int, ...]:
    """The output shape for chunks of ``input_shape``, or ValueError for every case the spec
    says MUST be an error.

    >>> output_shape(parse_spec([5, -1]), (4, 3))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: shape=[5, -1] cannot hold chunks of shape [4, 3] (12 elements): 12 is not a
    multiple of 5
    """
    shape_in = tuple(int(s) for s in input_shape)
    total = math.prod(shape_in)
    where = f"shape={spec_to_json(spec)} cannot hold chunks of shape {list(shape_in)}"
    sizes: list[int | None] = []
    for entry in spec:
        if isinstance(entry, tuple):
            bad = [d for d in entry if d >= len(shape_in)]
            if bad:
                raise ValueError(
                    f"{where}: input dimension {bad[0]} does not exist (the chunks have "
                    f"{len(shape_in)} dimensions)"
                )
            sizes.append(math.prod(shape_in[d] for d in entry))
        else:
            sizes.append(None if entry == -1 else entry)
    if None in sizes:
        known = math.prod(s for s in sizes if s is not None)
        if known == 0 or total % known:
            why = ("the other entries hold no elements, so -1 is undetermined" if known == 0
                   else f"{total} is not a multiple of {known}")
            raise ValueError(f"{where} ({total} elements): {why}")
        sizes[sizes.index(None)] = total // known
    out = tuple(int(s) for s in sizes)  # type: ignore[arg-type]
    if math.prod(out) != total:
        raise ValueError(f"{where}: the output shape {list(out)} holds {math.prod(out)} elements, "
                         f"the chunks {total}")
    for i, entry in enumerate(spec):
        if isinstance(entry, tuple) and entry:
            before, after = math.prod(out[:i]), math.prod(out[i + 1:])
            if before != math.prod(shape_in[:entry[0]]) or after != math.prod(shape_in[entry[-1] + 1:]):
                raise ValueError(
                    f"{where}: entry {i} ({list(entry)}) must be input dimensions {entry[0]}..{entry[-1]} "
                    f"raveled together (needs {math.prod(shape_in[:entry[0]])} elements before it and "
                    f"{math.prod(shape_in[entry[-1] + 1:])} after, not {before} and {after})"
                )
    return out


def reshape(arr: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``arr`` in C order with the given shape: a view unless ``arr``'s memory layout needs a copy.

    >>> a = np.arange(6).reshape(2, 3)
    >>> np.shares_memory(reshape(a, (3, 2)), a)
    True
    """
    return np.reshape(arr, tuple(shape), order="C")


@dataclass(frozen=True)
class ReshapeChunks:
    """The chunk work of one ``reshape`` configuration (the numcodecs and zarr v3 classes both
    run it); ``spec`` is what :func:`parse_spec` returns.

    >>> ReshapeChunks(parse_spec([-1])).encode_chunk(np.zeros((2, 3))).shape
    (6,)
    """

    spec: tuple[Entry, ...]
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        """The encoded shape of chunks of ``input_shape`` (ValueError where the spec says so)."""
        key = tuple(input_shape)
        shape = self.paths.get(key)  # (chunks of an array share a shape)
        if shape is None:
            try:
                shape = output_shape(self.spec, key)
            except ValueError as e:  # (a ValueError, as zarr's validate() raises)
                raise ValueError(f"codec 'reshape': {e}") from None
            self.paths.keep(key, shape)
        return shape  # type: ignore[no-any-return]

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The output shape; with ``strict=False`` a shape the configuration does not fit gives a
        stand-in of the right dimensionality instead of an error.

        zarr also resolves chains with the whole array's shape (when it parses metadata), which
        an explicit size need not fit; the chunks are checked where zarr shows their shape
        (``validate``) and whenever one is encoded or decoded.
        """
        try:
            return self.output_shape(shape), np.dtype(dtype), fill_value
        except ValueError:
            if strict:
                raise
        stand_in = tuple(
            (math.prod(shape[d] for d in e) if all(d < len(shape) for d in e) else 1)
            if isinstance(e, tuple) else max(e, 1) for e in self.spec)
        return stand_in, np.dtype(dtype), fill_value

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        arr = np.asarray(arr)
        return reshape(arr, self.output_shape(arr.shape))

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return reshape(typed(np.asarray(arr), np.dtype(dtype)), shape)

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``)."""
        return device.reshape(xp, arr, self.output_shape(arr.shape))

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        if device.numpy_dtype(xp, arr.dtype) != dtype:
            return None
        return device.reshape(xp, arr, shape)
