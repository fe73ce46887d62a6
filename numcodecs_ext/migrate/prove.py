"""Planning a migration and proving it on the source, before anything is written.

:func:`plan_store` works out every array's and group's v3 metadata (:mod:`.plan`), gives NaN
or the fill value a stored code where asked (:mod:`.codes`), and says which arrays zarr will
refuse to write to. :func:`prove_on_source` reads every chunk of every array twice, through its
v2 metadata and through the candidate v3 metadata staged in memory over the very same chunk
files (read-only), and compares them bit for bit: where they differ, the chunks cannot be kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.errors import ToolError, UsageError
from ..store.progress import Progress
from ..store.storage import Location
from .codes import (chain_at, check_fill, choose_code, code_cast, codes_metadata, codes_zarray,
                    existing_code, mapped_codes, scan_codes, with_code)
from .filters import NotExpressible
from .plan import ArrayPlan, GroupPlan, array_metadata, group_metadata
from .index import StoreIndex, key_in, v2_nodes
from .runs import View, compare_run, quiet, run_count, runs, values_in
from .text import counted, error, number, plain

__all__ = ["MigrationReport", "apply_codes", "plan_store", "prove_array", "prove_on_source",
           "write_refused"]

CodeOption = Mapping[str | None, "int | str"]


@dataclass
class MigrationReport:
    """What a migration did (or, for a dry run, would do)."""

    arrays: list[ArrayPlan] = field(default_factory=list)
    groups: list[GroupPlan] = field(default_factory=list)
    bytes_copied: int = 0
    chunks_rewritten: int = 0
    runs_resumed: int = 0
    verified: bool = False  # every chunk read back and compared
    verify: Any = None  # the VerifyPlan it ran with (full, sample:N, none)
    chunks_checked: int = 0  # chunks read back and compared (sample: of chunks_total)
    chunks_total: int = 0
    resumed: str | None = None
    in_place: bool = False
    dry_run: bool = False
    finished: list[str] = field(default_factory=list)  # --finish: the v2 documents removed
    notes: list[str] = field(default_factory=list)
    not_copied: list[str] = field(default_factory=list)  # files that are no zarr data

    @property
    def read_only(self) -> list[ArrayPlan]:
        return [a for a in self.arrays if a.read_only]

    def __str__(self) -> str:
        lines = [a.describe() for a in self.arrays]
        kept = sum(1 for a in self.arrays if not a.rewrite)
        lines.append(f"{counted(len(self.arrays), 'array')} "
                     f"({kept} {'keeps its' if kept == 1 else 'keep their'} chunks, "
                     f"{len(self.arrays) - kept} rewritten), {counted(len(self.groups), 'group')}")
        return "\n".join(lines)

    def verification(self) -> str:
        """The summary's words on what was read back: verified, sampled (how many chunks of
        how many), or not verified."""
        check = self.verify
        if check is None:
            return "verified" if self.verified else "not verified"
        return check.summary(self.chunks_checked, self.chunks_total)


def metadata_document(metadata: dict[str, Any]) -> bytes:
    return json.dumps(metadata, indent=2).encode()


def candidate(location: Location, plan: ArrayPlan, *, writable: bool = False) -> View:
    """The array under its planned v3 metadata, staged over ``location``'s chunks."""
    return View(location, plan.path, 3, {plan.key: metadata_document(plan.metadata)}, writable=writable)


def _memory_array(metadata: dict[str, Any]) -> Any:
    """A zarr array with ``metadata`` in memory (nothing on disk), open for writing."""
    import zarr
    from zarr.buffer import cpu
    from zarr.storage import MemoryStore

    store = MemoryStore(store_dict={"zarr.json": cpu.Buffer.from_bytes(metadata_document(metadata))})
    with quiet():
        return zarr.open_array(store, mode="r+", zarr_format=3)


def opens(metadata: dict[str, Any]) -> str | None:
    """Why zarr cannot open an array with ``metadata``, or None."""
    try:
        _memory_array(metadata)
    except Exception as e:  # noqa: BLE001 - reported in words
        return error(e)
    return None


