"""How tests/interop/interop_others.py drives zarrita.js (tests/interop/interop_zarrita.mjs under node): values come
back bit for bit, and every way it can go wrong is said, not skipped or hung on.

Needs node; the tests that read with the real zarrita.js also need ZARRITA_DIR (the interop job in
.ci/run sets both, with NUMCODECS_EXT_REQUIRE_OTHERS=1: there nothing here skips)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import interop_others as io
from test_deviations_others import _case, _store, skip


def _node() -> None:
    if shutil.which("node") is None:
        skip("node is not on PATH")


@pytest.fixture(scope="module")
def zarrita() -> io.ZarritaJs:
    _node()
    try:
        impl = io.ZarritaJs()
    except ImportError as exc:
        skip(f"zarrita.js: {exc}")
    yield impl
    impl.close()


@pytest.mark.parametrize(("dtype", "values"), [
    ("float64", [np.nan, -0.0, np.inf, -np.inf, 5e-324, 1.7976931348623157e308]),
    ("float32", [np.nan, -0.0, 1.4e-45, -3.4028235e38]),
    ("int64", [-(2**63), 2**63 - 1, 0, -1]),
    ("uint64", [2**64 - 1, 2**53 + 1, 0, 1]),
    ("bool", [True, False, True, True]),
    ("int8", [-128, 127, 0, -1]),
])
def test_values_come_back_bit_for_bit(zarrita: io.ZarritaJs, tmp_path: Path, dtype: str, values: list) -> None:
    data = np.array(values, dtype=dtype)
    if dtype.startswith("float"):
        data.view(f"u{data.itemsize}")[0] |= 1  # a NaN with a payload of its own
    case = _case(dtype, (len(values),), (len(values),), False if dtype == "bool" else 0)
    store = _store(tmp_path / "a.zarr", case, {"c/0": data.tobytes()})
    got = zarrita.read(store, case, None)
    assert got.dtype == data.dtype and got.tobytes() == data.tobytes()
    part = zarrita.read(store, case, (slice(1, 3),))
    assert part.tobytes() == data[1:3].tobytes()


def test_transposed_memory_order_is_undone(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """zarrita.js hands a transposed array back in the transposed memory order (its strides say
    so); the driver gives the values in C order."""
    case = _case("int16", (3, 4), (3, 4), 0, filters=(io._c("transpose", order=[1, 0]),))
    data = np.arange(12, dtype=np.int16).reshape(3, 4)
    store = _store(tmp_path / "a.zarr", case, {"c/0/0": np.ascontiguousarray(data.T).tobytes()})
    got = zarrita.read(store, case, None)
    assert got.flags.c_contiguous and got.tolist() == data.tolist()


def test_what_zarrita_refuses_is_a_zarrita_error(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    case = _case("uint8", (4,), (4,), 0, io._c("packbits"))
    store = _store(tmp_path / "a.zarr", case, {"c/0": bytes(4)})  # codecs load with the first chunk
    with pytest.raises(io.ZarritaError, match="Unknown codec: packbits"):
        zarrita.read(store, case, None)
    with pytest.raises(io.ZarritaError, match="NotFoundError"):
        zarrita.read(tmp_path / "nothing.zarr", case, None)
    assert zarrita.read(_store(tmp_path / "b.zarr", _case("uint8", (2,), (2,), 7), {}),
                        _case("uint8", (2,), (2,), 7), None).tolist() == [7, 7]  # still serving


def test_a_missing_installation_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _node()
    monkeypatch.setenv("ZARRITA_DIR", str(tmp_path))
    with pytest.raises(ImportError, match=f"ZARRITA_DIR={tmp_path} holds no node_modules/zarrita: run npm ci"):
        io.ZarritaJs()
    monkeypatch.delenv("ZARRITA_DIR")
    with pytest.raises(ImportError, match="ZARRITA_DIR is not set"):
        io.ZarritaJs()


def _package(root: Path, name: str, version: str, code: str) -> None:
    folder = root / "node_modules" / name
    (folder / "dist").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({
        "name": name, "version": version, "type": "module",
        "exports": {".": {"import": "./dist/index.js"}, "./fs": {"import": "./dist/index.js"}}}))
    (folder / "dist" / "index.js").write_text(code)


def test_a_dying_reader_is_reported_and_restarted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that dies mid-read (here a stand-in package whose open exits node) fails that read
    with node's status and message; the next read starts a new process."""
    _node()
    _package(tmp_path, "zarrita", "9.9.9",
             'export async function open() { process.stderr.write("gone\\n"); process.exit(3); }\n'
             "export function slice() {}\nexport async function get() {}\n")
    _package(tmp_path, "@zarrita/storage", "0.0.1", "export default class {}\n")
    monkeypatch.setenv("ZARRITA_DIR", str(tmp_path))
    impl = io.ZarritaJs()
    assert impl.label() == f"zarrita.js 9.9.9 (node {impl.versions['node'].split('.')[0]})"
    case = _case("uint8", (2,), (2,), 0)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="interop_zarrita.mjs serve exited with 3: gone"):
            impl.read(tmp_path / "a.zarr", case, None)
    impl.close()
