"""The numcodecs Codec contract, for every codec: any buffer in, any ``out=`` filled right.

Codecs here carry what decoding bytes needs (``dtype``, and ``shape`` for the shape-aware
``transpose`` and ``zfp``), as numcodecs codecs do. Inputs: ndarrays in every layout (Fortran
order only for the element-wise codecs, which keep it; the shape-aware ones refuse it, see
README), bytes, bytearray, array.array, memoryview, unaligned views. Outputs: C- and
Fortran-ordered, strided, byte-swapped and unaligned ndarrays, bytearray, array.array, and an
``out`` that is the input buffer itself. numcodecs' own helpers run too where the installed
numcodecs ships them (0.16.x).
"""

from __future__ import annotations

import array
from dataclasses import dataclass

import numcodecs
import numpy as np
import pytest

from numcodecs_ext import CastValue, ScaleOffset, Transpose, Zfp

rng = np.random.default_rng(7)


@dataclass
class Case:
    id: str
    codec: object
    array: np.ndarray
    tolerance: float = 0.0

    @property
    def elementwise(self) -> bool:
        return bool(getattr(self.codec, "elementwise", False))


def _field(shape, dtype="float64"):
    x = np.cumsum(rng.standard_normal(int(np.prod(shape)))).reshape(shape) if shape else np.array(1.5)
    return np.asarray(x, dtype=dtype)


_nan = _field((6, 7)) * 10 + 100
_nan[2, :3] = np.nan
CASES = [
    Case("scale_offset-f8", ScaleOffset(offset=-10, scale=0.5, dtype="float64"), np.round(_field((6, 7)) * 2) / 2),
    Case("scale_offset-u2", ScaleOffset(offset=1000, scale=2, dtype="uint16"),
         rng.integers(1000, 30000, (5, 9)).astype("uint16")),
    Case("scale_offset-0d", ScaleOffset(offset=1, scale=4, dtype="float32"), np.array(2.5, "float32")),
    Case("scale_offset-empty", ScaleOffset(offset=1, dtype="int32"), np.zeros((0, 3), "int32")),
    Case("cast_value-f8-u1", CastValue(data_type="uint8", out_of_range="clamp", dtype="float64",
                                       scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}),
         np.round(np.clip(_nan, 1, 255))),
    Case("cast_value-i4-i2", CastValue(data_type="int16", dtype="int32"),
         rng.integers(-30000, 30000, (7, 4)).astype("int32")),
    Case("cast_value-f4-bf16", CastValue(data_type="bfloat16", dtype="float32"),
         np.linspace(-3, 3, 24, dtype="float32").reshape(4, 6).astype("bfloat16").astype("float32")),
    Case("cast_value-0d", CastValue(data_type="uint8", dtype="int64"), np.array(200, "int64")),
    Case("transpose-2d", Transpose(order=[1, 0], shape=[6, 7], dtype="float64"), _field((6, 7))),
    Case("transpose-3d", Transpose(order=[2, 0, 1], shape=[3, 4, 5], dtype="int16"),
         rng.integers(-500, 500, (3, 4, 5)).astype("int16")),
    Case("transpose-F-u1", Transpose(order="F", shape=[4, 5, 6], dtype="uint8"),
         rng.integers(0, 255, (4, 5, 6)).astype("uint8")),
    Case("transpose-0d", Transpose(order=[], shape=[], dtype="float64"), np.array(3.25)),
    Case("transpose-empty", Transpose(order=[1, 0], shape=[0, 4], dtype="float32"), np.zeros((0, 4), "float32")),
    Case("zfp-reversible", Zfp(mode="reversible", shape=[6, 7], dtype="float64"), _field((6, 7))),
    Case("zfp-int16", Zfp(mode="reversible", shape=[5, 6, 7], dtype="int16"),
         rng.integers(-3000, 3000, (5, 6, 7)).astype("int16")),
    Case("zfp-accuracy", Zfp(mode="fixed_accuracy", tolerance=1e-3, shape=[9, 10], dtype="float32"),
         _field((9, 10), "float32"), tolerance=1e-3),
    Case("zfp-0d", Zfp(mode="reversible", shape=[], dtype="float32"), np.array(-7.5, "float32")),
]
cases = pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])


