"""inspect's "read by" list names zarrita.js exactly for the codecs the interop matrix measured it
reading (docs/interop.md), and its reader warnings name zarrita.js's known deviations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.tools.describe import readers
from numcodecs_ext.zarr3 import CastValue, ScaleOffset

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"


def test_read_by_names_zarrita_where_the_matrix_measured_it() -> None:
    page = PAGE.read_text()
    block = page[page.index("<!-- interop-matrix: begin -->"):page.index("<!-- interop-matrix: end -->")]
    header = next(line for line in block.splitlines() if line.startswith("| codec | direction |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert "zarrita.js" in columns
    checked = 0
    for line in block.splitlines():
        found = re.match(r"\| ([a-z_.]+) \(\d+\) \| read \|", line)
        if not found or found.group(1) == "data":
            continue
        cells = dict(zip(columns, (c.strip() for c in line.strip("|").split("|"))))
        measured = re.match(r"[1-9]\d*/", cells["zarrita.js"]) is not None
        assert ("zarrita.js" in readers(found.group(1))) == measured, (found.group(1), cells["zarrita.js"])
        checked += 1
    assert checked >= 8


def test_inspect_names_zarrita_in_read_by_and_warns(tmp_path: Path, capsys) -> None:
    """The spec's uint16 range reduction: zarrita.js reads each codec, but cannot open the array."""
    a = zarr.create_array(str(tmp_path / "s.zarr"), shape=(4,), chunks=(2,), dtype="uint16", fill_value=1000,
                          filters=[ScaleOffset(offset=1000), CastValue(data_type="uint8")], compressors=None)
    a[...] = np.array([1000, 1255, 1000, 1000], np.uint16)
    assert main(["inspect", str(tmp_path / "s.zarr"), "--json"]) == 0
    (array,) = json.loads(capsys.readouterr().out)["arrays"]
    assert all("zarrita.js" in c["readers"] for c in array["codecs"])
    (w,) = array["reader_warnings"]
    assert w.startswith("zarrita.js <= 0.7.5, fill value 1000 (reaching this cast_value as 1000 instead of 0)")
    assert main(["inspect", str(tmp_path / "s.zarr")]) == 0
    text = capsys.readouterr().out
    assert "reader warning: zarrita.js <= 0.7.5" in text and "zarrita.js]" in text
