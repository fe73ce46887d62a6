"""Rewrite a zarr v3 store's ``numcodecs.fixedscaleoffset`` / ``numcodecs.astype`` codecs as the spec codecs.

Arrays written through zarr's numcodecs adapter carry these numcodecs-only names, which only
zarr-python with numcodecs reads. For each array, the spec codecs ``scale_offset`` +
``cast_value`` are proven before anything changes: every chunk is read under the current
metadata and under the new metadata (staged in memory over the same chunk files, read-only)
and compared bit for bit, in the data's own type. Only an array that reads identically gets
its new ``zarr.json``, written whole; chunks are never touched. An array that cannot be
proven is left as it was, with the reason; the exit status is then 1. With ``--nan-code``, an
array whose fill value is NaN (and which therefore refuses writes) gets a code for NaN, checked
against the codes its chunks hold: the way to repair arrays migrated without one.

The proof is never sampled where it guards a write: ``--verify sample:N`` and ``--verify none``
are for ``--dry-run`` only (a quick look, whose summary says the proof was sampled or skipped);
without ``--dry-run`` they are refused, since the array's old metadata is gone once replaced.
The proof runs as tasks on the user's dask scheduler when one is configured.

Examples::

    numcodecs-ext normalize store.zarr --dry-run --verify sample:5
    numcodecs-ext normalize store.zarr --dry-run
    numcodecs-ext normalize store.zarr
    numcodecs-ext normalize store.zarr --nan-code auto
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.errors import ToolError, UsageError
from ..store.progress import Progress
from ..store.storage import Location
from .codes import without_maps
from .filters import NotExpressible, filter_codecs
from .options import MigrateOptions
from .plan import ArrayPlan
from .index import index_store, require_store_directory
from .prove import apply_codes
from .runs import View
from .tasks import Pair, Runner, chosen_for, compare_arrays
from .text import counted, error, plain

__all__ = ["NormalizePlan", "NormalizeReport", "normalize"]

NAMES = {"numcodecs.fixedscaleoffset": "fixedscaleoffset", "numcodecs.astype": "astype"}


@dataclass
class NormalizePlan:
    """One array: its path, its codecs before and after, and why it was left as it was (if it
    was)."""

    path: str
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    left: str | None = None
    notes: list[str] = field(default_factory=list)
    read_only: str | None = None

    @property
    def name(self) -> str:
        return self.path or "/"

    def describe(self) -> str:
        text = (f"{self.name}:\n    {' -> '.join(c['name'] for c in self.before)}\n"
                f"    {' -> '.join(c['name'] for c in self.after)}")
        for note in self.notes:
            text += f"\n    {note}"
        if self.left:
            text += f"\n    left as it was: {self.left}"
        return text


@dataclass
class NormalizeReport:
    """Every array with something to change: ``changed`` (or, in a dry run, would be) and
    ``left`` as it was (with the reason); arrays that refuse writes (``read_only``)."""

    arrays: list[NormalizePlan] = field(default_factory=list)
    read_only: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)
    verify: Any = None  # the VerifyPlan of the proof (full unless a dry run sampled or skipped it)
    chunks_checked: int = 0
    chunks_total: int = 0

    def verification(self) -> str:
        """The summary's words on the proof: every chunk, sampled (how many), or none."""
        if self.verify is None or self.verify.complete:
            return "every chunk read under both metadata versions and found identical"
        if self.verify.enabled:
            return "proof " + self.verify.summary(self.chunks_checked, self.chunks_total)
        return "not proven (--verify none): no chunk was read"

    @property
    def changed(self) -> list[NormalizePlan]:
        return [a for a in self.arrays if a.left is None]

    @property
    def left(self) -> list[NormalizePlan]:
        return [a for a in self.arrays if a.left is not None]


def _native_dtype(data_type: Any) -> np.dtype:
    from zarr.dtype import data_type_registry

    return data_type_registry.match_json(data_type, zarr_format=3).to_native_dtype()


def _normalized_chain(codecs: list[Any], dtype: np.dtype, match: str, wrap: bool) -> list[Any]:
    """``codecs`` with numcodecs FixedScaleOffset/AsType as spec codecs, inside sharding too."""
    out: list[Any] = []
    for codec in codecs:
        if not isinstance(codec, dict):
            out.append(codec)
            continue
        name = codec.get("name")
        configuration = dict(codec.get("configuration") or {})
        if name in NAMES:
            mapped, dtype = filter_codecs({"id": NAMES[name], **configuration}, dtype, match=match, wrap=wrap)
            out.extend(mapped)
            dtype = dtype.newbyteorder("=")
            continue
        if name == "sharding_indexed" and isinstance(configuration.get("codecs"), list):
            inner = _normalized_chain(configuration["codecs"], dtype, match, wrap)
            out.append({**codec, "configuration": {**configuration, "codecs": inner}})
            continue
        if name == "cast_value":
            dtype = _native_dtype(configuration.get("data_type"))
        out.append(codec)
    return out


