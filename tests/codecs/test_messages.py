"""Every refusal of every codec reads as one short sentence built where the facts are known.

Invalid configurations (the whole catalogue of test_codec_refusals, on every numcodecs and zarr v3
surface) and values a codec cannot represent (data, fill values) all give a message of at most
200 characters, with no numpy repr (``np.float64(...)``), one ``codec '<name>': `` prefix at most,
and the key or the value it is about.
"""

from __future__ import annotations

import re

import numcodecs
import numpy as np
import pytest
from zarr.registry import get_codec_class

from numcodecs_ext.codecs.bitround import BitRound
from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.packbits import PackBits
from numcodecs_ext.codecs.reshape import Reshape
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.codecs.transpose import Transpose
from numcodecs_ext.codecs.zfp import Zfp
from numcodecs_ext.core import zfp as zfp_core
from numcodecs_ext.core.dtypes import parse_dtype, scalar_text, show
from numcodecs_ext.core.scalar_json import scalar_from_json

from .test_codec_refusals import CATALOGUE, GENERIC, _numcodecs_class

LIMIT = 200
NUMPY_REPR = re.compile(r"\bnp\.|numpy\.|dtype\(|<object object at")


def _message(make) -> str:
    with pytest.raises((ValueError, TypeError)) as caught:
        make()
    return str(caught.value)


def _reads_well(message: str, *names: str) -> None:
    assert len(message) <= LIMIT, f"{len(message)} characters: {message}"
    assert not NUMPY_REPR.search(message), message
    assert message.count("codec '") <= 1, message
    assert any(n in message for n in names), (names, message)


def _config_cases():
    for codec, (ids, names, base, bad, numcodecs_only, required) in CATALOGUE.items():
        for key, values in bad.items():
            for i, value in enumerate([*GENERIC, *values]):
                if value is None and key not in required:
                    continue
                config = {**base, key: value}
                yield pytest.param(ids, [] if key in numcodecs_only else names, key, config,
                                   id=f"{codec}-{key}-{i}")


@pytest.mark.parametrize("ids, names, key, config", list(_config_cases()))
def test_configuration_refusals_are_short_and_plain(ids, names, key, config) -> None:
    for codec_id in ids:
        cls = _numcodecs_class(codec_id)
        _reads_well(_message(lambda: cls(**config)), key)
        _reads_well(_message(lambda: numcodecs.get_codec({"id": codec_id, **config})), key)
    for name in names:
        cls = get_codec_class(name)
        _reads_well(_message(lambda: cls.from_dict({"name": name, "configuration": config})), key)
        _reads_well(_message(lambda: cls(name=name, **config)), key)


_LOSSY = {"mode": "fixed_accuracy", "tolerance": 1e-3}

#: (codec, array, value the message must name): data a codec cannot encode
VALUES = [
    (Zfp(**_LOSSY), np.array([1.0, np.nan, 2.0, 3.0]), "NaN"),
    (Zfp(**_LOSSY), np.array([1.0, 2.0**1023, 2.0, 3.0]), "2**1022"),
    (Zfp(**_LOSSY), np.array([1e-300, 0.0, 0.0, 0.0]), "block"),
    (Zfp(mode="fixed_precision", precision=32), np.array([0, 2**62], dtype="int64"), "2**62"),
    (Zfp(mode="fixed_precision", precision=32), np.array([0, 2**30], dtype="int32"), "2**30"),
    (Zfp(mode="reversible"), np.array([2**32 - 1, 0], dtype="uint32"), "4294967295"),
    (Zfp(mode="fixed_precision", precision=2), np.array([1, 2], dtype="int16"), "precision 2"),
    (Zfp(mode="fixed_rate", rate=260), np.zeros(4, dtype="int8"), "rate"),
    (Zfp(mode="expert", minbits=0, maxbits=100, maxprec=64, minexp=-1075), np.zeros(4), "maxbits"),
    (Zfp(mode="reversible"), np.zeros((1, 1, 1, 1, 2)), "5"),
    (CastValue(data_type="uint8", dtype="float64"), np.array([1.0, 300.0]), "300"),
    (CastValue(data_type="uint8", dtype="float64"), np.array([np.nan]), "NaN"),
    (CastValue(data_type="int8", dtype="float32"), np.array([np.float32(-np.inf)]), "Infinity"),
    (CastValue(data_type="uint16", scalar_map={"decode": [[1000, 0]]}, dtype="float64"), np.array([1000.0]),
     "1000"),
    (CastValue(data_type="uint8"), np.array([1.0]), "dtype='float64'"),
    (ScaleOffset(offset=1, scale=2), np.array([1.0]), "dtype='float64'"),
    (ScaleOffset(offset=0, scale=1, dtype="uint8"), np.array([1, 2], dtype="int16"), "int16"),
    (PackBits(last_bit=3, dtype="uint8", shape=[2]), np.array([1, 200], dtype="uint8"), "200"),
    (PackBits(last_bit=3, dtype="uint8"), np.array([1, 2], dtype="uint8"), "shape=[2]"),
    (BitRound(keepbits=3), np.array([True]), "bool"),
    (Reshape(shape=[5, -1]), np.zeros((4, 3)), "[5, -1]"),
    (Transpose(order=[1, 0]), np.zeros(3), "order"),
]


