"""migrate on a local S3 server (moto's, on 127.0.0.1, with the tests' counting proxy in front):
the requests of an in-place migration of 10 and 1,000 chunks (with and without verification),
the requests of a migration to another prefix (server-side copies), and the time to migrate in
place a store of 100,000 chunks.

The anchor for time is the same in-place migration of the same store on the local disk. moto is
a Python server on the same 2 shared cores, far slower per request than S3 itself: its times say
how the work scales (requests per chunk), not what a real bucket takes.

Usage: ``python benchmarks/bench_remote.py [--quick]``.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the tests' S3 server and counting proxy (tests.helpers)


def build(path: Path, chunks: int) -> None:
    """A zarr v2 group with one float32 array of ``chunks`` chunks of 16 values (zstd), and its
    attributes: small chunks, so that the store's size is its number of objects."""
    import numcodecs
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        a = g.create_array("t", shape=(chunks * 16,), chunks=(16,), dtype="<f4", fill_value=0.0,
                           compressors=numcodecs.Zstd(level=1))
        a[:] = np.linspace(0, 1, chunks * 16, dtype="<f4") + 1
        a.attrs["_ARRAY_DIMENSIONS"] = ["x"]


def _upload(bucket, local: Path, prefix: str) -> None:
    objects = {f"{prefix}/{p.relative_to(local).as_posix()}": p.read_bytes()
               for p in local.rglob("*") if p.is_file()}
    items = list(objects.items())
    for i in range(0, len(items), 2000):
        bucket.put_many(dict(items[i:i + 2000]))


def _counts(proxy, fn) -> tuple[collections.Counter[str], float]:
    proxy.reset()
    t0 = time.perf_counter()
    fn()
    return proxy.counts(), time.perf_counter() - t0


def _show(counts: collections.Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (total {sum(counts.values())})"


def run(quick: bool = False) -> None:
    from tests.helpers.s3server import CountingProxy, MotoServer, S3Bucket, admin_filesystem, s3_environment

    from numcodecs_ext.migrate import migrate, migrate_in_place

    print("remote: migrate on a local S3 server (moto), requests counted by a proxy")
    print(f"  load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with MotoServer() as server, tempfile.TemporaryDirectory() as tmp:
        proxy = CountingProxy(server.endpoint).start()
        os.environ.update(s3_environment(proxy.endpoint))
        bucket = S3Bucket(server, proxy, fs=admin_filesystem(server))
        try:
            for n in ((10, 100) if quick else (10, 1000)):
                local = Path(tmp) / f"v2-{n}.zarr"
                build(local, n)
                for verify in ("none", "sample:5", "full"):
                    prefix = f"inplace-{n}-{verify.replace(':', '')}.zarr"
                    _upload(bucket, local, prefix)
                    counts, seconds = _counts(proxy, lambda p=prefix, v=verify: migrate_in_place(
                        bucket.url(p), verify=v))
                    what = f"--verify {verify}"
                    print(f"  in place, {n:>5} chunks, {what:17}: {_show(counts)}; {seconds:.2f} s")
                _upload(bucket, local, f"src-{n}.zarr")
                counts, seconds = _counts(proxy, lambda n=n: migrate(
                    bucket.url(f"src-{n}.zarr"), bucket.url(f"dst-{n}.zarr"), verify="none"))
                print(f"  to another prefix, {n:>5} chunks, --verify none: {_show(counts)}; {seconds:.2f} s")
                counts, seconds = _counts(proxy, lambda n=n: migrate(
                    bucket.url(f"src-{n}.zarr"), bucket.url(f"dst-{n}-s.zarr"), verify="sample:5"))
                print(f"  to another prefix, {n:>5} chunks, --verify sample:5: {_show(counts)}; {seconds:.2f} s")
            big = 2_000 if quick else 100_000
            local = Path(tmp) / "big.zarr"
            build(local, big)
            t0 = time.perf_counter()
            migrate_in_place(local, verify="none")
            anchor = time.perf_counter() - t0
            build(local, big)  # (v2 again: the anchor added zarr.json)
            _upload(bucket, local, "big.zarr")
            counts, seconds = _counts(proxy, lambda: migrate_in_place(bucket.url("big.zarr"), verify="none"))
            print(f"  in place, {big} chunks, --verify none: {seconds:.2f} s on the S3 server "
                  f"({_show(counts)}); the local disk (anchor): {anchor:.2f} s")
            if not quick:
                counts, seconds = _counts(proxy, lambda: migrate_in_place(bucket.url("big.zarr"), verify="full"))
                print(f"  in place, {big} chunks, verified (run again: resumes, reads every chunk): "
                      f"{seconds:.1f} s ({_show(counts)})")
        finally:
            proxy.stop()
    print(f"  load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