def first_chunk(plan: ArrayPlan) -> tuple[slice, ...]:
    """The region of the array's first stored chunk (the first chunk if none is stored)."""
    shape, chunks = plan.shape, plan.chunk_shape
    if not shape:
        return ()
    index = [0] * len(shape)
    if plan.chunks:
        separator = plan.metadata["chunk_key_encoding"]["configuration"]["separator"]
        key = min(plan.chunks)[len(plan.path) + 1 if plan.path else 0:]
        index = [int(p) for p in (key.split("/") if separator == "/" else key.split("."))]
    return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))


def write_refused(metadata: dict[str, Any], values: np.ndarray | None = None,
                  sel: tuple[slice, ...] = ()) -> str | None:
    """Why zarr refuses to write through ``metadata`` (in the user's words where the fill value
    is the cause), or None. ``values`` at ``sel`` are written in memory if given."""
    check = check_fill(metadata)
    if check.reason:
        return check.reason
    if values is None:
        return None
    try:
        array = _memory_array(metadata)
        with quiet():
            array[sel] = values
    except Exception as e:  # noqa: BLE001 - any refusal, in words
        return error(e)
    return None


def _read_only_text(plan: ArrayPlan, reason: str, nan: bool) -> str:
    option = "--nan-code" if nan else "--fill-code"
    what = "NaN" if nan else "the fill value"
    named = f"{option} {plan.path}=N" if plan.path else f"{option} N"
    return (f"{reason}, so zarr will refuse every write to it (reading is not affected). Give "
            f"{what} a code with {option} auto (a code no stored chunk holds) or {named}")


def _decoded_value_of(metadata: dict[str, Any], where: tuple[int, ...], index: int, code: int) -> str | None:
    """What ``code`` reads as without a map (the value that can no longer be written once the
    code stands for NaN or the fill value), or None if that cannot be worked out here."""
    from .codes import make_codec

    chain = chain_at(metadata, where)
    try:
        dtype = np.dtype(json_dtype(metadata["data_type"]))
        dtypes = [dtype]
        for c in chain[:index + 1]:
            name = c.get("name")
            if name == "cast_value":
                dtype = np.dtype(json_dtype((c.get("configuration") or {}).get("data_type")))
            elif name not in ("scale_offset", "transpose"):
                return None
            dtypes.append(dtype)
        x = np.array([code], dtype=dtypes[-1])
        for c, dt in reversed(list(zip(chain[:index + 1], dtypes[:-1]))):
            if c.get("name") == "transpose":
                continue
            configuration = dict(c.get("configuration") or {})
            configuration.pop("scalar_map", None)
            x = make_codec(c["name"], configuration).decode_chunk(x, x.shape, dt)
        return number(x[0])
    except (ValueError, TypeError, KeyError):
        return None


def json_dtype(data_type: Any) -> np.dtype:
    from ..core.dtypes import v3_dtype_from_json

    return v3_dtype_from_json(data_type)