@pytest.mark.parametrize("codec, arr, named", VALUES, ids=lambda v: str(v)[:40] if isinstance(v, str) else None)
def test_unencodable_values_are_short_and_plain(codec, arr, named) -> None:
    _reads_well(_message(lambda: codec.encode(arr)), named)


#: (codec, array dtype, fill value, what the message must name): fill values a codec refuses
FILLS = [
    (CastValue(data_type="uint16"), "float64", -20000.0, "-20000"),
    (CastValue(data_type="uint16"), "float32", np.float32(np.nan), "NaN"),
    (CastValue(data_type="uint8", out_of_range="clamp"), "float64", 1000.5, "1000.5"),
    (CastValue(data_type="float16"), "float64", 0.1, "0.1"),
    (ScaleOffset(offset=0, scale=1e300), "float64", 1e300, "1e+300"),
    (BitRound(keepbits=2), "float32", 1.2345, "1.2345"),
    (PackBits(first_bit=4), "uint8", 7, "7"),
    (PackBits(last_bit=3), "uint8", 200, "200"),
]


@pytest.mark.parametrize("codec, dtype, fill, named", FILLS)
def test_refused_fill_values_are_short_and_plain(codec, dtype, fill, named) -> None:
    fill = np.asarray(fill, dtype=dtype)[()]  # a numpy scalar, as zarr gives it
    _reads_well(_message(lambda: codec.resolve_spec((4,), np.dtype(dtype), fill, strict=True)), named)


@pytest.mark.parametrize("data, dtype", [
    ("NaN", "uint8"), ("Infinity", "int16"), (300, "uint8"), (1e39, "float32"), (2.5, "int8"),
    ("0x7fc0", "float32"), ("0xzz", "float64"), ([1, 2, 3], "complex64"), ("abc", "bool"),
    (np.float64(-1.0), "uint16"), (1e39, "bfloat16"), (-1.0, "float8_e8m0fnu"),
])
def test_fill_value_json_refusals_are_short_and_plain(data, dtype) -> None:
    if dtype in ("bfloat16", "float8_e8m0fnu"):
        pytest.importorskip("ml_dtypes")
    _reads_well(_message(lambda: scalar_from_json(data, dtype, what="fill_value")), "fill_value")


@pytest.mark.parametrize("value", ["float99", "<U3", None, 3.5, object()])
def test_unknown_data_types_name_the_valid_ones(value) -> None:
    message = _message(lambda: parse_dtype(value))
    _reads_well(message, "valid names are bool", "give a zarr v3 name")


def test_zfp_refusals_name_the_key_and_value() -> None:
    message = _message(lambda: zfp_core.check_config({"mode": "fixed_rate", "rate": np.float64(-20000.0)}))
    _reads_well(message, "'rate' = -20000.0")
    message = _message(lambda: zfp_core.check_config({"mode": "expert", "minbits": 5, "maxbits": 4,
                                                      "maxprec": 64, "minexp": 0}))
    _reads_well(message, "'minbits' = 5 must not exceed 'maxbits' = 4")


def test_the_scalar_helpers_never_show_numpy_reprs() -> None:
    assert show(np.float64(-20000.0)) == "-20000.0"
    assert show([np.uint16(0), np.True_, np.float32(0.5)]) == "[0, True, 0.5]"
    assert show(object()) == "<object object>"
    assert scalar_text(np.float32(1000), "float32") == "1000"
    assert scalar_text(np.array(0x7FC00001, np.uint32).view(np.float32), "float32") == "0x7fc00001"
    assert scalar_text(-np.inf, "float16") == "-Infinity"
