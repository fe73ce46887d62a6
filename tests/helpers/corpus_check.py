"""Compare a converted zarr store with xarray's CF decoding of the netCDF file it came from.

Run by ``tests/cf/test_corpus.py`` as a script in a fresh Python process, so that the store is read the
way a user reads it: plain ``xr.open_zarr`` (our codecs found through zarr's entry points, nothing
of numcodecs_ext imported here) against plain ``xr.open_dataset`` of the original, with xarray's
own engine choice and, for HDF5-based files, ``engine="h5netcdf"`` as well.

Usage: ``python tests/helpers/corpus_check.py SPEC.json``; prints ``{"problems": [...], "notes": [...]}``
as JSON. SPEC holds ``src``, ``store``, ``groups`` (``null`` for the root), ``engines`` and
``packed``: per scale-packed variable path its ``bound`` (the largest allowed ``|zarr - CF|``), the
``reported`` difference (or null) and, where ``valid_*`` attributes in packed units are expected in
unpacked units, ``valid`` = ``{"packed": dtype, "scale_factor": x, "add_offset": y}``.

Checked for every variable of every group: the same variables, coordinates, dimensions and sizes;
equal dtypes; NaN/NaT at the same places; values bit for bit, or within ``bound`` where scale-packed;
equal attributes (the packing ones move into codecs, so xarray shows neither side of them); a time
variable's units and calendar. Where xarray's two engines disagree about the original itself, the
store cannot match both: that is a note, not a problem.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from typing import Any

import numpy as np

_VALID = ("valid_min", "valid_max", "valid_range")


def _attr(value: Any) -> tuple[str, list[Any]]:
    """An attribute as (kind, flat list): numpy scalars, arrays, lists and JSON values alike."""
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return "str", [value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)]
    arr = np.atleast_1d(np.asarray(value))
    kind = {"b": "int", "i": "int", "u": "int", "f": "float"}.get(arr.dtype.kind, "str")
    if kind == "str":
        return kind, [str(v) for v in arr.ravel().tolist()]
    return kind, arr.ravel().tolist()


def _same_attr(a: Any, b: Any) -> bool:
    (ka, va), (kb, vb) = _attr(a), _attr(b)
    if ka != kb or len(va) != len(vb):
        return False
    return all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(va, vb)
    )


def _same_time_encoding(key: str, a: Any, b: Any, datetime64: bool = False) -> bool:
    """Time units and calendars as CF reads them: xarray's encoder may write "days since 1900-01-01"
    for "days since 1900-1-1", or "standard" for "gregorian"; the same units and instant are equal.
    An absent calendar is CF's default, "standard"; and xarray's ``to_zarr`` always writes one,
    "proleptic_gregorian" for datetime64 values, which xarray decodes only where the two calendars
    agree (a standard-calendar date before 1582-10-15 decodes to a cftime object instead)."""
    if a == b:
        return True
    if key == "calendar" and datetime64:
        same = {None, "standard", "gregorian", "proleptic_gregorian"}
        return (a.lower() if isinstance(a, str) else a) in same and (b.lower() if isinstance(b, str) else b) in same
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if key == "calendar":
        alias = {"gregorian": "standard"}
        return alias.get(a.lower(), a.lower()) == alias.get(b.lower(), b.lower())
    import pandas as pd

    (ua, _, ra), (ub, _, rb) = a.partition(" since "), b.partition(" since ")
    try:
        return ua.strip() == ub.strip() and pd.Timestamp(ra.strip()) == pd.Timestamp(rb.strip())
    except ValueError:  # a reference date pandas cannot hold (year 1 ...): cftime's reading
        import cftime

        return ua.strip() == ub.strip() and cftime.num2date(0, a) == cftime.num2date(0, b)


def _missing(values: np.ndarray) -> np.ndarray | None:
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind in "mM":
        return np.isnat(values)
    return None


def _bits(values: np.ndarray) -> np.ndarray:
    """The array as unsigned integers of its width (bit-for-bit comparison), where numeric."""
    if values.dtype.kind in "biufcmM":
        return np.ascontiguousarray(values).view(
            f"u{values.dtype.itemsize}" if values.dtype.itemsize <= 8 else "u1"
        )
    return values


def compare(src: Any, out: Any, packed: dict[str, Any], prefix: str, dims: bool = True) -> dict[tuple, str]:
    """Differences between the decoded original ``src`` and the decoded store ``out`` (one
    group), keyed by (variable, aspect) so that two comparisons can be set against each other."""
    found: dict[tuple, str] = {}

    def differ(key: tuple, message: str) -> None:
        found[key] = f"{prefix or '/'}: {message}"

    if set(src.variables) != set(out.variables):
        differ(
            ("*", "variables"),
            f"variables {sorted(map(str, src.variables))} in the original, "
            f"{sorted(map(str, out.variables))} in the store",
        )
    if set(src.coords) != set(out.coords):
        differ(
            ("*", "coords"),
            f"coordinates {sorted(map(str, src.coords))} in the original, "
            f"{sorted(map(str, out.coords))} in the store",
        )
    if dict(src.sizes) != dict(out.sizes) and dims:
        differ(
            ("*", "sizes"), f"dimensions {dict(src.sizes)} in the original, {dict(out.sizes)} in the store"
        )
    # xarray's zarr reader shows no group attribute named _nc* (any case: NCZarr's own), so the
    # original is compared as xarray would show it from a store (the store keeps them: test_corpus)
    for key in {k for k in set(src.attrs) | set(out.attrs) if not str(k).lower().startswith("_nc")}:
        if key not in src.attrs or key not in out.attrs or not _same_attr(src.attrs[key], out.attrs[key]):
            differ(
                ("*", "attr", key),
                f"global attribute {key!r}: {src.attrs.get(key)!r} in the original, "
                f"{out.attrs.get(key)!r} in the store",
            )
    for name in src.variables:
        if name not in out.variables:
            continue
        path = prefix + str(name)
        a, b = src.variables[name], out.variables[name]
        if dims and a.dims != b.dims:
            differ((name, "dims"), f"{path}: dimensions {a.dims} in the original, {b.dims} in the store")
        if a.shape != b.shape:
            differ((name, "shape"), f"{path}: shape {a.shape} in the original, {b.shape} in the store")
            continue
        if a.dtype != b.dtype:
            differ((name, "dtype"), f"{path}: dtype {a.dtype} in the original, {b.dtype} in the store")
            continue

        def in_variable(key: tuple, message: str, name: Any = name) -> None:
            differ((name,) + key, message)

        _compare_attrs(a, b, path, packed.get(path), in_variable)
        if a.dtype.kind in "mMO":
            for key in ("units", "calendar"):
                ea, eb = a.encoding.get(key), b.encoding.get(key)
                if not _same_time_encoding(key, ea, eb, datetime64=a.dtype.kind == "M"):
                    differ(
                        (name, "encoding", key),
                        f"{path}: time {key} {ea!r} in the original, {eb!r} in the store",
                    )
        _compare_values(a.values, b.values, path, packed.get(path), in_variable)
    return found


def _compare_attrs(a: Any, b: Any, path: str, packing: dict | None, differ: Any) -> None:
    valid = (packing or {}).get("valid")
    for key in set(a.attrs) | set(b.attrs):
        if key not in a.attrs or key not in b.attrs:
            differ(
                ("attr", key),
                f"{path}: attribute {key!r} is {a.attrs.get(key, '(absent)')!r} in the original, "
                f"{b.attrs.get(key, '(absent)')!r} in the store",
            )
            continue
        expected = a.attrs[key]
        if valid and key in _VALID and np.asarray(expected).dtype.kind in "iu":
            # CF: valid_* of the packed type are in packed units; the store holds unpacked values
            q = np.asarray(expected).astype(valid["packed"]).astype(np.float64)
            want = q * (1.0 if valid["scale_factor"] is None else valid["scale_factor"]) + (
                valid["add_offset"] or 0.0
            )
            got = np.asarray(b.attrs[key], dtype=np.float64)
            tol = packing["bound"] + 4 * np.spacing(np.abs(want).max(initial=0.0)).item()
            if got.shape != want.shape or not np.allclose(got, want, rtol=0, atol=tol):
                differ(
                    ("attr", key),
                    f"{path}: attribute {key!r} = {b.attrs[key]!r} in the store, expected the "
                    f"packed {expected!r} in unpacked units: {want.tolist()!r}",
                )
            continue
        if not _same_attr(expected, b.attrs[key]):
            differ(
                ("attr", key),
                f"{path}: attribute {key!r} is {expected!r} in the original, {b.attrs[key]!r} in the store",
            )


def _compare_values(x: np.ndarray, y: np.ndarray, path: str, packing: dict | None, differ: Any) -> None:
    mx, my = _missing(x), _missing(y)
    if mx is not None:
        if not np.array_equal(mx, my):
            where = np.argwhere(mx != my)
            differ(
                ("missing",),
                f"{path}: {len(where)} missing values (NaN/NaT) at other places, first at "
                f"{tuple(int(i) for i in where[0])}: {x[tuple(where[0])]!r} in the original, "
                f"{y[tuple(where[0])]!r} in the store",
            )
            return
        keep = ~mx
        x, y = x[keep], y[keep]
    if packing is not None:
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
        worst = float(diff.max()) if diff.size else 0.0
        if worst > packing["bound"]:
            differ(("values",), f"{path}: max |zarr - CF| = {worst!r} exceeds the bound {packing['bound']!r}")
        elif packing.get("reported") is not None and worst > packing["reported"]:
            differ(
                ("values",),
                f"{path}: max |zarr - CF| = {worst!r}, but the report says {packing['reported']!r}",
            )
        return
    if x.dtype.kind in "biufcmM":
        same = np.array_equal(_bits(x), _bits(y))
    else:
        same = x.shape == y.shape and bool(np.all(x == y))
    if not same:
        bad = np.flatnonzero(_bits(x).ravel() != _bits(y).ravel()) if x.dtype.kind in "biufcmM" else []
        first = (
            f", first at flat index {int(bad[0])}: {x.ravel()[bad[0]]!r} vs {y.ravel()[bad[0]]!r}"
            if len(bad)
            else ""
        )
        differ(("values",), f"{path}: values are not bit for bit those of the original{first}")


def _open_source(xr: Any, src: str, group: str | None, engine: str, notes: list[str]) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(src, group=group, engine=None if engine == "default" else engine)
    kinds: dict[str, list[str]] = {}
    for w in caught:
        kinds.setdefault(w.category.__name__, []).append(str(w.message))
    for kind, messages in kinds.items():
        more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
        notes.append(
            f"{group or '/'} [{engine}] xarray warns on the original: {kind}: {messages[0][:200]}{more}"
        )
    return ds


def check(spec: dict[str, Any]) -> dict[str, list[str]]:
    import xarray as xr

    problems: list[str] = []
    notes: list[str] = []
    for group in spec["groups"]:
        prefix = "" if group is None else group + "/"
        try:
            out = xr.open_zarr(spec["store"], group=group)
        except Exception as exc:  # noqa: BLE001 - reported as what the user would see
            problems.append(f"{group or '/'}: xr.open_zarr fails: {type(exc).__name__}: {exc}")
            continue
        with out:
            reference = None
            for engine in spec["engines"]:
                try:
                    src = _open_source(xr, spec["src"], group, engine, notes)
                except Exception as exc:  # noqa: BLE001
                    notes.append(
                        f"{group or '/'} [{engine}] xarray cannot open the original: "
                        f"{type(exc).__name__}: {exc}"
                    )
                    continue
                with src:
                    found = compare(src, out, spec["packed"], prefix, dims=engine == "default")
                    if engine == "default":
                        reference = src.load()
                        problems.extend(f"[{engine}] {m}" for m in found.values())
                        continue
                    disagree = (
                        compare(reference, src, {}, prefix, dims=False) if reference is not None else {}
                    )
                    for key, message in found.items():
                        if key in disagree:
                            notes.append(f"[{engine}] engines disagree, not compared: {disagree[key]}")
                        else:
                            problems.append(f"[{engine}] {message}")
    return {"problems": problems, "notes": notes}


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        result = check(json.load(f))
    json.dump(result, sys.stdout)