def same(got, expected: np.ndarray, tolerance: float = 0.0) -> None:
    """Equal by index (NaN equals NaN), same shape and dtype (any byte order)."""
    got = np.asarray(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype.newbyteorder("=") == expected.dtype.newbyteorder("="), (got.dtype, expected.dtype)
    if tolerance:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0, atol=tolerance)
    else:
        np.testing.assert_array_equal(got, expected)


def layouts(case: Case) -> list[np.ndarray]:
    a = case.array
    out = [a.copy(order="C")]
    if a.ndim >= 2 and case.elementwise:
        out.append(np.asfortranarray(a))
    if a.ndim >= 1 and a.size:
        out.append(np.repeat(a, 2, axis=-1)[..., ::2])  # strided: by value
    return out


def raw_kinds(data: bytes) -> list[object]:
    unaligned = np.frombuffer(b"\0" + data, np.uint8)[1:]
    return [data, bytearray(data), array.array("b", data), memoryview(data),
            np.frombuffer(data, np.uint8), unaligned]


def encoded_bytes(enc: object) -> bytes:
    """The bytes numcodecs' ensure_bytes gives (an array's memory, in its own order)."""
    return numcodecs.compat.ensure_bytes(enc)


@cases
def test_encode_accepts_every_buffer_kind(case: Case) -> None:
    reference = encoded_bytes(case.codec.encode(case.array.copy(order="C")))
    for a in layouts(case):
        enc = case.codec.encode(a)
        dec = case.codec.decode(enc)
        same(dec, case.array, case.tolerance)
        if a.flags.c_contiguous or not case.elementwise:
            assert (np.ascontiguousarray(np.asarray(enc)).tobytes() == reference if isinstance(enc, np.ndarray)
                    else bytes(enc) == reference)
    raw = case.array.tobytes()
    for buf in raw_kinds(raw)[:4]:  # bytes, bytearray, array.array, memoryview
        assert encoded_bytes(case.codec.encode(buf)) == reference


@cases
def test_decode_accepts_every_buffer_kind(case: Case) -> None:
    for a in layouts(case)[:2]:
        enc_bytes = encoded_bytes(case.codec.encode(a))
        for buf in raw_kinds(enc_bytes):
            dec = np.asarray(case.codec.decode(buf))
            # a flat result is the array in the encoded memory order (numcodecs' convention)
            order = "F" if (a.ndim >= 2 and a.flags.f_contiguous and not a.flags.c_contiguous) else "C"
            same(dec.reshape(-1, order="A").reshape(case.array.shape, order=order), case.array, case.tolerance)


def outs(case: Case, like: np.ndarray) -> list[tuple[str, object]]:
    a = case.array
    kinds: list[tuple[str, object]] = [("C", np.empty(a.shape, a.dtype))]
    if a.ndim >= 2:
        kinds.append(("F", np.empty(a.shape, a.dtype, order="F")))
    if a.ndim >= 1 and a.size:
        kinds.append(("strided", np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)[..., ::2]))
    if a.dtype.itemsize > 1 and a.dtype.kind in "iuf":
        kinds.append(("byte-swapped", np.empty(a.shape, a.dtype.newbyteorder())))
    kinds.append(("unaligned", np.frombuffer(bytearray(a.nbytes + 1), np.uint8)[1:].view(a.dtype).reshape(a.shape)))
    kinds.append(("bytearray", bytearray(a.nbytes)))
    kinds.append(("uint8", np.empty(a.nbytes, np.uint8)))
    if a.nbytes % 8 == 0:
        kinds.append(("array.array", array.array("d", bytes(a.nbytes))))
    return kinds


def fortran(a: np.ndarray) -> bool:
    return a.ndim >= 2 and a.flags.f_contiguous and not a.flags.c_contiguous


