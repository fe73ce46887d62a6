"""Generic zarr v3 codec classes over numcodecs_ext's numcodecs codecs.

Each codec of the collection appears in zarr v3 twice:

* under its spec name (``transpose``, ``scale_offset``, ``zfp`` …), with the spec's configuration;
* under zarr's numcodecs adapter name ``numcodecs.<id>``, with the numcodecs configuration (the
  same JSON shape that zarr's own adapter writes), so arrays written through the adapter by other
  tools read here and vice versa.

The shape is zarr-python's own (``zarr/codecs/transpose.py``): frozen dataclasses whose fields are
the configuration (``Zfp.mode``, ``ScaleOffset.offset`` ...) plus ``name``, the name written to
``zarr.json``; the keyword-only constructor parses and validates once (``parse_configuration``);
``validate`` / ``resolve_metadata`` at metadata time; ``_encode_single`` / ``_decode_single`` do the
chunk work. That work is the core's (``chunk_work``: one object per configuration, such as
:class:`numcodecs_ext.core.transpose.TransposeChunks`, built from the fields in the constructor and
never changed), which the numcodecs classes run too. The parsing and the JSON are the numcodecs
layer's (``codec``: the numcodecs codec of the same configuration), so a configuration means the
same under zarr v2, v3 and numcodecs.

Unlike zarr's adapter, these classes carry the chunk spec through the codec: the dtype, shape and
fill value that the next codec sees come from the chunk work's ``resolve_spec``. Chunks of 1 MiB and
more are encoded on the thread pool zarr's own codecs use (``asyncio.to_thread``), so zarr
encodes chunks in parallel wherever the core releases the GIL, with no threads beside zarr's.

No fusion: each codec of a chain runs on its own, as zarr runs any chain. (Until the redesign of
issue 33, scale_offset + cast_value ran as one blocked pass, through an override of zarr's private
``NDBuffer._data`` and links written into frozen codecs; ``benchmarks/bench_fusion.py`` measured
what it gained end to end and docs/interop.md gives the figures.)

Arrays of other libraries (zarr's GPU mode, ``zarr.config.enable_gpu()``, hands codecs cupy
arrays): a codec whose chunk work has device kernels (``device_encode`` / ``device_decode``)
runs them on the array's own namespace (:mod:`numcodecs_ext.core.device`); where it has none,
or a chunk needs the CPU path's judgement, the chunk goes to the host explicitly (the buffer's
``as_numpy_array``) and the result back through the prototype's ``from_numpy_array`` /
``from_bytes`` (zarr's GPU buffers copy it to the device: handing them a numpy array directly
would warn of a slow path for every chunk). Nothing converts implicitly, and
numpy chunks never take this branch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import threading
import weakref
from typing import Any, ClassVar

import numpy as np
import zarr
from packaging.version import Version
from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec
from zarr.dtype import data_type_registry

# zarr names that are not public API, and why we still use them:
# - ArraySpec (zarr.core.array_spec): the chunk spec of the codec protocol, which every codec
#   receives and resolve_metadata must return; zarr exports it from no public module.
# - the codec protocol's underscored methods, _encode_single / _decode_single (async, zarr's
#   default pipeline) and _encode_sync / _decode_sync (zarr 3.4's FusedCodecPipeline): what a
#   codec implements, as zarr's own codecs in zarr/codecs/*.py do.
# (zarr3/dtypes.py lists the names its data types need.)
from zarr.core.array_spec import ArraySpec

from ..codecs._base import ExtCodec
from ..core import device
from ..core.dtypes import show
from ..core.errors import refusal
from .interning import interned, spec_key

__all__ = ["AdapterMixin", "ArrayArrayV3", "ArrayBytesV3", "native_dtype", "zarr_dtype"]

ADAPTER_PREFIX = "numcodecs."
#: Chunks smaller than this are processed inline: a thread hop costs more than it can save.
_INLINE_BYTES = 1 << 20


@functools.lru_cache(maxsize=256)
def zarr_dtype(dtype: np.dtype) -> Any:
    """zarr's ZDType for a numpy dtype (cached: zarr resolves chunk specs for every chunk, and
    its registry search tries every registered data type)."""
    return data_type_registry.match_dtype(np.dtype(dtype))


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


def native_dtype(spec: ArraySpec) -> np.dtype:
    """The chunk spec's dtype as numpy's, in native byte order."""
    dtype = spec.dtype.to_native_dtype()
    return dtype if dtype.byteorder in "=|" else dtype.newbyteorder("=")


def _shape_dtype(spec: ArraySpec) -> tuple[tuple[int, ...], np.dtype]:
    return tuple(spec.shape), native_dtype(spec)


#: arrays an encode of ours made, alive, by id: in zarr's encode chain each goes to the next
#: codec only, so a codec of ours that keeps the dtype may encode it in place (one 8-byte array
#: an element fewer to allocate, and fault in, per chunk)
_FRESH: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def claim_fresh(arr: np.ndarray) -> bool:
    """Whether ``arr`` is an array an encode of ours made (once: it is then the claimant's)."""
    found = _FRESH.pop(id(arr), None)
    return found is arr and arr.flags.writeable and arr.flags.c_contiguous and arr.dtype.isnative


def _device_array(buf: Any) -> Any:
    """The buffer's array if it is not a numpy array (zarr's GPU mode: cupy), else None."""
    arr = buf.as_ndarray_like()
    return None if isinstance(arr, np.ndarray) else arr


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _V3Common:
    """Shared behaviour of the frozen dataclasses below.

    Subclasses declare their configuration as dataclass fields (``Zfp.mode``, ...); the values
    are those of the parsed configuration (normalised: ``"0.5"`` reads as ``0.5``). Equality and
    hashing compare the class and the JSON (``to_dict()``), as zarr compares codecs in metadata;
    some fields (``scalar_map``, ``Reshape.shape``) are JSON lists and dicts, which do not hash.
    """

    numcodecs_class: ClassVar[type[ExtCodec]]
    #: Names this class reads; the first is the one it writes unless the user chose another.
    spec_names: ClassVar[tuple[str, ...]]
    is_fixed_size: ClassVar[bool] = True

    #: the name this codec is written with in zarr.json (``zfp``, ``zarrs.zfp``, ...)
    name: str

    def __init__(self, *, codec: ExtCodec | None = None, name: str | None = None, **configuration: Any) -> None:
        """Keyword-only: the configuration keys, and ``name``; or ``codec=``, a numcodecs codec of
        this class's ``numcodecs_class``, whose configuration is taken.

        Refusals are ValueErrors prefixed ``codec '<name>': `` with the name this codec is
        written with (``zfp``, ``numcodecs.zfp`` ...), whichever layer found the fault."""
        shown = self.parse_name(name)
        if codec is None:
            codec = self.parse_configuration(self._from_fields(configuration), shown)
        elif configuration:
            raise ValueError(f"codec {shown!r}: pass either codec= or the configuration keys "
                             f"({', '.join(map(repr, configuration))}), not both")
        if not isinstance(codec, self.numcodecs_class):
            raise ValueError(f"codec {shown!r}: codec= must be a {self.numcodecs_class.__name__}, "
                             f"not a {type(codec).__name__}")
        object.__setattr__(self, "name", shown)
        for f in dataclasses.fields(self):
            if f.name != "name":
                object.__setattr__(self, f.name, self._field_value(codec, f.name))
        # the numcodecs codec of this configuration (not a field: derived, never replaced)
        object.__setattr__(self, "_codec", codec)
        # the core's plan of this configuration, which does the chunk work (derived likewise)
        object.__setattr__(self, "_chunk_work", self._make_chunk_work())

    @property
    def codec(self) -> ExtCodec:
        """The numcodecs codec of the same configuration (its JSON and its parsing)."""
        return self._codec  # type: ignore[attr-defined,no-any-return]

    @property
    def chunk_work(self) -> Any:
        """What does the chunk work: the core's plan of this configuration (``resolve_spec``,
        ``check_fill``, ``encode_chunk`` / ``decode_chunk`` and their device variants)."""
        return self._chunk_work  # type: ignore[attr-defined]

    def _make_chunk_work(self) -> Any:
        """The core's chunk work of this configuration (``core.<codec>.<Codec>Chunks``), built
        from the fields; every class defines it."""
        raise NotImplementedError

    @staticmethod
    def _field_value(codec: ExtCodec, key: str) -> Any:
        return getattr(codec, key)

    @classmethod
    def _from_fields(cls, configuration: dict[str, Any]) -> dict[str, Any]:
        """The configuration of constructor keywords that may be field values: a field at None
        is a parameter not given, as zarr's ``dataclasses.replace`` passes every field."""
        fields = {f.name for f in dataclasses.fields(cls)}
        return {k: v for k, v in configuration.items() if not (v is None and k in fields)}

    # --- parsing ---------------------------------------------------------------------------
    @classmethod
    def parse_name(cls, name: Any) -> str:
        """``name`` if this class reads and writes it (None: the default name); else an error."""
        shown = cls._default_name() if name is None else name
        if not isinstance(shown, str) or shown not in cls._names():
            raise ValueError(f"codec {cls._default_name()!r}: name={show(shown)} is not valid; use "
                             f"{' or '.join(map(repr, cls._names()))}")
        return shown

    @classmethod
    def parse_configuration(cls, configuration: dict[str, Any], name: str | None = None) -> ExtCodec:
        """The numcodecs codec of a configuration (a JSON object), or the refusal: a ValueError
        prefixed ``codec '<name>': ``."""
        try:
            return cls._codec_from_configuration(configuration)
        except (ValueError, TypeError) as e:
            raise refusal(name or cls._default_name(), e) from None

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

    # --- JSON ------------------------------------------------------------------------------
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
        return interned(cls, name, configuration)

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

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict() and self.codec == other.codec  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.codec))

    # --- zarr's codec protocol -------------------------------------------------------------
    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Any:
        shape, dtype = _shape_dtype(array_spec)
        if _EVOLVES_WITH_ARRAY_SPEC:  # bind to what this codec receives, not the array's spec
            shape, dtype = self._check_at_creation(array_spec)
        bind = getattr(self.codec, "bind", None)
        bound = self.codec if bind is None else bind(shape, dtype)
        if bound is self.codec:
            return self
        return interned(type(self), self.name, {}, bound)

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
            shape, dtype, fill = tuple(array_spec.shape), native_dtype(array_spec), array_spec.fill_value
        resolved = self.chunk_work.resolve_spec(shape, dtype, fill, strict=False)  # type: ignore[attr-defined]
        _creation.last = (array_spec, resolved)
        return tuple(shape), dtype

    def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
        # Checks against the codec's own input dtype happen in resolve_metadata: zarr < 3.2 passes
        # the array's dtype here, not the dtype this codec receives after earlier codecs.
        return None

    def resolve_metadata(self, chunk_spec: ArraySpec) -> ArraySpec:
        # zarr resolves the chain whenever it opens an array, to read as well as to write. A fill
        # value that the codec cannot carry (the spec: an error) only matters when chunks are
        # written, so it is checked there (_check_fill): an array another implementation wrote
        # with such a fill value still opens and reads, and none can be written.
        native = native_dtype(chunk_spec)
        work = self.chunk_work  # type: ignore[attr-defined]
        paths = getattr(work, "paths", None)  # (the plans with per-chunk work to keep)
        key = None if paths is None else spec_key(chunk_spec.shape, native, chunk_spec.fill_value)
        if key is None:
            shape, dtype, fill = work.resolve_spec(chunk_spec.shape, native, chunk_spec.fill_value, strict=False)
        else:
            shape, dtype, fill = paths.resolved(
                key, lambda: work.resolve_spec(chunk_spec.shape, native, chunk_spec.fill_value, strict=False))
        zdtype = chunk_spec.dtype if dtype is native or dtype == native else zarr_dtype(dtype)
        if fill is None:
            fill = zdtype.default_scalar()
        return ArraySpec(shape=shape, dtype=zdtype, fill_value=fill, config=chunk_spec.config,
                         prototype=chunk_spec.prototype)

    def _check_fill(self, chunk_spec: ArraySpec) -> None:
        """Before a chunk is written: the fill value must go through this codec (the spec: an
        error otherwise), or unwritten parts of chunks would read back as another value (the
        chunk work checks each fill value once)."""
        self.chunk_work.check_fill(  # type: ignore[attr-defined]
            tuple(chunk_spec.shape), native_dtype(chunk_spec), chunk_spec.fill_value)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        encoded = self.resolve_metadata(chunk_spec)
        return input_byte_length // max(1, native_dtype(chunk_spec).itemsize) * native_dtype(encoded).itemsize


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


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class ArrayArrayV3(_V3Common, ArrayArrayCodec):
    """An array -> array codec; the chunk work provides ``encode_chunk``/``decode_chunk``."""

    def _encode_device(self, arr: Any, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        """Encode a non-numpy chunk (see the module docstring)."""
        xp = device.namespace(arr)
        result = None if xp is None else self.chunk_work.device_encode(xp, arr)
        if result is None:  # no device kernel for this chunk: on the host, explicitly
            result = self.chunk_work.encode_chunk(chunk_array.as_numpy_array())  # type: ignore[attr-defined]
            return chunk_spec.prototype.nd_buffer.from_numpy_array(result)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(result)

    def _decode_device(self, arr: Any, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        """Decode a non-numpy chunk (see the module docstring)."""
        shape, dtype = _shape_dtype(chunk_spec)
        xp = device.namespace(arr)
        result = None if xp is None else self.chunk_work.device_decode(xp, arr, shape, dtype)
        if result is None:
            result = self.chunk_work.decode_chunk(  # type: ignore[attr-defined]
                chunk_array.as_numpy_array(), shape, dtype)
            return chunk_spec.prototype.nd_buffer.from_numpy_array(result)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(result)

    def _encode_array(self, arr: np.ndarray, chunk_spec: ArraySpec) -> Any:
        encoded = self._encode_chunk(arr)
        if encoded is not arr and encoded.flags.owndata and encoded.flags.writeable:
            _FRESH[id(encoded)] = encoded  # made here, for zarr to hand to the next codec only
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(encoded)

    def _encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        """The chunk work's encoding (a codec that keeps the dtype may write into ``arr`` where
        :func:`claim_fresh` says it is a temporary of ours)."""
        return self.chunk_work.encode_chunk(arr)  # type: ignore[attr-defined,no-any-return]

    def _decode_array(self, arr: np.ndarray, chunk_spec: ArraySpec) -> Any:
        decoded = self.chunk_work.decode_chunk(arr, *_shape_dtype(chunk_spec))  # type: ignore[attr-defined]
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(decoded)

    def _encode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        self._check_fill(chunk_spec)
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):
            return self._encode_device(arr, chunk_array, chunk_spec)
        return self._encode_array(arr, chunk_spec)

    def _decode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):
            return self._decode_device(arr, chunk_array, chunk_spec)
        return self._decode_array(arr, chunk_spec)

    async def _encode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        self._check_fill(chunk_spec)
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):
            return self._encode_device(arr, chunk_array, chunk_spec)
        if arr.nbytes < _INLINE_BYTES:
            return self._encode_array(arr, chunk_spec)
        return await _in_worker(self._encode_array, arr, chunk_spec)

    async def _decode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):
            return self._decode_device(arr, chunk_array, chunk_spec)
        if arr.nbytes < _INLINE_BYTES:
            return self._decode_array(arr, chunk_spec)
        return await _in_worker(self._decode_array, arr, chunk_spec)


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class ArrayBytesV3(_V3Common, ArrayBytesCodec):
    """An array -> bytes codec; ``encode_chunk`` returns bytes-like, ``decode_chunk`` an array."""

    is_fixed_size: ClassVar[bool] = False

    def _encode_sync(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        arr = chunk_array.as_ndarray_like()
        if not isinstance(arr, np.ndarray):  # on another device (see ArrayArrayV3)
            xp = device.namespace(arr)
            packed = None if xp is None else self.chunk_work.device_encode(xp, arr)
            if packed is not None:
                return chunk_spec.prototype.buffer.from_array_like(packed)
            # no device kernel for this chunk: through the host, explicitly
            encoded = self.chunk_work.encode_chunk(chunk_array.as_numpy_array())  # type: ignore[attr-defined]
            return chunk_spec.prototype.buffer.from_bytes(
                encoded if not isinstance(encoded, np.ndarray)
                else np.ascontiguousarray(encoded).reshape(-1).view(np.uint8))
        encoded = self.chunk_work.encode_chunk(arr)  # type: ignore[attr-defined]
        return chunk_spec.prototype.buffer.from_array_like(
            np.frombuffer(encoded, dtype=np.uint8) if not isinstance(encoded, np.ndarray)
            else encoded.reshape(-1).view(np.uint8)
        )

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: ArraySpec) -> Any:
        data = chunk_bytes.as_array_like()
        shape, dtype = _shape_dtype(chunk_spec)
        on_device = not isinstance(data, np.ndarray)
        if on_device:
            xp = device.namespace(data)
            values = None if xp is None else self.chunk_work.device_decode(xp, data, shape, dtype)
            if values is not None:
                return chunk_spec.prototype.nd_buffer.from_ndarray_like(values)
        decoded = self.chunk_work.decode_chunk(  # type: ignore[attr-defined]
            chunk_bytes.as_numpy_array() if on_device else data, shape, dtype)
        if on_device:  # back to the device explicitly (zarr's GPU buffers copy a numpy array)
            return chunk_spec.prototype.nd_buffer.from_numpy_array(decoded)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(decoded)

    async def _encode_single(self, chunk_array: Any, chunk_spec: ArraySpec) -> Any:
        return await _in_worker(self._encode_sync, chunk_array, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: ArraySpec) -> Any:
        return await _in_worker(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError  # variable-size output
