"""Run a Markdown document's examples as a reader would: every block, in order, in one folder.

The conventions (also in docs/contributing.md, "Documentation that runs"):

* ``python`` blocks run as they are, each twice (a reader runs an example again in the same
  folder). A ``print(...)`` whose line ends in a comment must print exactly that comment
  (whitespace aside, doctest-style; ``...`` stands for any text).
* ``bash`` / ``sh`` / ``shell`` / ``console`` blocks: every command runs in bash (``set -o
  pipefail``), with this Python's ``numcodecs-ext`` and ``python`` first on the PATH, and must end
  with status 0, or with N where its line ends in ``# exits N``. A ``\\`` continues a line.
* A command that cannot run here is skipped only by a rule of :data:`SKIP_COMMANDS` (installing,
  the test suite itself, the docs build, benchmarks: .ci/run runs each of them), or by
  ``<!-- docs-test: skip REASON -->`` on the line before its block (then the whole block). Every
  skip is recorded with its reason (:attr:`Run.skipped`), and the tests list them all.
* Other fenced blocks must name their language (``text`` for a listing), so that no command
  hides in an unlabelled block.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import os
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

SHELL = {"bash", "sh", "shell", "console"}
KNOWN = SHELL | {"python", "text", "json", "toml", "yaml", "ini", "cfg", "c", "rst", "markdown", "{eval-rst}",
                 "{toctree}", "{include}"}

#: commands the docs show but the tests do not run, each with the reason; .ci/run runs them
SKIP_COMMANDS: dict[str, str] = {
    r"pip install\b": "installing: .ci/run installs the package as the README says, in a fresh environment",
    r"python -m pytest\b": "the test suite itself: .ci/run runs it (it is what runs this)",
    r"sphinx-build\b": "the documentation build: .ci/run builds it with -W",
    r"python benchmarks/": "a benchmark: .ci/run runs `python benchmarks/run.py --quick`",
}

_MARKER = re.compile(r"<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)(?P<lang>[^\s`]*)[^\n]*$")


@dataclass
class Block:
    source: str  # "README.md", "docs/cf.md" ...
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: tuple[str, str] | None = None  # (directive, argument) of a docs-test comment before it

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def blocks(path: Path, source: str) -> list[Block]:
    """The fenced blocks of a Markdown file, with the docs-test marker just before each."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group("fence"), m.group("lang"), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        marker = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and (mm := _MARKER.search(lines[j])):
            marker = (mm.group(1), mm.group(2))
        out.append(Block(source, start + 1, lang, "\n".join(body) + "\n", marker))
    return out


def heading_anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub and MyST (``myst_heading_anchors``)
    make them: lower case, punctuation dropped, spaces as hyphens."""
    anchors, fence = set(), None
    for line in path.read_text().splitlines():
        m = _FENCE.match(line)
        if m and (fence is None or m.group("fence").startswith(fence)):
            fence = None if fence else m.group("fence")
            continue
        if fence is None and (h := re.match(r"^#{1,6} +(.+?) *#*$", line)):
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h.group(1))  # a link: its text
            title = title.replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


# -- shell --------------------------------------------------------------------------------------------


@dataclass
class Command:
    text: str
    line: int
    status: int = 0


def _strip_comment(line: str) -> tuple[str, str]:
    """(command, comment) of a shell line; a ``#`` inside quotes is not a comment."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k].rstrip(), line[k + 1:].strip()
    return line.rstrip(), ""


def commands(block: Block) -> list[Command]:
    out: list[Command] = []
    pending, first = "", None
    for k, raw in enumerate(block.code.splitlines()):
        line = raw[2:] if raw.startswith("$ ") else raw
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        text, comment = _strip_comment(line)
        if first is None:
            first = block.line + 1 + k
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        status = re.search(r"\bexits (\d+)\b", comment)
        out.append(Command((pending + text).strip(), first, int(status.group(1)) if status else 0))
        pending, first = "", None
    return out


def _skip_reason(part: str) -> str | None:
    for pattern, reason in SKIP_COMMANDS.items():
        if re.match(pattern, part.strip()):
            return reason
    return None


