"""Rewrite a zarr v3 store's ``numcodecs.fixedscaleoffset`` / ``numcodecs.astype`` codecs as the spec codecs.

Arrays written through zarr's numcodecs adapter carry these numcodecs-only names, which only
zarr-python with numcodecs reads. Where ``scale_offset`` + ``cast_value`` decode the stored
chunks to the very same values (:mod:`.filters`), only the array's ``zarr.json`` changes: each
array's new metadata is first tried on a copy of its first chunk, and written (atomically) only
if zarr reads the same values back. Chunks are never touched. If any array cannot be normalized,
nothing is written.

Examples::

    numcodecs-ext normalize store.zarr --dry-run
    numcodecs-ext normalize store.zarr
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .filters import MATCHES, NotExpressible, filter_codecs
from .plan import read_json

__all__ = ["NormalizePlan", "normalize"]

NAMES = {"numcodecs.fixedscaleoffset": "fixedscaleoffset", "numcodecs.astype": "astype"}


@dataclass
class NormalizePlan:
    """One array: its path, and its codecs before and after."""

    path: str
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]

    def describe(self) -> str:
        return (f"{self.path or '/'}:\n    {' -> '.join(c['name'] for c in self.before)}\n"
                f"    {' -> '.join(c['name'] for c in self.after)}")


def _native_dtype(data_type: Any) -> np.dtype:
    from zarr.core.dtype import get_data_type_from_json

    return get_data_type_from_json(data_type, zarr_format=3).to_native_dtype()


def _normalized(path: str, metadata: dict[str, Any], match: str, wrap: bool) -> NormalizePlan | None:
    codecs = metadata.get("codecs", [])
    if not any(isinstance(c, dict) and c.get("name") in NAMES for c in codecs):
        return None
    dtype = _native_dtype(metadata["data_type"])
    out: list[dict[str, Any]] = []
    for codec in codecs:
        name = codec.get("name")
        configuration = dict(codec.get("configuration") or {})
        if name in NAMES:
            config = {"id": NAMES[name], **configuration}
            try:
                mapped, dtype = filter_codecs(config, dtype, match=match, wrap=wrap)
            except NotExpressible as e:
                raise NotExpressible(f"array {path or '/'}: {e}") from None
            out.extend(mapped)
            dtype = dtype.newbyteorder("=")
            continue
        if name == "cast_value":
            dtype = _native_dtype(configuration.get("data_type"))
        out.append(codec)
    return NormalizePlan(path, codecs, out)


def _probe(directory: Path, metadata: dict[str, Any], plan: NormalizePlan) -> str | None:
    """Why the new codecs cannot replace the old ones (zarr cannot read the array's first
    stored chunk with them, or reads other values), or None."""
    import zarr

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = zarr.open_array(str(directory), mode="r", zarr_format=3)
            encoding = before.metadata.chunk_key_encoding
            coords = next(iter(np.ndindex(*before.cdata_shape)), ())
            for candidate in itertools.islice(np.ndindex(*before.cdata_shape), 100_000):
                if (directory / encoding.encode_chunk_key(candidate)).is_file():
                    coords = candidate
                    break
            region = tuple(slice(i * c, min((i + 1) * c, s))
                           for i, c, s in zip(coords, before.chunks, before.shape))
            want = before[region]
            with tempfile.TemporaryDirectory() as tmp:
                probe = Path(tmp) / "probe.zarr"
                key = encoding.encode_chunk_key(coords)
                if (directory / key).is_file():
                    (probe / key).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(directory / key, probe / key)
                probe.mkdir(exist_ok=True)
                (probe / "zarr.json").write_text(json.dumps({**metadata, "codecs": plan.after}))
                got = zarr.open_array(str(probe), mode="r", zarr_format=3)[region]
    except Exception as e:  # noqa: BLE001 - any failure: leave the array as it is
        return f"zarr cannot read it under the new metadata: {type(e).__name__}: {e}"
    if np.asarray(got).tobytes() != np.asarray(want).tobytes():
        return "the spec codecs decode its chunks to other values"
    return None


def normalize(store: str | Path, *, dry_run: bool = False, match: str = "decode",
              wrap: bool = False) -> list[NormalizePlan]:
    """Rewrite every array's numcodecs FixedScaleOffset/AsType codecs in the v3 store as spec
    codecs; returns the plans (for a dry run, what would change). Raises NotExpressible or
    ValueError, writing nothing, if any array cannot be normalized."""
    root = Path(store)
    if not (root / "zarr.json").exists():
        raise ValueError(f"{root} is not a zarr v3 store (no zarr.json)")
    found: list[tuple[Path, dict[str, Any], NormalizePlan]] = []
    for meta_path in sorted(root.rglob("zarr.json")):
        metadata = read_json(meta_path)
        if metadata.get("node_type") != "array":
            continue
        rel = meta_path.parent.relative_to(root).as_posix()
        plan = _normalized("" if rel == "." else rel, metadata, match, wrap)
        if plan is not None:
            found.append((meta_path, metadata, plan))
    for meta_path, metadata, plan in found:
        why = _probe(meta_path.parent, metadata, plan)
        if why is not None:
            raise NotExpressible(f"array {plan.path or '/'}: {why}")
    if not dry_run:
        for meta_path, metadata, plan in found:
            tmp = meta_path.with_name(".zarr.json.tmp")
            tmp.write_text(json.dumps({**metadata, "codecs": plan.after}, indent=2))
            tmp.replace(meta_path)
    return [plan for _, _, plan in found]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext normalize``."""
    parser.add_argument("store", help="zarr v3 store (a local directory), changed in place")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    parser.add_argument("--match", choices=MATCHES, default="decode",
                        help="float32/float16 FixedScaleOffset: reproduce numcodecs' decoding "
                             "(default) or its encoding bit for bit")
    parser.add_argument("--wrap", action="store_true",
                        help="let later writes wrap values the stored integers cannot hold, as "
                             "numcodecs did (default: refuse them with an error)")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext normalize``."""
    try:
        plans = normalize(args.store, dry_run=args.dry_run, match=args.match, wrap=args.wrap)
    except (NotExpressible, ValueError, OSError) as e:
        print(f"numcodecs-ext normalize: {e}\nnothing was written", file=sys.stderr)
        return 2
    for plan in plans:
        print(plan.describe())
    verb = "would change" if args.dry_run else "changed"
    print(f"{len(plans)} arrays {verb} (metadata only; chunks untouched)")
    return 0