def apply_codes(plan: ArrayPlan, location: Location, *, nan_code: CodeOption, fill_code: CodeOption,
                progress: bool = False) -> None:
    """Give NaN (``nan_code``) or the fill value (``fill_code``) a stored code in ``plan``'s
    metadata where asked ({array path or None for every array that needs one: N or "auto"}),
    checking against the codes the stored chunks hold; then say why writes will be refused,
    if they will."""
    check = check_fill(plan.metadata)
    try:
        dtype: np.dtype | None = json_dtype(plan.metadata["data_type"])
    except ValueError:  # a type no code can be given in (datetime, complex ...)
        dtype = None
    for option, table in (("--nan-code", nan_code), ("--fill-code", fill_code)):
        nan = option == "--nan-code"
        what_asked = "NaN" if nan else "its fill value"
        asked = table.get(plan.path, None)
        if asked is None and None in table:  # every array that needs one
            needs = check.reason is not None and check.index is not None
            asked = table[None] if needs and (check.nan or not nan) else None
        if asked is None:
            continue
        where, index = check.where, check.index
        if index is None:  # asked by name for an array whose fill is fine: NaN's code, if any
            found = code_cast(chain_at(plan.metadata, ()), dtype) if dtype is not None else None
            if found is None or not nan:
                raise UsageError(f"{option} {plan.name}: array {plan.name} "
                                 + (f"has no cast to integers to give {what_asked} a code in"
                                    if found is None else "needs no code for its fill value"))
            where, index = (), found[0]
        key = "NaN" if nan else check.key
        target = json_dtype((chain_at(plan.metadata, where)[index].get("configuration") or {})["data_type"])
        have = existing_code(plan.metadata, where, index, key)
        if have is not None:
            plan.notes.append(f"{'NaN' if nan else 'the fill value'} already has the code {have}")
            continue
        if plan.zarray is not None:  # the v2 chunks, read as v2 down to the codes
            zarray = codes_zarray(plan.zarray)
            view = View(location, plan.path, 2, {key_in(plan.path, ".zarray"): json.dumps(zarray).encode()}) \
                if zarray is not None else None
        else:
            view_meta = codes_metadata(plan.metadata, where, index)
            view = (View(location, plan.path, 3, {plan.key: metadata_document(view_meta)})
                    if view_meta is not None else None)
        if view is None:
            raise ToolError(f"array {plan.name}: its stored codes cannot be read apart from its "
                            f"other codecs here, so {option} cannot check that a code is free")
        from ..core.dtypes import int_range

        lo, hi = int_range(target)
        if asked != "auto" and not lo <= int(asked) <= hi:
            raise UsageError(f"{option} {asked}: array {plan.name} stores {target.name} codes, "
                             f"from {lo} to {hi}")
        taken = mapped_codes(plan.metadata, where, index)  # codes the map gives other values
        if asked != "auto" and int(asked) in taken:
            raise UsageError(f"{option} {asked}: in array {plan.name} the code {asked} already "
                             f"stands for {taken[int(asked)]} in the scalar_map (give each value "
                             f"its own code, or use {option} auto)")
        with Progress(len(plan.chunks), f"codes {plan.name}", enabled=progress, unit="chunks") as bar:
            use = scan_codes(view, plan.chunks, asked=[] if asked == "auto" else [int(asked)],
                             progress=bar)
        use.reserve(taken)
        if asked == "auto":
            code = choose_code(use)
            if code is None:
                raise ToolError(f"array {plan.name}: its stored chunks hold every {target.name} "
                                f"code, so none is free for {'NaN' if nan else 'its fill value'}")
        else:
            code = int(asked)
            if use.used(code):
                free = choose_code(use)
                hint = f"; {free} is free" if free is not None else ""
                raise UsageError(f"{option} {asked}: array {plan.name} holds the code {code} in its "
                                 f"stored chunks, where it reads as a value{hint} (or use "
                                 f"{option} auto)")
        plan.metadata = with_code(plan.metadata, where, key, code, index)
        lost = _decoded_value_of(plan.metadata, where, index, code)
        what = "NaN" if nan else f"the fill value {number(_fill(plan))}"
        note = f"{what} is stored as code {code} ({option}; no stored chunk holds it)"
        if lost is not None:
            note += f"; the value {lost}, which that code stood for, can no longer be written"
        plan.notes.append(note)
        check = check_fill(plan.metadata)
    if check.reason:
        plan.read_only = _read_only_text(plan, check.reason, check.nan) if check.index is not None \
            else f"{check.reason}, so zarr will refuse every write to it (reading is not affected)"


def _fill(plan: ArrayPlan) -> Any:
    from ..core.scalar_json import scalar_from_json

    try:
        return scalar_from_json(plan.metadata["fill_value"], json_dtype(plan.metadata["data_type"]))
    except (ValueError, TypeError):
        return plan.metadata["fill_value"]


