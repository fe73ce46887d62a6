"""Migrating a zarr v2 store in place, and finishing such a migration.

``--in-place`` adds a ``zarr.json`` beside each node's v2 metadata; chunks are untouched. Every
array is first read through its v2 metadata and through its planned v3 metadata (staged in
memory over the same chunk files) and compared bit for bit; only when every array reads the
same are the ``zarr.json`` documents written, arrays first, groups from the deepest up, the root
last, each whole. The store then holds both versions: v2 readers read it as before, zarr-python 3
and xarray open the v3 metadata (and warn, on every open, that both are there).

``--finish`` ends that state once the user is satisfied. v2 writers may have changed the v2 metadata
since, so it first checks that each ``zarr.json`` says all that the v2 documents say now
(:func:`prove_metadata`: the v3 metadata ``--in-place`` would write from them, attributes both ways,
consolidated metadata of either version), then reads every array through both metadata versions
again, and only then removes the v2 documents: ``.zmetadata`` first, then each array's ``.zarray``
and ``.zattrs`` (deepest first), then each group's, the root's last. The v3 view is never touched,
so an interruption leaves a store that reads as v3 exactly as before, and running the command again
finishes the rest.
"""

from __future__ import annotations

import json
from typing import Any

from ..store.errors import ToolError, UsageError
from ..store.progress import Progress
from ..store.staging import commit_order
from ..store.storage import Location
from .plan import ArrayPlan, v2_reading
from .index import StoreIndex, index_store, key_in, read_json, same_json
from .prove import MigrationReport, metadata_document, open_source, source_view
from .runs import View
from .text import counted, error

__all__ = ["add_v3_metadata", "remove_v2_metadata"]


def _explain_difference(key: str, stored: Any, planned: dict[str, Any]) -> str:
    if not isinstance(stored, dict):
        return f"{key} is not a JSON object"
    differ = sorted(k for k in set(stored) | set(planned) if not same_json(stored.get(k), planned.get(k)))
    return f"{key} differs in {', '.join(differ)}"


def _without_consolidated(doc: Any) -> Any:
    return {k: v for k, v in doc.items() if k != "consolidated_metadata"} if isinstance(doc, dict) else doc


def existing_v3(location: Location, index: StoreIndex, report: MigrationReport) -> set[str]:
    """The planned ``zarr.json`` documents already in the store that equal the plan (an earlier,
    interrupted run wrote them); UsageError, before anything is written, for any that differs
    otherwise than in its consolidated metadata (that one is written again, brought up to date)."""
    planned = {a.key: a.metadata for a in report.arrays}
    planned.update({g.key: g.metadata for g in report.groups})
    kept, differ = set(), []
    for node in sorted(index.v3):
        key = f"{node}/zarr.json" if node else "zarr.json"
        if key not in planned:
            continue
        try:
            stored = json.loads(location.read(key))
        except (OSError, ValueError):
            stored = None
        if same_json(stored, planned[key]):
            kept.add(key)
        elif same_json(_without_consolidated(stored), _without_consolidated(planned[key])):
            pass  # only its consolidated metadata is out of date: written again (last, whole)
        else:
            differ.append(_explain_difference(key, stored, planned[key]))
    if differ:
        raise UsageError(
            f"{location} already has zarr v3 metadata this migration would not write: {'; '.join(differ)}. "
            "To migrate those nodes again, remove their zarr.json and run again (see docs/tools.md)")
    return kept


