"""Generic zarr v3 codec classes over numcodecs_ext's numcodecs codecs.

Each codec of the collection appears in zarr v3 twice:

* under its spec name (``transpose``, ``scale_offset``, ``zfp`` …), with the spec's configuration;
* under zarr's numcodecs adapter name ``numcodecs.<id>``, with the numcodecs configuration (the
  same JSON shape that zarr's own adapter writes), so arrays written through the adapter by other
  tools read here and vice versa.

Unlike zarr's adapter, these classes carry the chunk spec through the codec: the dtype, shape and
fill value that the next codec sees come from the codec's ``resolve_spec``. Chunks of 1 MiB and
more are encoded on the thread pool zarr's own codecs use (``asyncio.to_thread``), so zarr
encodes chunks in parallel wherever the core releases the GIL, with no threads beside zarr's.

Fusion: zarr runs the codecs of a chain one after the other, each over the whole batch, so the
full-size intermediate between two array -> array codecs is written and read back from main
memory. When a codec that can continue another one's work (``fuses_after``, e.g. cast_value
after scale_offset) directly follows it in an array's chain, the two are linked while zarr
evolves the chain (the spec one resolves is the very object the other is evolved with). The
earlier step then hands over a :class:`_Deferred` buffer instead of computing, and the later
codec runs both steps block by block (:mod:`numcodecs_ext.core.fused`). Anything else that
touches a deferred buffer gets the computed array, so a link can only ever cost speed, never
change a result. The async methods (zarr's default pipeline) and the sync ones (zarr 3.4's
``FusedCodecPipeline``) defer and fuse alike.

Arrays of other libraries (zarr's GPU mode, ``zarr.config.enable_gpu()``, hands codecs cupy
arrays): a codec whose numcodecs class has device kernels (``device_support = "device"``)
runs them on the array's own namespace (:mod:`numcodecs_ext.core.device`); where it has none,
or a chunk needs the CPU path's judgement, the chunk goes to the host explicitly (the buffer's
``as_numpy_array``) and the result back through the prototype's ``from_numpy_array`` /
``from_bytes`` (zarr's GPU buffers copy it to the device: handing them a numpy array directly
would warn of a slow path for every chunk). Nothing converts implicitly, and
numpy chunks never take this branch.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import zarr
from packaging.version import Version
from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import cpu as _cpu
from zarr.core.dtype import get_data_type_from_native_dtype

from ..codecs._base import ExtCodec, refusal, show
from ..core import device

__all__ = ["AdapterMixin", "ArrayArrayV3", "ArrayBytesV3", "zarr_dtype"]

ADAPTER_PREFIX = "numcodecs."
#: Chunks smaller than this are processed inline: a thread hop costs more than it can save.
_INLINE_BYTES = 1 << 20


@functools.lru_cache(maxsize=256)
def zarr_dtype(dtype: np.dtype) -> Any:
    """zarr's ZDType for a numpy dtype (cached: zarr resolves chunk specs for every chunk, and
    its registry search tries every registered data type)."""
    return get_data_type_from_native_dtype(dtype)


async def _in_worker(fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` on the thread pool zarr's own codecs use (``asyncio.to_thread``: the
    default executor of zarr's event loop, sized by ``threading.max_workers`` when that is set).

    One pool for all codec work: ours never adds threads beside zarr's, follows changes of
    ``threading.max_workers`` as zarr does, and a forked child gets zarr's fresh pool.
    """
    return await asyncio.to_thread(fn, *args)


#: zarr < 3.2 evolves each codec with the array's spec, not the one the codec before returns
_EVOLVES_WITH_ARRAY_SPEC = Version(zarr.__version__) < Version("3.2")
#: (array spec, what our last codec evolved with it resolved to) in this thread, zarr < 3.2
_creation = threading.local()


class _ResolvedSpec(ArraySpec):
    """The chunk spec one of our codecs resolved, naming that codec (``resolved_by``, set on the
    instance only, so a spec zarr derives from it with ``dataclasses.replace`` names nobody).

    zarr hands this very object to the next codec of the chain (to evolve it, or to resolve its
    own spec), which is how that codec finds the one right before it: an explicit link that
    holds in any thread and cannot point into another array's chain.
    """

    resolved_by: Any = None


