"""The README's Python examples run as written (in a temporary folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import numcodecs_ext  # noqa: F401 - registered before a test saves zarr's config to restore it

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    import copy

    import zarr

    saved = copy.deepcopy(zarr.config.config)  # examples may change zarr's config globally
    try:
        for _ in range(2):  # a reader runs an example again, in the same folder
            exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    finally:
        zarr.config.config.clear()
        zarr.config.config.update(saved)


def test_readme_examples_write_distinct_stores() -> None:
    paths = re.findall(r'create_array\("([^"]+)"', README.read_text())
    assert len(paths) == len(set(paths)), paths