def _has_numcodecs(codecs: list[Any]) -> bool:
    for codec in codecs:
        if isinstance(codec, dict) and codec.get("name") in NAMES:
            return True
        if isinstance(codec, dict) and codec.get("name") == "sharding_indexed":
            if _has_numcodecs((codec.get("configuration") or {}).get("codecs") or []):
                return True
    return False


def _hint(reason: str, match: str, wrap: bool) -> str:
    hints = []
    if match == "encode":
        hints.append("--match decode reproduces numcodecs' decoding bit for bit")
    if not wrap and ("out_of_range" in reason or "outside" in reason):
        hints.append("the chunks hold values numcodecs wrapped: --wrap keeps its wrapping")
    return reason + (f" ({'; '.join(hints)})" if hints else "")


def _location(store: Any, storage_options: Any = None) -> Location:
    location = Location.parse(store, storage_options=storage_options)
    require_store_directory(location)
    if not location.isfile("zarr.json"):
        if location.isfile(".zgroup") or location.isfile(".zarray"):
            raise UsageError(f"{location}: is a zarr v2 store; `numcodecs-ext migrate` brings it "
                             "to zarr v3 (normalize works on v3 stores)")
        raise UsageError(f"{location}: not a zarr v3 store (no zarr.json at its root)")
    return location


def normalize(store: Any, options: MigrateOptions | None = None, *, dry_run: bool = False,
              **keywords: Any) -> NormalizeReport:
    """Rewrite every array's numcodecs FixedScaleOffset/AsType codecs in the v3 store as spec
    codecs, each array only after proving that every chunk reads the same (bit for bit) under
    the new metadata; arrays that do not are left as they were, with the reason. With
    ``nan_code`` / ``fill_code`` (see :func:`~numcodecs_ext.migrate.migrate`), NaN or the fill
    value gets a stored code, so that arrays that refused writes accept them.

    ``options`` (a :class:`~numcodecs_ext.migrate.MigrateOptions`, or its fields as keywords)
    gives ``match``, ``wrap``, ``nan_code``, ``fill_code``, ``verify``, ``progress`` and
    ``storage_options``; normalize never rewrites chunks and maps only the two numcodecs
    filters, so it refuses ``rewrite`` and ``keep_numcodecs``.

    ``verify`` is "full" (the default) for every run that writes: the proof of every chunk is
    what makes it safe to replace an array's metadata, whose old codecs are then gone. A dry
    run may take "sample:N" (a quick look; the report says the proof was sampled) or "none"
    (the plan only); a run that writes refuses both with a UsageError.

    Returns the report; nothing raises for an array that is left (see ``report.left``).
    """
    opts = MigrateOptions.make(options, **keywords)
    refused = [name for name in ("rewrite", "keep_numcodecs") if getattr(opts, name)]
    if refused:
        raise UsageError(f"{', '.join(refused)}=True: not an option of normalize (it changes metadata only, "
                         "and keeps every codec it does not map)")
    match, wrap, progress, check = opts.match, opts.wrap, opts.progress, opts.verify
    if not check.complete and not dry_run:
        raise UsageError(f"--verify {'sample:' + str(check.count) if check.enabled else 'none'}: normalize "
                         "proves every chunk before replacing metadata and cannot sample or skip that proof; "
                         "use --verify full, or --dry-run to sample")
    nan_codes, fill_codes = opts.nan_code, opts.fill_code
    location = _location(store, opts.storage_options)
    if not dry_run:
        location.refuse_writes("normalize replaces zarr.json documents there (--dry-run writes "
                               "nothing)")
    index = index_store(location, v2=False, v3_arrays=True)
    for table, option in ((nan_codes, "--nan-code"), (fill_codes, "--fill-code")):
        unknown = [p for p in table if p is not None and p not in index.arrays]
        if unknown:
            raise UsageError(f"{option}: {location} has no array "
                             f"{', '.join(p or '/ (its root)' for p in sorted(unknown))}; its arrays are "
                             f"{', '.join(p or '/' for p in sorted(index.arrays)) or 'none'}")
    report = NormalizeReport(dry_run=dry_run, verify=check)
    todo: list[tuple[NormalizePlan, ArrayPlan, dict[str, Any]]] = []
    for path in sorted(index.arrays):
        metadata = index.arrays[path]
        codecs = metadata.get("codecs")
        if not isinstance(codecs, list):
            continue
        name = path or "/"
        plan = ArrayPlan(path, copy.deepcopy(metadata), [], index.chunks.get(path, {}))
        entry = NormalizePlan(path, codecs, codecs)
        try:
            plan.dtype = _native_dtype(metadata["data_type"])
            if _has_numcodecs(codecs):
                plan.metadata["codecs"] = _normalized_chain(codecs, plan.dtype, match, wrap)
            apply_codes(plan, location, nan_code=nan_codes, fill_code=fill_codes, progress=progress)
        except NotExpressible as e:
            entry.left = plain(str(e))
            report.arrays.append(entry)
            continue
        except ToolError as e:  # no free code, codes that cannot be read: this array only
            entry.left = plain(str(e).removeprefix(f"array {name}: "))
            report.arrays.append(entry)
            continue
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, UsageError):
                raise
            if _has_numcodecs(codecs):
                entry.left = f"its metadata cannot be read ({error(e)})"
                report.arrays.append(entry)
            continue
        entry.after, entry.notes = plan.metadata["codecs"], plan.notes
        if plan.read_only:
            report.read_only.append((name, plan.read_only))
        if plan.metadata == metadata:
            continue
        report.arrays.append(entry)
        todo.append((entry, plan, metadata))
    total = sum(p.decoded_bytes for _, p, _ in todo)
    written: dict[str, dict[str, Any]] = {}
    pairs, proven = [], []
    for entry, plan, metadata in todo:
        try:
            View(location, plan.path, 3).open()
        except Exception as e:  # noqa: BLE001 - an array zarr cannot open: left alone
            entry.left = f"zarr cannot open it under its current metadata ({error(e)})"
            continue
        new = View(location, plan.path, 3, {plan.key: json.dumps(plan.metadata).encode()})
        try:
            new.open()
        except Exception as e:  # noqa: BLE001
            entry.left = _hint(f"zarr cannot open it under the new metadata ({error(e)})", match, wrap)
            continue
        chosen, among = chosen_for(check, plan)
        report.chunks_total += among
        pairs.append(Pair(plan.path, plan.name, View(location, plan.path, 3), new, plan.shape, plan.chunk_shape,
                          plan.itemsize, chosen))
        proven.append((entry, plan))
    outcomes = {}
    if check.enabled:
        with Runner(location) as runner, Progress(total, "verify", enabled=progress) as bar:
            outcomes = compare_arrays(pairs, runner, bar)
    for entry, plan in proven:
        out = outcomes.get(plan.path)
        if out is not None:
            report.chunks_checked += out.checked
            if out.failed:
                entry.left = out.failed.removeprefix(f"array {plan.name}: ")
                continue
            if out.why is not None:
                entry.left = _hint(f"the new codecs do not read it as before {out.why}", match, wrap)
                continue
        if not dry_run:
            location.write(plan.key, json.dumps(plan.metadata, indent=2).encode())
        written[plan.path] = plan.metadata
    current = {**index.arrays, **written}
    updated = _update_consolidated(location, index, current, dry_run=dry_run)
    if updated:
        verb = "would bring" if dry_run else "brought"
        report.notes.append(f"{verb} the consolidated metadata up to date for "
                            f"{counted(len(updated), 'array')} ({', '.join(updated)})")
    return report


