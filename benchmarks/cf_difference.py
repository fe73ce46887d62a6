"""How far the spec codecs' decoding of CF-packed data is from xarray's CF decoding, per dtype.

The spec decodes ``q / scale + offset`` with ``scale = 1 / scale_factor``; CF (and xarray) decode
``q * scale_factor + add_offset``. For every code of the 8- and 16-bit packed types (2 million
sampled codes of int32) and a set of realistic scale factors, this prints the share of codes whose
decoded value differs, the largest difference in units of the last place (ulp) of the decoded
value and relative to ``scale_factor``, and whether xarray's decoded values encode back to the
stored integers. Usage: ``python benchmarks/cf_difference.py [--quick]`` (needs xarray).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from numcodecs_ext.cf import packing_from_attrs

SCALES = [  # (scale_factor, add_offset) as files state them
    (0.01, 273.15), (0.001, 0.0), (1 / 3, -5.0), (0.0023, 100.5), (1.5259e-05, 0.5), (0.1, -3276.7),
    (0.00305185, 0.0), (7.3e-4, 2.3), (1e-4, 1000.0), (2.0**-7, 10.0),
]


def _codes(packed: str) -> np.ndarray:
    info = np.iinfo(packed)
    if np.dtype(packed).itemsize <= 2:
        return np.arange(info.min, info.max + 1).astype(packed)
    return np.random.default_rng(0).integers(info.min, info.max, 2_000_000, endpoint=True).astype(packed)


def measure(packed: str, attr_type: type, scales: list[tuple[float, float]] = SCALES,
            ) -> tuple[str, float, float, float, float, bool]:
    q = _codes(packed)
    differing = total = 0
    worst_ulps = worst_rel = worst_bound = 0.0
    roundtrip = True
    unpacked = None
    for sf, ao in scales:
        attrs = {"scale_factor": attr_type(sf), "add_offset": attr_type(ao)}
        p = packing_from_attrs(packed, attrs)
        unpacked = p.unpacked
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cf = xr.decode_cf(xr.Dataset({"v": ("x", q, attrs)})).v.values
        ours = p.decode(q)
        diff = np.abs(ours.astype(np.float64) - cf.astype(np.float64))
        differing += int(np.count_nonzero(diff))
        total += q.size
        product = np.abs(q.astype(p.unpacked) * p.scale_factor)
        bound = np.spacing(product).astype(np.float64) + np.spacing(np.abs(cf)).astype(np.float64)
        worst_bound = max(worst_bound, float((diff / bound).max()))
        worst_ulps = max(worst_ulps, float(diff.max() / np.spacing(np.abs(cf).max())))
        worst_rel = max(worst_rel, float(diff.max() / abs(sf)))
        so, cv = p.filters()
        roundtrip &= bool((cv.encode(so.encode(cf)) == q).all())
    return str(unpacked), differing / total, worst_bound, worst_ulps, worst_rel, roundtrip


def main(quick: bool = False) -> None:
    scales = SCALES[:3] if quick else SCALES
    print(__doc__.split("\n\n")[0])
    print(f"{len(scales)} (scale_factor, add_offset) pairs: {scales}\n")
    print(f"{'packed':8} {'attrs':8} {'unpacked':9} {'codes differing':>16} {'max / bound':>12} "
          f"{'max, ulps of max|x|':>20} {'max / scale_factor':>19}  re-encode exact")
    for packed in ("int8", "uint8", "int16", "uint16", "int32"):
        for attr_type in (np.float32, np.float64):
            unpacked, share, ratio, ulps, rel, rt = measure(packed, attr_type, scales)
            print(f"{packed:8} {attr_type.__name__:8} {unpacked:9} {share:16.1%} {ratio:12.3f} "
                  f"{ulps:20.2f} {rel:19.2e}  {'yes' if rt else 'NO'}")
    print("\nbound: one ulp of q * scale_factor plus one ulp of the decoded value, in the unpacked dtype")
    print("(max / bound <= 1 confirms it). ulps of max|x|: the largest difference in units of the last")
    print("place of the variable's largest decoded magnitude. re-encode exact: xarray's decoded values")
    print("encode back to the stored integers with the codecs. Power-of-two scale factors: 0 differences.")


def run(quick: bool = False) -> None:
    """The runner's entry point; ``quick``: 3 of the scale factors."""
    main(quick)


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv[1:])
