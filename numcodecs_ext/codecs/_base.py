"""What every numcodecs_ext codec shares: config handling, equality, repr, buffer helpers."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray_like

__all__ = ["ExtCodec", "as_array", "check_keys", "parse_decoded_dtype", "typed"]


def check_keys(codec_id: str, config: dict[str, Any], valid: list[str], required: tuple[str, ...] = ()) -> None:
    """Refuse unknown or missing configuration keys with a message that lists the valid ones."""
    unknown = sorted(set(config) - set(valid))
    if unknown:
        raise ValueError(
            f"codec {codec_id!r}: unknown configuration key(s) {', '.join(map(repr, unknown))}; "
            f"valid keys are {', '.join(valid)}"
        )
    missing = [k for k in required if k not in config]
    if missing:
        raise ValueError(f"codec {codec_id!r}: missing required configuration key(s) {', '.join(map(repr, missing))}")


def as_array(buf: Any) -> np.ndarray:
    """View any buffer (bytes, bytearray, array.array, ndarray) as an ndarray without copying.

    ndarrays keep their shape and dtype; other buffers become 1-D ``uint8`` (or their item type).
    """
    if isinstance(buf, np.ndarray):
        return buf
    return np.asarray(ensure_contiguous_ndarray_like(buf))


def parse_decoded_dtype(value: Any, parse: Callable[[Any], np.dtype]) -> tuple[np.dtype, str]:
    """A ``dtype`` config value as (native dtype, byte order ``"="`` or ``"<"``/``">"``).

    ``parse`` validates and returns the native dtype. zarr v3 names carry no byte order; a numpy
    spelling may (``">f8"``): zarr v2 arrays of that dtype need decode() to return it.
    """
    native = parse(value)
    try:
        order = np.dtype(value).byteorder
    except TypeError:  # a zarr v3 name numpy does not know (bfloat16, ...)
        order = "="
    return native, "=" if order in ("=", "|") else order


def typed(arr: np.ndarray, dtype: np.dtype, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``arr`` as ``dtype`` (and ``shape``).

    An array of that dtype in any byte order is kept as it is (its values are right); anything
    else is taken as raw bytes and reinterpreted.
    """
    if arr.dtype.newbyteorder("=") != dtype.newbyteorder("="):
        flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        if flat.nbytes % dtype.itemsize:
            raise ValueError(f"a buffer of {flat.nbytes} bytes does not hold whole {dtype} items")
        arr = flat.view(dtype)
    if shape is not None and arr.shape != tuple(shape):
        if arr.size != math.prod(shape):
            raise ValueError(f"{arr.size} items of {dtype} do not fill an array of shape {list(shape)}")
        arr = arr.reshape(shape)
    return arr


def fortran_only(arr: np.ndarray) -> bool:
    """An array laid out in Fortran order and not also in C order (ndim >= 2)."""
    return arr.ndim >= 2 and arr.flags.f_contiguous and not arr.flags.c_contiguous


class ExtCodec(Codec):
    """Base class of numcodecs_ext's numcodecs codecs.

    Subclasses set ``codec_id``, validate everything in ``__init__`` (keyword arguments are the
    config keys) and implement :meth:`_config`, the JSON-ready configuration without ``id`` and
    without keys at their defaults. The base class derives ``get_config``, ``from_config`` (which
    refuses unknown keys by name), equality, hashing and a repr that shows the configuration.
    """

    codec_id: ClassVar[str]
    #: Element-wise codecs keep the memory layout of what they are given (zarr v2 arrays with
    #: order="F" hand them Fortran-ordered chunks and expect bytes in that order back); codecs
    #: that work on the shape refuse Fortran-ordered input in encode() instead (see below).
    elementwise: ClassVar[bool] = False
    #: The numcodecs-only ``dtype`` key: native dtype and the byte order decode() returns.
    dtype: np.dtype | None = None
    _dtype_order: str = "="

    def _dtype_json(self) -> str:
        """The ``dtype`` key as written: the zarr v3 name, or a numpy spelling if not native."""
        from ..dtypes import dtype_name

        assert self.dtype is not None
        if self._dtype_order == "=":
            return self.dtype.str if self.dtype.kind in "mM" else dtype_name(self.dtype)
        return self.dtype.newbyteorder(self._dtype_order).str

    @property
    def _stored_dtype(self) -> np.dtype | None:
        """The configured dtype with its byte order: how raw bytes given to encode() are read."""
        return None if self.dtype is None else self.dtype.newbyteorder(self._dtype_order)

    def _check_encode_input(self, arr: np.ndarray) -> None:
        """Refuse input that decode() could not give back as zarr v2 expects it."""
        if (
            self.dtype is not None
            and arr.dtype.itemsize > 1
            and arr.dtype.newbyteorder("=") == self.dtype
            and arr.dtype.isnative != (self._dtype_order == "=")
        ):
            raise ValueError(
                f"codec {self.codec_id!r}: configured dtype={self._dtype_json()!r} but the array is "
                f"{arr.dtype.str!r}; decode() returns the configured byte order, so configure "
                f"dtype={arr.dtype.str!r} for this array (zarr v2 arrays keep their byte order)"
            )
        if not self.elementwise and fortran_only(arr):
            raise ValueError(
                f"codec {self.codec_id!r}: got a Fortran-ordered array; this codec works on the "
                "array's shape, and decoding cannot know that the bytes should come back in "
                "Fortran order (as zarr v2 arrays with order='F' need). Use order='C' for the "
                "zarr v2 array, or pass np.ascontiguousarray(a) when calling encode() directly"
            )

    def _decoded(self, result: np.ndarray) -> np.ndarray:
        """decode()'s result in the configured byte order."""
        if self._dtype_order == "=" or result.dtype.newbyteorder("=") != self.dtype:
            return result
        return result.astype(result.dtype.newbyteorder(self._dtype_order))

    def v3_configuration(self) -> dict[str, Any]:
        """The spec configuration (only non-default keys, no numcodecs-only keys)."""
        raise NotImplementedError

    def _config(self) -> dict[str, Any]:
        """The numcodecs configuration: the spec's, plus ``shape``/``dtype`` where configured."""
        config = self.v3_configuration()
        if getattr(self, "shape", None) is not None:
            config["shape"] = list(self.shape)  # type: ignore[attr-defined]
        if self.dtype is not None:
            config["dtype"] = self._dtype_json()
        return config

    def get_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **self._config()}

    @classmethod
    def config_keys(cls) -> list[str]:
        """The configuration keys the constructor accepts."""
        params = inspect.signature(cls.__init__).parameters
        return [p.name for p in params.values() if p.name != "self" and p.kind is not p.VAR_KEYWORD]

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ExtCodec:
        config = dict(config)
        codec_id = config.pop("id", cls.codec_id)
        if codec_id not in (cls.codec_id, *getattr(cls, "codec_aliases", ())):
            raise ValueError(f"config id {codec_id!r} does not match codec {cls.codec_id!r}")
        check_keys(cls.codec_id, config, cls.config_keys())
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), json.dumps(self.get_config(), sort_keys=True)))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._config().items())
        return f"{type(self).__name__}({params})"
