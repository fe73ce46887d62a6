"""``numcodecs-ext inspect`` on stores of many arrays: time per array must not grow with their number.

A zarr v3 group of N small arrays (one chunk each, in sub-groups of 100) is written by hand (the
metadata zarr writes, without zarr's own cost), then inspected. Anchors in the same run: reading
and parsing every metadata document (the floor of any inspection), and zarr-python listing the
hierarchy (``Group.members(max_depth=None)``). The time of N/4 arrays times 4 over the time of N
shows linearity (1.0: linear; the quadratic version gave 0.25).

Usage: ``python benchmarks/bench_inspect.py [--quick]`` (1,000 and 4,000 arrays; quick: 200 and 800).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

ARRAY = {"zarr_format": 3, "node_type": "array", "shape": [100], "data_type": "float32",
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
         "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
         "fill_value": "NaN", "attributes": {},
         "codecs": [{"name": "scale_offset", "configuration": {"offset": 270, "scale": 100}},
                    {"name": "cast_value", "configuration": {"data_type": "int16"}},
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
         "dimension_names": ["x"]}
GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}


def build(root: Path, n: int) -> None:
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps(GROUP))
    for i in range(n):
        group = root / f"g{i // 100}"
        if not group.exists():
            group.mkdir()
            (group / "zarr.json").write_text(json.dumps(GROUP))
        array = group / f"a{i}"
        (array / "c").mkdir(parents=True)
        (array / "zarr.json").write_text(json.dumps(ARRAY))
        (array / "c" / "0").write_bytes(b"\0" * 64)


def _floor(root: Path) -> None:
    for dirpath, _, names in os.walk(root):
        if "zarr.json" in names:
            json.loads((Path(dirpath) / "zarr.json").read_bytes())


def _zarr_members(root: Path) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        list(zarr.open_group(root, mode="r").members(max_depth=None))


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(quick: bool = False) -> None:
    from numcodecs_ext.tools.inspect import format_report, inspect_store

    sizes = (200, 800) if quick else (1000, 4000)
    repeat = 2 if quick else 3
    print(f"inspect on stores of many arrays (best of {repeat}; seconds)")
    print(f"  {'arrays':>7} {'inspect':>8} {'+ text':>8} {'read all metadata':>18} {'zarr members()':>15}"
          "  inspect / floor")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            root = Path(tmp) / f"s{n}.zarr"
            build(root, n)
            t = _best(lambda: inspect_store(root), repeat)
            report = inspect_store(root)
            assert len(report["arrays"]) == n and not report["problems"], report["problems"][:3]
            text = _best(lambda: format_report(report), repeat)
            floor = _best(lambda: _floor(root), repeat)
            members = _best(lambda: _zarr_members(root), 1) if n == sizes[-1] or not quick else float("nan")
            times[n] = t
            print(f"  {n:7d} {t:8.2f} {text:8.2f} {floor:18.2f} {members:15.2f}  {t / floor:6.1f}x")
    small, large = sizes
    print(f"  linearity: {large // small} x time({small}) / time({large}) = "
          f"{large / small * times[small] / times[large]:.2f} (1.0 linear, {small / large:.2f} quadratic)")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
