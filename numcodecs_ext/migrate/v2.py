"""Migrate a zarr v2 array or group hierarchy to zarr v3, keeping the chunks wherever they stay valid.

Every array's v3 metadata is worked out first (:mod:`.plan`): chunk keys stay as they are (the v3
``v2`` chunk key encoding), numcodecs ``FixedScaleOffset`` / ``AsType`` filters become the spec
codecs ``scale_offset`` + ``cast_value``, compressors their v3 codecs, ``_ARRAY_DIMENSIONS``
becomes ``dimension_names``. Each plan is then tried on a copy of the array's first chunk: where
zarr reads it back to the very values the v2 array has, the chunk files are copied byte for byte;
otherwise the array is decoded and encoded again. Nothing is written before every array has a
plan. Metadata goes last (each ``zarr.json`` atomically, groups deepest first, the root last), so
an interrupted run never leaves a store that claims more than it holds. Afterwards both stores
are read and compared chunk by chunk.

Examples::

    numcodecs-ext migrate era5_v2.zarr era5_v3.zarr
    numcodecs-ext migrate era5_v2.zarr --dry-run
    numcodecs-ext migrate era5_v2.zarr --in-place   # adds zarr.json beside the v2 metadata
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .filters import MATCHES, NotExpressible
from .plan import ArrayPlan, GroupPlan, array_metadata, group_metadata
from ..tools.progress import Progress

__all__ = ["MigrationReport", "migrate", "plan_store", "verify"]


@dataclass
class MigrationReport:
    """What a migration did (or, for a dry run, would do)."""

    arrays: list[ArrayPlan] = field(default_factory=list)
    groups: list[GroupPlan] = field(default_factory=list)
    bytes_copied: int = 0
    chunks_rewritten: int = 0
    verified: bool = False

    def __str__(self) -> str:
        lines = [a.describe() for a in self.arrays]
        kept = sum(1 for a in self.arrays if not a.rewrite)
        lines.append(f"{len(self.arrays)} arrays ({kept} keep their chunks, "
                     f"{len(self.arrays) - kept} rewritten), {len(self.groups)} groups")
        return "\n".join(lines)


def _nodes(root: Path) -> tuple[list[str], list[str]]:
    """(array paths, group paths) of the v2 hierarchy at ``root``, relative, '' for the root."""
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory (migrate works on local zarr v2 stores)")
    if not ((root / ".zarray").exists() or (root / ".zgroup").exists()):
        hint = " (it has zarr.json: already zarr v3)" if (root / "zarr.json").exists() else ""
        raise ValueError(f"{root} is not a zarr v2 store: it has no .zgroup or .zarray{hint}")
    arrays, groups = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        if ".zarray" in filenames:
            arrays.append(rel)
        elif ".zgroup" in filenames:
            groups.append(rel)
        else:
            continue
        dirnames.sort()
    return arrays, groups


def plan_store(src: str | Path, *, match: str = "decode", wrap: bool = False,
               keep_numcodecs: bool = False) -> MigrationReport:
    """The migration plan of every array and group under ``src`` (nothing is written)."""
    root = Path(src)
    arrays, groups = _nodes(root)
    report = MigrationReport()
    for path in arrays:
        report.arrays.append(array_metadata(root, path, match=match, wrap=wrap,
                                            keep_numcodecs=keep_numcodecs))
    for path in groups:
        report.groups.append(group_metadata(root, path))
    return report


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN payloads and -0.0 included (the bytes of the decoded arrays)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.newbyteorder("=") != b.dtype.newbyteorder("="):
        return False
    return np.ascontiguousarray(a, a.dtype.newbyteorder("=")).tobytes() == \
        np.ascontiguousarray(b, b.dtype.newbyteorder("=")).tobytes()


def _first_chunk_region(root: Path, plan: ArrayPlan) -> tuple[slice, ...]:
    """The region of the array its first chunk file holds (the first chunk if there is none)."""
    shape = plan.metadata["shape"]
    chunks = plan.metadata["chunk_grid"]["configuration"]["chunk_shape"]
    separator = plan.metadata["chunk_key_encoding"]["configuration"]["separator"]
    if not shape:
        return ()
    index = [0] * len(shape)
    if plan.chunk_files:
        key = plan.chunk_files[0].relative_to(root / plan.path).as_posix()
        index = [int(p) for p in key.split(separator)]
    return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))


def _probe(root: Path, plan: ArrayPlan) -> str | None:
    """Why the chunks cannot be kept (zarr cannot read the first one under the new metadata, or
    reads other values), or None if they can."""
    import zarr

    region = _first_chunk_region(root, plan)
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.zarr"
        probe.mkdir()
        for f in plan.chunk_files[:1]:
            target = probe / f.relative_to(root / plan.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
        (probe / "zarr.json").write_text(json.dumps(plan.metadata))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = zarr.open_array(str(root), path=plan.path, mode="r", zarr_format=2)[region]
            except Exception as e:  # noqa: BLE001 - a broken source: said before anything is written
                raise ValueError(f"array {plan.path or '/'}: zarr cannot read the v2 array itself "
                                 f"({type(e).__name__}: {e})") from None
            try:
                got = zarr.open_array(str(probe), mode="r", zarr_format=3)[region]
            except Exception as e:  # noqa: BLE001 - any failure means: do not keep the chunks
                return _fall_back(plan, f"{type(e).__name__}: {e}")
        if _same(got, want):
            plan.read_only = _write_refused(probe, region, want)
    if not _same(got, want):
        return "the new codecs decode them to other values"
    return None


def _opens(metadata: dict[str, Any]) -> str | None:
    """Why zarr cannot open an array with ``metadata`` (and write its fill value), or None."""
    import zarr

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.zarr"
        probe.mkdir()
        (probe / "zarr.json").write_text(json.dumps(metadata))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                zarr.open_array(str(probe), mode="r", zarr_format=3)
        except Exception as e:  # noqa: BLE001 - reported in words
            return f"{type(e).__name__}: {e}"
    return None


def _fall_back(plan: ArrayPlan, why: str) -> str:
    """The chunks cannot be read under the new metadata: if zarr cannot even open it because it
    has no v3 codec for the compressor, the array is rewritten with zstd instead (the reason is
    returned); if it cannot open it for another reason, nothing can be written: NotExpressible."""
    codecs = plan.metadata["codecs"]
    if _opens(plan.metadata) is None:
        return f"zarr cannot read them under the new metadata ({why})"
    last = codecs[-1]["name"]
    if last.startswith("numcodecs.") and len(codecs) > 1:
        fallback = {**plan.metadata, "codecs": [*codecs[:-1], {"name": "zstd", "configuration": {
            "level": 0, "checksum": False}}]}
        if _opens(fallback) is None:
            plan.metadata = fallback
            return f"zarr has no v3 codec for the compressor {last}: rewritten with zstd"
    raise NotExpressible(f"array {plan.path or '/'}: zarr cannot open it under the new metadata "
                         f"({why}); nothing was written")


def _rewrite_refused(root: Path, plan: ArrayPlan) -> str | None:
    """Why zarr refuses to write the array's first chunk through its new metadata, or None."""
    import zarr

    region = _first_chunk_region(root, plan)
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.zarr"
        probe.mkdir()
        (probe / "zarr.json").write_text(json.dumps(plan.metadata))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = zarr.open_array(str(root), path=plan.path, mode="r", zarr_format=2)[region]
        return _write_refused(probe, region, values)