def add_v3_metadata(location: Location, index: StoreIndex, report: MigrationReport, *,
                     verify: Any = True, dry_run: bool = False, progress: bool = False) -> None:
    """Prove every array under its v3 metadata on its own chunks (``verify``: every chunk, a
    sample, or none; a dry run proves every chunk unless sampled), then add the ``zarr.json``
    documents (those an interrupted run already wrote are kept)."""
    from .write import as_plan

    check = as_plan(verify)
    report.in_place = True
    kept = existing_v3(location, index, report)
    if kept and len(kept) == len(report.arrays) + len(report.groups):
        report.resumed = ("already migrated in place: every zarr.json equals the plan (nothing "
                          "written; every array verified again)")
    elif kept:
        report.resumed = (f"resumed: {len(kept)} zarr.json documents an earlier run wrote equal "
                          "the plan and were kept")
    if check.enabled or dry_run:
        from .prove import prove_on_source

        prove_on_source(location, report, progress=progress, need_writes=False,
                        verify=check if check.enabled else None)
    else:
        report.verify = check
    rewrites = [p for p in report.arrays if p.rewrite]
    if rewrites:
        raise ToolError("--in-place keeps the chunks as they are, and these arrays would read "
                        "differently: " + "; ".join(f"{p.name}: {p.rewrite}" for p in rewrites)
                        + ". Migrate to a new store instead (the v2 store is unchanged)")
    report.verified = report.verify.complete
    if dry_run:
        return
    docs = {a.key: metadata_document(a.metadata) for a in report.arrays}
    docs.update({g.key: metadata_document(g.metadata) for g in report.groups})
    for key in commit_order(docs):
        if key not in kept:
            location.write(key, docs[key])
    for key in index.temporary:  # our own zarr.json writes an interruption left half done
        if key.rpartition("/")[2].startswith(".zarr.json."):
            location.remove(key)


def remove_v2_metadata(location: Location, *, dry_run: bool = False, progress: bool = False) -> MigrationReport:
    """Remove the v2 metadata of a store migrated in place, after proving that its v3 metadata
    reads every array as the v2 metadata does."""
    if not location.exists():
        raise UsageError(f"{location}: does not exist")
    if not location.isdir():
        raise UsageError(f"{location}: is a file, not a zarr store (a directory)")
    index = index_store(location)
    report = MigrationReport(in_place=True, dry_run=dry_run)
    nodes = {k.rpartition("/")[0] for k in index.v2_files}
    if not index.v3:
        raise UsageError(f"{location}: has no zarr v3 metadata; run `numcodecs-ext migrate "
                         f"{location} --in-place` first, then --finish")
    if not nodes:
        report.notes.append(f"{location} holds no zarr v2 metadata: nothing to finish")
        return report
    missing = sorted(n or "/" for n in nodes if n not in index.v3)
    if missing:
        raise UsageError(f"{location}: these nodes have v2 metadata and no zarr.json: "
                         f"{', '.join(missing)}; run `numcodecs-ext migrate {location} --in-place` "
                         "first (it resumes), then --finish")
    prove_metadata(location, index, nodes)
    # proven every time, every chunk: the v2 metadata is the only way back
    from ..store.verifying import parse_verify
    from .tasks import Pair, Runner, compare_arrays

    pairs, total = [], 0
    for path in sorted(index.arrays):
        plan = ArrayPlan(path, {}, [], source_staged=v2_reading(index.arrays[path], path))
        source = open_source(location, plan)
        try:
            target = View(location, plan.path, 3).open()
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"array {plan.name}: zarr cannot open its v3 metadata ({error(e)}); "
                            "nothing was removed") from None
        shape, chunks = list(source.shape), list(source.chunks)
        if list(target.shape) != shape or list(target.chunks) != chunks:
            raise ToolError(f"array {plan.name}: the v2 metadata says shape {shape}, chunks "
                            f"{chunks}; the v3 metadata {list(target.shape)}, "
                            f"{list(target.chunks)}; nothing was removed")
        total += int(source.nbytes)
        codes, mapped = _mapped_codes(location, path)
        pairs.append(Pair(path, plan.name, source_view(location, plan), View(location, path, 3), shape, chunks,
                          source.dtype.itemsize, codes=codes, mapped=mapped))
    with Runner(location) as runner, Progress(total, "verify", enabled=progress) as bar:
        outcomes = compare_arrays(pairs, runner, bar)
    for pair in pairs:
        out = outcomes[pair.array]
        report.chunks_checked += out.checked
        if out.failed:
            raise ToolError(f"{out.failed}; nothing was removed")
        if out.why is not None:
            raise ToolError(f"array {pair.name}: the v3 metadata does not read as the "
                            f"v2 metadata {out.why}; nothing was removed")
        if out.mapped:
            one = out.mapped == 1
            report.notes.append(
                f"array {pair.name}: {counted(out.mapped, 'value')} {'reads' if one else 'read'} differently "
                f"through the v2 metadata, {'stored as a code' if one else 'all stored as codes'} the v3 "
                f"metadata's scalar_map decodes ({', '.join(map(str, pair.mapped))}: values written through "
                "the v3 metadata, such as NaN, that the v2 metadata cannot represent); the v3 view reads "
                f"{'it' if one else 'them'} as written (a v2 writer that wrote the value a code means through "
                "the v2 metadata reads the scalar_map's value there now: check such writes before relying on it)")
    report.verify = parse_verify("full")
    report.verified = True
    order = finish_order(index.v2_files, index.arrays)
    report.finished = order
    if dry_run:
        return report
    for key in order:
        location.remove(key)
    return report