class _Deferred(_cpu.NDBuffer):
    """An array -> array codec's result, computed only when something first uses it.

    ``producer`` made it from ``source``; the next codec may take ``source`` instead and do both
    steps in one pass. Every other use goes through ``_data`` (the attribute zarr's NDBuffer
    keeps its array in), which computes the result once. NDBuffer methods build new buffers as
    ``self.__class__(array)``: with an array alone this is an ordinary, computed buffer.
    """

    def __init__(self, array: Any = None, *, producer: Any = None,
                 source: np.ndarray | None = None, compute: Any = None) -> None:
        # no super().__init__(): it only assigns _data
        self.producer, self.source, self._compute, self._value = producer, source, compute, array

    @property  # type: ignore[override]
    def _data(self) -> Any:
        if self._value is None:
            self._value = self._compute()
            self._compute = self.source = None
        return self._value

    @_data.setter
    def _data(self, value: Any) -> None:
        self._value = value

    def take(self, producer: Any) -> np.ndarray | None:
        """The source, if ``producer`` made this buffer and it has not been computed."""
        return self.source if self._value is None and self.producer is producer else None


def _device_array(buf: Any) -> Any:
    """The buffer's array if it is not a numpy array (zarr's GPU mode: cupy), else None."""
    if isinstance(buf, _Deferred):
        return None
    arr = buf.as_ndarray_like()
    return None if isinstance(arr, np.ndarray) else arr


def _on_cpu(spec: ArraySpec) -> bool:
    return spec.prototype.nd_buffer is _cpu.NDBuffer


def _native(spec: ArraySpec) -> np.dtype:
    dtype = spec.dtype.to_native_dtype()
    return dtype if dtype.byteorder in "=|" else dtype.newbyteorder("=")