def _write_refused(probe: Path, region: tuple[slice, ...], values: np.ndarray) -> str | None:
    """Why zarr refuses to write ``values`` back through the new metadata (for instance a fill
    value the codecs cannot carry, which numcodecs wrapped silently), or None."""
    import zarr

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zarr.open_array(str(probe), mode="r+", zarr_format=3)[region] = values
    except ValueError as e:
        return str(e)
    return None


def _write_json_atomically(path: Path, metadata: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(metadata, indent=2))
    os.replace(tmp, path)


#: bytes of decoded values read at a time (zarr decodes the chunks of one read in parallel)
BLOCK_BYTES = 32 << 20


def _chunk_regions(shape: list[int], chunks: list[int], itemsize: int = 0):
    """Chunk-aligned regions covering the array: single chunks, or (``itemsize`` given) runs of
    whole chunks along the first axis of at most :data:`BLOCK_BYTES`."""
    chunks = list(chunks)
    if itemsize and chunks:
        chunk_bytes = max(1, math.prod(chunks) * itemsize)
        chunks[0] *= max(1, BLOCK_BYTES // chunk_bytes)
    grid = [math.ceil(s / c) if c else 0 for s, c in zip(shape, chunks)]
    for index in np.ndindex(*grid):
        yield tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))


def _rewrite(src: Path, dst: Path, plan: ArrayPlan, progress: Progress) -> int:
    """Decode every chunk from the v2 array and write it through the v3 metadata."""
    import zarr

    out = dst / plan.path
    out.mkdir(parents=True, exist_ok=True)
    _write_json_atomically(out / "zarr.json", plan.metadata)  # needed to write chunks through zarr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notes on v2 stores and numcodecs codecs
        source = zarr.open_array(str(src), path=plan.path, mode="r", zarr_format=2)
        target = zarr.open_array(str(out), mode="r+", zarr_format=3)
    shape = plan.metadata["shape"]
    chunks = plan.metadata["chunk_grid"]["configuration"]["chunk_shape"]
    count = 0
    for region in _chunk_regions(shape, chunks) if shape else [()]:
        target[region] = source[region]
        count += 1
        progress.advance(int(np.prod([r.stop - r.start for r in region])) * source.dtype.itemsize)
    return count


