"""zarr's GPU mode without a GPU: every registered zarr v3 codec on arrays that refuse numpy.

``array_api_strict`` arrays on its non-CPU device ("device1") stand in for cupy: like cupy they
refuse implicit conversion to numpy (``np.asarray`` raises), and the buffers below move them to
and from the host only explicitly, as zarr's GPU buffers do (``cp.asnumpy`` / ``cp.asarray``).
Each codec encodes and decodes through those buffers and must give bit for bit what the CPU path
gives, or the same error. Codecs with device kernels must not touch the host for the chunks those
kernels take (counted). zarr's own GPU tests import cupy and cannot run with this stand-in.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from typing import Any

import numpy as np
import pytest

xp = pytest.importorskip("array_api_strict")
zarr = pytest.importorskip("zarr")

from zarr.core.array_spec import ArrayConfig, ArraySpec  # noqa: E402
from zarr.core.buffer import BufferPrototype, cpu, default_buffer_prototype  # noqa: E402
from zarr.core.buffer import core as buffer_core  # noqa: E402

from numcodecs_ext import zarr3  # noqa: E402
from numcodecs_ext._registry import ZARR, load_class  # noqa: E402
from numcodecs_ext.core import device  # noqa: E402
from numcodecs_ext.core import scale_offset as so_core  # noqa: E402
from numcodecs_ext.core.bitround import bitround as cpu_bitround  # noqa: E402
from numcodecs_ext.core.bitround import plan as bitround_plan  # noqa: E402
from numcodecs_ext.core.cast_value import cast_array, is_exact_cast  # noqa: E402
from numcodecs_ext.core.scalar_map import PreparedMap  # noqa: E402
from numcodecs_ext.core.dtypes import numeric_info  # noqa: E402
from numcodecs_ext.zarr3._base import zarr_dtype  # noqa: E402

DEVICE = xp.Device("device1")
CPU_DEVICE = xp.Device("CPU_DEVICE")


def on_device(a: np.ndarray) -> Any:
    return xp.asarray(np.ascontiguousarray(a) if a.ndim else a, device=DEVICE)


def to_host(a: Any) -> np.ndarray:
    return np.from_dlpack(a.to_device(CPU_DEVICE)).copy()


def test_the_stand_in_refuses_numpy() -> None:
    with pytest.raises((TypeError, RuntimeError)):
        np.asarray(on_device(np.arange(3)))


def _not_on_device(array: Any, what: str) -> Any:
    """zarr's GPU buffers warn (then copy) when handed an array that is not on the device."""
    if isinstance(array, (np.ndarray, np.generic)):
        warnings.warn(f"Creating a {what} with an array that does not support the "
                      "__cuda_array_interface__ (the stand-in's version of zarr's warning)",
                      UserWarning, stacklevel=3)
        return on_device(np.asarray(array))
    return array


