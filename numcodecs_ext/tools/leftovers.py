"""What an interrupted ``convert`` or ``migrate`` leaves in its destination, told as inspect tells it.

Both write chunks first and metadata last (:mod:`numcodecs_ext.store.staging`), beside a journal
(:mod:`numcodecs_ext.store.journal`, one format for both): until the end nothing there opens, and
running the same command again resumes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from ..store.journal import CONVERT_JOURNAL, FORMAT, HEAD, MIGRATE_JOURNAL, RUNS, is_journal_key, journal_tool

__all__ = ["CONVERT_JOURNAL", "MIGRATE_JOURNAL", "describe", "is_journal_key"]


def _json(raw: bytes | BaseException | None) -> dict[str, Any]:
    if raw is None or isinstance(raw, BaseException):
        return {}
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def describe(location: Any, files: Mapping[str, int], *, committed: str = "none") -> list[dict[str, Any]]:
    """The interrupted writes whose journals are among ``files`` (the store's listing, keys
    relative to ``location``): for each, ``{"tool", "source", "runs_done", "runs_total",
    "message"}``. ``committed``: how much metadata is there: ``"none"`` (nothing opens),
    ``"some"`` (the interruption came while it was being written: arrays first, the root last)
    or ``"all"`` (the root's too: only the journal's removal was left). Reads the journals'
    small documents, never a chunk."""
    tools = {t for t in map(journal_tool, files) if t}
    out = []
    for tool in sorted(tools):
        name = CONVERT_JOURNAL if tool == "convert" else MIGRATE_JOURNAL
        head = f"{name}/{HEAD}"
        stamp = _json(location.read_many([head]).get(head) if head in files else None)
        older = bool(stamp) and stamp.get("format") != FORMAT  # a journal of an older version: resumes nothing
        source = stamp.get("source") if not older and isinstance(stamp.get("source"), str) and stamp["source"] else None
        done = sum(1 for k in files if k.startswith(f"{name}/{RUNS}/") and k.rpartition("/")[2].isdigit())
        total = stamp.get("runs_total") if not older and isinstance(stamp.get("runs_total"), int) else None
        state = "written" if tool == "convert" else "written and verified"
        runs_text = (f"{done} of {_count(total, 'run', 'runs')} of chunks {state}" if total is not None
                     else f"{_count(done, 'run', 'runs')} of chunks {state}")
        of = f" of {source}" if source else ""
        dst = shlex.quote(str(location.display))
        again = (f"`numcodecs-ext {tool} {shlex.quote(source)} {dst}` with the same options" if source
                 else f"the same `numcodecs-ext {tool}` command")
        if tool == "convert" and not stamp:  # killed while the journal began: convert starts over
            message = (f"an interrupted convert, stopped as it began (its journal has no stamp, so nothing "
                       f"there can be resumed): delete {dst} and run the command again")
        elif older:
            message = (f"an interrupted {tool} of an older version (its journal is of another format, so "
                       f"nothing there is resumed): run the same `numcodecs-ext {tool}` command again to start "
                       f"over, or delete {dst}")
        elif committed == "all":
            message = (f"an interrupted {tool}{of}: its metadata is all written, but its journal "
                       f"({name}) was not removed; "
                       f"run {again} again to finish")
        else:
            where = ("its metadata was being written (the root's comes last)" if committed == "some"
                     else "no metadata yet, so nothing opens")
            message = f"an interrupted {tool}{of}: {runs_text}, {where}; run {again} again to resume, or delete {dst}"
        out.append({"tool": tool, "source": source, "runs_done": done, "runs_total": total, "message": message})
    return out
