"""inspect's formulas and numbers read as a person writes them: signs folded into the operator,
negative factors in parentheses, an offset of 0 or a scale of 1 left out, NaN and Infinity bare."""

from __future__ import annotations

import re

import numpy as np
import pytest
import zarr

from numcodecs_ext.tools.describe import describe_codec, number_text
from numcodecs_ext.tools.inspect import format_report, inspect_store


@pytest.mark.parametrize(("offset", "scale", "words"), [
    (-1.46875, -2092.83, "stores (x + 1.46875) * (-2092.83); reads x / (-2092.83) - 1.46875"),
    (10, 4, "stores (x - 10) * 4; reads x / 4 + 10"),
    (0, 4, "stores x * 4; reads x / 4"),
    (-0.0, 0.5, "stores x * 0.5; reads x / 0.5"),
    (10, 1, "stores x - 10; reads x + 10"),
    (-10, 1, "stores x + 10; reads x - 10"),
    (0, 1, "stores x; reads x"),
    ("NaN", 2, "stores (x - NaN) * 2; reads x / 2 + NaN"),
    ("-Infinity", -1e-300, "stores (x + Infinity) * (-1e-300); reads x / (-1e-300) - Infinity"),
    (1e300, "Infinity", "stores (x - 1e+300) * Infinity; reads x / Infinity + 1e+300"),
])
def test_scale_offset_in_words(offset, scale, words):
    assert describe_codec({"name": "scale_offset", "configuration": {"offset": offset, "scale": scale}}) == words
    fso = describe_codec({"id": "fixedscaleoffset", "offset": offset, "scale": scale, "dtype": "<f8", "astype": "<i2"})
    assert fso == f"numcodecs FixedScaleOffset: stores round({words[7:words.index(';')]}) as <i2 (wraps silently)"


def test_numbers_and_scalar_maps():
    assert [number_text(v) for v in (-1.46875, "NaN", "Infinity", "-Infinity", 1e-310, 7, -3)] == [
        "-1.46875", "NaN", "Infinity", "-Infinity", "1e-310", "7", "-3"]
    words = describe_codec({"name": "cast_value", "configuration": {
        "data_type": "int16", "scalar_map": {"encode": [["NaN", -32768], ["-Infinity", -32767]],
                                             "decode": [[-32768, "NaN"]]}}})
    assert words.endswith("NaN stored as -32768, -Infinity stored as -32767, -32768 read as NaN"), words


@pytest.mark.parametrize("fill", [np.nan, -np.inf, -1.46875])
def test_no_double_signs_or_quoted_numbers_in_a_report(tmp_path, fill):
    """A store with a negative offset and scale and a non-finite or negative fill value: the
    text holds no "- -", "+ -", "* -" and no number in quotes."""
    from numcodecs_ext.zarr3 import CastValue, ScaleOffset

    path = tmp_path / "s.zarr"
    a = zarr.create_array(path, shape=(), dtype="float64", fill_value=fill,
                          filters=[ScaleOffset(offset=-1.46875, scale=-2092.83),
                                   CastValue(data_type="int32",
                                             scalar_map={"encode": [["NaN", -1], ["Infinity", -2]],
                                                         "decode": [[-1, "NaN"], [-2, "Infinity"]]})],
                          compressors=None)
    a[()] = 3.0
    text = format_report(inspect_store(path))
    assert "(x + 1.46875) * (-2092.83)" in text and "shape ()" in text, text
    assert not re.search(r"[-+*/] -\d", text), text
    assert not re.search(r"'(NaN|-?Infinity|-?[0-9.]+)'", text), text
    want = {"nan": "NaN", "-inf": "-Infinity"}.get(str(fill), str(fill))
    assert f"fill value {want};" in text or text.split("fill value ")[1].startswith(want), text
