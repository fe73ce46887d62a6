"""Every codec refuses every invalid configuration the same way, whichever way it is made.

The surfaces: the numcodecs class called directly, ``numcodecs.get_codec`` with the codec's id
(and aliases), the zarr v3 class from its zarr.json entry (``from_dict``, under every name it
reads: the spec name and zarr's ``numcodecs.<id>`` adapter name) and called with configuration
keywords. Whatever is wrong (a wrong type: str, float, bool, None, list, dict, bytes, a numpy
scalar; a number out of range; an unknown or a missing key), the refusal is a ValueError whose
message starts with ``codec '<name>': `` (the name the codec was addressed by), names the key,
and shows no numpy repr.
"""

from __future__ import annotations

import math

import numcodecs
import numpy as np
import pytest
from zarr.registry import get_codec_class

import numcodecs_ext  # noqa: F401 - registers the codecs

NAN = float("nan")
#: wrong for every key below (each key's own catalogue adds values wrong for it only)
GENERIC = ["abc", "", b"x", {"a": 1}, NAN, math.inf, -math.inf, np.float64(NAN), object()]

#: codec -> (numcodecs ids, zarr v3 names, a valid base configuration, {key: bad values},
#:           numcodecs-only keys (not in zarr v3 configurations), required keys)
CATALOGUE = {
    "transpose": (
        ["transpose"], ["transpose", "numcodecs.transpose"], {"order": [1, 0]},
        {"order": [None, True, 2.5, -1, 2**70, [1], {}, np.float32(-7.5), [0, 0], [0, 2], [-1, 0],
                   ["a", "b"], [0.0, 1.0],
                   [True, False], "X", "CF"],
         "shape": [True, 2.5, -1, [1], {}, [-1, 2], [2.5, 2], "ab", [1, 2, 3]],
         "dtype": [True, 2.5, -1, [1], {}, "float99", np.float32(3.0)]},
        ["shape", "dtype"], ["order"]),
    "scale_offset": (
        ["scale_offset"], ["scale_offset", "numcodecs.scale_offset"], {},
        {"offset": [None, [1.0], (1, 2), {}, "NaN", "Infinity", "0xzz", "nan", "1e999"],
         "scale": [None, [1.0], (1, 2), {}, 0, 0.0, False, "0x0", "NaN", "-Infinity", "1e999"],
         "dtype": [True, 2.5, "complex64", "bool", "float99", np.float64(1.0)]},
        ["dtype"], []),
    "cast_value": (
        ["cast_value"], ["cast_value", "numcodecs.cast_value"], {"data_type": "uint8"},
        {"data_type": [None, True, 2.5, -1, [1], {}, np.float32(-7.5), "complex64", "bool", "float99",
                       "uint8x", np.float64(NAN)],
         "rounding": [None, True, 2.5, [1], {}, "up", "NEAREST-EVEN"],
         "out_of_range": [True, 2.5, [1], {}, "saturate", "CLAMP"],
         "scalar_map": [True, 2.5, "x", [1], {"encode": 5}, {"foo": []}, {"encode": [[1]]},
                        {"encode": [["NaN", 300]]}, {"decode": [[1, "x"]]}, {"encode": [[1, 2, 3]]}],
         "dtype": [True, 2.5, "complex64", "float99"]},
        ["dtype"], ["data_type"]),
    "zfp (fixed_accuracy)": (
        ["zfp", "zarrs.zfp"], ["zfp", "zarrs.zfp", "numcodecs.zfp"], {"mode": "fixed_accuracy", "tolerance": 1e-3},
        {"mode": [None, True, 2.5, [1], {}, "fast", "", "REVERSIBLE"],
         "tolerance": [None, True, [1], {}, np.float32(-7.5), "1e-3", -1.0, -1e-300],
         "shape": [True, 2.5, [-1], [1, 2, 3, 4, 5], "ab", [2.5]],
         "dtype": [True, 2.5, "complex64", "float99", "bool"]},
        ["shape", "dtype"], ["mode"]),
    "zfp (fixed_rate)": (
        ["zfp"], ["zfp", "numcodecs.zfp"], {"mode": "fixed_rate", "rate": 8},
        {"rate": [None, True, "8", 0, -1, 1e9]}, [], ["mode"]),
    "zfp (fixed_precision)": (
        ["zfp"], ["zfp", "numcodecs.zfp"], {"mode": "fixed_precision", "precision": 8},
        {"precision": [None, True, "8", 0, 65, 2.5, -1]}, [], ["mode"]),
    "zfp (expert)": (
        ["zfp"], ["zfp", "numcodecs.zfp"],
        {"mode": "expert", "minbits": 0, "maxbits": 100, "maxprec": 32, "minexp": -100},
        {"minbits": [None, True, "0", 101, 1.5, -1], "maxbits": [None, True, 0, 2**33, 1.5],
         "maxprec": [None, True, 0, 65, 1.5], "minexp": [None, True, 2**40, 1.5]}, [], ["mode"]),
    "bitround": (
        ["numcodecs_ext.bitround"], ["bitround", "numcodecs.bitround"], {"keepbits": 3},
        {"keepbits": [None, True, -1, [1], {}, np.float32(-7.5), 2**33, 3.0, 2.5, "3"],
         "dtype": [True, 2.5, "bool", "float99"]},
        ["dtype"], ["keepbits"]),
    "packbits": (
        ["numcodecs_ext.packbits"], ["packbits"], {},
        {"padding_encoding": [None, True, 2.5, [1], {}, "start", "", "NONE"],
         "first_bit": [True, 2.5, 3.0, -1, 64, "3", [1], {}], "last_bit": [True, 2.5, -1, 64, "3", [1], {}],
         "bit_order": [None, True, 2.5, [1], {}, "middle", "LITTLE"],
         "dtype": [True, 2.5, "float99", "V3"], "shape": [True, 2.5, [-1], "ab", [2.5]]},
        ["bit_order", "dtype", "shape"], []),
    "packbits (first above last)": (
        ["numcodecs_ext.packbits"], ["packbits"], {"first_bit": 4}, {"last_bit": [2, 0]}, [], []),
    "reshape": (
        ["reshape"], ["reshape", "numcodecs.reshape"], {"shape": [[0, 1], -1]},
        {"shape": [None, True, 2.5, -1, {}, np.float32(-7.5), [-1, -1], [0], [[1, 0]], [[0], [0]], [2.5],
                   "abc", [[-1]], [True]],
         "input_shape": [True, 2.5, [-1], "ab", [2.5], [1]],
         "dtype": [True, 2.5, "float99"]},
        ["input_shape", "dtype"], ["shape"]),
}