class DeviceNDBuffer(buffer_core.NDBuffer):
    """zarr's gpu.NDBuffer with array_api_strict in place of cupy; counts host copies."""

    host_copies = 0

    def __init__(self, array: Any) -> None:
        self._data = _not_on_device(array, "DeviceNDBuffer")

    @classmethod
    def create(cls, *, shape: Any, dtype: Any, order: Any = "C", fill_value: Any = None) -> Any:
        return cls.from_numpy_array(np.full(shape, 0 if fill_value is None else fill_value, dtype))

    @classmethod
    def from_numpy_array(cls, array_like: Any) -> Any:
        return cls(on_device(np.asarray(array_like)))  # explicit, as gpu.NDBuffer's cp.asarray

    def as_numpy_array(self) -> np.ndarray:
        type(self).host_copies += 1
        return to_host(self._data)

    def __getitem__(self, key: Any) -> Any:
        return self.__class__(self._data[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        raise NotImplementedError


class DeviceBuffer(buffer_core.Buffer):
    """zarr's gpu.Buffer with array_api_strict in place of cupy."""

    def __init__(self, array_like: Any) -> None:
        self._data = _not_on_device(array_like, "DeviceBuffer")

    @classmethod
    def create_zero_length(cls) -> Any:
        return cls.from_bytes(b"")

    @classmethod
    def from_buffer(cls, buffer: Any) -> Any:
        return cls.from_bytes(buffer.as_numpy_array())

    @classmethod
    def from_bytes(cls, bytes_like: Any) -> Any:  # as gpu.Buffer's cp.frombuffer
        return cls(on_device(np.frombuffer(bytes_like, np.uint8)))

    def as_numpy_array(self) -> np.ndarray:
        DeviceNDBuffer.host_copies += 1
        return to_host(self._data)

    def combine(self, others: Any) -> Any:
        raise NotImplementedError


DEVICE_PROTOTYPE = BufferPrototype(buffer=DeviceBuffer, nd_buffer=DeviceNDBuffer)


def spec_of(shape: tuple[int, ...], dtype: np.dtype, fill: Any, prototype: Any) -> ArraySpec:
    return ArraySpec(shape=shape, dtype=zarr_dtype(np.dtype(dtype)), fill_value=fill,
                     config=ArrayConfig.from_dict({}), prototype=prototype)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit: dtype, shape and every byte (NaN payloads and -0.0 included)."""
    a, b = np.asarray(a), np.asarray(b)
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except ValueError as e:
        return "error", str(e)


def round_trip(codec: Any, data: np.ndarray, fill: Any = 0) -> tuple[Any, Any]:
    """(CPU outcome, device outcome) of encoding then decoding ``data`` (a chunk) with
    ``codec``: ("ok", (encoded, decoded) as numpy) or ("error", message)."""
    results = []
    for prototype in (default_buffer_prototype(), DEVICE_PROTOTYPE):
        spec = spec_of(data.shape, data.dtype, fill, prototype)
        c = codec.evolve_from_array_spec(spec)
        c.resolve_metadata(spec)
        on_dev = prototype is DEVICE_PROTOTYPE
        chunk = DeviceNDBuffer(on_device(data)) if on_dev else cpu.NDBuffer.from_numpy_array(data)
        bytes_codec = isinstance(c, zarr3._base.ArrayBytesV3)

        def run(c: Any = c, chunk: Any = chunk, spec: Any = spec, on_dev: bool = on_dev,
                bytes_codec: bool = bytes_codec) -> Any:
            encoded = c._encode_sync(chunk, spec)
            if on_dev:
                enc = to_host(encoded._data)
            else:  # (a copy: the CPU path decodes a temporary in place)
                enc = encoded.as_numpy_array().copy()

            def again() -> Any:  # the encoded chunk afresh, for each decode
                if on_dev or not isinstance(encoded, cpu.NDBuffer):
                    return encoded
                return cpu.NDBuffer.from_numpy_array(enc.copy())

            decoded = c._decode_sync(again(), spec)
            # the async methods (zarr's default pipeline) take the same path
            decoded2 = asyncio.run(c._decode_single(again(), spec))
            if on_dev:
                for buf in (encoded, decoded, decoded2):
                    inner = buf._data
                    assert not isinstance(inner, np.ndarray), "a device chunk came back on the host"
            dec = to_host(decoded.as_ndarray_like()) if on_dev else decoded.as_numpy_array()
            dec2 = to_host(decoded2.as_ndarray_like()) if on_dev else decoded2.as_numpy_array()
            assert same(dec, dec2)
            return enc, dec

        results.append(outcome(run))
    return results[0], results[1]


def assert_same(cpu_result: Any, dev_result: Any) -> None:
    assert cpu_result[0] == dev_result[0], (cpu_result, dev_result)
    if cpu_result[0] == "error":
        assert cpu_result[1] == dev_result[1]
        return
    (e1, d1), (e2, d2) = cpu_result[1], dev_result[1]
    assert same(e1, e2), (e1, e2)
    assert same(d1, d2), (d1, d2)


# --- data: extremes of every dtype, NaN, -0.0, 0-d, empty, Fortran order --------------------------

FLOATS = ("float16", "float32", "float64")
#: array_api_strict has no float16 (the standard has none); numpy's namespace tests it
STRICT_FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def values(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        fi = np.finfo(dt)
        v = [0.0, -0.0, 1.0, -2.5, 0.49999999999999994, 2.5, 3.5, 100.25, -77.75, 1e3,
             float(fi.max), float(fi.min), float(fi.tiny), float(fi.smallest_subnormal),
             np.nan, -np.nan, np.inf, -np.inf]
        with np.errstate(over="ignore"):
            return np.array(v, dtype=dt)
    ii = np.iinfo(dt)
    v = [0, 1, 2, 3, 7, 100, ii.max, ii.max - 1, ii.min, ii.min + 1, ii.max // 3]
    return np.array(v, dtype=dt)


def finite(dtype: str) -> np.ndarray:
    v = values(dtype)
    if v.dtype.kind == "f":
        v = v[np.isfinite(v) & (np.abs(v.astype(np.float64)) < 1e3)]
    else:
        v = v[(v.astype(object) > -100) & (v.astype(object) < 120)]
    return v


def normal(dtype: str) -> np.ndarray:
    """:func:`finite` without subnormals (devices may flush those: the kernels decline them)."""
    v = finite(dtype)
    return v[(v == 0) | (np.abs(v) >= np.finfo(v.dtype).tiny)]


def shapes_of(v: np.ndarray) -> list[np.ndarray]:
    """The values as 1-d, 2-d C and F order, 0-d and empty chunks."""
    n = v.size - v.size % 2
    two = v[:n].reshape(2, -1)
    return [v, two, np.asfortranarray(two), np.asarray(v[0]), v[:0].reshape(0, 3)]


# --- every registered codec, through the zarr codec classes ------------------------------------------

def codec_cases() -> list[tuple[str, Any, str, bool]]:
    """(id, codec, dtype, all data) for every name we register with zarr."""
    cases: list[tuple[str, Any, str, bool]] = []
    for name, path in sorted(ZARR.items()):
        cls = load_class(path)
        adapter = name.startswith("numcodecs.")

        def make(cls: Any = cls, name: str = name, **config: Any) -> Any:
            return cls.from_dict({"name": name, "configuration": config})

        base = name.removeprefix("numcodecs.")
        if base == "transpose":
            for dt in (*STRICT_FLOATS, *INTS, "bool"):
                cases.append((f"{name}-{dt}", "transpose", dt, True))
        elif base == "reshape":
            for dt in ("float32", "int64", "uint8"):
                cases.append((f"{name}-{dt}", make(shape=[-1]), dt, True))
        elif base == "scale_offset":
            for dt in STRICT_FLOATS:
                cases.append((f"{name}-{dt}", make(offset=-10, scale=0.5), dt, True))
                cases.append((f"{name}-{dt}-ok", make(offset=2, scale=4), dt, False))
            for dt in INTS:
                cases.append((f"{name}-{dt}", make(offset=3, scale=2), dt, True))
                ok = make(offset=0, scale=2) if dt.startswith("u") else make(offset=3, scale=1)
                cases.append((f"{name}-{dt}-ok", ok, dt, False))
        elif base == "cast_value":
            for dt in (*STRICT_FLOATS, *INTS):
                for target in ("uint8", "int16", "float32", "int64"):
                    if target == dt:
                        continue
                    cases.append((f"{name}-{dt}-{target}-clamp",
                                   make(data_type=target, out_of_range="clamp",
                                        scalar_map=None if dt in INTS or target.startswith("float")
                                        else {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}),
                                   dt, True))
                    cases.append((f"{name}-{dt}-{target}-strict", make(data_type=target), dt, False))
            for rounding in ("towards-zero", "towards-positive", "towards-negative", "nearest-away"):
                cases.append((f"{name}-float64-int8-{rounding}", make(
                    data_type="int8", rounding=rounding, out_of_range="clamp",
                    scalar_map={"encode": [["NaN", -128], ["Infinity", 127], ["-Infinity", -127]]}),
                    "float64", True))
            for dt in ("int32", "uint16", "float32"):
                cases.append((f"{name}-{dt}-wrap", make(data_type="uint8", out_of_range="wrap"),
                               dt, True))
            # a NaN key given as bits (matched exactly: on the host), and the "NaN" key after it
            cases.append((f"{name}-float32-hex-key", make(
                data_type="uint8", out_of_range="clamp",
                scalar_map={"encode": [["0x7fc00001", 9], ["NaN", 0]], "decode": [[0, "NaN"]]}),
                "float32", True))
        elif base == "bitround":
            for dt in (*STRICT_FLOATS, *INTS):
                cases.append((f"{name}-{dt}", make(keepbits=3), dt, True))
        elif base == "packbits":
            for dt in ("uint8", "int16", "bool"):
                cases.append((f"{name}-{dt}", make(), dt, dt != "int16"))
        elif base in ("zfp", "zarrs.zfp"):
            for dt in ("float32", "float64", "int32"):
                cases.append((f"{name}-{dt}", make(mode="reversible"), dt, True))
        else:
            raise AssertionError(f"no test case for the registered name {name!r}")
        assert adapter or base == name or base.startswith("zarrs")
    return cases


CASES = codec_cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_registered_codec_gives_the_cpu_result(case: tuple[str, Any, str, bool]) -> None:
    ident, codec, dtype, extremes = case
    v = values(dtype) if extremes and dtype != "bool" else (
        np.array([True, False, True, True], bool) if dtype == "bool" else finite(dtype))
    if ident.startswith("packbits") and dtype == "uint8":
        v = v[v < 16]
    if ident.endswith("-strict"):  # values every target holds (after rounding)
        v = v[(v >= 0) & (v < 100)]
    ok = 0
    for data in shapes_of(v):
        c = codec
        if codec == "transpose":
            cls = load_class(ZARR[ident.split("-")[0]])
            order = list(range(data.ndim))[::-1]
            c = cls.from_dict({"name": ident.split("-")[0], "configuration": {"order": order}})
        cpu_result, dev_result = round_trip(c, data)
        assert_same(cpu_result, dev_result)
        ok += cpu_result[0] == "ok"
    if not extremes:
        assert ok == len(shapes_of(v))  # the plain data go through every codec


DEVICE_CODECS = [
    (zarr3.Transpose(order=[1, 0]), "float64", values("float64")),
    (zarr3.Reshape(shape=[-1]), "int16", values("int16")),
    (zarr3.ScaleOffset(offset=-10, scale=0.5), "float32", normal("float32")),
    (zarr3.ScaleOffset(offset=3, scale=2), "int32", np.array([3, 5, 101, -7], "int32")),
    (zarr3.CastValue(data_type="uint8", out_of_range="clamp", rounding="nearest-away",
                     scalar_map={"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}),
     "float64", np.array([0.5, 1.5, -3.0, 2.5, np.nan, 254.4], "float64")),
    (zarr3.CastValue(data_type="int8", out_of_range="clamp"), "int32",
     np.array([-1000, 5, 127, 128], "int32")),
    (zarr3.CastValue(data_type="float32"), "float64", np.array([1.0, 1e-3, -2.5e30], "float64")),
    (zarr3.PackBits(last_bit=2), "uint8", np.array([0, 7, 5, 3, 1, 2, 6], "uint8")),
    (zarr3.PackBits(first_bit=1, last_bit=4, padding_encoding="first_byte"), "int16",
     np.array([-16, 14, 0, -2, 6], "int16")),
    (zarr3.PackBits(padding_encoding="last_byte"), "bool", np.array([1, 0, 1, 1, 0], bool)),
]


@pytest.mark.parametrize("codec,dtype,data", DEVICE_CODECS,
                         ids=[f"{type(c).__name__}-{d}" for c, d, _ in DEVICE_CODECS])
def test_device_kernels_stay_on_the_device(codec: Any, dtype: str, data: np.ndarray) -> None:
    data = data.reshape(1, -1)
    DeviceNDBuffer.host_copies = 0
    cpu_result, dev_result = round_trip(codec, data.astype(dtype))
    assert cpu_result[0] == "ok", cpu_result
    assert_same(cpu_result, dev_result)
    assert DeviceNDBuffer.host_copies == 0


def test_host_codecs_move_explicitly() -> None:
    DeviceNDBuffer.host_copies = 0
    cpu_result, dev_result = round_trip(zarr3.Zfp(mode="reversible"), np.ones((4, 4), "float32"))
    assert_same(cpu_result, dev_result)
    assert cpu_result[0] == "ok" and DeviceNDBuffer.host_copies > 0


def test_a_chain_through_zarr_codecs_on_the_device() -> None:
    """scale_offset + cast_value (linked for fusion on the CPU) on device chunks."""
    so = zarr3.ScaleOffset(offset=-10, scale=10)
    cv = zarr3.CastValue(data_type="uint8", out_of_range="clamp")
    data = np.linspace(-12, 20, 24).reshape(4, 6)
    DeviceNDBuffer.host_copies = 0
    outs = []
    for prototype in (default_buffer_prototype(), DEVICE_PROTOTYPE):
        spec = spec_of(data.shape, data.dtype, 0.0, prototype)
        s1 = so.evolve_from_array_spec(spec)
        spec2 = s1.resolve_metadata(spec)
        s2 = cv.evolve_from_array_spec(spec2)
        s2.resolve_metadata(spec2)
        chunk = (DeviceNDBuffer(on_device(data)) if prototype is DEVICE_PROTOTYPE
                 else cpu.NDBuffer.from_numpy_array(data))
        enc = s2._encode_sync(s1._encode_sync(chunk, spec), spec2)
        to_np = to_host if prototype is DEVICE_PROTOTYPE else (lambda a: np.array(a, copy=True))
        enc_np = to_np(enc.as_ndarray_like())
        dec = s1._decode_sync(s2._decode_sync(enc, spec2), spec)
        outs.append((enc_np, to_np(dec.as_ndarray_like())))
    assert same(outs[0][0], outs[1][0]) and same(outs[0][1], outs[1][1])
    assert DeviceNDBuffer.host_copies == 0


# --- the core kernels, on the stand-in and on numpy's own namespace ------------------------------

NAMESPACES = [pytest.param((xp, on_device, to_host), id="array_api_strict"),
              pytest.param((np, np.asarray, np.asarray), id="numpy")]


@pytest.mark.parametrize("ns", NAMESPACES)
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS))
@pytest.mark.parametrize("direction", ["encode", "decode"])
def test_scale_offset_kernel(ns: Any, dtype: str, direction: str) -> None:
    mod, put, get = ns
    if mod is xp and dtype == "float16":
        pytest.skip("array_api_strict has no float16")
    params = ((0, 1), (3, 2), (1, 3)) if dtype.startswith("u") else ((0, 1), (3, 2), (-1, 1), (7, -1))
    for off, sc in params:
        for v in (values(dtype), finite(dtype)):
            off_k, sc_k = so_core.check_parameters(np.dtype(dtype), off, sc)
            bounds = so_core.integer_bounds(np.dtype(dtype), off_k, sc_k, direction)
            r = device.scale_offset(mod, put(v), np.dtype(dtype), off_k, sc_k, direction, bounds)
            cpu = outcome(lambda: getattr(so_core, direction)(v, off, sc))
            if r is None:
                assert v is not finite(dtype) or cpu[0] == "error" or direction == "decode", (off, sc)
                continue
            assert cpu[0] == "ok" and same(cpu[1], get(r)), (off, sc, v)


@pytest.mark.parametrize("dtype", (*FLOATS, *INTS))
@pytest.mark.parametrize("keepbits", [0, 1, 3, 10, 60])
def test_bitround_kernel(dtype: str, keepbits: int) -> None:
    """Bit reinterpretation is not in the array API: numpy's namespace (which has ``view``, as
    cupy has) runs the kernel; the strict stand-in declines, and the codec goes to the host."""
    dt = np.dtype(dtype)
    p = bitround_plan(dt)
    v = values(dtype)
    r = device.bitround(np, v, dt, keepbits, p.mantissa, p.precision)
    assert r is not None
    assert same(cpu_bitround(v, keepbits), r)
    if dtype != "float16":  # (array_api_strict has no float16)
        declined = device.bitround(xp, on_device(v), dt, keepbits, p.mantissa, p.precision)
        assert declined is None or keepbits >= p.precision


ROUNDINGS = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")


@pytest.mark.parametrize("ns", NAMESPACES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("mode", [None, "clamp", "wrap"])
def test_cast_kernel(ns: Any, rounding: str, mode: Any) -> None:
    mod, put, get = ns
    ran = 0
    for src in (*FLOATS, *INTS):
        for tgt in (*FLOATS, *INTS):
            if mod is xp and "float16" in (src, tgt):
                continue
            if src == tgt or (mode == "wrap" and tgt in FLOATS):
                continue
            sd, td = np.dtype(src), np.dtype(tgt)
            maps: list[list[Any]] = [[]]
            if src in FLOATS and tgt in INTS:
                maps.append([(np.array(np.nan, sd), np.array(0, td)),
                             (np.array(2.5, sd), np.array(7, td))])
            for pairs in maps:
                pm = PreparedMap(pairs, sd, td)
                for v in (values(src), finite(src)):
                    cpu = outcome(lambda: cast_array(v, td, rounding=rounding, out_of_range=mode,
                                                     scalar_map=pm))
                    exact = is_exact_cast(numeric_info(sd), numeric_info(td))
                    r = device.cast(mod, put(v), sd, td, rounding=rounding, out_of_range=mode,
                                    scalar_map=pm, exact=exact)
                    if r is None:
                        continue
                    ran += 1
                    assert cpu[0] == "ok", (src, tgt, pairs, v, cpu)
                    assert same(cpu[1], get(r)), (src, tgt, rounding, mode, v, cpu[1], get(r))
    assert ran >= 70  # the common casts (74 to 190 here; float32/float64 chunks with subnormals decline)


def test_namespace_of_numpy_is_the_host_path() -> None:
    assert device.namespace(np.arange(3)) is None
    assert device.namespace(np.float32(1)) is None
    assert device.namespace(on_device(np.arange(3))) is not None
    assert math.prod(()) == 1


def test_info_says_which_codecs_run_on_the_device() -> None:
    from numcodecs_ext.tools.info import format_info, info

    found = info()
    names = found["zarr_names"]
    assert {n for n, e in names.items() if e["gpu"] == "host"} == {
        "zfp", "zarrs.zfp", "numcodecs.zfp"}
    assert names["transpose"]["gpu"] == names["numcodecs.cast_value"]["gpu"] == "device"
    lines = format_info(found)
    at = lines.index("zarr's GPU mode (zarr.config.enable_gpu(), cupy chunks):")
    assert lines[at + 1].startswith("  on the device: transpose, numcodecs.transpose, scale_offset")
    assert lines[at + 2].endswith("zfp, zarrs.zfp, numcodecs.zfp")
    # every codec the tests above run through the stand-in says how it runs there
    for name, path in ZARR.items():
        kind = load_class(path).numcodecs_class.device_support
        assert kind == names[name]["gpu"]


class _Without:
    """A namespace lacking some functions (an older library): kernels that need them decline."""

    def __init__(self, xp: Any, *missing: str) -> None:
        self._xp, self._missing = xp, missing

    def __getattr__(self, name: str) -> Any:
        if name in self._missing:
            raise AttributeError(name)
        return getattr(self._xp, name)


def test_a_namespace_without_a_function_declines() -> None:
    a = on_device(np.arange(6.0).reshape(2, 3))
    assert device.transpose(_Without(xp, "permute_dims"), a, (1, 0)) is None
    assert device.transpose(_Without(xp), a, (1, 0)) is not None
    pm = PreparedMap([], np.dtype("float64"), np.dtype("uint8"))
    kw = dict(rounding="nearest-even", out_of_range="clamp", scalar_map=pm, exact=False)
    assert device.cast(_Without(xp, "astype"), a, np.dtype("float64"), np.dtype("uint8"), **kw) is None
    got = device.cast(_Without(xp), a, np.dtype("float64"), np.dtype("uint8"), **kw)
    assert same(to_host(got), np.arange(6, dtype="uint8").reshape(2, 3))


PACK_CASES = [("bool", None, None), ("uint8", None, 2), ("uint8", 1, 5), ("int8", None, 3),
              ("int16", 2, 9), ("uint16", None, None), ("int32", None, None), ("int32", 4, 30),
              ("uint64", None, None), ("int64", None, None), ("int64", 3, 40), ("uint32", 0, 16)]


@pytest.mark.parametrize("ns", NAMESPACES)
@pytest.mark.parametrize("dtype,first,last", PACK_CASES)
@pytest.mark.parametrize("padding", ["none", "first_byte", "last_byte"])
def test_packbits_kernels(ns: Any, dtype: str, first: Any, last: Any, padding: str) -> None:
    from numcodecs_ext.core import packbits as pb

    mod, put, get = ns
    dt = np.dtype(dtype)
    f, la = pb.check_bits(dt, first, last)
    if dt.kind == "b":
        v = np.array([1, 0, 1, 1, 0, 0, 1], bool)
    else:
        lo, hi = (-(1 << la), (1 << la) - 1) if dt.kind == "i" else (0, (1 << (la + 1)) - 1)
        v = np.array([lo, hi, 0, 1, lo // 3, hi // 5, hi - 1], dtype=dt) >> f << f
    for data in (v, v[:1], v[:5]):
        cpu = pb.pack(data, f, la, padding)
        packed = device.pack(mod, put(data), dt, f, la, padding)
        full_signed = dt.kind == "i" and la - f + 1 == 8 * dt.itemsize
        if packed is None:  # bit reinterpretation of a full-width signed type: numpy only
            assert mod is xp and full_signed
            continue
        assert same(cpu, get(packed))
        back = device.unpack(mod, put(cpu), dt, data.size, f, la, padding)
        if back is None:
            assert mod is xp and full_signed
            continue
        assert same(pb.unpack(cpu, dt, data.size, f, la, padding), get(back))
    if dt.kind in "iu" and la < 8 * dt.itemsize - 1:  # a value that does not fit: declined
        assert device.pack(mod, put(np.array([hi + 1], dt)), dt, f, la, padding) is None
    if padding != "none":  # a corrupt padding byte: declined (the CPU path raises)
        bad = pb.pack(v, f, la, padding).copy()
        bad[0 if padding == "first_byte" else -1] ^= 8
        assert device.unpack(mod, put(bad), dt, v.size, f, la, padding) is None


def _old_numpy_like() -> Any:
    """numpy's module without the array API's own spellings, as older cupy's is."""
    import types

    hidden = {"permute_dims", "concat", "astype", "bitwise_left_shift", "bitwise_right_shift",
              "__array_namespace_info__"}
    return types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np)
                                    if not k.startswith("_") and k not in hidden})