def _fall_back(location: Location, plan: ArrayPlan) -> None:
    """If zarr cannot open the planned metadata because it has no v3 codec for the compressor,
    the array is rewritten with zstd; if it cannot open it for another reason, NotExpressible."""
    why = opens(plan.metadata)
    if why is None:
        return
    codecs = plan.metadata["codecs"]
    last = codecs[-1]["name"]
    if last.startswith("numcodecs.") and len(codecs) > 1:
        fallback = {**plan.metadata, "codecs": [*codecs[:-1], {"name": "zstd", "configuration": {
            "level": 0, "checksum": False}}]}
        if opens(fallback) is None:
            plan.metadata = fallback
            plan.rewrite = f"zarr has no v3 codec for the compressor {last}: rewritten with zstd"
            return
    raise NotExpressible(f"array {plan.name}: zarr cannot open it under the new metadata ({why}); "
                         "nothing was written")


def plan_store(src: Any, *, match: str = "decode", wrap: bool = False, keep_numcodecs: bool = False,
               nan_code: CodeOption | None = None, fill_code: CodeOption | None = None,
               progress: bool = False, index: StoreIndex | None = None) -> MigrationReport:
    """The migration plan of every array and group of the v2 store ``src`` (nothing is
    written): v3 metadata, codes given to NaN or fill values where asked, and which arrays
    will refuse writes. Chunks are read only to find free codes."""
    location = Location.parse(src)
    index = index or v2_nodes(location)
    report = MigrationReport()
    nan_code, fill_code = dict(nan_code or {}), dict(fill_code or {})
    for table, option in ((nan_code, "--nan-code"), (fill_code, "--fill-code")):
        unknown = [p for p in table if p is not None and p not in index.arrays]
        if unknown:
            raise UsageError(f"{option}: {location} has no array "
                             f"{', '.join(p or '/ (its root)' for p in sorted(unknown))}; its "
                             f"arrays are {', '.join(p or '/' for p in sorted(index.arrays)) or 'none'}")
    for path in sorted(index.arrays):
        plan = array_metadata(index, path, match=match, wrap=wrap, keep_numcodecs=keep_numcodecs)
        _fall_back(location, plan)
        apply_codes(plan, location, nan_code=nan_code, fill_code=fill_code, progress=progress)
        report.arrays.append(plan)
    for path in index.groups:
        report.groups.append(group_metadata(index, path))
    _keep_consolidated(location, index, report)
    report.not_copied = sorted(index.other)
    for key, why in index.problems:
        report.notes.append(f"{location.child(key)}: {why}; zarr reads what is there as a missing "
                            "chunk (the fill value), under either metadata version")
    return report


def _keep_consolidated(location: Location, index: StoreIndex, report: MigrationReport) -> None:
    """A group that had v2 consolidated metadata (``.zmetadata``) gets zarr v3's in its planned
    ``zarr.json``, over the planned metadata of the nodes below it."""
    from .consolidated import consolidate, v2_consolidated_disagrees

    nodes = {a.path: a.metadata for a in report.arrays}
    nodes.update({g.path: g.metadata for g in report.groups})
    for group in report.groups:
        if key_in(group.path, ".zmetadata") not in index.v2_files:
            continue
        where = f"group {group.path}" if group.path else "the root group"
        try:
            group.metadata = {**group.metadata, "consolidated_metadata": consolidate(nodes, group.path)}
        except Exception as e:  # noqa: BLE001 - zarr cannot consolidate these nodes: said, not fatal
            report.notes.append(f"{where} had consolidated metadata (.zmetadata), which is not kept: zarr "
                                f"cannot consolidate the new metadata ({error(e)})")
            continue
        report.notes.append(f"{where} keeps its consolidated metadata (.zmetadata): its zarr.json "
                            "consolidates the nodes below it, as zarr.consolidate_metadata writes it")
    stale = v2_consolidated_disagrees(location, index)
    if stale:
        shown = ", ".join(stale[:5]) + (" ..." if len(stale) > 5 else "")
        report.notes.append(f"the consolidated metadata .zmetadata of {location} disagrees with {shown}; the "
                            "migration follows those documents themselves (as zarr does without it)")