class _V3Common:
    """Shared behaviour; concrete classes are frozen dataclasses with fields ``codec`` and ``name``."""

    numcodecs_class: ClassVar[type[ExtCodec]]
    #: Names this class reads; the first is the one it writes unless the user chose another.
    spec_names: ClassVar[tuple[str, ...]]
    is_fixed_size: ClassVar[bool] = True

    codec: ExtCodec
    name: str

    def __init__(self, *, codec: ExtCodec | None = None, name: str | None = None, **configuration: Any) -> None:
        """Refusals are ValueErrors prefixed ``codec '<name>': `` with the name this codec is
        written with (``zfp``, ``numcodecs.zfp`` ...), whichever layer found the fault."""
        shown = self._default_name() if name is None else name
        if not isinstance(shown, str) or shown not in self._names():
            raise ValueError(f"codec {self._default_name()!r}: name={show(shown)} is not valid; use "
                             f"{' or '.join(map(repr, self._names()))}")
        if codec is None:
            try:
                codec = self._codec_from_configuration(configuration)
            except (ValueError, TypeError) as e:
                raise refusal(shown, e) from None
        elif configuration:
            raise ValueError(f"codec {shown!r}: pass either codec= or the configuration keys "
                             f"({', '.join(map(repr, configuration))}), not both")
        if not isinstance(codec, self.numcodecs_class):
            raise ValueError(f"codec {shown!r}: codec= must be a {self.numcodecs_class.__name__}, "
                             f"not a {type(codec).__name__}")
        object.__setattr__(self, "codec", codec)
        object.__setattr__(self, "name", shown)

    #: per-instance caches of work done for earlier chunks: rebuilt after unpickling (they may
    #: hold closures, which do not pickle)
    _CACHES: ClassVar[tuple[str, ...]] = ("_chunk_coders", "_fused_cache", "_fill_checked")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._CACHES:
            state.pop(name, None)
        return state

    # --- naming and JSON ------------------------------------------------------------------
    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return cls.spec_names

    @classmethod
    def _default_name(cls) -> str:
        return cls._names()[0]

    @classmethod
    def _codec_from_configuration(cls, configuration: dict[str, Any]) -> ExtCodec:
        return cls.numcodecs_class.from_v3_configuration(configuration)  # type: ignore[attr-defined,no-any-return]

    def _configuration(self) -> dict[str, Any]:
        return self.codec.v3_configuration()  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """The codec of a zarr.json codec entry; refusals as for the constructor."""
        if not isinstance(data, dict):
            raise ValueError(f"codec {cls._default_name()!r}: a codec entry must be a JSON object "
                             f"with 'name' and 'configuration', not {show(data)}")
        name = data.get("name")
        if not isinstance(name, str) or name not in cls._names():
            raise ValueError(f"codec {show(name) if not isinstance(name, str) else repr(name)}: expected "
                             f"a codec named {' or '.join(map(repr, cls._names()))}")
        unknown = sorted(set(data) - {"name", "configuration"}, key=str)
        if unknown:
            raise ValueError(f"codec {name!r}: unexpected member(s) {', '.join(map(show, unknown))} next "
                             "to 'name' and 'configuration'")
        configuration = data.get("configuration", {})
        if not isinstance(configuration, dict):
            raise ValueError(f"codec {name!r}: configuration must be a JSON object, not "
                             f"{show(configuration)}")
        try:
            codec = cls._codec_from_configuration(configuration)
        except (ValueError, TypeError) as e:
            raise refusal(name, e) from None
        return cls(codec=codec, name=name)

    def to_dict(self) -> dict[str, Any]:
        configuration = self._configuration()
        if not configuration:
            return {"name": self.name}
        return {"name": self.name, "configuration": configuration}

    @property
    def codec_name(self) -> str:
        """The name this codec is written with in ``zarr.json``."""
        return self.name

    def __repr__(self) -> str:
        params = [f"{k}={v!r}" for k, v in self._configuration().items()]
        if self.name != self._default_name():
            params.append(f"name={self.name!r}")
        return f"{type(self).__name__}({', '.join(params)})"

    # --- zarr's codec protocol -------------------------------------------------------------
    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Any:
        shape, dtype = tuple(array_spec.shape), _native(array_spec)
        if _EVOLVES_WITH_ARRAY_SPEC:  # bind to what this codec receives, not the array's spec
            shape, dtype = self._check_at_creation(array_spec)
        bind = getattr(self.codec, "bind", None)
        bound = self.codec if bind is None else bind(shape, dtype)
        if bound is self.codec and not isinstance(self, ArrayArrayV3):
            return self
        # array -> array codecs: a fresh instance per chain, since links to neighbours are kept
        # on the instance
        evolved = type(self)(codec=bound, name=self.name)
        evolved._link(array_spec)
        return evolved

    def _check_at_creation(self, array_spec: ArraySpec) -> tuple[tuple[int, ...], np.dtype]:
        """zarr < 3.2 evolves every codec of a chain with the array's own spec, and resolves the
        chain only when it reads or writes chunks: an array our codecs cannot take at all (an
        offset not representable in its dtype, a complex dtype, 5-D chunks for zfp, integers
        under fixed_accuracy) would be created, then fail every read and write. Resolve the
        chain here, as zarr >= 3.2 does, along our codecs in the order zarr evolves them (one
        after another, in one thread, all with the same spec object); the fill value is checked
        when chunks are written (see ``resolve_metadata``). A codec of another package between
        two of ours is taken to keep the dtype, as zarr 3.1's own array -> array codec
        (transpose) does. Returns the chunk shape and dtype this codec receives."""
        last = getattr(_creation, "last", None)
        if last is not None and last[0] is array_spec:
            shape, dtype, fill = last[1]
        else:
            shape, dtype, fill = tuple(array_spec.shape), _native(array_spec), array_spec.fill_value
        resolved = self.codec.resolve_spec(shape, dtype, fill, strict=False)  # type: ignore[attr-defined]
        _creation.last = (array_spec, resolved)
        return tuple(shape), dtype

    def _link(self, spec: ArraySpec) -> None:
        """Link to the previous codec if it resolved ``spec``: zarr >= 3.2 evolves a chain in
        order with the spec each codec resolved; zarr 3.1 resolves the specs of each batch in
        order (then the first batch runs unlinked)."""
        prev = spec.resolved_by if isinstance(spec, _ResolvedSpec) else None
        if prev is not None:
            self._link_after(prev)

    def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
        # Checks against the codec's own input dtype happen in resolve_metadata: zarr < 3.2 passes
        # the array's dtype here, not the dtype this codec receives after earlier codecs.
        return None

    def resolve_metadata(self, chunk_spec: ArraySpec) -> ArraySpec:
        # zarr resolves the chain whenever it opens an array, to read as well as to write. A fill
        # value that the codec cannot carry (the spec: an error) only matters when chunks are
        # written, so it is checked there (_check_fill): an array another implementation wrote
        # with such a fill value still opens and reads, and none can be written.
        self._link(chunk_spec)
        native = _native(chunk_spec)
        shape, dtype, fill = self.codec.resolve_spec(  # type: ignore[attr-defined]
            chunk_spec.shape, native, chunk_spec.fill_value, strict=False
        )
        zdtype = chunk_spec.dtype if dtype is native or dtype == native else zarr_dtype(dtype)
        if fill is None:
            fill = zdtype.default_scalar()
        resolved = _ResolvedSpec(
            shape=shape,
            dtype=zdtype,
            fill_value=fill,
            config=chunk_spec.config,
            prototype=chunk_spec.prototype,
        )
        object.__setattr__(resolved, "resolved_by", self)
        return resolved

    def _check_fill(self, chunk_spec: ArraySpec) -> None:
        """Before a chunk is written: the fill value must go through this codec (the spec: an
        error otherwise), or unwritten parts of chunks would read back as another value.

        Checked once for the fill value and data type objects every chunk spec of an array
        shares (the entry holds them, so their ids are not reused while it exists)."""
        fill, zdtype, ndim = chunk_spec.fill_value, chunk_spec.dtype, len(chunk_spec.shape)
        last = self.__dict__.get("_fill_checked")
        if last is not None and last[0] is fill and last[1] is zdtype and last[2] == ndim:
            return
        self.codec.check_fill(  # type: ignore[attr-defined]
            tuple(chunk_spec.shape), _native(chunk_spec), fill)
        self.__dict__["_fill_checked"] = (fill, zdtype, ndim)

    def _link_after(self, prev: Any) -> None:
        """``prev`` comes right before this codec in a chain (see the module docstring)."""

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        encoded = self.resolve_metadata(chunk_spec)
        return input_byte_length // max(1, _native(chunk_spec).itemsize) * _native(encoded).itemsize


