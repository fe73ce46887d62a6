"""What every numcodecs_ext codec shares: config handling, equality, repr, buffer helpers."""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar

import numpy as np
from numcodecs.abc import Codec

from ..core.chunk_paths import fill_key
from ..core.dtypes import show
from ..core.errors import ConfigurationError, ConfigurationTypeError, refusal, refusing
from ..core.parameters import representable
from ._buffers import as_array, fortran_only, typed

__all__ = [
    "ConfigurationError", "ConfigurationTypeError", "ExtCodec", "as_array", "check_keys", "fortran_only",
    "parse_decoded_dtype", "refusal", "refusing", "representable", "show", "typed",
]


def _call_refusal(codec_id: str, init: Callable[..., None], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> ConfigurationError | None:
    """The refusal for a call that does not fit ``init``'s signature (a missing or unknown
    configuration key, said as for ``from_config``), or None if it fits."""
    signature = inspect.signature(init)
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError:
        pass
    else:
        return None
    params = [p for p in signature.parameters.values() if p.name != "self"]
    valid = [p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    given = set(kwargs) | {p.name for p, _ in zip(params, args)}
    required = tuple(p.name for p in params if p.default is p.empty
                     and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
    try:
        check_keys(codec_id, {k: None for k in given}, valid, required)
    except ConfigurationError as e:
        return e
    return ConfigurationError(codec_id, f"takes its configuration keys ({', '.join(valid)}) by name, "
                              f"not {len(args)} positional arguments")


def check_keys(codec_id: str, config: dict[str, Any], valid: list[str], required: tuple[str, ...] = ()) -> None:
    """Refuse unknown or missing configuration keys with a message that lists the valid ones."""
    if not isinstance(config, Mapping):
        raise ConfigurationError(codec_id, f"the configuration must be a JSON object (a dict) with the "
                                 f"keys {', '.join(valid)}, not {show(config)}")
    unknown = sorted((k for k in config if k not in valid), key=str)
    if unknown:
        raise ConfigurationError(codec_id, f"unknown configuration key(s) {', '.join(map(show, unknown))}; "
                                 f"valid keys are {', '.join(valid)}")
    missing = [k for k in required if k not in config]
    if missing:
        raise ConfigurationError(codec_id, f"missing required configuration key(s) "
                                 f"{', '.join(map(repr, missing))}; valid keys are {', '.join(valid)}")


def parse_decoded_dtype(value: Any, parse: Callable[[Any], np.dtype]) -> tuple[np.dtype, str]:
    """A ``dtype`` config value as (native dtype, byte order ``"="`` or ``"<"``/``">"``).

    ``parse`` validates and returns the native dtype. zarr v3 names carry no byte order; a numpy
    spelling may (``">f8"``): zarr v2 arrays of that dtype need decode() to return it.
    """
    if not isinstance(value, (str, np.dtype, type)):
        raise ValueError(f"dtype={show(value)} is not a data type; give a zarr v3 name (such as "
                         "'float32') or a numpy spelling (such as '<f4')")
    try:
        native = parse(value)
    except (ValueError, TypeError) as e:
        message = e.detail if isinstance(e, ConfigurationError) else str(e)
        if "dtype" not in message:
            message = f"dtype={show(value)} is not valid: {message}"
        raise ValueError(message) from None
    try:
        order = np.dtype(value).byteorder
    except TypeError:  # a zarr v3 name numpy does not know (bfloat16, ...)
        order = "="
    return native, "=" if order in ("=", "|") else order


class ExtCodec(Codec):
    """Base class of numcodecs_ext's numcodecs codecs.

    Subclasses set ``codec_id``, validate everything in ``__init__`` (keyword arguments are the
    config keys) and implement :meth:`_config`, the JSON-ready configuration without ``id`` and
    without keys at their defaults. The base class derives ``get_config``, ``from_config`` (which
    refuses unknown keys by name), equality, hashing and a repr that shows the configuration.
    """

    codec_id: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every constructor refuses an invalid configuration the same way: ValueError, prefixed
        ``codec '<codec_id>': `` (see :func:`refusal`), a missing or unknown key included."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_refuses", False):
            return

        @functools.wraps(init)
        def __init__(self: ExtCodec, *args: Any, **kw: Any) -> None:
            try:
                init(self, *args, **kw)
            except (ValueError, TypeError) as e:
                call = _call_refusal(type(self).codec_id, init, args, kw) if isinstance(e, TypeError) else None
                raise refusal(type(self).codec_id, call or e) from None

        __init__._refuses = True  # type: ignore[attr-defined]
        cls.__init__ = __init__  # type: ignore[method-assign]

    #: Element-wise codecs keep the memory layout of what they are given (zarr v2 arrays with
    #: order="F" hand them Fortran-ordered chunks and expect bytes in that order back); codecs
    #: that work on the shape refuse Fortran-ordered input in encode() instead (see below).
    elementwise: ClassVar[bool] = False
    #: The numcodecs-only ``dtype`` key: native dtype and the byte order decode() returns.
    dtype: np.dtype | None = None
    _dtype_order: str = "="

    #: How the codec treats arrays of other libraries (zarr's GPU mode): "device" (its own
    #: kernels on the array's namespace, see :mod:`numcodecs_ext.core.device`) or "host" (the
    #: chunk is moved to the host explicitly and back). Either way the result is the CPU one.
    device_support: ClassVar[str] = "host"

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` of a non-numpy array on its own device through its array API
        namespace ``xp``, or None: then the caller runs ``encode_chunk`` on a host copy."""
        return None

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None (see :meth:`device_encode`)."""
        return None

    def _dtype_json(self) -> str:
        """The ``dtype`` key as written: the zarr v3 name, or a numpy spelling if not native."""
        from ..core.dtypes import dtype_name

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
                f"codec {show(self.codec_id)}: configured dtype={show(self._dtype_json())} but the array is "
                f"{show(arr.dtype.str)}; decode() returns the configured byte order, so configure "
                f"dtype={show(arr.dtype.str)} for this array (zarr v2 arrays keep their byte order)"
            )
        if not self.elementwise and fortran_only(arr):
            raise ValueError(
                f"codec {show(self.codec_id)}: got a Fortran-ordered array, whose order decoding cannot "
                "restore; use order='C' for a zarr v2 array, or pass np.ascontiguousarray(a)"
            )

    def _encode_input(self, buf: Any) -> np.ndarray:
        """encode()'s input as an array: ndarrays as they are, any other buffer as raw bytes of
        the configured dtype (with its byte order)."""
        arr = as_array(buf)
        if isinstance(buf, np.ndarray):
            return arr
        if self.dtype is None:
            raise ValueError(
                f"codec {show(self.codec_id)}: encoding a raw buffer ({type(buf).__name__}) needs the "
                f"data type: configure dtype=... (e.g. dtype='float64'), or pass an ndarray"
            )
        return typed(arr, self._stored_dtype)

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written: the
        fill value must go through the codec as the spec requires (checked once per value)."""
        key = fill_key(dtype, fill_value, len(shape))
        checked = self.__dict__.setdefault("_fills_checked", set())
        if key not in checked:
            self.resolve_spec(shape, dtype, fill_value, strict=True)  # type: ignore[attr-defined]
            checked.add(key)

    def _conform(self, arr: np.ndarray) -> np.ndarray:
        """An input array checked against the configured ``dtype`` and ``shape`` (a flat array
        of the configured size takes the shape; any other shape would decode wrongly)."""
        if self.dtype is not None and arr.dtype.newbyteorder("=") != self.dtype:
            raise ValueError(
                f"codec {show(self.codec_id)}: configured dtype={show(self._dtype_json())} but the array "
                f"is {show(arr.dtype.str)}"
            )
        shape = getattr(self, "shape", None)
        if shape is not None and arr.shape != shape:
            if arr.ndim > 1 or arr.size != math.prod(shape):
                raise ValueError(
                    f"codec {show(self.codec_id)}: configured shape={list(shape)} but the array has "
                    f"shape {list(arr.shape)}; decoding would give the wrong shape"
                )
            arr = arr.reshape(shape)
        return arr

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
    def required_keys(cls) -> tuple[str, ...]:
        """The configuration keys without a default."""
        params = inspect.signature(cls.__init__).parameters
        return tuple(p.name for p in params.values()
                     if p.name != "self" and p.default is p.empty and p.kind is not p.VAR_KEYWORD)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ExtCodec:
        """The codec of a numcodecs configuration; refusals are prefixed with the id it gives."""
        if not isinstance(config, Mapping):
            raise ConfigurationError(cls.codec_id, f"the configuration must be a dict with 'id' and the "
                                     f"keys {', '.join(cls.config_keys())}, not {show(config)}")
        config = dict(config)
        codec_id = config.pop("id", cls.codec_id)
        if codec_id not in (cls.codec_id, *getattr(cls, "codec_aliases", ())):
            valid_ids = (cls.codec_id, *getattr(cls, "codec_aliases", ()))
            raise ConfigurationError(cls.codec_id, f"config id {show(codec_id)} does not match; valid "
                                     f"ids are {', '.join(map(repr, valid_ids))}")
        try:
            check_keys(cls.codec_id, config, cls.config_keys(), required=cls.required_keys())
            return cls(**config)
        except ValueError as e:
            raise refusal(codec_id, e) from None

    def _require_for_decode(self, arr: np.ndarray, keys: tuple[str, ...], why: str,
                            alternative: str = "") -> None:
        """encode() refuses when the configuration lacks what decode() needs to read the bytes
        back (zarr v2 stores and every standalone decode of bytes have only the configuration):
        better no data than data that cannot be read. The message gives the values to add, and
        ``alternative`` (``", or ..."``) another way out."""
        missing = [k for k in keys if getattr(self, k, None) is None]
        if not missing:
            return
        values = {"shape": list(arr.shape), "dtype": _dtype_json_of(arr.dtype)}
        added = ", ".join(f"{k}={show(values[k])}" for k in missing)
        raise ConfigurationError(
            self.codec_id, f"cannot encode without {' and '.join(missing)}: {why}; add {added}{alternative}"
        )

    def _chunk_work_of(self, config: tuple[Any, ...], make: Callable[..., Any]) -> Any:
        """The core's chunk work of this configuration, ``make(*config)``: kept while the
        configuration stays ``config`` (it keeps what it works out per chunk layout)."""
        kept = self.__dict__.get("_chunk_work")
        if kept is None or kept[0] != config:
            kept = self.__dict__["_chunk_work"] = (config, make(*config))
        return kept[1]

    def _chunk_path(self, key: Hashable) -> Any:
        """The per-chunk function :meth:`_keep_chunk_path` kept for ``key``, or None (codecs work
        out such functions once per chunk layout: zarr passes chunk after chunk of one)."""
        return self.__dict__.get("_chunk_paths", _NO_PATHS).get(key)

    def _keep_chunk_path(self, key: Hashable, path: Any) -> Any:
        """Keep ``path`` for ``key`` (at most 64: the oldest all go) and return it."""
        paths = self.__dict__.setdefault("_chunk_paths", {})
        if len(paths) >= 64:
            paths.clear()
        paths[key] = path
        return path

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_chunk_paths", None)  # (closures, which do not pickle: rebuilt on use)
        return state

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), json.dumps(self.get_config(), sort_keys=True)))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={show(v)}" for k, v in self._config().items())
        return f"{type(self).__name__}({params})"


_NO_PATHS: dict[Any, Any] = {}  # (an empty cache, never written)


def _dtype_json_of(dtype: np.dtype) -> str:
    """How a ``dtype`` configuration key spells an array's dtype."""
    from ..core.dtypes import dtype_name

    if dtype.kind in "mM" or not dtype.isnative:
        return dtype.str
    try:
        return dtype_name(dtype)
    except ValueError:
        return dtype.str