def check_filled(case: Case, a: np.ndarray, flat_source: bool, out: object) -> None:
    """What decode(source, out=out) must leave in ``out``.

    Values by index where ``out`` is an ndarray of the array's dtype and shape (for element-wise
    codecs only when the source is an array too); otherwise ``out``'s memory holds the decoded
    elements in the source's memory order (element-wise codecs: numcodecs' ndarray_copy) or in
    C order (shape-aware codecs, whose encoding is the C-ordered array)."""
    dtype_matches = isinstance(out, np.ndarray) and out.dtype.newbyteorder("=") == a.dtype.newbyteorder("=")
    if dtype_matches and out.shape == a.shape and not (case.elementwise and flat_source):
        same(out, case.array, case.tolerance)
        return
    if dtype_matches:
        contiguous = out.flags.c_contiguous or out.flags.f_contiguous
        memory = out.reshape(-1, order="A") if contiguous else out.reshape(-1)
    else:
        memory = np.frombuffer(bytes(memoryview(out).cast("B")), a.dtype)
    order = "F" if case.elementwise and fortran(a) else "C"
    same(memory, case.array.reshape(-1, order=order), case.tolerance)


@cases
def test_decode_fills_every_out_kind(case: Case) -> None:
    for a in layouts(case)[:2]:
        enc = case.codec.encode(a)
        enc_bytes = encoded_bytes(enc)
        for source in (enc, enc_bytes, bytearray(enc_bytes)):
            for _, out in outs(case, a):
                assert case.codec.decode(source, out=out) is out
                check_filled(case, a, not isinstance(source, np.ndarray), out)


@cases
def test_decode_into_its_own_input_buffer(case: Case) -> None:
    """out= may be the very buffer holding the encoded bytes (in-place decoding)."""
    enc_bytes = encoded_bytes(case.codec.encode(case.array.copy(order="C")))
    if len(enc_bytes) != case.array.nbytes:
        pytest.skip("encoded and decoded sizes differ")
    buf = bytearray(enc_bytes)
    case.codec.decode(buf, out=buf)
    same(np.frombuffer(bytes(buf), case.array.dtype).reshape(case.array.shape), case.array, case.tolerance)
    view = np.frombuffer(bytearray(enc_bytes), case.array.dtype).reshape(case.array.shape)
    case.codec.decode(view, out=view)
    same(view, case.array, case.tolerance)


def test_large_transpose_into_overlapping_out() -> None:
    """Above the tiled-copy threshold too (several hundred KiB), decoding into the input's
    own memory gives the right values."""
    a = np.arange(700 * 500, dtype="float64").reshape(700, 500)
    codec = Transpose(order=[1, 0], shape=[700, 500], dtype="float64")
    buf = np.ascontiguousarray(codec.encode(a)).reshape(-1).copy()
    out = buf.view().reshape(700, 500)
    codec.decode(buf, out=out)
    assert np.array_equal(out, a)


@cases
def test_wrong_sized_out_is_refused(case: Case) -> None:
    enc_bytes = encoded_bytes(case.codec.encode(case.array.copy(order="C")))
    with pytest.raises(ValueError):
        case.codec.decode(enc_bytes, out=bytearray(case.array.nbytes + 8))


# --- numcodecs' own helpers (shipped with numcodecs 0.16; not with 0.17) ----------------------

@cases
def test_numcodecs_helpers(case: Case) -> None:
    common = pytest.importorskip("numcodecs.tests.common")
    precision = None if not case.tolerance else 2
    for a in layouts(case)[:2]:
        common.check_encode_decode(a, case.codec, precision=precision)
        if not case.tolerance:
            common.check_encode_decode_array(a, case.codec)
    common.check_config(case.codec)


@cases
def test_repr_evaluates_to_an_equal_codec(case: Case) -> None:
    namespace = {"ScaleOffset": ScaleOffset, "CastValue": CastValue, "Transpose": Transpose, "Zfp": Zfp}
    assert eval(repr(case.codec), namespace) == case.codec
