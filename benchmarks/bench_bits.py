"""bitround, packbits and reshape against their closest anchors, in the same run.

* bitround vs numcodecs' ``BitRound`` (float32/float64; integers have no anchor: shown in MB/s);
* packbits vs numcodecs' ``PackBits`` for bool, and the 1/2/4-bit values in MB/s of unpacked
  input (the goal: at least 1 GB/s each way), against ``np.packbits`` for 1 bit;
* reshape: whether a contiguous chunk is reshaped without a copy, and its cost per call.
"""

from __future__ import annotations

import time

import numcodecs
import numpy as np
from _util import interleaved, row

from numcodecs_ext.codecs.bitround import BitRound
from numcodecs_ext.codecs.packbits import PackBits
from numcodecs_ext.codecs.reshape import Reshape

MIB = 1 << 20


def _bitround(rng: np.random.Generator, mib: int = 16) -> list[tuple[str, float]]:
    print(f"bitround ({mib} MiB, encode; decode is the identity)")
    ratios = []
    for dtype, keepbits in (("float32", 7), ("float64", 12)):
        data = rng.standard_normal(mib * MIB // np.dtype(dtype).itemsize).astype(dtype)
        ours, anchor = BitRound(keepbits=keepbits), numcodecs.BitRound(keepbits=keepbits)
        theirs, mine = interleaved(lambda: anchor.encode(data), lambda: ours.encode(data))
        mb = data.nbytes / 1e6
        print(row(f"{dtype} keepbits={keepbits}", mb / mine, "numcodecs BitRound", mb / theirs))
        ratios.append((f"bitround {dtype}", theirs / mine))
    for dtype in ("uint16", "int64"):
        data = rng.integers(0, 2**15, mib * MIB // np.dtype(dtype).itemsize).astype(dtype)
        codec = BitRound(keepbits=5)
        (mine,) = interleaved(lambda: codec.encode(data))
        print(row(f"{dtype} keepbits=5 (no anchor: numcodecs takes floats only)", data.nbytes / 1e6 / mine))
    return ratios


def _packbits(rng: np.random.Generator, mib: int = 16) -> list[tuple[str, float]]:
    print(f"packbits ({mib} Mi values, MB/s of unpacked input)")
    ratios = []
    flags = rng.integers(0, 2, mib * MIB).astype(bool)
    anchor = numcodecs.PackBits()
    numcodecs_layout = PackBits(dtype="bool", padding_encoding="first_byte", bit_order="big")
    spec_layout = PackBits(dtype="bool", padding_encoding="first_byte")
    enc_a, enc_n, enc_s = anchor.encode(flags), numcodecs_layout.encode(flags), spec_layout.encode(flags)
    assert bytes(enc_a) == bytes(enc_n)
    mb = flags.nbytes / 1e6
    t = interleaved(lambda: anchor.encode(flags), lambda: numcodecs_layout.encode(flags),
                    lambda: spec_layout.encode(flags))
    print(row("bool encode, numcodecs layout", mb / t[1], "numcodecs PackBits", mb / t[0]))
    print(row("bool encode, spec layout (LSB first)", mb / t[2], "numcodecs PackBits", mb / t[0]))
    ratios += [("packbits bool encode (numcodecs layout)", t[0] / t[1]),
               ("packbits bool encode (spec layout)", t[0] / t[2])]
    t = interleaved(lambda: anchor.decode(enc_a), lambda: numcodecs_layout.decode(enc_n),
                    lambda: spec_layout.decode(enc_s))
    print(row("bool decode, numcodecs layout", mb / t[1], "numcodecs PackBits", mb / t[0]))
    print(row("bool decode, spec layout (LSB first)", mb / t[2], "numcodecs PackBits", mb / t[0]))
    ratios += [("packbits bool decode (numcodecs layout)", t[0] / t[1]),
               ("packbits bool decode (spec layout)", t[0] / t[2])]
    for bits in (1, 2, 4, 12):
        dtype = "int16" if bits == 12 else "uint8"
        low = -(2 ** (bits - 1)) if dtype == "int16" else 0
        values = rng.integers(low, low + 2**bits, mib * MIB).astype(dtype)
        codec = PackBits(dtype=dtype, last_bit=bits - 1, shape=[values.size])
        enc = codec.encode(values)
        t_enc, t_dec = interleaved(lambda: codec.encode(values), lambda: codec.decode(enc))
        mb = values.nbytes / 1e6
        print(row(f"{dtype} last_bit={bits - 1} encode", mb / t_enc))
        print(row(f"{dtype} last_bit={bits - 1} decode", mb / t_dec))
    return ratios


def _reshape() -> None:
    print("reshape (a 64 MiB contiguous chunk)")
    data = np.zeros((4, 4, 1024, 1024), dtype="float32")
    codec = Reshape(shape=[[0, 1], [2], [3]])
    enc = codec.encode_chunk(data)
    calls = 20000
    t0 = time.perf_counter()
    for _ in range(calls):
        codec.encode_chunk(data)
    per_call = (time.perf_counter() - t0) / calls
    print(f"  encode_chunk is a view: {np.shares_memory(enc, data)}; "
          f"{per_call * 1e6:.1f} µs per call whatever the size (no copy)")


def run(quick: bool = False) -> list[tuple[str, float]]:
    """Every measurement; ``quick``: 1 MiB instead of 16 (to check the benchmark runs)."""
    rng = np.random.default_rng(0)
    mib = 1 if quick else 16
    ratios = _bitround(rng, mib) + _packbits(rng, mib)
    _reshape()
    return ratios


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv[1:])