_WHAT = {"node_type": "whether it is an array or a group", "shape": "shape", "data_type": "data type",
         "chunk_grid": "chunks", "chunk_key_encoding": "chunk keys", "fill_value": "fill value",
         "codecs": "codecs (order, byte order, filters or compressor)",
         "dimension_names": "dimension names (_ARRAY_DIMENSIONS)"}


def prove_metadata(location: Location, index: StoreIndex, nodes: set[str]) -> None:
    """UsageError, before anything is removed, unless every node's ``zarr.json`` says all that its
    v2 metadata (as it is now) means: the v3 metadata ``--in-place`` would write from it, under
    any of its options (``scalar_map`` codes aside), in every field but attributes, and every
    attribute it would write and no other; and the consolidated metadata of either version agrees with the
    documents it repeats. (A node with only v3 metadata is one an interrupted --finish finished,
    or one added through zarr v3: the v2 view says nothing of it. A node removed through zarr,
    of either version, loses its zarr.json with its v2 documents and chunks.)"""
    from .consolidated import stale_entries, v2_consolidated_disagrees

    stale = v2_consolidated_disagrees(location, index)
    if stale:
        raise UsageError(f"{location}: its v2 consolidated metadata (.zmetadata) disagrees with "
                         f"{', '.join(stale[:5])}: update or remove it, then finish again; nothing was removed")
    changed, v3_docs = [], {}
    for node in sorted(index.v3):
        v3_docs[node] = read_json(location, key_in(node, "zarr.json"))
    for node in sorted(nodes):
        differ = _differences(index, node, v3_docs.get(node))
        if differ:
            changed.append(f"{node or '/'} ({', '.join(differ)})")
    if changed:
        raise UsageError(f"{location}: the v2 metadata changed since --in-place: {'; '.join(changed)}; "
                         "remove the zarr.json of these nodes and migrate in place again; nothing was removed")
    for node, doc in v3_docs.items():
        if isinstance(doc, dict) and doc.get("consolidated_metadata"):
            out_of_date = stale_entries(doc, node, v3_docs)
            if out_of_date:
                raise UsageError(f"{location}: the consolidated metadata in {key_in(node, 'zarr.json')} "
                                 f"is out of date for {', '.join(out_of_date[:5])}: `numcodecs-ext migrate "
                                 f"{location} --in-place` again brings it up to date; nothing was removed")


def _differences(index: StoreIndex, node: str, stored: Any) -> list[str]:
    """What the v2 metadata of ``node`` means that its v3 metadata ``stored`` does not say, in
    words (the fewest over every option --in-place takes); [] if nothing."""
    from .filters import MATCHES
    from .plan import array_metadata, group_metadata

    if not isinstance(stored, dict):
        return ["its zarr.json is not a JSON object"]
    if node not in index.arrays and node not in index.groups:
        # only .zattrs left: an interrupted --finish removed the .zarray (or .zgroup) before it
        attributes = group_metadata(index, node).metadata["attributes"]
        attributes.pop("_ARRAY_DIMENSIONS", None)
        written = stored.get("attributes") if isinstance(stored.get("attributes"), dict) else {}
        for made in ("_FillValue", "missing_value"):  # made from the fill value (see plan.array_metadata)
            if made in written and made not in attributes:
                attributes[made] = written[made]
        planned = [{"attributes": attributes}]
        return _compare(planned[0], {**stored, **{k: None for k in _WHAT}})
    if node not in index.arrays:
        planned = [group_metadata(index, node).metadata]
    else:
        found, why = [], None
        for match in MATCHES:  # the defaults first: the first plan that agrees ends the search
            for wrap in (False, True):
                for keep in (False, True):
                    try:
                        plan = array_metadata(index, node, match=match, wrap=wrap, keep_numcodecs=keep)
                    except ToolError as e:  # NotExpressible too
                        why = why or str(e)
                        continue
                    found.append(_compare(plan.metadata, stored))
                    if not found[-1]:
                        return []
        return min(found, key=len) if found else [f"its v2 metadata can no longer be migrated: {why}"]
    return _compare(planned[0], stored)


