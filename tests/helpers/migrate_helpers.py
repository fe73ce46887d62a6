"""Stores and checks shared by the migrate / normalize tests: zarr v2 stores as zarr writes them,
file hashes, and "either it opens complete and verified, or it does not open at all"."""

from __future__ import annotations

import hashlib
import json
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numcodecs
import numpy as np
import zarr


@contextmanager
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notes on v2 stores and numcodecs codecs
        yield


def fso(offset: float = 250, scale: float = 100, dtype: str = "<f4", astype: str = "<u2") -> Any:
    return numcodecs.FixedScaleOffset(offset=offset, scale=scale, dtype=dtype, astype=astype)


def build_v2(path: Path, *, chunks: int = 10) -> dict[str, np.ndarray]:
    """A zarr v2 hierarchy as zarr 3 writes one: packed temperatures (FixedScaleOffset + zstd,
    ``chunks`` chunks), an int64 array with '/' chunk keys and auto-shuffled blosc, a
    Fortran-ordered array, a 0-d one, an AsType-filtered one, a nested group, xarray's
    dimension names; returns what each array reads."""
    rng = np.random.default_rng(0)
    out = {}
    with quiet():
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        g.attrs["title"] = "test"
        t = g.create_array("t", shape=(chunks * 4, 30), chunks=(4, 30), dtype="<f4", fill_value=250.0,
                           filters=[fso()], compressors=numcodecs.Zstd(level=3))
        t[:] = (250 + rng.random((chunks * 4, 30)) * 60).astype("<f4")
        t.attrs.update({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
        b = g.create_group("sub").create_array(
            "b", shape=(5,), chunks=(2,), dtype=">i8", fill_value=-1,
            compressors=numcodecs.Blosc(shuffle=-1), chunk_key_encoding={"name": "v2", "separator": "/"})
        b[:4] = [1, 2, 3, 4]
        f = g.create_array("f", shape=(4, 6), chunks=(3, 4), dtype="<f8", order="F", fill_value=0.0)
        f[:] = np.arange(24, dtype="<f8").reshape(4, 6) * 1.5
        s = g.create_array("scalar", shape=(), dtype="<f8", fill_value=0.0)
        s[()] = 7.25
        c = g.create_array("cast", shape=(50,), chunks=(20,), dtype="<f8", fill_value=0.0,
                           filters=[numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")])
        c[:] = rng.standard_normal(50)
        for name in ("t", "sub/b", "f", "scalar", "cast"):
            out[name] = zarr.open_array(str(path / name), mode="r", zarr_format=2)[...]
    return out


def hashes(path: Path) -> dict[str, str]:
    """Every file below ``path`` with the sha256 of its bytes."""
    return {p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def chunk_files(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith((".z", "zarr.json", ".numcodecs"))}


def same(a: Any, b: Any) -> bool:
    """Same shape, same data type (byte order aside), same values bit for bit."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.newbyteorder("=") != b.dtype.newbyteorder("="):
        return False
    native = a.dtype.newbyteorder("=")
    return np.ascontiguousarray(a, native).tobytes() == np.ascontiguousarray(b, native).tobytes()


def opens_as_v3(path: Path, name: str = "") -> Any:
    """The v3 array or group at ``path/name``, or None if zarr cannot open one there."""
    with quiet():
        try:
            return zarr.open(str(path / name) if name else str(path), mode="r", zarr_format=3)
        except Exception:  # noqa: BLE001 - not an array or group
            return None


def check_complete_or_absent(dst: Path, want: dict[str, np.ndarray]) -> str:
    """The destination of a migration, whatever happened to the run that wrote it: every array
    that opens as zarr v3 reads exactly the source's values, every group that opens has all its
    arrays; what does not open is simply not there. Returns "complete", "partial" or "absent"."""
    if not dst.exists():
        return "absent"
    root = opens_as_v3(dst)
    opened = 0
    for name, values in want.items():
        a = opens_as_v3(dst, name)
        if a is None:
            assert root is None, f"the root opens but {name} does not"
            continue
        opened += 1
        with quiet():
            got = a[...]
        assert same(got, values), f"{name} opens as v3 but reads other values"
    if root is not None:
        assert opened == len(want)
        return "complete"
    return "partial" if opened else "absent"


def v3_docs(path: Path) -> dict[str, Any]:
    return {p.relative_to(path).as_posix(): json.loads(p.read_text()) for p in sorted(path.rglob("zarr.json"))}
