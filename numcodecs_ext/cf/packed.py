"""What a packing is made of: the integer and float types, the range of the data
(:class:`DataRange`) and the packing itself (:class:`Packing`). :mod:`numcodecs_ext.cf.search`
finds packings and :mod:`numcodecs_ext.cf.packing` chooses one; both import these from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codecs._base import show as show_attribute  # (one way to show a value in a message)
from ..core.dtypes import dtype_name

__all__ = ["FLOAT_TYPES", "INTEGER_TYPES", "DataRange", "Packing", "as_data_range", "is_real"]

#: packed types, smallest first
INTEGER_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
#: the unpacked types a packing is for
FLOAT_TYPES = ("float16", "float32", "float64")


@dataclass(frozen=True)
class DataRange:
    """The finite range of some data, whether it holds NaN (None: unknown), how many values."""

    min: float
    max: float
    has_nan: bool | None = None
    count: int | None = None


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (an int or float, numpy's too; not a bool)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def as_data_range(value: Any) -> DataRange:
    """A :class:`DataRange` from a DataRange or a ``(min, max)`` pair of finite numbers.

    >>> as_data_range((0, 1.5))
    DataRange(min=0.0, max=1.5, has_nan=None, count=None)
    >>> as_data_range("0..1")
    Traceback (most recent call last):
    ...
    ValueError: data_range='0..1' is not valid; give a DataRange or a (min, max) pair of finite numbers
    """
    if isinstance(value, DataRange):
        r = value
    elif isinstance(value, (tuple, list, np.ndarray)) and len(value) == 2 and all(is_real(v) for v in value):
        r = DataRange(float(value[0]), float(value[1]))
    else:
        raise ValueError(f"data_range={show_attribute(value)} is not valid; give a DataRange or a (min, max) pair of "
                         "finite numbers")
    for name, v in (("min", r.min), ("max", r.max)):
        if not is_real(v) or not math.isfinite(float(v)):
            raise ValueError(f"data_range {name}={show_attribute(v)} is not valid; give a finite number "
                             "(±Infinity and NaN cannot be packed)")
    if float(r.min) > float(r.max):
        raise ValueError(f"data_range min={show_attribute(r.min)} is above max={show_attribute(r.max)}")
    if r.has_nan not in (None, True, False):
        raise ValueError(f"data_range has_nan={show_attribute(r.has_nan)} is not valid; use True, False or None")
    return r


@dataclass(frozen=True)
class Packing:
    """Floats of ``dtype`` stored as ``packed`` integers: ``code = round((x - offset) * scale)``,
    NaN as ``nan_code``; every value in ``range`` decodes within ``max_error`` (0: exactly)."""

    dtype: np.dtype
    packed: np.dtype
    offset: float
    scale: float
    nan_code: int | None
    max_error: float
    range: DataRange

    def _scalar_map(self) -> dict[str, Any] | None:
        if self.nan_code is None:
            return None
        return {"encode": [["NaN", self.nan_code]], "decode": [[self.nan_code, "NaN"]]}

    @property
    def fill_value(self) -> float:
        """The array's fill value: NaN where a code stands for it, else the offset (code 0)."""
        return math.nan if self.nan_code is not None else self.offset

    @property
    def lossless(self) -> bool:
        """Whether every value in the range decodes to itself."""
        return self.max_error == 0

    def codecs(self) -> list[dict[str, Any]]:
        """The zarr v3 filters, as JSON."""
        cast: dict[str, Any] = {"data_type": dtype_name(self.packed)}
        if self.nan_code is not None:
            cast["scalar_map"] = self._scalar_map()
        return [{"name": "scale_offset", "configuration": {"offset": self.offset, "scale": self.scale}},
                {"name": "cast_value", "configuration": cast}]

    def filters(self) -> list[Any]:
        """The same as numcodecs codecs (for zarr v2 ``filters`` and standalone use)."""
        from ..codecs.cast_value import CastValue
        from ..codecs.scale_offset import ScaleOffset

        return [ScaleOffset(offset=self.offset, scale=self.scale, dtype=self.dtype.name),
                CastValue(data_type=self.packed.name, scalar_map=self._scalar_map(),
                          dtype=self.dtype.name)]

    def zarr_filters(self) -> list[Any]:
        """The same as zarr v3 codec objects."""
        from ..zarr3 import CastValue, ScaleOffset

        return [ScaleOffset(offset=self.offset, scale=self.scale),
                CastValue(data_type=self.packed.name, scalar_map=self._scalar_map())]

    def code(self, store: str = "packed.zarr", shape: Sequence[int] = (100,),
             chunks: Sequence[int] | None = None) -> str:
        """Python that creates a zarr v3 array with this packing."""
        cast = f'data_type="{self.packed.name}"'
        if self.nan_code is not None:
            cast += f", scalar_map={self._scalar_map()!r}"
        fill = 'float("nan")' if self.nan_code is not None else repr(self.offset)
        shape = tuple(int(n) for n in shape)
        chunks = tuple(int(c) for c in chunks) if chunks is not None else shape
        return (f"import zarr\nfrom numcodecs_ext.zarr3 import CastValue, ScaleOffset\n\n"
                f"z = zarr.create_array({store!r}, shape={shape!r}, "
                f"chunks={chunks!r}, dtype=\"{self.dtype.name}\",\n"
                f"                      fill_value={fill},\n"
                f"                      filters=[ScaleOffset(offset={self.offset!r}, scale={self.scale!r}),\n"
                f"                               CastValue({cast})])")

    def __str__(self) -> str:
        nan = f", NaN as {self.nan_code}" if self.nan_code is not None else ""
        error = "lossless" if self.lossless else f"max error {self.max_error:.3g}"
        return (f"{self.dtype.name} as {self.packed.name}: offset {self.offset:.10g}, scale "
                f"{self.scale:.10g}{nan}; {error}")