def migrate(src: str | Path, dst: str | Path | None = None, *, in_place: bool = False,
            dry_run: bool = False, match: str = "decode", wrap: bool = False,
            keep_numcodecs: bool = False, rewrite: bool = False, verify_result: bool = True,
            progress: bool = False) -> MigrationReport:
    """Migrate the zarr v2 store ``src`` to zarr v3 at ``dst`` (or in place).

    Parameters
    ----------
    src, dst : path
        Local directory stores; ``dst`` must not exist. ``src`` is never modified unless
        ``in_place``, which adds a ``zarr.json`` beside each node's v2 metadata (and refuses if
        any array's chunks would need rewriting).
    dry_run : bool
        Only plan (and probe) every array.
    match, wrap
        See :func:`numcodecs_ext.migrate.filters.filter_codecs`. By default, values written
        later that the stored type cannot hold are refused (numcodecs wrapped them silently);
        stored chunks read the same either way.
    keep_numcodecs : bool
        Keep filters the spec codecs cannot express under zarr's ``numcodecs.<id>`` names
        instead of refusing.
    rewrite : bool
        Decode and encode every chunk again even where the chunks could be kept.
    verify_result : bool
        Read both stores and compare every chunk afterwards (``AssertionError`` on a difference).
    progress : bool
        A progress bar on stderr.
    """
    if match not in MATCHES:
        raise ValueError(f"match={match!r} is not valid; use one of {', '.join(MATCHES)}")
    root = Path(src)
    if in_place:
        if dst is not None and Path(dst) != root:
            raise ValueError("give either a destination or --in-place, not both")
        target = root
    else:
        if dst is None:
            raise ValueError("a destination is needed (or --in-place)")
        target = Path(dst)
        if target.exists():
            raise ValueError(f"{target} exists; migrate writes a new store (remove it first)")
    report = plan_store(root, match=match, wrap=wrap, keep_numcodecs=keep_numcodecs)
    if in_place:
        taken = [p.path or "/" for p in [*report.arrays, *report.groups] if (root / p.path / "zarr.json").exists()]
        if taken:
            raise ValueError(f"{root} already has zarr v3 metadata at {', '.join(taken)}")
    for plan in report.arrays:
        plan.rewrite = "asked for" if rewrite else _probe(root, plan)
        if plan.rewrite and not in_place:
            refused = _rewrite_refused(root, plan)
            if refused:
                raise NotExpressible(f"array {plan.path or '/'} must be rewritten ({plan.rewrite}), "
                                     f"but zarr refuses to write it through the new metadata: {refused}")
    if in_place:
        rewrites = [p.path or "/" for p in report.arrays if p.rewrite]
        if rewrites:
            raise ValueError(f"--in-place cannot rewrite chunks, and these arrays need it: "
                             f"{', '.join(rewrites)}; migrate to a new store instead")
    if dry_run:
        return report
    total = sum(p.nbytes if not p.rewrite else int(np.prod(p.metadata["shape"])) * p.itemsize
                for p in report.arrays)
    bar = Progress(total, "migrate", enabled=progress)
    try:
        for plan in report.arrays:
            if plan.rewrite:
                report.chunks_rewritten += _rewrite(root, target, plan, bar)
                continue
            if not in_place:
                for f in plan.chunk_files:
                    out = target / f.relative_to(root)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, out)
                    size = f.stat().st_size
                    report.bytes_copied += size
                    bar.advance(size)
            _write_json_atomically(target / plan.path / "zarr.json", plan.metadata)
        for group in sorted(report.groups, key=lambda g: -g.path.count("/") - (g.path != "")):
            _write_json_atomically(target / group.path / "zarr.json", group.metadata)
    finally:
        bar.close()
    if verify_result:
        verify(root, target, report, progress=progress)
        report.verified = True
    return report


