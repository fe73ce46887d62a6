"""zarr v3 data types for the ml_dtypes types.

``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn``, ``int2``, ``int4``, ``uint2``,
``uint4``.

These are registered zarr v3 extension data types (zarr-extensions ``data-types/<name>``) that
zarr-python does not implement. Each class here is a zarr ``ZDType`` wrapping the matching
:mod:`ml_dtypes` numpy dtype, so zarr can create, read and write arrays of them and resolve them as
the output of a codec such as ``cast_value``.

Names and fill-value JSON come from :mod:`numcodecs_ext.core.dtypes` and
:mod:`numcodecs_ext.core.scalar_json`: the v3 name is the ml_dtypes name,
``"NaN"`` is the type's canonical NaN (e.g. ``0x7fc0`` for bfloat16), other NaN payloads are written
as hex, ``"Infinity"`` exists only for types that have infinities, and float6/float4 have no NaN.

Byte order: ``bfloat16`` carries an endianness like zarr's ``float16``, so the ``bytes`` codec's
``endian`` applies to it; the 1-byte types have none (the ``bytes`` codec drops ``endian``).

zarr format 2 has no representation of these types that other readers agree on, so they are refused
there with an error naming the type.

:func:`register_zarr_dtypes` adds the classes to zarr's data type registry (skipping any name zarr
already implements). The package's ``zarr.data_type`` entry points do the same without importing
numcodecs_ext, on zarr versions that load them.

Examples
--------
>>> import numpy as np, zarr, ml_dtypes
>>> from numcodecs_ext.zarr3.dtypes import BFloat16, register_zarr_dtypes
>>> _ = register_zarr_dtypes()
>>> z = zarr.create_array(zarr.storage.MemoryStore(), shape=(3,), dtype="bfloat16",
...                       fill_value="NaN")
>>> z.metadata.data_type, z.metadata.to_dict()["fill_value"]
(BFloat16(endianness='little'), 'NaN')
>>> z[:2] = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
>>> z[:]
array([1.5, -2, nan], dtype=bfloat16)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from zarr.dtype import ZDType

# zarr names that are not public API, and why we still use them:
# - HasEndianness, HasItemSize (zarr.core.dtype.common): the mixins zarr's own numeric data types
#   are built from (the endianness field, item_size); a ZDType must provide both, and zarr has
#   no public module for them.
# - ZDType's class attribute _zarr_v3_name (beside dtype_cls): what a ZDType subclass
#   declares and data_type_registry reads (zarr's documented way of adding a data type).
# - data_type_registry.contents (register_zarr_dtypes): replaced copy-on-write, see there.
from zarr.core.dtype.common import HasEndianness, HasItemSize

from ..core.dtypes import dtype_kind, dtype_name, parse_dtype
from ..core.scalar_json import number_to_json, scalar_from_json, scalar_to_json

try:  # zarr >= 3.2 (importing it from zarr.core.dtype.common is deprecated there)
    from zarr.errors import DataTypeValidationError
except ImportError:  # pragma: no cover - zarr 3.1 (where zarr.dtype has it, not yet deprecated)
    from zarr.dtype import DataTypeValidationError

__all__ = [
    "BFloat16",
    "Float4E2M1FN",
    "Float6E2M3FN",
    "Float6E3M2FN",
    "Float8E3M4",
    "Float8E4M3",
    "Float8E4M3B11FNUZ",
    "Float8E4M3FNUZ",
    "Float8E5M2",
    "Float8E5M2FNUZ",
    "Float8E8M0FNU",
    "Int2",
    "Int4",
    "UInt2",
    "UInt4",
    "ML_DTYPES_CLASSES",
    "register_zarr_dtypes",
]

JSON = Any


class _Unavailable:
    """Stands in for the numpy dtype class when ml_dtypes lacks the type: no dtype is one."""


class _MLDType(ZDType[Any, Any], HasItemSize):
    """Shared behaviour of the ml_dtypes wrappers. Subclasses set ``_ml_name`` only.

    ``dtype_cls`` and ``_zarr_v3_name`` are filled in when the subclass is defined: the numpy dtype
    from :func:`numcodecs_ext.core.dtypes.parse_dtype` and the name from
    :func:`numcodecs_ext.core.dtypes.dtype_name`. Without ml_dtypes (or with an ml_dtypes too old for the
    type) the class still exists, so zarr's entry points can load it, but it matches no numpy dtype
    and opening an array of the type says which package is missing.
    """

    _ml_name: ClassVar[str]
    _native: ClassVar[np.dtype | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ml_name = cls.__dict__.get("_ml_name")
        if ml_name is None:  # an intermediate base class
            return
        try:
            native: np.dtype | None = parse_dtype(ml_name)
        except ValueError:
            native = None
        cls._native = native
        cls.dtype_cls = _Unavailable if native is None else type(native)  # type: ignore[assignment]
        cls._zarr_v3_name = ml_name if native is None else dtype_name(native)

    # --- the data type itself ------------------------------------------------------------
    @classmethod
    def _require_native(cls) -> np.dtype:
        if cls._native is None:
            raise ValueError(
                f"zarr data type {cls._zarr_v3_name!r} needs the ml_dtypes package (a version that "
                f"has {cls._ml_name}); install it with `pip install ml_dtypes`"
            )
        return cls._native

    @classmethod
    def _check_native_dtype(cls, dtype: Any) -> bool:
        return cls._native is not None and type(dtype) is cls.dtype_cls

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> Any:
        """The zarr data type for a numpy dtype of this type, else ``DataTypeValidationError``."""
        if cls._check_native_dtype(dtype):
            return cls(**cls._native_fields(dtype))
        raise DataTypeValidationError(
            f"Invalid data type: {dtype!r}. Expected the ml_dtypes dtype {cls._ml_name}"
        )

    @classmethod
    def _native_fields(cls, dtype: np.dtype) -> dict[str, Any]:
        return {}

    def to_native_dtype(self) -> np.dtype:
        """The ml_dtypes numpy dtype (native byte order, or this data type's endianness)."""
        return self._require_native()

    @property
    def item_size(self) -> int:
        """Bytes per element in memory and in the ``bytes`` codec's output."""
        return self._require_native().itemsize

    # --- data type JSON ------------------------------------------------------------------
    @classmethod
    def _check_json_v3(cls, data: Any) -> bool:
        """The name, or ``{"name": name}`` with an optional empty configuration (spec schema)."""
        if isinstance(data, str):
            return data == cls._zarr_v3_name
        return (
            isinstance(data, Mapping)
            and data.get("name") == cls._zarr_v3_name
            and set(data) <= {"name", "configuration"}
            and data.get("configuration", {}) == {}
        )

    @classmethod
    def _from_json_v3(cls, data: Any) -> Any:
        if not cls._check_json_v3(data):
            raise DataTypeValidationError(
                f"Invalid JSON representation of {cls.__name__}. Got {data!r}, "
                f"expected {cls._zarr_v3_name!r}."
            )
        cls._require_native()  # a clear error, not "no data type found", without ml_dtypes
        return cls()

    @classmethod
    def _from_json_v2(cls, data: Any) -> Any:
        # No zarr v2 spelling is ours: ml_dtypes reports e.g. "<V2", which is zarr's raw bytes type.
        raise DataTypeValidationError(
            f"{cls.__name__} has no zarr v2 representation, so it does not match {data!r}"
        )

    def _refuse_v2(self) -> ValueError:
        return ValueError(
            f"zarr data type {self._zarr_v3_name!r} has no zarr format 2 representation that other "
            "readers agree on; create the array with zarr_format=3"
        )

    def to_json(self, zarr_format: Literal[2, 3]) -> Any:
        """``"<name>"`` for zarr format 3; format 2 raises ``ValueError``."""
        if zarr_format == 3:
            return self._zarr_v3_name
        if zarr_format == 2:
            raise self._refuse_v2()
        raise ValueError(f"zarr_format must be 2 or 3, got {zarr_format!r}")  # pragma: no cover

    # --- scalars ---------------------------------------------------------------------------
    def _check_scalar(self, data: object) -> bool:
        if isinstance(data, (bool, np.bool_)):
            return False
        if isinstance(data, (str, int, float, np.number)):
            return True
        if isinstance(data, (np.generic, np.ndarray)):
            arr = np.asarray(data)
            ours = type(arr.dtype) is self.dtype_cls
            return arr.shape == () and (ours or _is_numeric(arr.dtype))
        return False

    def cast_scalar(self, data: object) -> Any:
        """A scalar of exactly this data type.

        A scalar already of this type is returned unchanged (NaN payloads are kept). Strings are
        read as fill-value JSON (``"NaN"``, ``"Infinity"``, ``"0x7fc1"``; ``"1.5"`` is not JSON and
        is refused). Numbers are rounded once to the nearest value (through
        :func:`numcodecs_ext.core.scalar_json.scalar_from_json`). ``TypeError`` for other objects and
        ``ValueError`` for values the type cannot hold (out of range, or NaN/infinity where the type
        has none).
        """
        if not self._check_scalar(data):
            raise TypeError(
                f"Cannot convert object {data!r} with type {type(data)} to a scalar of the zarr "
                f"data type {self._zarr_v3_name!r}: expected a number, a {self._zarr_v3_name} "
                "scalar or fill-value JSON such as 'NaN' or '0x7fc0'"
            )
        native = self._require_native()  # scalars are always in native byte order
        if isinstance(data, str):
            return self._from_json(data)
        arr = np.asarray(data)
        if type(arr.dtype) is self.dtype_cls:
            return arr.astype(native)[()]
        if dtype_kind(native) in ("int", "uint"):
            value = _as_exact_int(data, self._zarr_v3_name)
            return scalar_from_json(value, native, what="fill_value")
        return self._from_json(number_to_json(data, what="fill_value"))

    def default_scalar(self) -> Any:
        """The all-zero bit pattern: 0 for every type but float8_e8m0fnu, which has no zero
        (there it is 2**-127, its smallest value)."""
        return np.zeros((), dtype=self._require_native())[()]

    def from_json_scalar(self, data: JSON, *, zarr_format: Literal[2, 3]) -> Any:
        """Read fill-value JSON (zarr format 3)."""
        if zarr_format == 2:
            raise self._refuse_v2()
        return self._from_json(data)

    def to_json_scalar(self, data: object, *, zarr_format: Literal[2, 3]) -> JSON:
        """Fill-value JSON for a value (zarr format 3)."""
        if zarr_format == 2:
            raise self._refuse_v2()
        return scalar_to_json(self.cast_scalar(data), self._require_native())

    def _from_json(self, data: JSON) -> Any:
        native = self._require_native()
        return scalar_from_json(data, native, what="fill_value")


def _is_numeric(dtype: np.dtype) -> bool:
    try:
        return dtype_kind(dtype) in ("int", "uint", "float")
    except ValueError:
        return False


def _as_exact_int(data: Any, name: str) -> int:
    """An integer fill value: ints as they are, integral floats; ``ValueError`` otherwise."""
    if isinstance(data, (int, np.integer)):
        return int(data)
    value = float(data)  # type: ignore[arg-type]
    if not value.is_integer():
        raise ValueError(f"fill_value: {data!r} is not an integer, so not a valid {name} value")
    return int(value)


class _MLEndianDType(_MLDType, HasEndianness):
    """A multi-byte ml_dtypes type: has an endianness, like zarr's ``float16``."""

    @classmethod
    def _native_fields(cls, dtype: np.dtype) -> dict[str, Any]:
        order = dtype.byteorder
        if order in ("=", "|"):
            return {"endianness": sys.byteorder}
        return {"endianness": "little" if order == "<" else "big"}

    def to_native_dtype(self) -> np.dtype:
        native = self._require_native()
        return native.newbyteorder("<" if self.endianness == "little" else ">")


@dataclass(frozen=True, kw_only=True)
class BFloat16(_MLEndianDType):
    """zarr v3 ``bfloat16``: 1 sign, 8 exponent, 7 mantissa bits; "NaN" is ``0x7fc0``.

    >>> BFloat16().to_json(zarr_format=3)
    'bfloat16'
    """

    _ml_name = "bfloat16"


@dataclass(frozen=True, kw_only=True)
class Float8E3M4(_MLDType):
    """zarr v3 ``float8_e3m4`` (IEEE-like, with infinities); "NaN" is ``0x78``."""

    _ml_name = "float8_e3m4"


@dataclass(frozen=True, kw_only=True)
class Float8E4M3(_MLDType):
    """zarr v3 ``float8_e4m3`` (IEEE-like, with infinities); "NaN" is ``0x7c``."""

    _ml_name = "float8_e4m3"


@dataclass(frozen=True, kw_only=True)
class Float8E4M3B11FNUZ(_MLDType):
    """zarr v3 ``float8_e4m3b11fnuz`` (bias 11, no infinities, unsigned zero); "NaN" is ``0x80``."""

    _ml_name = "float8_e4m3b11fnuz"


@dataclass(frozen=True, kw_only=True)
class Float8E4M3FNUZ(_MLDType):
    """zarr v3 ``float8_e4m3fnuz`` (no infinities, unsigned zero); "NaN" is ``0x80``."""

    _ml_name = "float8_e4m3fnuz"


@dataclass(frozen=True, kw_only=True)
class Float8E5M2(_MLDType):
    """zarr v3 ``float8_e5m2`` (IEEE-like, with infinities); "NaN" is ``0x7e``."""

    _ml_name = "float8_e5m2"


@dataclass(frozen=True, kw_only=True)
class Float8E5M2FNUZ(_MLDType):
    """zarr v3 ``float8_e5m2fnuz`` (no infinities, unsigned zero); "NaN" is ``0x80``."""

    _ml_name = "float8_e5m2fnuz"


@dataclass(frozen=True, kw_only=True)
class Float8E8M0FNU(_MLDType):
    """zarr v3 ``float8_e8m0fnu`` (powers of two only: no sign, zero or infinities); "NaN" is
    ``0xff``."""

    _ml_name = "float8_e8m0fnu"


@dataclass(frozen=True, kw_only=True)
class Float6E2M3FN(_MLDType):
    """zarr v3 ``float6_e2m3fn`` (no infinities, no NaN), one value per byte."""

    _ml_name = "float6_e2m3fn"


@dataclass(frozen=True, kw_only=True)
class Float6E3M2FN(_MLDType):
    """zarr v3 ``float6_e3m2fn`` (no infinities, no NaN), one value per byte."""

    _ml_name = "float6_e3m2fn"


@dataclass(frozen=True, kw_only=True)
class Float4E2M1FN(_MLDType):
    """zarr v3 ``float4_e2m1fn`` (no infinities, no NaN), one value per byte."""

    _ml_name = "float4_e2m1fn"


@dataclass(frozen=True, kw_only=True)
class Int2(_MLDType):
    """zarr v3 ``int2``: integers in [-2, 1], one per byte."""

    _ml_name = "int2"


@dataclass(frozen=True, kw_only=True)
class Int4(_MLDType):
    """zarr v3 ``int4``: integers in [-8, 7], one per byte."""

    _ml_name = "int4"


@dataclass(frozen=True, kw_only=True)
class UInt2(_MLDType):
    """zarr v3 ``uint2``: integers in [0, 3], one per byte."""

    _ml_name = "uint2"


@dataclass(frozen=True, kw_only=True)
class UInt4(_MLDType):
    """zarr v3 ``uint4``: integers in [0, 15], one per byte."""

    _ml_name = "uint4"


#: Every class in this module, in the order of the zarr-extensions data type list.
ML_DTYPES_CLASSES: tuple[type[_MLDType], ...] = (
    BFloat16,
    Float8E3M4,
    Float8E4M3,
    Float8E4M3B11FNUZ,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float8E8M0FNU,
    Float6E2M3FN,
    Float6E3M2FN,
    Float4E2M1FN,
    Int2,
    Int4,
    UInt2,
    UInt4,
)


def register_zarr_dtypes() -> list[str]:
    """Add these data types to zarr's data type registry.

    Idempotent, and safe while other code iterates the registry (the new names go into a copy).
    A name zarr already has under another class (a future zarr built-in, or another package) is
    left alone, so that implementation wins. Types that the installed ml_dtypes lacks are
    registered too: opening an array of one then says to install ml_dtypes.

    Returns
    -------
    list of str
        The names this call added (empty when everything was already registered).

    Examples
    --------
    >>> from numcodecs_ext.zarr3.dtypes import register_zarr_dtypes
    >>> _ = register_zarr_dtypes()
    >>> register_zarr_dtypes()
    []
    """
    from zarr.dtype import data_type_registry

    current = data_type_registry.contents
    missing = {cls._zarr_v3_name: cls for cls in ML_DTYPES_CLASSES
               if cls._zarr_v3_name not in current}
    if missing:
        # Copy on write. Code that iterates the registry while resolving data types (zarr's own
        # dtype tests do) triggers zarr's lazy loading of data-type plugins, us among them, in
        # the middle of its loop; adding our 15 names to the mapping it iterates would end that
        # loop with "dictionary changed size during iteration". The registry is a frozen
        # dataclass with no public way to add names without that, so the new mapping replaces
        # the old one, which stays as it was for whoever iterates it. (zarr's own lazy loading
        # then finds every name of ours registered and changes nothing.)
        try:
            object.__setattr__(data_type_registry, "contents", {**current, **missing})
        except (AttributeError, TypeError):  # pragma: no cover - a registry without the field
            for name, cls in missing.items():
                data_type_registry.register(name, cls)
    return list(missing)
