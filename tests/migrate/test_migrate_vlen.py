"""Variable-length v2 arrays (vlen-utf8, vlen-bytes) migrate whatever their fill value, and read
as zarr reads the v2 original: zarr-python 2's default fill value 0 included, which is no bytes
value (zarr-python 3 cannot even open such a vlen-bytes array: its unwritten elements become
empty bytes). Ragged numeric arrays (vlen-array) have no zarr v3 type: refused before writing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.migrate import NotExpressible, finish_in_place, migrate, migrate_in_place

from tests.helpers.migrate_helpers import quiet

STORED = {"vlen-utf8": ["ab", "0"], "vlen-bytes": [b"ab", b"0"]}
CODEC = {"vlen-utf8": numcodecs.VLenUTF8(), "vlen-bytes": numcodecs.VLenBytes()}


def _v2(root: Path, codec: str, fill: Any, *, dims: bool = True) -> Path:
    """A v2 group holding ``v``: 4 elements in chunks of 2, the first chunk written, the
    second not (it reads as the fill value), as zarr-python 2 wrote them."""
    (root / "v").mkdir(parents=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    (root / "v/.zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O", "fill_value": fill, "order": "C",
        "filters": [{"id": codec}], "compressor": {"id": "zstd", "level": 1}}))
    if dims:
        (root / "v/.zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["x"]}))
    raw = CODEC[codec].encode(np.array(STORED[codec], dtype=object))
    (root / "v/0").write_bytes(numcodecs.Zstd(level=1).encode(raw))
    return root


def _read(path: Path, fmt: int) -> list[Any]:
    with quiet():
        return zarr.open_array(str(path / "v"), mode="r", zarr_format=fmt)[...].tolist()


# (codec, v2 fill value, what an unwritten element reads as)
CASES = [("vlen-utf8", 0, "0"), ("vlen-utf8", "", ""), ("vlen-utf8", None, ""), ("vlen-utf8", "abc", "abc"),
         ("vlen-bytes", 0, b""), ("vlen-bytes", None, b""), ("vlen-bytes", "", b""),
         ("vlen-bytes", "YWJj", b"abc")]


@pytest.mark.parametrize(("codec", "fill", "unwritten"), CASES)
def test_vlen_arrays_migrate_with_every_fill_value(tmp_path: Path, codec: str, fill: Any, unwritten: Any) -> None:
    src = _v2(tmp_path / "v2.zarr", codec, fill)
    report = migrate(src, tmp_path / "v3.zarr")
    assert report.verified
    want = [*STORED[codec], unwritten, unwritten]
    assert _read(tmp_path / "v3.zarr", 3) == want
    if not (codec == "vlen-bytes" and fill == 0):  # (zarr cannot open that v2 array)
        assert _read(src, 2) == want  # as zarr reads the v2 original
    notes = " ".join(report.arrays[0].notes)
    assert ("no bytes value" in notes) == (codec == "vlen-bytes" and fill == 0)
    # (text keeps xarray's masking as missing_value: tests/migrate/test_migrate_text_fill_xarray.py)
    assert ("xarray read the fill value" in notes) == (codec == "vlen-bytes" and fill not in (None, 0))


@pytest.mark.parametrize("fill", [0, 1])
def test_vlen_bytes_with_no_bytes_fill_migrates_in_place_and_finishes(tmp_path: Path, fill: int) -> None:
    src = _v2(tmp_path / "v2.zarr", "vlen-bytes", fill, dims=False)
    migrate_in_place(src)
    assert json.loads((src / "v/zarr.json").read_text())["fill_value"] == ""
    assert finish_in_place(src).verified
    assert _read(src, 3) == [b"ab", b"0", b"", b""]


def test_a_vlen_array_is_refused_before_writing(tmp_path: Path) -> None:
    root = tmp_path / "v2.zarr"
    (root / "v").mkdir(parents=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    (root / "v/.zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "fill_value": 0, "order": "C",
        "filters": [{"id": "vlen-array", "dtype": "<i4"}], "compressor": None}))
    codec = numcodecs.VLenArray("<i4")
    (root / "v/0").write_bytes(codec.encode(np.array([np.array([1, 2], "i4"), np.array([3], "i4")], dtype=object)))
    with pytest.raises(NotExpressible, match=r"array v: .*vlen-array.*no zarr v3 form.*move the array out"):
        migrate(root, tmp_path / "v3.zarr")
    assert not (tmp_path / "v3.zarr").exists()
    with pytest.raises(NotExpressible, match="vlen-array"):
        migrate_in_place(root)
    assert not list(root.rglob("zarr.json"))