def verify(src: str | Path, dst: str | Path, report: MigrationReport, *, progress: bool = False) -> None:
    """Read every array from both stores, a few chunks at a time (at most :data:`BLOCK_BYTES` of
    values from each), and raise AssertionError on the first difference (values compared bit
    for bit, NaN payloads included)."""
    import zarr

    total = sum(int(np.prod(p.metadata["shape"])) for p in report.arrays)
    bar = Progress(total, "verify", enabled=progress, unit="values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notes on v2 stores and numcodecs codecs
        _verify(src, dst, report, bar)


def _verify(src: str | Path, dst: str | Path, report: MigrationReport, bar: Progress) -> None:
    import zarr

    try:
        for plan in report.arrays:
            a = zarr.open_array(str(src), path=plan.path, mode="r", zarr_format=2)
            b = zarr.open_array(str(dst), path=plan.path, mode="r", zarr_format=3)
            chunks = plan.metadata["chunk_grid"]["configuration"]["chunk_shape"]
            regions = _chunk_regions(plan.metadata["shape"], chunks, a.dtype.itemsize)
            for region in regions if a.shape else [()]:
                try:
                    same = _same(a[region], b[region])
                except Exception as e:  # noqa: BLE001 - a chunk that cannot be read differs
                    raise AssertionError(f"array {plan.path or '/'}: the chunks at {region} cannot "
                                         f"be read: {type(e).__name__}: {e}") from e
                if not same:
                    raise AssertionError(f"array {plan.path or '/'}: the v3 store reads other values "
                                         f"than the v2 store in the chunks at {region}")
                bar.advance(int(np.prod([r.stop - r.start for r in region])) if region else 1)
    finally:
        bar.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext migrate``."""
    parser.add_argument("src", help="zarr v2 store (a local directory)")
    parser.add_argument("dst", nargs="?", help="zarr v3 store to create (must not exist)")
    parser.add_argument("--in-place", action="store_true",
                        help="add zarr v3 metadata beside the v2 metadata of SRC (chunks untouched)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan per array, write nothing")
    parser.add_argument("--match", choices=MATCHES, default="decode",
                        help="float32/float16 FixedScaleOffset: reproduce numcodecs' decoding "
                             "(default; stored chunks read as before) or its encoding bit for bit")
    parser.add_argument("--wrap", action="store_true",
                        help="let later writes wrap values the stored integers cannot hold, as "
                             "numcodecs did (default: refuse them with an error)")
    parser.add_argument("--keep-numcodecs", action="store_true",
                        help="keep filters the spec codecs cannot express under zarr's "
                             "numcodecs.<id> names instead of refusing")
    parser.add_argument("--rewrite", action="store_true",
                        help="decode and encode every chunk again, even where it could be kept")
    parser.add_argument("--no-verify", action="store_true", help="skip reading both stores back")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or plan")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext migrate``."""
    try:
        report = migrate(args.src, args.dst, in_place=args.in_place, dry_run=args.dry_run,
                         match=args.match, wrap=args.wrap, keep_numcodecs=args.keep_numcodecs,
                         rewrite=args.rewrite,
                         verify_result=not args.no_verify, progress=not args.quiet)
    except (NotExpressible, ValueError, OSError) as e:
        print(f"numcodecs-ext migrate: {e}\nnothing was written", file=sys.stderr)
        return 2
    except AssertionError as e:
        print(f"numcodecs-ext migrate: verification failed: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - e.g. a corrupt chunk met while rewriting
        print(f"numcodecs-ext migrate: failed while writing ({type(e).__name__}: {e}); "
              f"{args.dst or args.src} is incomplete", file=sys.stderr)
        return 1
    if not args.quiet or args.dry_run:
        print(report)
        if args.dry_run:
            print("dry run: nothing written")
        elif report.verified:
            print("verified: every chunk reads the same values from both stores")
    return 0
