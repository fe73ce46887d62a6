"""The documentation site's own Python examples run as written (README sections it includes are
run by test_readme.py; the API's docstring examples by --doctest-modules)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    (page.relative_to(DOCS).as_posix(), i, block)
    for page in sorted(DOCS.rglob("*.md"))
    if "_build" not in page.parts
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))
]


def test_docs_have_examples_and_include_existing_readme_sections() -> None:
    assert len(BLOCKS) >= 2
    readme = (DOCS.parent / "README.md").read_text()
    for page in DOCS.rglob("*.md"):
        for marker in re.findall(r':(?:start-after|end-before): "(<!-- [^"]+ -->)"', page.read_text()):
            assert marker in readme, f"{page.name}: README has no {marker}"


@pytest.mark.parametrize(("page", "index", "block"), BLOCKS, ids=[f"{p}-{i}" for p, i, _ in BLOCKS])
def test_docs_example_runs(page: str, index: int, block: str, tmp_path, monkeypatch) -> None:
    import zarr

    monkeypatch.chdir(tmp_path)
    saved = copy.deepcopy(zarr.config.config)
    try:
        for _ in range(2):  # a reader runs an example again, in the same folder
            exec(compile(block, f"docs/{page} block {index}", "exec"), {})
    finally:
        zarr.config.config.clear()
        zarr.config.config.update(saved)
