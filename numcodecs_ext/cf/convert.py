"""Convert a CF-packed netCDF file into a zarr store whose packed variables use the spec codecs.

Every variable, coordinate and attribute is copied. A packed variable (``scale_factor``,
``add_offset``, ``_FillValue``/``missing_value`` on an integer type) becomes a float zarr array
with the filters ``[scale_offset, cast_value]``: its stored integers are exactly the file's, and
any zarr reader gets the unpacked values (missing ones as NaN) without CF decoding. Other
variables are stored as they are. Data streams through dask chunk by chunk.

Examples::

    numcodecs-ext convert era5.nc era5.zarr
    numcodecs-ext convert era5.nc era5.zarr --chunks time=24,latitude=181 --zarr-format 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .attrs import PACKING_ATTRS, CFPacking, packing_from_attrs

__all__ = ["ConvertReport", "auto_chunks", "convert"]

_VALID = ("valid_min", "valid_max", "valid_range")


def auto_chunks(shape: tuple[int, ...], itemsize: int, target: int = 8 << 20) -> tuple[int, ...]:
    """Chunks of about ``target`` bytes: trailing dimensions whole, leading ones split.

    Examples
    --------
    >>> auto_chunks((8760, 721, 1440), 4)
    (2, 721, 1440)
    >>> auto_chunks((10, 10), 8)
    (10, 10)
    """
    chunks = [max(1, n) for n in shape]
    for i in range(len(chunks)):
        if math.prod(chunks[i:]) * itemsize <= target:
            break
        rest = math.prod(chunks[i + 1 :]) * itemsize
        if rest >= target:
            chunks[i] = 1
            continue
        chunks[i] = max(1, target // rest)
        break
    return tuple(chunks)


def _parse_chunks(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    out = {}
    for item in text.split(","):
        name, sep, size = item.partition("=")
        if not sep or not size.strip().isdigit() or int(size) < 1:
            raise ValueError(f"--chunks {text!r}: expected DIM=SIZE[,DIM=SIZE...] with sizes >= 1, got {item!r}")
        out[name.strip()] = int(size)
    return out


@dataclass
class ConvertReport:
    """What :func:`convert` did: the packed variables with their codecs, and the others."""

    packed: dict[str, CFPacking] = field(default_factory=dict)
    plain: list[str] = field(default_factory=list)
    max_difference: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = []
        for name, p in self.packed.items():
            diff = self.max_difference.get(name)
            extra = "" if diff is None else f", max |zarr - CF| = {diff:.3g}"
            lines.append(
                f"  {name}: {p.packed} -> {p.unpacked} [scale_offset(offset={float(p.offset)!r}, "
                f"scale={float(p.scale)!r}), cast_value({p.packed})], "
                f"{len(set(p.missing))} missing code(s){extra}"
            )
        lines.append(f"  stored as they are: {', '.join(self.plain) or '(none)'}")
        return "\n".join(lines)


def _unpacked_attrs(attrs: Mapping[str, Any], packing: CFPacking) -> dict[str, Any]:
    """The attributes a reader of the unpacked array needs: the packing ones go, and
    ``valid_*`` given in packed units are turned into unpacked units."""
    out = {k: v for k, v in attrs.items() if k not in PACKING_ATTRS}
    for key in _VALID:
        if key in out and np.asarray(out[key]).dtype.kind in "iu":
            codes = np.asarray(out[key]).astype(packing.packed)
            out[key] = packing.cf_decode(codes).tolist()
    return out


def convert(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    zarr_format: int = 3,
    chunks: Mapping[str, int] | None = None,
    chunk_bytes: int = 8 << 20,
    progress: bool = False,
    verify: bool = True,
) -> ConvertReport:
    """Convert the netCDF file ``src`` into a new zarr store ``dst``.

    Parameters
    ----------
    src : path
        A netCDF (or any file xarray opens) with CF-packed variables.
    dst : path
        The zarr store to create; it must not exist.
    zarr_format : {3, 2}
        3: spec codecs as zarr v3 filters; 2: numcodecs_ext's numcodecs filters.
    chunks : mapping of str to int, optional
        Chunk size per dimension name; dimensions not named are chunked automatically.
    chunk_bytes : int
        The size automatic chunks aim at (default 8 MiB), trailing dimensions kept whole.
    progress : bool
        Show a progress bar (dask's) on stderr.
    verify : bool
        Read the result back and compare it with xarray's CF decoding of ``src``: every value
        within :meth:`~numcodecs_ext.cf.CFPacking.decode_difference` (NaN where CF gives NaN).

    Returns
    -------
    ConvertReport
    """
    import xarray as xr
    import zarr

    if zarr_format not in (2, 3):
        raise ValueError(f"zarr_format={zarr_format!r}: valid values are 2 and 3")
    dst = Path(dst)
    if dst.exists():
        raise FileExistsError(f"{dst} exists; convert writes a new store")
    if not Path(src).is_file():
        raise FileNotFoundError(f"{src}: no such file")
    report = ConvertReport()
    opened: list[Any] = []
    plans = []
    try:
        # every group's packing is worked out (and any bad attribute refused) before writing
        for group in _groups(src):
            raw = xr.open_dataset(src, group=group, mask_and_scale=False, decode_times=False,
                                  decode_timedelta=False, chunks={})
            opened.append(raw)
            plans.append((group, *_prepare(raw, group, report, chunks, chunk_bytes)))
        for group, out, encoding in plans:
            write = out.to_zarr(
                dst, group=group, mode="w-" if group is None else "a", zarr_format=zarr_format,
                encoding=encoding, consolidated=False, write_empty_chunks=True, compute=False,
            )
            if progress:
                from dask.diagnostics import ProgressBar

                print(f"writing {group or '/'}", file=sys.stderr)
                with ProgressBar(out=sys.stderr):
                    write.compute()
            else:
                write.compute()
    finally:
        for raw in opened:
            raw.close()
    for name, packing in report.packed.items():
        _declare_packing(dst / name, packing, zarr_format)
    with warnings.catch_warnings():
        # v3 consolidated metadata is zarr-python's extension (other readers ignore it), and
        # what xarray reads to open a store in one request, as its own to_zarr writes it
        warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
        zarr.consolidate_metadata(str(dst), zarr_format=zarr_format)
    if verify:
        report.max_difference = _verify(src, dst, report)
    return report


def _groups(src: Any) -> list[str | None]:
    """The file's groups, root first (None), as paths ``a``, ``a/b``; netCDF4 lists them."""
    try:
        import netCDF4
    except ImportError:  # another engine reads the file: its root group only
        return [None]
    out: list[str | None] = [None]
    with netCDF4.Dataset(src) as nc:
        todo = list(nc.groups.values())
        while todo:
            g = todo.pop(0)
            out.append(g.path.lstrip("/"))
            todo.extend(g.groups.values())
    return out


def _prepare(
    raw: Any, group: str | None, report: ConvertReport, chunks: Mapping[str, int] | None, chunk_bytes: int
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The dataset to write for one group: packed variables as their integers (declared as the
    packing's float arrays after writing), the rest as they are, each chunked."""
    import xarray as xr

    variables = {}
    encoding: dict[str, dict[str, Any]] = {}
    prefix = "" if group is None else group + "/"
    for name, var in raw.variables.items():
        packing = packing_from_attrs(var.dtype, var.attrs)
        attrs = dict(var.attrs)
        if packing is not None:
            var = var.astype(packing.packed)  # _Unsigned: the same bits, read as unsigned
            attrs = _unpacked_attrs(attrs, packing)
            report.packed[prefix + str(name)] = packing
            itemsize = packing.unpacked.itemsize
        else:
            report.plain.append(prefix + str(name))
            itemsize = var.dtype.itemsize
        var = var.copy(deep=False)
        var.attrs = attrs
        var.encoding = {}
        if var.ndim:
            sizes = auto_chunks(var.shape, itemsize, chunk_bytes)
            sizes = tuple((chunks or {}).get(d, s) for d, s in zip(var.dims, sizes))
            sizes = tuple(min(max(1, n), s) for n, s in zip(var.shape, sizes))
            encoding[str(name)] = {"chunks": sizes}
            if name not in raw.indexes:
                var = var.chunk(dict(zip(var.dims, sizes)))
        variables[name] = var
    out = xr.Dataset(variables, attrs=raw.attrs)
    return out.set_coords([c for c in raw.coords if c in out.variables]), encoding


def _declare_packing(path: Path, packing: CFPacking, zarr_format: int) -> None:
    """Turn the integer array just written into the float array with the packing codecs: the
    chunk bytes are those of the codecs after ``[scale_offset, cast_value]``, so they stay."""
    fill = "NaN" if packing.missing else packing.fill_value
    if zarr_format == 3:
        meta_path = path / "zarr.json"
        meta = json.loads(meta_path.read_text())
        meta["data_type"] = packing.unpacked.name
        meta["codecs"] = packing.codecs() + meta["codecs"]
    else:
        meta_path = path / ".zarray"
        meta = json.loads(meta_path.read_text())
        meta["dtype"] = packing.unpacked.str
        meta["filters"] = [c.get_config() for c in packing.filters()] + (meta.get("filters") or [])
    meta["fill_value"] = fill
    meta_path.write_text(json.dumps(meta, indent=2))
    for attrs_name in ("zarr.json", ".zattrs"):  # xarray may have noted an integer _FillValue
        p = path / attrs_name
        if p.exists():
            d = json.loads(p.read_text())
            holder = d.get("attributes", d) if attrs_name == "zarr.json" else d
            if holder.pop("_FillValue", None) is not None:
                p.write_text(json.dumps(d, indent=2))


def _verify(src: Any, dst: Path, report: ConvertReport) -> dict[str, float]:
    diffs: dict[str, float] = {}
    for group in _groups(src):
        _verify_group(src, dst, group, report, diffs)
    return diffs


def _verify_group(src: Any, dst: Path, group: str | None, report: ConvertReport, diffs: dict[str, float]) -> None:
    import xarray as xr

    with warnings.catch_warnings():  # e.g. "multiple fill values": as intended, both are NaN
        warnings.simplefilter("ignore", xr.SerializationWarning)
        cf = xr.open_dataset(src, group=group, chunks={})
    back = xr.open_zarr(dst, group=group)
    prefix = "" if group is None else group + "/"
    try:
        for var_name in list(cf.variables):
            name = prefix + str(var_name)
            a, b = cf.variables[var_name], back.variables[var_name]
            if a.shape != b.shape:
                raise AssertionError(f"variable {name!r}: shape {b.shape} in the store, {a.shape} in {src}")
            if name not in report.packed:
                same = bool((a == b).all()) if a.dtype.kind not in "fc" else bool(
                    ((a == b) | (a.isnull() & b.isnull())).all()
                )
                if not same:
                    raise AssertionError(f"variable {name!r}: values differ from {src}")
                continue
            bound = report.packed[name].decode_difference()
            nan_same = bool((a.isnull() == b.isnull()).all())
            diff = float(abs(a.astype("float64") - b.astype("float64")).max(skipna=True).values)
            diff = 0.0 if math.isnan(diff) else diff
            if not nan_same or diff > bound:
                raise AssertionError(
                    f"variable {name!r}: max |zarr - CF| = {diff:g} (bound {bound:g}), "
                    f"missing values {'match' if nan_same else 'differ'}"
                )
            diffs[name] = diff
    finally:
        cf.close()
        back.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext convert``."""
    parser.add_argument("src", help="netCDF file (CF-packed variables become spec codecs)")
    parser.add_argument("dst", help="zarr store to create (must not exist)")
    parser.add_argument("--zarr-format", type=int, choices=[2, 3], default=3)
    parser.add_argument("--chunks", help="DIM=SIZE[,DIM=SIZE...]; other dimensions automatic")
    parser.add_argument("--chunk-mib", type=float, default=8.0, help="automatic chunk size (default 8 MiB)")
    parser.add_argument("--no-verify", action="store_true", help="skip reading the result back")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext convert``."""
    try:
        import xarray  # noqa: F401
    except ImportError:
        print('numcodecs-ext convert: needs xarray and netCDF4: pip install "numcodecs_ext[xarray]"', file=sys.stderr)
        return 2
    try:
        report = convert(
            args.src, args.dst, zarr_format=args.zarr_format, chunks=_parse_chunks(args.chunks),
            chunk_bytes=max(1, int(args.chunk_mib * (1 << 20))), progress=not args.quiet,
            verify=not args.no_verify,
        )
    except (OSError, ValueError, AssertionError) as exc:
        print(f"numcodecs-ext convert: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{args.src} -> {args.dst} (zarr v{args.zarr_format})")
        print(report)
        if not args.no_verify:
            print("verified: values equal xarray's CF decoding within each variable's bound")
    return 0
