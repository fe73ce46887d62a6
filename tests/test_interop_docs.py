"""docs/interop.md: the zfp fixed_rate worked example prints what the page says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "interop.md"


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
