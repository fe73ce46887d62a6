"""Exchange zarr stores between environments: ours on zarr 3.1 and 3.4, and zarr's built-ins.

Run by ``.ci/run`` (not by pytest): every environment writes the stores it can write into its
own folder, then reads every other environment's folder::

    python tests/interop/interop_matrix.py write OUT_DIR     # stores + expected arrays + manifest.json
    python tests/interop/interop_matrix.py read IN_DIR       # every store it can read must match
    python tests/interop/interop_matrix.py compare DIR_A DIR_B   # spec stores: identical chunk bytes

The environment without numcodecs_ext uses zarr's own scale_offset, cast_value and transpose
(zarr >= 3.2, with cast-value-rs); stores that need our codecs or data types are reported as
skipped there. A store that a reader could read and reads differently is a failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _ours() -> bool:
    try:
        import numcodecs_ext  # noqa: F401
    except ImportError:
        return False
    return True


def _zarr_has_builtins() -> bool:
    import zarr.codecs

    return hasattr(zarr.codecs, "ScaleOffset") and hasattr(zarr.codecs, "CastValue")


def _field(shape: tuple[int, ...]) -> np.ndarray:
    grids = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing="ij")
    return np.asarray(sum(np.sin(g * (i + 1)) for i, g in enumerate(grids)) * 100 + 1000)


def _spec_codecs(kind: str) -> list[dict[str, Any]]:
    """Spec JSON of the filters: every implementation reads and writes these."""
    return {
        "nan_uint8": [{"name": "scale_offset", "configuration": {"offset": 700, "scale": 0.5}},
                      {"name": "cast_value", "configuration": {
                          "data_type": "uint8", "out_of_range": "clamp",
                          "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}],
        "int16_scaled": [{"name": "scale_offset", "configuration": {"offset": -5, "scale": 3}}],
        "f64_to_f32_towards_zero": [{"name": "cast_value", "configuration": {
            "data_type": "float32", "rounding": "towards-zero"}}],
        "transpose": [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}],
        "string_scale": [{"name": "scale_offset", "configuration": {"scale": "0.5"}}],
    }[kind]


def _write_spec(path: Path, kind: str) -> np.ndarray:
    import zarr

    if kind == "nan_uint8":
        data = np.round(_field((12, 10)))
        data[0, :4] = np.nan
        dtype, fill = "float64", float("nan")
    elif kind == "int16_scaled":
        data, dtype, fill = (np.arange(60).reshape(6, 10) - 20).astype("int16"), "int16", -5
    elif kind == "f64_to_f32_towards_zero":
        data, dtype, fill = _field((9, 11)) / 7, "float64", 0.0
    elif kind == "string_scale":
        data, dtype, fill = _field((8, 8)), "float64", 0.0
    else:
        data, dtype, fill = _field((4, 6, 5)).astype("float32"), "float32", 0.0
    chunks = tuple(max(1, n // 2) for n in data.shape)
    z = zarr.create_array(str(path), shape=data.shape, chunks=chunks, dtype=dtype, fill_value=fill,
                          filters=_spec_codecs(kind), compressors=None)
    z[...] = data
    return np.asarray(z[...])


def _write_ours(path: Path, kind: str) -> np.ndarray:
    import zarr

    import numcodecs_ext
    from numcodecs_ext import zarr3

    if kind == "zfp_v3":
        data = _field((6, 10, 8)).astype("float32")
        z = zarr.create_array(str(path), shape=data.shape, chunks=(3, 5, 8), dtype="float32",
                              serializer=zarr3.Zfp(mode="reversible"), compressors=None)
    elif kind == "bfloat16_v3":
        import ml_dtypes

        data = _field((6, 8)).astype(ml_dtypes.bfloat16)
        z = zarr.create_array(str(path), shape=data.shape, chunks=(3, 4), dtype="bfloat16",
                              fill_value="NaN", compressors=None)
    elif kind == "adapter_names_v3":
        data = _field((10, 6))
        z = zarr.create_array(str(path), shape=data.shape, chunks=(5, 6), dtype="float64",
                              filters=[zarr3.NumcodecsScaleOffset(offset=1000, scale=10),
                                       zarr3.NumcodecsCastValue(data_type="int16")],
                              compressors=None)
        data = np.round((data - 1000) * 10) / 10 + 1000
    elif kind == "bits_v3":  # reshape + bitround + packbits, in shards
        data = np.round(_field((4, 6, 10)) - 800).clip(0, 2047).astype("int16")  # bitround: zarrs rounds
        # negative integers by their bit pattern (-1 becomes -2048 here), so keep them positive
        z = zarr.create_array(str(path), shape=data.shape, chunks=(2, 3, 10), shards=(4, 6, 10),
                              dtype="int16", fill_value=1024, compressors=None,
                              filters=[zarr3.Reshape(shape=[[0, 1], -1]), zarr3.BitRound(keepbits=5)],
                              serializer=zarr3.PackBits(last_bit=11, padding_encoding="last_byte"))
    else:  # numcodecs filters and compressor in a zarr v2 array
        data = _field((8, 12))
        z = zarr.create_array(str(path), shape=data.shape, chunks=(4, 6), dtype="float64",
                              zarr_format=2, fill_value=0.0,
                              filters=[numcodecs_ext.ScaleOffset(offset=1000, scale=4, dtype="float64"),
                                       numcodecs_ext.CastValue(data_type="int16", dtype="float64")],
                              compressors=numcodecs_ext.Zfp(mode="reversible", shape=[4, 6],
                                                            dtype="int16"))
    z[...] = data
    return np.asarray(z[...])


#: store name -> (writer, needs numcodecs_ext to be read)
STORES: dict[str, tuple[Callable[[Path], np.ndarray], bool]] = {
    **{f"spec_{k}.zarr": ((lambda p, k=k: _write_spec(p, k)), False)
       for k in ("nan_uint8", "int16_scaled", "f64_to_f32_towards_zero", "transpose")},
    **{f"ours_{k}.zarr": ((lambda p, k=k: _write_ours(p, k)), True)
       for k in ("zfp_v3", "bfloat16_v3", "adapter_names_v3", "numcodecs_v2", "bits_v3")},
}
#: written only by zarr's built-ins (they write numeric strings verbatim); read by everyone
BUILTIN_ONLY = {"builtin_string_scale.zarr": lambda p: _write_spec(p, "string_scale")}


def write(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    ours, builtins = _ours(), _zarr_has_builtins()
    manifest = {}
    for name, (writer, needs_ours) in STORES.items():
        if (needs_ours or not builtins) and not ours:
            continue
        expected = writer(out / name)
        np.save(out / (name + ".npy"), expected.view(f"u{expected.dtype.itemsize}")
                if expected.dtype.kind == "V" else expected)
        manifest[name] = {"needs_numcodecs_ext": needs_ours}
    if not ours:
        for name, writer in BUILTIN_ONLY.items():
            expected = writer(out / name)
            np.save(out / (name + ".npy"), expected)
            manifest[name] = {"needs_numcodecs_ext": False}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {len(manifest)} stores to {out} ({'ours' if ours else 'zarr built-ins'})")
    return 0


def read(src: Path) -> int:
    import zarr

    manifest = json.loads((src / "manifest.json").read_text())
    ours, builtins = _ours(), _zarr_has_builtins()
    failures = 0
    for name, info in manifest.items():
        if info["needs_numcodecs_ext"] and not ours:
            print(f"skip  {name}: needs numcodecs_ext")
            continue
        if not ours and not builtins:
            print(f"skip  {name}: zarr {zarr.__version__} has no scale_offset/cast_value")
            continue
        expected = np.load(src / (name + ".npy"))
        try:
            got = np.asarray(zarr.open_array(str(src / name), mode="r")[...])
            same = got.tobytes() == expected.tobytes() and got.shape == expected.shape
        except Exception as exc:  # report every store, then fail
            same, got = False, exc
        print(f"{'ok   ' if same else 'FAIL '} {name}" + ("" if same else f": {got!r}"[:300]))
        failures += not same
    return 1 if failures else 0


def compare(a: Path, b: Path) -> int:
    """Stores of the spec codecs written in both folders hold identical chunk bytes (also our
    bitround/packbits/reshape store, which only numcodecs_ext writes, across zarr versions)."""
    failures = compared = 0
    for store in sorted([*a.glob("spec_*.zarr"), *a.glob("ours_bits_v3.zarr")]):
        other = b / store.name
        if not other.is_dir():
            continue
        chunks = sorted(p.relative_to(store) for p in store.rglob("*") if p.is_file() and p.name != "zarr.json")
        theirs = sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file() and p.name != "zarr.json")
        same = chunks == theirs and all(
            (store / c).read_bytes() == (other / c).read_bytes() for c in chunks)
        print(f"{'same ' if same else 'DIFF '} {store.name} ({len(chunks)} chunks)")
        failures += not same
        compared += 1
    return 1 if failures or not compared else 0


if __name__ == "__main__":
    command, folder = sys.argv[1], Path(sys.argv[2])
    if command == "compare":
        sys.exit(compare(folder, Path(sys.argv[3])))
    sys.exit(write(folder) if command == "write" else read(folder))
