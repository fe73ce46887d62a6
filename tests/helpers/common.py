"""Checks every codec of the collection must pass (used by test_contract and per-codec tests)."""

from __future__ import annotations

import array
import json
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numcodecs
import numpy as np
import pytest

from numcodecs_ext.codecs._base import ExtCodec


def assert_same(actual: Any, expected: np.ndarray, tolerance: float = 0.0) -> None:
    """Equal values (NaN equal to NaN, bitwise for exact cases) and the expected shape/dtype."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if tolerance == 0:
        assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()
    else:
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        assert np.array_equal(np.isnan(a), np.isnan(e))
        finite = ~np.isnan(e)
        assert np.max(np.abs(a[finite] - e[finite]), initial=0) <= tolerance


def encoded_bytes(encoded: Any) -> bytes:
    """The bytes a codec's encode output stands for (arrays in C order, native byte order)."""
    if isinstance(encoded, np.ndarray):
        native = encoded.dtype.newbyteorder("=") if encoded.dtype.byteorder not in "|=" else encoded.dtype
        return np.ascontiguousarray(encoded, dtype=native).tobytes()
    return bytes(encoded)


def check_config(codec: ExtCodec) -> None:
    config = codec.get_config()
    again = json.loads(json.dumps(config))
    assert again == config
    assert numcodecs.get_codec(dict(again)) == codec
    assert type(codec).from_config(dict(again)) == codec
    assert hash(numcodecs.get_codec(dict(again))) == hash(codec)


def check_repr(codec: ExtCodec) -> None:
    text = repr(codec)
    assert text.startswith(type(codec).__name__ + "(")
    for key, value in codec.get_config().items():
        if key != "id":
            assert f"{key}=" in text


def check_pickle(codec: ExtCodec, arr: np.ndarray) -> None:
    clone = pickle.loads(pickle.dumps(codec))
    assert clone == codec
    assert encoded_bytes(clone.encode(arr)) == encoded_bytes(codec.encode(arr))


def check_encode_decode(codec: ExtCodec, arr: np.ndarray, tolerance: float, decode_kwargs: dict[str, Any]) -> None:
    """Round trip through the array and through bytes, bytearray and array.array inputs."""
    enc = codec.encode(arr.copy())
    raw = encoded_bytes(enc)
    assert_same(codec.decode(enc, **decode_kwargs), arr, tolerance)
    for buf in (raw, bytearray(raw), array.array("b", raw)):
        assert_same(codec.decode(buf, **decode_kwargs), arr, tolerance)
    # Element-wise codecs encode Fortran-ordered input to the same values, in Fortran order (as
    # zarr v2 arrays with order="F" need); shape-aware codecs refuse it with a clear error.
    if arr.ndim >= 2:
        fortran = np.asfortranarray(arr)
        if codec.elementwise:
            enc_f = codec.encode(fortran)
            assert encoded_bytes(enc_f) == raw
            assert np.asarray(enc_f).flags.f_contiguous
            dec_f = codec.decode(enc_f)  if codec.dtype is not None else None
            if dec_f is not None:
                assert_same(np.ascontiguousarray(dec_f), arr, tolerance)
        else:
            with pytest.raises(ValueError, match="Fortran-ordered"):
                codec.encode(fortran)
        strided = np.repeat(arr, 2, axis=-1)[..., ::2]  # neither C- nor F-contiguous: by value
        assert encoded_bytes(codec.encode(strided)) == raw
    # Byte-swapped input: by value, unless a configured dtype says decode() must return the
    # native order (then it is refused: zarr v2 would read garbage back).
    if arr.dtype.itemsize > 1 and arr.dtype.kind in "iuf":
        big = arr.astype(arr.dtype.newbyteorder(">"))
        if codec.dtype is None:
            assert encoded_bytes(codec.encode(big)) == raw
        else:
            with pytest.raises(ValueError, match="byte order"):
                codec.encode(big)


def check_threads(
    codec: ExtCodec, arr: np.ndarray, decode_kwargs: Callable[[np.ndarray], dict[str, Any]], workers: int = 8
) -> None:
    """Many threads encoding and decoding at once give the single-threaded results."""
    expected = encoded_bytes(codec.encode(arr))
    expected_dec = np.asarray(codec.decode(expected, **decode_kwargs(arr))).tobytes()

    def work(_: int) -> tuple[bytes, bytes]:
        enc = encoded_bytes(codec.encode(arr))
        dec = np.asarray(codec.decode(enc, **decode_kwargs(arr))).tobytes()
        return enc, dec

    with ThreadPoolExecutor(workers) as pool:
        for enc, dec in pool.map(work, range(64)):
            assert enc == expected
            assert dec == expected_dec