def _compare(planned: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    from .codes import without_maps

    differ = []
    for field, what in _WHAT.items():
        want, have = planned.get(field), stored.get(field)
        if field == "codecs":
            want, have = without_maps(want), without_maps(have)
        same = same_json(want, have)
        if field == "fill_value" and not same:  # "NaN" or a hex form, 0 or 0.0: one value?
            same = _same_fill(planned.get("data_type"), want, have)
        if not same and not (field == "node_type" and want is None):
            differ.append(what)
    attributes = stored.get("attributes") if isinstance(stored.get("attributes"), dict) else {}
    want = planned.get("attributes") or {}
    differ += [f"attribute {k}" for k, v in want.items() if k not in attributes or not same_json(attributes[k], v)]
    differ += [f"attribute {k} (only in zarr.json)" for k in attributes if k not in want]
    return differ



def _same_fill(data_type: Any, a: Any, b: Any) -> bool:
    """Whether two fill-value JSON forms are one value of ``data_type`` (bit for bit)."""
    import numpy as np
    from zarr.dtype import data_type_registry

    try:
        zdtype = data_type_registry.match_json(data_type, zarr_format=3)
        x, y = (np.asarray(zdtype.from_json_scalar(v, zarr_format=3)) for v in (a, b))
    except Exception:  # noqa: BLE001 - a form zarr cannot read: not the same
        return False
    return x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _mapped_codes(location: Location, path: str) -> tuple[View | None, tuple[int, ...]]:
    """A view of the array's stored codes and the codes its v3 ``cast_value`` maps on decoding
    (``scalar_map`` ``decode`` keys, e.g. NaN's code given by ``--nan-code``), or (None, ()).
    Values written through the v3 metadata as such a code (NaN) read as something else through
    the v2 metadata, which has no code for them: --finish accepts exactly those differences."""
    from .codes import chain_at, code_cast, codes_metadata
    from .prove import json_dtype

    key = f"{path}/zarr.json" if path else "zarr.json"
    try:
        metadata = read_json(location, key)
        found = code_cast(chain_at(metadata, ()), json_dtype(metadata["data_type"]))
        if found is None:
            return None, ()
        index = found[0]
        smap = (chain_at(metadata, ())[index].get("configuration") or {}).get("scalar_map") or {}
        keys = tuple(sorted({int(k) for k, _ in smap.get("decode", []) if isinstance(k, int)}))
        view_meta = codes_metadata(metadata, (), index)
    except (ValueError, TypeError, KeyError, ToolError):
        return None, ()
    if not keys or view_meta is None:
        return None, ()
    return View(location, path, 3, {key: metadata_document(view_meta)}), keys


def finish_order(keys: Any, arrays: Any) -> list[str]:
    """The v2 documents in the order they are removed: ``.zmetadata`` (which claims the whole
    tree) first; then nodes deepest first, arrays before groups, the root last; within a node
    the document that makes it a node before its attributes.

    >>> finish_order([".zgroup", ".zattrs", "t/.zarray", "t/.zattrs", ".zmetadata", "g/.zgroup"], ["t"])
    ['.zmetadata', 't/.zarray', 't/.zattrs', 'g/.zgroup', '.zgroup', '.zattrs']
    """
    within = {".zmetadata": 0, ".zarray": 1, ".zgroup": 1, ".zattrs": 2}

    def rank(key: str) -> tuple[int, int, int, int, str]:
        node, _, name = key.rpartition("/")
        depth = node.count("/") + 1 if node else 0
        return (name != ".zmetadata", -depth, node not in arrays, within.get(name, 3), key)

    return sorted(keys, key=rank)

