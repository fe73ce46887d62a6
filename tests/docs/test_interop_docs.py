"""docs/interop.md: the zfp fixed_rate worked example prints what the page says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"


def test_zfp_rate_example_prints_what_the_page_shows() -> None:
    found = re.search(r"<!-- zfp-rate-example -->\n```python\n(.*?)```.*?```text\n(.*?)```",
                      PAGE.read_text(), flags=re.S)
    assert found, "docs/interop.md lost its zfp-rate-example block"
    code, shown = found.groups()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/interop.md zfp-rate-example", "exec"), {})
    assert out.getvalue() == shown


def test_the_matrix_is_a_generated_one() -> None:
    page = PAGE.read_text()
    block = page[page.index("<!-- interop-matrix: begin -->"):page.index("<!-- interop-matrix: end -->")]
    assert "| codec | direction |" in block and "Tested: numcodecs_ext" in block
    for row in ("data types", "transpose", "packbits", "reshape", "bitround", "numcodecs.bitround",
                "scale_offset", "cast_value", "sharding_indexed", "zfp"):
        assert f"| {row} (" in block


def test_inspect_says_zarrs_reads_a_codec_exactly_where_the_matrix_measured_it() -> None:
    """inspect's "read by" list (tools/describe.py) agrees with the measured matrix: "zarrs" is
    named for a codec iff zarrs-python or zarrista read at least one case of it."""
    from numcodecs_ext.tools.describe import readers

    page = PAGE.read_text()
    block = page[page.index("<!-- interop-matrix: begin -->"):page.index("<!-- interop-matrix: end -->")]
    header = next(line for line in block.splitlines() if line.startswith("| codec | direction |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    checked = 0
    for line in block.splitlines():
        found = re.match(r"\| ([a-z_.]+) \(\d+\) \| read \|", line)
        if not found or found.group(1) in {"data", "sharding_indexed"}:
            continue
        cells = dict(zip(columns, (c.strip() for c in line.strip("|").split("|"))))
        measured = any(re.match(r"[1-9]\d*/", cells[c]) for c in ("zarrs-python", "zarrista"))
        said = "zarrs" in readers(found.group(1))
        assert said == measured, (found.group(1), cells, readers(found.group(1)))
        checked += 1
    assert checked >= 7