def test_a_numpy_like_module_serves_as_the_namespace() -> None:
    from numcodecs_ext.core import packbits as pb

    mod = device.ModuleNamespace(_old_numpy_like())
    a = np.arange(24.0).reshape(2, 3, 4)
    assert same(device.transpose(mod, a, (2, 0, 1)), a.transpose(2, 0, 1))
    pm = PreparedMap([], np.dtype("float64"), np.dtype("int16"))
    v = np.array([-2.5, 0.5, 1.5, 1e6, -0.0])
    got = device.cast(mod, v, np.dtype("float64"), np.dtype("int16"), rounding="nearest-away",
                      out_of_range="clamp", scalar_map=pm, exact=False)
    assert same(got, cast_array(v, "int16", rounding="nearest-away", out_of_range="clamp"))
    u = np.array([1, 5, 7, 0, 3], "uint8")
    packed = device.pack(mod, u, np.dtype("uint8"), 0, 2, "last_byte")
    assert same(packed, pb.pack(u, 0, 2, "last_byte"))
    assert same(device.unpack(mod, packed, np.dtype("uint8"), 5, 0, 2, "last_byte"), u)
    keep = bitround_plan(np.dtype("float32"))
    f = np.array([1.2345, -7.5e-3, np.inf], "float32")
    assert same(device.bitround(mod, f, np.dtype("float32"), 4, keep.mantissa, keep.precision),
                cpu_bitround(f, 4))
