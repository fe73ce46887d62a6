"""README.md runs as a reader would run it: every block in order in one scratch folder, every
shell command with the status it promises, every print with the output its comment shows
(conventions: ``tests/helpers/docs_runner.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import numcodecs_ext  # noqa: F401 - registered before a test saves zarr's config to restore it
from tests.helpers.docs_runner import blocks, commands, heading_anchors, output_matches, run_document

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = blocks(README, "README.md")

#: every README command the tests do not run, and why (a new skip must be added here knowingly)
SKIPPED = [
    ('pip install ".[zfp]"', "installing"),
    ('pip install -e ".[test]"', "installing"),
    ("python -m pytest -n auto", "the test suite itself"),
    ('pip install -e ".[test,docs]"', "installing"),
    ("sphinx-build -W -b html docs docs/_build/html", "the documentation build"),
]


def test_readme_has_examples_of_every_kind() -> None:
    """The front page: an example per codec family and per tool (the rest is in docs/, whose
    pages test_docs.py runs)."""
    langs = [b.lang for b in BLOCKS]
    assert langs.count("python") >= 6 and langs.count("bash") >= 7
    code = "\n".join(b.code for b in BLOCKS if b.lang == "python")
    for codec in ("ScaleOffset(", "CastValue(", "Transpose(", "Zfp(", "BitRound(", "PackBits(",
                  "Reshape("):
        assert codec in code, codec


def test_readme_is_a_front_page() -> None:
    """At most about 400 lines; every link into docs/ leads to a page (and heading) that exists."""
    text = README.read_text()
    assert len(text.splitlines()) <= 400
    targets = re.findall(r"\]\((docs/[^)#]+\.md)(?:#([^)]+))?\)", text)
    assert len({page for page, _ in targets}) >= 12, targets
    for page, anchor in targets:
        path = README.parent / page
        assert path.is_file(), page
        if anchor:
            assert anchor in heading_anchors(path), f"{page}#{anchor}"


def test_readme_runs_in_order(tmp_path, capsys) -> None:
    run = run_document(BLOCKS, tmp_path)
    skipped = [(what.split(": ", 1)[1], why.split(":")[0]) for what, why in run.skipped]
    assert skipped == SKIPPED, run.skipped
    assert run.prints >= 2 * 3  # every checked print, twice
    ran = " ".join(run.ran)
    for command in ("numcodecs-ext convert", "numcodecs-ext migrate", "numcodecs-ext inspect", "numcodecs-ext info",
                    "numcodecs-ext normalize", "numcodecs-ext suggest", "numcodecs-ext --version",
                    "`numcodecs-ext` -> 0", "-> 2"):
        assert command in ran, command


def test_every_shell_command_of_the_readme_is_run_or_listed() -> None:
    listed = {cmd for cmd, _ in SKIPPED}
    for block in BLOCKS:
        if block.lang == "bash":
            for command in commands(block):
                for part in (p.strip() for p in command.text.split("&&")):
                    if part.startswith(("pip ", "python -m pytest", "sphinx-build")):
                        assert part.split("   #")[0] in listed, part


def test_readme_examples_write_distinct_stores() -> None:
    paths = re.findall(r'create_array\("([^"]+)"', README.read_text())
    assert len(paths) == len(set(paths)), paths


# -- the runner itself can fail -------------------------------------------------------------------


def _doc(tmp_path, text: str):
    path = tmp_path / "doc.md"
    path.write_text(text)
    return blocks(path, "doc.md")


@pytest.mark.parametrize(("text", "message"), [
    ("```python\nprint(1 + 1)   # 3\n```\n", "prints"),
    ("```python\nx = [1.5, 2]\nprint(x)   # [1.5, 2.0]\n```\n", "prints"),
    ("```bash\nfalse\n```\n", "exited 1, the docs promise 0"),
    ("```bash\nnumcodecs-ext inspect nothing.zarr\n```\n", "exited 2, the docs promise 0"),
    ("```bash\nnumcodecs-ext info   # exits 2\n```\n", "exited 0, the docs promise 2"),
    ("```bash\npython -c 'raise ValueError(1)'   # exits 1\n```\n", "a traceback"),
    ("```\nnumcodecs-ext info\n```\n", "language"),
    ("```shellscript\nls\n```\n", "language"),
    ("<!-- docs-test: skip -->\n```bash\nls\n```\n", "unknown marker"),
    ("<!-- docs-test: maybe later -->\n```bash\nls\n```\n", "unknown marker"),
])
def test_the_runner_fails_where_the_docs_are_wrong(tmp_path, text, message) -> None:
    with pytest.raises(AssertionError, match=message):
        run_document(_doc(tmp_path, text), tmp_path)


def test_the_runner_checks_and_skips_what_it_says(tmp_path) -> None:
    text = ("```python\nimport numpy as np\nprint(np.array([0.5, 2.0]))   # [0.5 2. ]\nprint('a b')  # a ...\n```\n"
            "```bash\nnumcodecs-ext inspect nothing.zarr   # exits 2\nls \\\n  -a && pip install x && true\n```\n"
            "<!-- docs-test: skip needs a bucket -->\n```bash\nnumcodecs-ext inspect s3://b/x\n```\n")
    run = run_document(_doc(tmp_path, text), tmp_path)
    assert run.prints == 4 and len(run.ran) == 2
    assert [why for _, why in run.skipped] == [
        "installing: .ci/run installs the package as the README says, in a fresh environment", "needs a bucket"]
    assert output_matches("[  nan   0.]\n", "[nan 0.]") and not output_matches("[nan 1.]", "[nan 0.]")
