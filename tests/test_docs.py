"""The documentation site's own examples run as written, each page in order in a scratch folder
(README sections it includes are run by test_readme.py; the API's docstring examples by
--doctest-modules; conventions: ``tests/docs_runner.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_runner import blocks, run_document

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = {page.relative_to(DOCS).as_posix(): blocks(page, f"docs/{page.relative_to(DOCS).as_posix()}")
         for page in sorted(DOCS.rglob("*.md")) if "_build" not in page.parts}

#: every docs command the tests do not run, and why (a new skip must be added here knowingly)
SKIPPED = {
    "performance.md": [
        ("python benchmarks/run.py", "a benchmark"),
        ("python benchmarks/run.py --quick", "a benchmark"),
        ("python benchmarks/run.py transpose bits", "a benchmark"),
        ("python benchmarks/scaling.py", "a benchmark"),
        ("python benchmarks/cf_difference.py", "a benchmark"),
    ],
    "large-and-remote.md": [
        ("bash block", "needs a bucket"),
        ("python block", "starts a cluster"),
    ],
}


def test_docs_have_examples_and_include_existing_readme_sections() -> None:
    assert sum(len(b) for b in PAGES.values()) >= 3
    readme = (DOCS.parent / "README.md").read_text()
    for page in DOCS.rglob("*.md"):
        text = page.read_text()
        for marker in re.findall(r':(?:start-after|end-before): "(<!-- [^"]+ -->)"', text):
            assert marker in readme, f"{page.name}: README has no {marker}"
        assert not re.search(r"^(    |\t)(python|numcodecs-ext|pip) ", text, flags=re.M), \
            f"{page.name}: an indented command: write it in a fenced bash block, so that it is run"


@pytest.mark.parametrize("page", [p for p, b in PAGES.items() if any(x.lang in ("python", "bash") for x in b)])
def test_docs_page_runs_in_order(page: str, tmp_path) -> None:
    run = run_document([b for b in PAGES[page] if b.lang not in ("{eval-rst}", "{toctree}", "{include}")], tmp_path)
    # a skipped command: ("the command", "the rule's reason"); a skipped block: ("bash block", "reason")
    skipped = [(what.split(": ", 1)[1] if ": " in what else what.rsplit("(", 1)[1].rstrip(")"),
                why.split(":")[0]) for what, why in run.skipped]
    assert skipped == SKIPPED.get(page, []), run.skipped