class AdapterMixin:
    """Name and JSON as zarr's numcodecs adapter writes them: ``numcodecs.<id>`` + numcodecs config."""

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        ncls = cls.numcodecs_class  # type: ignore[attr-defined]
        return tuple(ADAPTER_PREFIX + i for i in (ncls.codec_id, *getattr(ncls, "codec_aliases", ())))

    @classmethod
    def _codec_from_configuration(cls, configuration: dict[str, Any]) -> ExtCodec:
        return cls.numcodecs_class.from_config(configuration)  # type: ignore[attr-defined,no-any-return]

    def _configuration(self) -> dict[str, Any]:
        config = self.codec.get_config()  # type: ignore[attr-defined]
        config.pop("id", None)
        return config  # type: ignore[no-any-return]

    @property
    def codec_config(self) -> dict[str, Any]:
        """The numcodecs configuration, ``id`` included (as zarr's numcodecs adapters have it)."""
        return self.codec.get_config()  # type: ignore[attr-defined,no-any-return]


@dataclass(frozen=True, init=False, repr=False)
class ArrayArrayV3(_V3Common, ArrayArrayCodec):
    """An array -> array codec; the numcodecs codec provides ``encode_chunk``/``decode_chunk``."""

    codec: ExtCodec = field()
    name: str = field()

    #: the numcodecs class whose step this codec can finish together with its own (see the
    #: module docstring); such classes implement ``fused_encode`` and ``fused_decode``
    fuses_after: ClassVar[type[ExtCodec] | None] = None
    #: linked neighbours (instance attributes, set while zarr evolves a chain): the codec
    #: before this one whose work we finish, and the one after this one that finishes ours
    _before: ClassVar[Any] = None
    _after: ClassVar[Any] = None

    def _link_after(self, prev: Any) -> None:
        if (self.fuses_after is not None and self._before is None
                and isinstance(prev, ArrayArrayV3)
                and isinstance(prev.codec, self.fuses_after) and prev._after is None):
            object.__setattr__(prev, "_after", self)
            object.__setattr__(self, "_before", prev)

    def fused_encode(self, before: ExtCodec, arr: np.ndarray) -> np.ndarray:
        """``self.codec.encode_chunk(before.encode_chunk(arr))`` in one pass."""
        raise NotImplementedError

    def fused_decode(self, before: ExtCodec, arr: Any, shape: tuple[int, ...],
                     dtype: np.dtype) -> np.ndarray:
        """``before.decode_chunk(self.codec.decode_chunk(arr, shape, dtype), shape, dtype)``
        in one pass (``dtype``: what this codec decodes to)."""
        raise NotImplementedError

    def _fusion_encode(self, chunk_array: Any) -> tuple[Any, int] | None:
        """``(work, input bytes)`` finishing the linked previous codec's step with ours."""
        before = self._before
        if before is not None and isinstance(chunk_array, _Deferred):
            source = chunk_array.take(before)
            if source is not None:
                return (lambda: self.fused_encode(before.codec, source)), source.nbytes
        return None

    def _fusion_decode(self, chunk_array: Any, chunk_spec: ArraySpec) -> tuple[Any, int] | None:
        """``(work, output bytes)`` running the linked next codec's decode step with ours."""
        after = self._after
        if after is not None and isinstance(chunk_array, _Deferred):
            source = chunk_array.take(after)
            if source is not None:
                shape, dtype = tuple(chunk_spec.shape), _native(chunk_spec)
                return ((lambda: after.fused_decode(self.codec, source, shape, dtype)),
                        int(np.prod(shape)) * dtype.itemsize)
        return None

    def _deferred_encode(self, chunk_array: Any, chunk_spec: ArraySpec) -> _Deferred | None:
        """Our encode step, left for the linked next codec to finish together with its own."""
        if self._after is None or not _on_cpu(chunk_spec):
            return None
        arr = chunk_array.as_ndarray_like()
        return _Deferred(producer=self, source=arr,
                         compute=lambda: self.codec.encode_chunk(arr))  # type: ignore[attr-defined]

    def _deferred_decode(self, chunk_array: Any, chunk_spec: ArraySpec) -> _Deferred | None:
        """Our decode step, left for the linked previous codec to run together with its own."""
        if self._before is None or not _on_cpu(chunk_spec):
            return None
        arr = chunk_array.as_ndarray_like()
        shape, dtype = tuple(chunk_spec.shape), _native(chunk_spec)
        return _Deferred(producer=self, source=arr,
                         compute=lambda: self.codec.decode_chunk(arr, shape, dtype))  # type: ignore[attr-defined]

    def _encode_device(self, arr: Any, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        """Encode a non-numpy chunk (see the module docstring)."""
        xp = device.namespace(arr)
        result = None if xp is None else self.codec.device_encode(xp, arr)  # type: ignore[attr-defined]
        if result is None:  # no device kernel for this chunk: on the host, explicitly
            result = self.codec.encode_chunk(chunk_array.as_numpy_array())  # type: ignore[attr-defined]
            return chunk_spec.prototype.nd_buffer.from_numpy_array(result)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(result)

    def _decode_device(self, arr: Any, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        """Decode a non-numpy chunk (see the module docstring)."""
        shape, dtype = tuple(chunk_spec.shape), _native(chunk_spec)
        xp = device.namespace(arr)
        result = None if xp is None else self.codec.device_decode(xp, arr, shape, dtype)  # type: ignore[attr-defined]
        if result is None:
            result = self.codec.decode_chunk(  # type: ignore[attr-defined]
                chunk_array.as_numpy_array(), shape, dtype)
            return chunk_spec.prototype.nd_buffer.from_numpy_array(result)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(result)

    def _encode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        self._check_fill(chunk_spec)
        if type(chunk_array.__dict__.get("_data")) is not np.ndarray:  # (the numpy path: one test)
            arr = _device_array(chunk_array)
            if arr is not None:
                return self._encode_device(arr, chunk_array, chunk_spec)
        fusion = self._fusion_encode(chunk_array)
        if fusion is not None:
            return chunk_spec.prototype.nd_buffer.from_ndarray_like(fusion[0]())
        deferred = self._deferred_encode(chunk_array, chunk_spec)
        if deferred is not None:
            return deferred
        return self._encode_now(chunk_array, chunk_spec)

    def _decode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        if type(chunk_array.__dict__.get("_data")) is not np.ndarray:
            arr = _device_array(chunk_array)
            if arr is not None:
                return self._decode_device(arr, chunk_array, chunk_spec)
        fusion = self._fusion_decode(chunk_array, chunk_spec)
        if fusion is not None:
            return chunk_spec.prototype.nd_buffer.from_ndarray_like(fusion[0]())
        deferred = self._deferred_decode(chunk_array, chunk_spec)
        if deferred is not None:
            return deferred
        return self._decode_now(chunk_array, chunk_spec)

    def _encode_now(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        encoded = self.codec.encode_chunk(chunk_array.as_ndarray_like())  # type: ignore[attr-defined]
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(encoded)

    def _decode_now(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        decoded = self.codec.decode_chunk(  # type: ignore[attr-defined]
            chunk_array.as_ndarray_like(), tuple(chunk_spec.shape), _native(chunk_spec)
        )
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(decoded)

    async def _run(self, fn: Any, nbytes: int, spec: ArraySpec) -> Any:
        if nbytes < _INLINE_BYTES:
            result = fn()
        else:
            result = await _in_worker(fn)
        return spec.prototype.nd_buffer.from_ndarray_like(result)

    async def _encode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        self._check_fill(chunk_spec)
        if type(chunk_array.__dict__.get("_data")) is not np.ndarray:  # (the numpy path: one test)
            arr = _device_array(chunk_array)
            if arr is not None:
                return self._encode_device(arr, chunk_array, chunk_spec)
        fusion = self._fusion_encode(chunk_array)
        if fusion is not None:
            return await self._run(*fusion, chunk_spec)
        deferred = self._deferred_encode(chunk_array, chunk_spec)
        if deferred is not None:
            return deferred
        if chunk_array.as_ndarray_like().nbytes < _INLINE_BYTES:
            return self._encode_now(chunk_array, chunk_spec)
        return await _in_worker(self._encode_now, chunk_array, chunk_spec)

    async def _decode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        if type(chunk_array.__dict__.get("_data")) is not np.ndarray:
            arr = _device_array(chunk_array)
            if arr is not None:
                return self._decode_device(arr, chunk_array, chunk_spec)
        fusion = self._fusion_decode(chunk_array, chunk_spec)
        if fusion is not None:
            return await self._run(*fusion, chunk_spec)
        deferred = self._deferred_decode(chunk_array, chunk_spec)
        if deferred is not None:
            return deferred
        if chunk_array.as_ndarray_like().nbytes < _INLINE_BYTES:
            return self._decode_now(chunk_array, chunk_spec)
        return await _in_worker(self._decode_now, chunk_array, chunk_spec)


@dataclass(frozen=True, init=False, repr=False)
class ArrayBytesV3(_V3Common, ArrayBytesCodec):
    """An array -> bytes codec; ``encode_chunk`` returns bytes-like, ``decode_chunk`` an array."""

    codec: ExtCodec = field()
    name: str = field()
    is_fixed_size: ClassVar[bool] = False

    def _encode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):  # on another device (see ArrayArrayV3)
            xp = device.namespace(arr)
            packed = None if xp is None else self.codec.device_encode(xp, arr)  # type: ignore[attr-defined]
            if packed is not None:
                return chunk_spec.prototype.buffer.from_array_like(packed)
            # no device kernel for this chunk: through the host, explicitly
            encoded = self.codec.encode_chunk(chunk_array.as_numpy_array())  # type: ignore[attr-defined]
            return chunk_spec.prototype.buffer.from_bytes(
                encoded if not isinstance(encoded, np.ndarray)
                else np.ascontiguousarray(encoded).reshape(-1).view(np.uint8))
        encoded = self.codec.encode_chunk(arr)  # type: ignore[attr-defined]
        return chunk_spec.prototype.buffer.from_array_like(
            np.frombuffer(encoded, dtype=np.uint8) if not isinstance(encoded, np.ndarray)
            else encoded.reshape(-1).view(np.uint8)
        )

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: ArraySpec) -> Any:
        data = chunk_bytes.as_array_like()
        on_device = not isinstance(data, np.ndarray)
        if on_device:
            xp = device.namespace(data)
            values = None if xp is None else self.codec.device_decode(  # type: ignore[attr-defined]
                xp, data, tuple(chunk_spec.shape), _native(chunk_spec))
            if values is not None:
                return chunk_spec.prototype.nd_buffer.from_ndarray_like(values)
        decoded = self.codec.decode_chunk(  # type: ignore[attr-defined]
            chunk_bytes.as_numpy_array() if on_device else data,
            tuple(chunk_spec.shape), _native(chunk_spec)
        )
        if on_device:  # back to the device explicitly (zarr's GPU buffers copy a numpy array)
            return chunk_spec.prototype.nd_buffer.from_numpy_array(decoded)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(decoded)

    async def _encode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        return await _in_worker(self._encode_sync, chunk_array, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: ArraySpec) -> Any:
        return await _in_worker(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError  # variable-size output