def _split_and(text: str) -> list[str]:
    """``a && b`` as its parts (quotes respected)."""
    parts, quote, start = [], None, 0
    k = 0
    while k < len(text):
        ch = text[k]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif text.startswith("&&", k):
            parts.append(text[start:k].strip())
            start = k + 2
            k += 1
        k += 1
    parts.append(text[start:].strip())
    return parts


# -- python -----------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(r"\s*([\]\)])", r"\1", re.sub(r"([\[\(])\s*", r"\1", text))


def output_matches(printed: str, expected: str) -> bool:
    got, want = _normalise(printed), _normalise(expected)
    pattern = ".*".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got, flags=re.S) is not None


def _comments(code: str) -> dict[int, str]:
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string[1:].strip()
    return found


def run_python(code: str, name: str) -> list[tuple[int, str, str]]:
    """Run ``code`` statement by statement; the checked prints as (line, printed, expected).
    AssertionError when a print disagrees with its comment."""
    tree = ast.parse(code, name)
    comments = _comments(code)
    namespace: dict = {"__name__": "__docs__"}
    checked = []
    for node in tree.body:
        module = ast.Module(body=[node], type_ignores=[])
        expected = None
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"):
            expected = comments.get(node.end_lineno)
        compiled = compile(module, name, "exec")
        if expected is None:
            exec(compiled, namespace)
            continue
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compiled, namespace)
        printed = buffer.getvalue()
        sys.stdout.write(printed)
        if not output_matches(printed, expected):
            raise AssertionError(f"{name}, line {node.lineno}: prints\n    {printed.strip()}\nbut its comment says\n"
                                 f"    {expected}")
        checked.append((node.lineno, printed, expected))
    return checked


# -- a whole document ----------------------------------------------------------------------------------


@dataclass
class Run:
    ran: list[str] = field(default_factory=list)  # shell commands run, with their status
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    prints: int = 0  # print comments checked


def run_document(doc_blocks: list[Block], folder: Path, *, env: dict[str, str] | None = None) -> Run:
    """Run every block of a document in order in ``folder``; AssertionError names the block."""
    import zarr

    result = Run()
    environment = dict(os.environ if env is None else env)
    environment.pop("NUMCODECS_EXT_TRACEBACK", None)
    environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + environment.get("PATH", "")
    for block in doc_blocks:
        lang = block.lang.lower()
        if lang not in KNOWN:
            raise AssertionError(f"{block.where}: a fenced block with language {block.lang!r}: name a known "
                                 "one (python, bash, text ...), so that no command hides in it")
        if block.marker is not None:
            directive, reason = block.marker
            if directive != "skip" or not reason:
                raise AssertionError(f"{block.where}: unknown marker docs-test: {directive} {reason!r} "
                                     "(only 'skip REASON')")
            result.skipped.append((f"{block.where} ({lang} block)", reason))
            continue
        if lang == "python":
            saved = copy.deepcopy(zarr.config.config)  # examples may change zarr's config
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                for _ in range(2):
                    result.prints += len(run_python(block.code, f"{block.where} (python)"))
            finally:
                os.chdir(cwd)
                zarr.config.config.clear()
                zarr.config.config.update(saved)
        elif lang in SHELL:
            for command in commands(block):
                parts = _split_and(command.text)
                runnable = []
                for part in parts:
                    reason = _skip_reason(part)
                    if reason:
                        result.skipped.append((f"{block.source}:{command.line}: {part}", reason))
                    else:
                        runnable.append(part)
                if not runnable:
                    continue
                text = " && ".join(runnable)
                done = subprocess.run(["bash", "-c", f"set -o pipefail\n{text}"], cwd=folder, env=environment,
                                      capture_output=True, text=True, timeout=900, check=False)
                where = f"{block.source}:{command.line}: `{text}`"
                if done.returncode != command.status:
                    raise AssertionError(f"{where} exited {done.returncode}, the docs promise {command.status}\n"
                                         f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-3000:]}")
                if "Traceback" in done.stderr:
                    raise AssertionError(f"{where}: a traceback\n{done.stderr[-3000:]}")
                result.ran.append(f"{where} -> {done.returncode}")
    return result
