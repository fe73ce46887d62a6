"""The zarr v3 classes in zarr-python's own shape (issue 33): frozen dataclasses whose fields
are the configuration, ``dataclasses.replace`` as zarr uses it on its own codecs, no attribute
proxies, and no zarr internals beyond the listed ones."""

from __future__ import annotations

import dataclasses
import pickle
import re
from pathlib import Path

import pytest
from zarr.dtype import Int16

from numcodecs_ext import zarr3

CASES = [
    zarr3.Zfp(mode="fixed_rate", rate=8),
    zarr3.Zfp(mode="expert", minbits=1, maxbits=64, maxprec=20, minexp=-30, name="zarrs.zfp"),
    zarr3.NumcodecsZfp(mode="fixed_precision", precision=10),
    zarr3.ScaleOffset(offset=-10, scale="0.1"),
    zarr3.NumcodecsScaleOffset(offset=2),
    zarr3.CastValue(data_type="uint8", out_of_range="clamp",
                    scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}),
    zarr3.NumcodecsCastValue(data_type="int16", rounding="towards-zero"),
    zarr3.Transpose(order=[1, 0]),
    zarr3.NumcodecsTranspose(order="F"),
    zarr3.Reshape(shape=[[0, 1], -1]),
    zarr3.NumcodecsReshape(shape=[-1]),
    zarr3.PackBits(last_bit=3, padding_encoding="first_byte"),
    zarr3.BitRound(keepbits=3),
    zarr3.BitRound(keepbits=3, name="numcodecs.bitround"),
]
IDS = [f"{type(c).__name__}-{c.name}" for c in CASES]


@pytest.mark.parametrize("codec", CASES, ids=IDS)
def test_fields_are_the_configuration(codec) -> None:
    assert dataclasses.is_dataclass(codec)
    values = {f.name: getattr(codec, f.name) for f in dataclasses.fields(codec)}
    assert values.pop("name") == codec.to_dict()["name"]
    configuration = codec.to_dict().get("configuration", {})
    if isinstance(codec, (zarr3.CastValue, zarr3.NumcodecsCastValue)):  # zarr's CastValue fields
        assert values.pop("dtype").to_json(zarr_format=3) == configuration.pop("data_type")
        if values["scalar_map"] is not None:
            assert values.pop("scalar_map") == {
                d: dict(pairs) for d, pairs in configuration.pop("scalar_map").items()}
    for key, value in configuration.items():  # every configured key is a field, same value
        got = values.pop(key)
        assert (list(got) if isinstance(got, tuple) else got) == value, key
    # the rest: parameters not configured
    assert all(v is None or key in ("rounding", "scale", "offset", "padding_encoding", "scalar_map")
               for key, v in values.items()), values


@pytest.mark.parametrize("codec", CASES, ids=IDS)
def test_frozen_replaceable_and_picklable(codec) -> None:
    field = dataclasses.fields(codec)[-1].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(codec, field, getattr(codec, field))
    assert dataclasses.replace(codec) == codec
    for clone in (dataclasses.replace(codec), pickle.loads(pickle.dumps(codec))):
        assert clone.to_dict() == codec.to_dict() and hash(clone) == hash(codec)
    assert type(codec).from_dict(codec.to_dict()) == codec
    assert not hasattr(type(codec), "__getattr__")  # no proxy: what is not a field is not there
    with pytest.raises(AttributeError):
        codec.no_such_parameter  # noqa: B018


def test_replace_changes_a_parameter_through_the_constructors_checks() -> None:
    zfp = dataclasses.replace(zarr3.Zfp(mode="fixed_rate", rate=8), rate=4)
    assert zfp.rate == 4 and zfp.to_dict()["configuration"] == {"mode": "fixed_rate", "rate": 4}
    cast = dataclasses.replace(zarr3.CastValue(data_type="uint8"), dtype=Int16())
    assert cast.to_dict() == {"name": "cast_value", "configuration": {"data_type": "int16"}}
    with pytest.raises(ValueError, match=r"codec 'zfp': .*'tolerance'"):
        dataclasses.replace(zfp, tolerance=1e-3)
    with pytest.raises(ValueError, match=r"codec 'scale_offset': scale=0 is not valid"):
        dataclasses.replace(zarr3.ScaleOffset(offset=1), scale=0)


@pytest.mark.parametrize("codec", CASES, ids=IDS)
def test_chunk_work_is_the_cores_and_the_numcodecs_codecs(codec) -> None:
    """Chunks go through the core's object of the configuration (issue 33: not through the
    numcodecs codec's methods), the same one the numcodecs codec of that configuration runs."""
    work = codec.chunk_work
    assert type(work).__module__.startswith("numcodecs_ext.core."), type(work)
    assert work == codec.codec.chunk_work and type(work) is type(codec.codec.chunk_work)
    for clone in (dataclasses.replace(codec), pickle.loads(pickle.dumps(codec))):
        assert clone.chunk_work == work
    with pytest.raises(dataclasses.FrozenInstanceError):
        work.paths = None


def test_zarr3_runs_no_chunk_method_of_the_numcodecs_codecs() -> None:
    root = Path(zarr3.__file__).parent
    methods = ("resolve_spec", "check_fill", "encode_chunk", "decode_chunk", "device_encode",
               "device_decode", "output_shape", "encoded_size", "_source_for", "cast_arguments")
    pattern = re.compile(r"\bcodec\.(?:" + "|".join(methods) + r")\b")
    found = {p.name: pattern.findall(p.read_text()) for p in root.glob("*.py")}
    assert not any(found.values()), found


#: the private zarr modules the zarr3 layer may import, each listed with its reason in the module
ALLOWED_PRIVATE = {"zarr.core.array_spec", "zarr.core.dtype.common"}


def test_only_the_listed_private_zarr_modules_are_imported() -> None:
    root = Path(zarr3.__file__).parent
    found: set[str] = set()
    for path in [*root.glob("*.py"), root.parent / "_registry.py"]:
        found |= set(re.findall(r"(?:from|import)\s+(zarr\.core[\w.]*)", path.read_text()))
    assert found <= ALLOWED_PRIVATE, found - ALLOWED_PRIVATE
