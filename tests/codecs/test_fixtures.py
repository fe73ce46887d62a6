"""Backward compatibility: every stored fixture decodes to its array and re-encodes to its bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import numcodecs_ext  # noqa: F401
from tests.helpers.common import encoded_bytes
from tests.helpers.fixture_cases import CODEC_FIXTURES, ZARR_FIXTURES

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
ON_DISK = sorted(p.parent for p in ROOT.glob("*/*/config.json"))
STORES = sorted(p for p in (ROOT / "zarr").glob("*.zarr"))
GENERATE = "run `python -m tests.helpers.fixtures_tool generate` and commit the new fixture"


@pytest.mark.parametrize(
    "codec_id,name", [(c, n) for c, cases in CODEC_FIXTURES.items() for n in cases]
)
def test_every_defined_fixture_exists(codec_id, name) -> None:
    assert (ROOT / codec_id / name / "encoded.dat").is_file(), f"fixture {codec_id}/{name} missing: {GENERATE}"


@pytest.mark.parametrize("name", list(ZARR_FIXTURES))
def test_every_defined_store_exists(name) -> None:
    assert (ROOT / "zarr" / name).is_dir(), f"store fixture zarr/{name} missing: {GENERATE}"


def test_fixtures_found() -> None:
    assert ON_DISK and STORES


#: fixtures whose array holds values that encoding now refuses on purpose, and why. Their files
#: never change: the stored bytes must still decode as they did, every other value must still
#: encode to its stored bytes, and the refused values must be refused.
REFUSED_SINCE = {
    # -3.0 (clamped) and 0.5 (rounded) became code 0, which the decode map reads as NaN: a value
    # silently turned missing. Since issue 23 a value that no encode entry claims may not land on
    # a code the decode map reads as something else (it could not round-trip).
    "cast_value/f8-u1-clamp-nanmap": "would not round-trip",
    # 300 was clamped to 255, which the decode map reads as 65535
    "cast_value/u2-u1-hex-map": "would not round-trip",
}


def _encodes(codec: numcodecs.abc.Codec, arr: np.ndarray) -> bool:
    try:
        codec.encode(arr)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("folder", ON_DISK, ids=[f"{p.parent.name}/{p.name}" for p in ON_DISK])
def test_codec_fixture(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    codec = numcodecs.get_codec(config)
    arr = np.load(folder / "array.npy")
    stored = (folder / "encoded.dat").read_bytes()
    # Lossy codecs store what the bytes decode to; lossless ones decode to the array itself.
    expected = np.load(folder / "decoded.npy") if (folder / "decoded.npy").exists() else arr
    decoded = codec.decode(stored, out=np.empty_like(arr))
    assert np.asarray(decoded).tobytes() == expected.tobytes(), "stored bytes no longer decode as they did"
    refused = REFUSED_SINCE.get(f"{folder.parent.name}/{folder.name}")
    if refused is None:
        assert encoded_bytes(codec.encode(arr)) == stored, "encoder output differs from the stored bytes"
    else:
        with pytest.raises(ValueError, match=refused):
            codec.encode(arr)
        keep = np.array([_encodes(codec, arr[i:i + 1]) for i in range(arr.size)])
        assert not keep.all()
        codes = np.frombuffer(stored, np.asarray(codec.encode(arr[keep][:0])).dtype)
        assert encoded_bytes(codec.encode(arr[keep])) == codes[keep].tobytes()
    assert numcodecs.get_codec(codec.get_config()).get_config() == config


@pytest.mark.parametrize("store", STORES, ids=[p.name for p in STORES])
def test_store_fixture(store: Path) -> None:
    expected = np.load(store.with_suffix(".npy"))
    got = zarr.open_array(str(store), mode="r")[...]
    if expected.dtype.kind == "V":  # .npy files hold ml_dtypes arrays (bfloat16 ...) as raw items
        assert got.dtype.itemsize == expected.dtype.itemsize and got.dtype.kind in "Vf"
    else:
        assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()