def prove_array(source: Any, target: Any, plan: ArrayPlan, bar: Progress) -> str | None:
    """Read every run of ``plan``'s array from ``source`` and ``target`` (zarr arrays) and say
    where they first differ (None: they read the same, bit for bit)."""
    for _, sel in runs(plan.shape, plan.chunk_shape, itemsize=plan.itemsize):
        why = compare_run(source, target, sel, name=plan.name)
        if why is not None:
            return why
        bar.advance(values_in(sel) * plan.itemsize)
    return None


def source_view(location: Location, plan: ArrayPlan) -> View:
    """The array as zarr reads it through its v2 metadata (see :func:`~.plan.v2_reading`)."""
    return View(location, plan.path, 2, plan.source_staged)


def open_source(location: Location, plan: ArrayPlan) -> Any:
    try:
        return source_view(location, plan).open()
    except Exception as e:  # noqa: BLE001 - a broken source, said before anything is written
        raise ToolError(f"array {plan.name}: zarr cannot open the v2 array itself ({error(e)})") from None


def prove_on_source(location: Location, report: MigrationReport, *, progress: bool = False,
                    need_writes: bool = True, verify: Any = None) -> None:
    """Read every array of the v2 store at ``location`` under its v2 and its planned v3 metadata
    (staged over the same chunk files, read-only), as tasks on the user's dask scheduler (or
    threads here), and mark those that read differently as needing a rewrite
    (``plan.rewrite``); ``verify`` (a VerifyPlan; default every chunk) may sample.
    ``need_writes``: say now if such an array cannot be written through its new metadata either."""
    from ..store.verifying import parse_verify
    from .tasks import Pair, Runner, chosen_for, compare_arrays

    check = parse_verify(verify)
    report.verify = check
    pairs = []
    for plan in report.arrays:
        if plan.rewrite:
            continue
        open_source(location, plan)
        try:
            candidate(location, plan).open()
        except Exception as e:  # noqa: BLE001 - zarr cannot read the chunks this way
            plan.rewrite = f"zarr cannot read them under the new metadata ({error(e)})"
            continue
        chosen, among = chosen_for(check, plan)
        report.chunks_total += among
        pairs.append(Pair(plan.path, plan.name, source_view(location, plan), candidate(location, plan),
                          plan.shape, plan.chunk_shape, plan.itemsize, chosen))
    total = sum(p.decoded_bytes for p in report.arrays if not p.rewrite)
    with Runner(location) as runner, Progress(total, "verify", enabled=progress) as bar:
        outcomes = compare_arrays(pairs, runner, bar)
    plans = {p.path: p for p in report.arrays}
    for path, out in outcomes.items():
        report.chunks_checked += out.checked
        if out.failed:
            raise ToolError(out.failed)
        if out.why is not None:
            plans[path].rewrite = rewrite_reason(plans[path], out.why)
    if need_writes:
        check_rewritable(location, report)


def rewrite_reason(plan: ArrayPlan, why: str) -> str:
    text = f"the new codecs do not read them as before {why}"
    if "out_of_range" in why or "outside" in why:
        text += (" (numcodecs wrapped values the stored type cannot hold, and these chunks rely "
                 "on it: --wrap keeps numcodecs' wrapping)")
    return plain(text)


def check_rewritable(location: Location, report: MigrationReport) -> None:
    """Every array that must be rewritten can be written through its new metadata (tried in
    memory on its first chunk), or NotExpressible says why, before anything is written."""
    for plan in report.arrays:
        if not plan.rewrite:
            continue
        sel = first_chunk(plan)
        with quiet():
            try:
                values = open_source(location, plan)[sel]
            except ToolError:
                raise
            except Exception as e:  # noqa: BLE001 - a broken source
                raise ToolError(f"array {plan.name}: zarr cannot read the v2 array itself "
                                f"({error(e)})") from None
        refused = plan.read_only or write_refused(plan.metadata, values, sel)
        if refused:
            raise NotExpressible(f"array {plan.name} must be rewritten ({plan.rewrite}), but zarr "
                                 f"refuses to write it through the new metadata: {refused}")


def count_runs(plan: ArrayPlan) -> int:
    return run_count(plan.shape, plan.chunk_shape, itemsize=plan.itemsize)
