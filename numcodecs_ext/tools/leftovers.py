"""What an interrupted ``convert`` or ``migrate`` leaves in its destination, told as inspect tells it.

Both write chunks first and metadata last (:mod:`numcodecs_ext.store.staging`), beside a journal
(:mod:`numcodecs_ext.cf.journal`, :mod:`numcodecs_ext.migrate.journal`): until the end nothing
there opens, and running the same command again resumes. The journals' names live here, below
both tools, so that :mod:`numcodecs_ext.tools.inspect` recognises them without importing either.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["CONVERT_JOURNAL", "MIGRATE_JOURNAL", "describe", "is_journal_key"]

#: convert's journal: a prefix of the destination (stamp.json, plan.json, runs/<i>)
CONVERT_JOURNAL = ".numcodecs-ext-convert"
#: migrate's journal: one document at the destination's root
MIGRATE_JOURNAL = ".numcodecs-ext-migrate.json"
#: the temporary file of a journal write that a kill cut short (Location.write's naming)
_MIGRATE_TEMPORARY = re.compile(r"\.?" + re.escape(MIGRATE_JOURNAL) + r"\.[0-9a-f]{12,32}\.partial")


def _tool(key: str) -> str | None:
    """``"convert"`` or ``"migrate"`` if ``key`` (relative to the store) belongs to a journal,
    including the temporary file of a journal write that an interruption cut short."""
    if key.startswith(CONVERT_JOURNAL + "/"):
        return "convert"
    if key == MIGRATE_JOURNAL or _MIGRATE_TEMPORARY.fullmatch(key):
        return "migrate"
    return None


def is_journal_key(key: str) -> bool:
    """Whether ``key`` belongs to convert's or migrate's journal."""
    return _tool(key) is not None


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
    tools = {t for t in map(_tool, files) if t}
    out = []
    for tool in sorted(tools):
        if tool == "convert":
            keys = [f"{CONVERT_JOURNAL}/stamp.json", f"{CONVERT_JOURNAL}/plan.json"]
            got = location.read_many([k for k in keys if k in files])
            stamp, plan = (_json(got.get(k)) for k in keys)
            source = stamp.get("source", {}).get("path") if isinstance(stamp.get("source"), dict) else None
            done = sum(1 for k in files if k.startswith(f"{CONVERT_JOURNAL}/runs/")
                       and k.rpartition("/")[2].isdigit())
            total = plan.get("runs") if isinstance(plan.get("runs"), int) else None
            state = "written"
        else:
            stamp = {}
            doc = _json(location.read_many([MIGRATE_JOURNAL]).get(MIGRATE_JOURNAL) if MIGRATE_JOURNAL in files
                        else None)
            source = doc.get("source") if isinstance(doc.get("source"), str) else None
            runs = doc.get("runs") if isinstance(doc.get("runs"), dict) else {}
            done = sum(len(r) for r in runs.values() if isinstance(r, dict))
            totals = doc.get("totals") if isinstance(doc.get("totals"), dict) else {}
            total = sum(v for v in totals.values() if isinstance(v, int)) if totals else None
            state = "written and verified"
        runs_text = (f"{done} of {_count(total, 'run', 'runs')} of chunks {state}" if total is not None
                     else f"{_count(done, 'run', 'runs')} of chunks {state}")
        of = f" of {source}" if source else ""
        dst = shlex.quote(str(location.display))
        again = (f"`numcodecs-ext {tool} {shlex.quote(source)} {dst}` with the same options" if source
                 else f"the same `numcodecs-ext {tool}` command")
        if tool == "convert" and not stamp:  # killed while the journal began: convert starts over
            message = (f"an interrupted convert, stopped as it began (its journal has no stamp, so nothing "
                       f"there can be resumed): delete {dst} and run the command again")
        elif committed == "all":
            message = (f"an interrupted {tool}{of}: its metadata is all written, but its journal "
                       f"({CONVERT_JOURNAL if tool == 'convert' else MIGRATE_JOURNAL}) was not removed; "
                       f"run {again} again to finish")
        else:
            where = ("its metadata was being written (the root's comes last)" if committed == "some"
                     else "no metadata yet, so nothing opens")
            message = f"an interrupted {tool}{of}: {runs_text}, {where}; run {again} again to resume, or delete {dst}"
        out.append({"tool": tool, "source": source, "runs_done": done, "runs_total": total, "message": message})
    return out