def _cases():
    for codec, (ids, names, base, bad, numcodecs_only, _) in CATALOGUE.items():
        for key, values in bad.items():
            for value in [*GENERIC, *values]:
                if value is None and key not in CATALOGUE[codec][5]:
                    continue
                config = {**base, key: value}
                # an id that is the same in every process (pytest-xdist compares them): no address
                shown = "object()" if type(value) is object else repr(value)
                for codec_id in ids:
                    yield pytest.param("numcodecs", codec_id, key, config, id=f"{codec_id}-{key}-{shown}")
                if key in numcodecs_only:
                    continue
                for name in names:
                    yield pytest.param("zarr", name, key, config, id=f"v3:{name}-{key}-{shown}")


def _numcodecs_class(codec_id: str):
    from numcodecs_ext.codecs.bitround import BitRound
    from numcodecs_ext.codecs.cast_value import CastValue
    from numcodecs_ext.codecs.packbits import PackBits
    from numcodecs_ext.codecs.reshape import Reshape
    from numcodecs_ext.codecs.scale_offset import ScaleOffset
    from numcodecs_ext.codecs.transpose import Transpose
    from numcodecs_ext.codecs.zfp import Zfp

    classes = {c.codec_id: c for c in (BitRound, CastValue, PackBits, Reshape, ScaleOffset, Transpose, Zfp)}
    classes["zarrs.zfp"] = Zfp
    return classes[codec_id]


def _refused(make, name: str, key: str) -> str:
    with pytest.raises(Exception) as caught:
        make()
    e = caught.value
    assert type(e) is ValueError or isinstance(e, ValueError), f"{type(e).__name__}: {e}"
    message = str(e)
    assert message.startswith(f"codec '{name}': "), message
    assert key in message, message
    assert "np." not in message and "numpy." not in message, message
    return message


@pytest.mark.parametrize("surface, name, key, config", list(_cases()))
def test_every_invalid_configuration_is_a_prefixed_value_error(surface, name, key, config) -> None:
    if surface == "numcodecs":
        cls = _numcodecs_class(name)
        # numcodecs.get_codec drops the id before from_config: the codec's own id prefixes
        _refused(lambda: numcodecs.get_codec({"id": name, **config}), cls.codec_id, key)
        _refused(lambda: cls(**config), cls.codec_id, key)
        _refused(lambda: cls.from_config({"id": cls.codec_id, **config}), cls.codec_id, key)
    else:
        cls = get_codec_class(name)
        _refused(lambda: cls.from_dict({"name": name, "configuration": config}), name, key)
        _refused(lambda: cls(name=name, **config), name, key)