_EMPTY = (([], None), (None, []))


def _stale(entry: Any, doc: Any) -> bool:
    """Whether the consolidated ``entry`` of an array is its zarr.json ``doc`` as it was before
    normalize changed it: different codecs only, and the difference one that normalize makes
    (numcodecs names that the zarr.json no longer has, or a code given to NaN or the fill value)."""
    if not isinstance(entry, dict) or not isinstance(doc, dict) or entry.get("codecs") == doc.get("codecs"):
        return False
    # (zarr writes empty fields, such as storage_transformers: [], into the entries it consolidates)
    if any(entry.get(k) != doc.get(k) and (entry.get(k), doc.get(k)) not in _EMPTY
           for k in set(entry) | set(doc) if k != "codecs"):
        return False
    old, new = entry.get("codecs") or [], doc.get("codecs") or []
    return (_has_numcodecs(old) and not _has_numcodecs(new)) or without_maps(old) == without_maps(new)


def _update_consolidated(location: Location, index: Any, current: dict[str, dict[str, Any]], *,
                         dry_run: bool = False) -> list[str]:
    """Groups whose zarr.json holds consolidated metadata get the codecs of the arrays below them
    that normalize changed, in this run or in an earlier one that was interrupted before it got
    here (written after the arrays, the deepest group first). Returns the arrays updated."""
    updated: list[str] = []
    for group in sorted(index.groups, key=lambda g: -(g.count("/") + (g != ""))):
        key = f"{group}/zarr.json" if group else "zarr.json"
        try:
            doc = json.loads(location.read(key))
        except (OSError, ValueError):
            continue
        entries = ((doc.get("consolidated_metadata") or {}).get("metadata")
                   if isinstance(doc, dict) else None)
        if not isinstance(entries, dict):
            continue
        changed = False
        for rel, meta in entries.items():
            full = f"{group}/{rel}" if group else rel
            if full in current and _stale(meta, current[full]):
                meta["codecs"] = current[full]["codecs"]
                changed = True
                if full not in updated:
                    updated.append(full)
        if changed and not dry_run:
            location.write(key, json.dumps(doc, indent=2).encode())
    return updated
