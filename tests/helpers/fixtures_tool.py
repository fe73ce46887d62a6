"""Generate missing backward-compatibility fixtures. Never overwrites an existing one.

Usage (from the repository root)::

    python -m tests.helpers.fixtures_tool generate [CODEC_ID ...]   # write fixtures that do not exist yet
    python -m tests.helpers.fixtures_tool list                      # show which are present or missing
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numcodecs
import numpy as np

import numcodecs_ext  # noqa: F401  (registers the codecs)
from tests.helpers.fixture_cases import CODEC_FIXTURES, ZARR_FIXTURES

ROOT = Path(__file__).resolve().parents[2] / "fixtures"


def encoded_bytes(encoded: object) -> bytes:
    if isinstance(encoded, np.ndarray):
        return np.ascontiguousarray(encoded).tobytes()
    return bytes(encoded)  # type: ignore[arg-type]


def generate(only: list[str]) -> int:
    written = 0
    for codec_id, cases in CODEC_FIXTURES.items():
        if only and codec_id not in only:
            continue
        for name, (config, arr) in cases.items():
            folder = ROOT / codec_id / name
            if folder.exists():
                continue
            codec = numcodecs.get_codec(dict(config))
            folder.mkdir(parents=True)
            (folder / "config.json").write_text(json.dumps(codec.get_config(), indent=2) + "\n")
            np.save(folder / "array.npy", arr)
            encoded = encoded_bytes(codec.encode(arr))
            (folder / "encoded.dat").write_bytes(encoded)
            decoded = np.asarray(codec.decode(encoded, out=np.empty_like(arr)))
            if decoded.tobytes() != arr.tobytes():  # lossy: record what the bytes decode to
                np.save(folder / "decoded.npy", decoded)
            print(f"wrote {folder.relative_to(ROOT.parent)}")
            written += 1
    if not only or "zarr" in only:
        for name, write in ZARR_FIXTURES.items():
            store = ROOT / "zarr" / name
            if store.exists():
                continue
            store.parent.mkdir(parents=True, exist_ok=True)
            data = write(store)
            np.save(store.with_suffix(".npy"), data)
            print(f"wrote {store.relative_to(ROOT.parent)}")
            written += 1
    print(f"{written} fixture(s) written")
    return 0


def listing() -> int:
    for codec_id, cases in CODEC_FIXTURES.items():
        for name in cases:
            state = "present" if (ROOT / codec_id / name).exists() else "MISSING"
            print(f"{state:8} {codec_id}/{name}")
    for name in ZARR_FIXTURES:
        state = "present" if (ROOT / "zarr" / name).exists() else "MISSING"
        print(f"{state:8} zarr/{name}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("generate", "list"):
        print(__doc__)
        sys.exit(2)
    sys.exit(generate(sys.argv[2:]) if sys.argv[1] == "generate" else listing())