def _surfaces():
    for codec, (ids, names, base, _, _, required) in CATALOGUE.items():
        if "(" in codec and "zfp" not in codec:
            continue
        for codec_id in ids:
            yield pytest.param("numcodecs", codec_id, base, required, id=f"{codec_id}")
        for name in names:
            yield pytest.param("zarr", name, base, required, id=f"v3:{name}-{codec}")


@pytest.mark.parametrize("surface, name, base, required", list(_surfaces()))
def test_unknown_and_missing_keys_and_malformed_entries(surface, name, base, required) -> None:
    if surface == "numcodecs":
        cls = _numcodecs_class(name)
        valid = cls.config_keys()
        message = _refused(lambda: numcodecs.get_codec({"id": name, **base, "bogus": 1}), cls.codec_id, "bogus")
        assert "valid keys are" in message and all(k in message for k in valid)
        _refused(lambda: cls(**base, bogus=1), cls.codec_id, "bogus")
        _refused(lambda: cls(*range(len(valid) + 1)), cls.codec_id, valid[0])  # too many positional
        for key in required:
            rest = {k: v for k, v in base.items() if k != key}
            _refused(lambda: numcodecs.get_codec({"id": name, **rest}), cls.codec_id, key)
            _refused(lambda: cls(**rest), cls.codec_id, key)
        _refused(lambda: cls.from_config([("id", name)]), cls.codec_id, "configuration")
    else:
        cls = get_codec_class(name)
        _refused(lambda: cls.from_dict({"name": name, "configuration": {**base, "bogus": 1}}), name, "bogus")
        _refused(lambda: cls(name=name, **base, bogus=1), name, "bogus")
        _refused(lambda: cls.from_dict({"name": name, "configuration": [1]}), name, "configuration")
        _refused(lambda: cls.from_dict({"name": name, "configuration": base, "extra": 1}), name, "extra")
        _refused(lambda: cls(name="no-such-name", **base), cls._default_name(), "name")
        _refused(lambda: cls(name=name, codec=object()), name, "codec=")
        for key in required:
            rest = {k: v for k, v in base.items() if k != key}
            _refused(lambda: cls.from_dict({"name": name, "configuration": rest}), name, key)
            _refused(lambda: cls(name=name, **rest), name, key)


@pytest.mark.parametrize("make, message", [
    # the examples, word for word where it matters
    (lambda: _numcodecs_class("zfp")(mode="fixed_accuracy", tolerance="1e-3"),
     "codec 'zfp': zfp mode 'fixed_accuracy': 'tolerance' must be a number, got '1e-3'"),
    (lambda: _numcodecs_class("numcodecs_ext.packbits")(dtype="V3"),
     "codec 'numcodecs_ext.packbits': dtype='V3' is not valid: packbits does not support"),
    (lambda: get_codec_class("packbits")(first_bit=np.int64(70)),
     "codec 'packbits': first_bit=70 is not valid; first_bit must be null or a bit index from 0"),
    (lambda: get_codec_class("numcodecs.zfp").from_dict(
        {"name": "numcodecs.zfp", "configuration": {"mode": "fixed_rate", "rate": np.float64(NAN)}}),
     "codec 'numcodecs.zfp': zfp mode 'fixed_rate': 'rate' must be finite, got nan"),
    (lambda: get_codec_class("transpose")(order=[0, 0]), "codec 'transpose': order=[0, 0] is not valid; use"),
])
def test_refusals_read_well(make, message) -> None:
    with pytest.raises(ValueError) as e:
        make()
    assert str(e.value).startswith(message), str(e.value)


def test_valid_configurations_still_build_everywhere() -> None:
    for codec, (ids, names, base, _, numcodecs_only, _) in CATALOGUE.items():
        if "first above last" in codec:
            continue
        for codec_id in ids:
            c = numcodecs.get_codec({"id": codec_id, **base})
            assert numcodecs.get_codec(c.get_config()) == c
        for name in names:
            c = get_codec_class(name).from_dict({"name": name, "configuration": base})
            assert c.to_dict()["name"] == name
