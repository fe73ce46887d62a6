"""The documentation site's own examples run as written, each page in order in a scratch folder
(the README's by test_readme.py; the API's docstring examples by --doctest-modules; conventions:
``tests/helpers/docs_runner.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import numcodecs_ext  # noqa: F401 - registered before a test saves zarr's config to restore it
from tests.helpers.docs_runner import blocks, heading_anchors, run_document

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = {page.relative_to(DOCS).as_posix(): blocks(page, f"docs/{page.relative_to(DOCS).as_posix()}")
         for page in sorted(DOCS.rglob("*.md")) if "_build" not in page.parts}

#: every docs command the tests do not run, and why (a new skip must be added here knowingly)
SKIPPED = {
    "getting-started.md": [
        ('pip install ".[zfp]"', "installing"),
        ('pip install -e ".[test]"', "installing"),
        ("python -m pytest -n auto", "the test suite itself"),
        ('pip install -e ".[test,docs]"', "installing"),
        ("sphinx-build -W -b html docs docs/_build/html", "the documentation build"),
    ],
    "performance.md": [
        ("python benchmarks/run.py", "a benchmark"),
        ("python benchmarks/run.py --quick", "a benchmark"),
        ("python benchmarks/run.py transpose bits", "a benchmark"),
        ("python benchmarks/scaling.py", "a benchmark"),
        ("python benchmarks/cf_difference.py", "a benchmark"),
        ("python benchmarks/run.py gpu", "a benchmark"),
    ],
    "large-and-remote.md": [
        ("bash block", "needs a bucket"),
        ("python block", "starts a cluster"),
    ],
}


#: commands each page must run (what the README ran before it became a front page), and the
#: least number of checked prints on it (each runs twice)
MUST_RUN = {
    "getting-started.md": ["`numcodecs-ext` -> 0"],
    "cf.md": ["numcodecs-ext convert", "numcodecs-ext migrate", "numcodecs-ext normalize",
              "numcodecs-ext inspect", "--in-place --finish", "-> 2"],
    "tools.md": ["numcodecs-ext --version", "numcodecs-ext info", "numcodecs-ext inspect",
                 "numcodecs-ext inspct", "-> 2"],
}
MIN_PRINTS = {"cf.md": 8, "codecs/scale-offset-cast-value.md": 2, "codecs/packbits.md": 1,
              "large-and-remote.md": 3}


def _links(text: str) -> list[tuple[str, str]]:
    """(target, anchor) of every relative Markdown link outside code."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    found = re.finditer(r"\]\(([^)#:\s]*)(?:#([^)\s]+))?\)", text)
    return [(m.group(1), m.group(2) or "") for m in found]


def test_docs_have_examples_and_hold_their_own_text() -> None:
    assert sum(len(b) for b in PAGES.values()) >= 3
    for page in DOCS.rglob("*.md"):
        text = page.read_text()
        # the README is a front page now: a section included from it would not be run here
        included = re.search(r"\{include\}\s+\S*README\.md", text)
        assert not included, f"{page.name} includes the README"
        assert not re.search(r"^(    |\t)(python|numcodecs-ext|pip) ", text, flags=re.M), \
            f"{page.name}: an indented command: write it in a fenced bash block, so that it is run"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_docs_links_lead_to_pages_and_headings_that_exist(page: str) -> None:
    path = DOCS / page
    for target, anchor in _links(path.read_text()):
        if target.startswith(("http", "mailto")) or target.endswith((".png", ".svg")):
            continue
        linked = (path.parent / target).resolve() if target else path
        assert linked.is_file(), f"{page}: link to {target}"
        if anchor:
            assert anchor in heading_anchors(linked), f"{page}: link to {target}#{anchor}"


def test_every_page_is_in_a_toctree() -> None:
    listed = {"index.md"}
    for page in PAGES:
        text = (DOCS / page).read_text()
        for tree in re.findall(r"```\{toctree\}\n(.*?)```", text, flags=re.S):
            for entry in tree.splitlines():
                if entry.strip() and not entry.startswith(":"):
                    listed.add((Path(page).parent / f"{entry.strip()}.md").as_posix())
    assert listed == set(PAGES), set(PAGES) ^ listed


@pytest.mark.parametrize("page", [p for p, b in PAGES.items() if any(x.lang in ("python", "bash") for x in b)])
def test_docs_page_runs_in_order(page: str, tmp_path) -> None:
    run = run_document([b for b in PAGES[page] if b.lang not in ("{eval-rst}", "{toctree}", "{include}")], tmp_path)
    # a skipped command: ("the command", "the rule's reason"); a skipped block: ("bash block", "reason")
    skipped = [(what.split(": ", 1)[1] if ": " in what else what.rsplit("(", 1)[1].rstrip(")"),
                why.split(":")[0]) for what, why in run.skipped]
    assert skipped == SKIPPED.get(page, []), run.skipped
    ran = " ".join(run.ran)
    for command in MUST_RUN.get(page, []):
        assert command in ran, command
    assert run.prints >= 2 * MIN_PRINTS.get(page, 0), run.prints
