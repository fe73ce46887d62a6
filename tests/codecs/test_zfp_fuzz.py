"""Decoding corrupt zfp streams: a clean ValueError or a correct-shape array, never a crash.

The fuzzing runs in a subprocess so that a crash fails the test instead of killing pytest. In that
subprocess every scratch buffer handed to libzfp ends exactly at a PROT_NONE guard page: a read or
write one byte past the buffer would be a segmentation fault, so a passing run also proves that
libzfp stays inside the memory we give it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

FUZZ_SCRIPT = textwrap.dedent(
    r"""
    import ctypes, mmap, random, sys
    import numpy as np
    import numcodecs_ext.core.zfp as z

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.mprotect.restype = ctypes.c_int
    PAGE = mmap.PAGESIZE

    def guarded(nbytes):
        nbytes = (nbytes + 7) // 8 * 8
        pages = (nbytes + PAGE - 1) // PAGE + 1
        m = mmap.mmap(-1, pages * PAGE)
        whole = np.frombuffer(m, dtype=np.uint8)
        base = whole.__array_interface__["data"][0]
        if libc.mprotect(base + (pages - 1) * PAGE, PAGE, 0) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        end = (pages - 1) * PAGE
        return whole[end - nbytes:end]

    z._scratch = guarded  # every libzfp buffer now ends at a guard page

    rng = random.Random(int(sys.argv[1]))
    modes = [
        {"mode": "reversible"},
        {"mode": "fixed_accuracy", "tolerance": 1e-2},
        {"mode": "fixed_rate", "rate": 5},
        {"mode": "fixed_precision", "precision": 14},
        {"mode": "expert", "minbits": 24, "maxbits": 700, "maxprec": 20, "minexp": -12},
        {"mode": "expert", "minbits": 1, "maxbits": 16658, "maxprec": 64, "minexp": -1075},
    ]
    dtypes = ["float32", "float64", "int32", "int64", "int8", "uint16", "uint64"]
    shapes = [(13,), (5, 6), (3, 4, 5), (2, 3, 4, 5)]
    counts = {"decodes": 0, "errors": 0, "ok": 0}

    def check(buf, shape, dtype, cfg):
        counts["decodes"] += 1
        try:
            out = z.decompress(buf, shape, dtype, **cfg)
        except ValueError:
            counts["errors"] += 1
            return
        assert out.shape == shape and out.dtype == np.dtype(dtype), (out.shape, out.dtype)
        counts["ok"] += 1

    for cfg in modes:
        for dtype in dtypes:
            if cfg["mode"] == "fixed_accuracy" and dtype[0] != "f":
                continue
            for shape in shapes:
                n = int(np.prod(shape))
                data = np.cumsum(np.random.default_rng(rng.randrange(2**32)).standard_normal(n))
                data = (data * 50).reshape(shape)
                if dtype[0] == "u":
                    data = np.abs(data)
                a = data.astype(dtype)
                buf = z.compress(a, **cfg)
                cap = z.max_compressed_size(shape, dtype, **cfg)
                # 1. truncations: every length
                for k in range(len(buf)):
                    check(buf[:k], shape, dtype, cfg)
                # 2. bit flips (1 to 4 bits)
                for _ in range(40):
                    b = bytearray(buf)
                    for _ in range(rng.randint(1, 4)):
                        i = rng.randrange(len(b) * 8)
                        b[i // 8] ^= 1 << (i % 8)
                    check(bytes(b), shape, dtype, cfg)
                # 3. random bytes of random lengths (mostly whole words, up to the capacity)
                for _ in range(25):
                    k = rng.randrange(0, cap + 16)
                    if rng.random() < 0.8:
                        k -= k % 8
                    check(rng.randbytes(k), shape, dtype, cfg)
                # 4. all-ones and all-zeros streams of the maximum size (longest reads)
                check(b"\xff" * (cap // 8 * 8), shape, dtype, cfg)
                check(b"\x00" * (cap // 8 * 8), shape, dtype, cfg)
                # 5. valid stream with garbage appended or its tail replaced
                check(buf + rng.randbytes(8), shape, dtype, cfg)
                check(buf[:-8] + b"\xff" * 8 if len(buf) > 8 else buf, shape, dtype, cfg)
                # the unmodified stream still decodes
                out = z.decompress(buf, shape, dtype, **cfg)
                assert out.shape == shape
    print(counts["decodes"], counts["errors"], counts["ok"])
    """
)


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_decode_in_subprocess(seed: int) -> None:
    res = subprocess.run(
        [sys.executable, "-W", "error", "-c", FUZZ_SCRIPT, str(seed)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )
    assert res.returncode == 0, f"fuzz subprocess failed (rc={res.returncode}):\n{res.stderr[-3000:]}"
    decodes, errors, ok = map(int, res.stdout.split())
    assert decodes >= 10_000
    assert errors > decodes // 2  # most corruptions are detected
