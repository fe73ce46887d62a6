"""zarr-python's own tests for scale_offset, cast_value and transpose, with our classes.

The test modules are fetched from the sdist of the installed zarr release on the package
registry (they are zarr's code: never copied into this project) and run in a subprocess, once
with our classes selected through zarr's config and once substituted for the classes the tests
import (see ``zarr_upstream_conftest.py``). Every test must pass, except the ones listed in
:data:`NOT_OURS`, each with the reason.

Without network access the test is skipped, unless ``NUMCODECS_EXT_REQUIRE_UPSTREAM=1`` (CI
sets it) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import zarr
from packaging.version import Version
from tests.helpers import HELPERS

ZARR = Version(zarr.__version__)
MODULES = ["tests/test_codecs/test_transpose.py"]
if ZARR >= Version("3.2"):  # zarr's own scale_offset and cast_value
    MODULES = ["tests/test_codecs/test_scale_offset.py", "tests/test_codecs/test_cast_value.py", *MODULES]

#: zarr tests that do not apply to another implementation, and why.
NOT_OURS = {
    # monkeypatches the private module global that gates zarr's optional Rust backend
    # (cast-value-rs) and asserts zarr's ImportError: ours has no backend to be outdated
    "tests/test_codecs/test_cast_value.py::test_encode_rejects_outdated_backend",
}


def _fail_or_skip(message: str) -> None:
    if os.environ.get("NUMCODECS_EXT_REQUIRE_UPSTREAM") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zarr's tests (and pytest-asyncio, which they need) for the installed zarr release."""
    root = tmp_path_factory.mktemp("zarr-upstream")
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         f"zarr=={zarr.__version__}", "-d", str(root)],
        capture_output=True, text=True, timeout=600,
    )
    sdists = list(root.glob("zarr-*.tar.gz"))
    if download.returncode or not sdists:
        _fail_or_skip(f"could not fetch the zarr {zarr.__version__} sdist: {download.stderr[-500:]}")
    with tarfile.open(sdists[0]) as tar:
        prefix = tar.getnames()[0].split("/")[0]
        members = [m for m in tar.getmembers()
                   if m.name.startswith(f"{prefix}/tests/") or m.name == f"{prefix}/pyproject.toml"]
        tar.extractall(root, members=members, filter="data")
    src = root / prefix
    pins = re.findall(r'"pytest-asyncio==([^"]+)"', (src / "pyproject.toml").read_text())
    deps = root / "deps"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(deps),
         f"pytest-asyncio=={pins[0]}" if pins else "pytest-asyncio"],
        capture_output=True, text=True, timeout=600,
    )
    if install.returncode:
        _fail_or_skip(f"could not install pytest-asyncio: {install.stderr[-500:]}")
    shutil.copy(HELPERS / "zarr_upstream_conftest.py", src / "conftest.py")
    (src / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = -p no:cacheprovider\nfilterwarnings =\n    error\n"
        "    ignore:Numcodecs codecs are not in the Zarr version 3 specification.*:UserWarning\n"
    )
    return src


@pytest.mark.parametrize("mode", ["config", "subst"])
@pytest.mark.full
def test_zarr_codec_tests_pass_with_our_classes(upstream: Path, mode: str) -> None:
    deselect = [arg for test in sorted(NOT_OURS) for arg in ("--deselect", test)]
    env = {**os.environ, "NUMCODECS_EXT_MODE": mode,
           "PYTHONPATH": os.pathsep.join([str(upstream.parent / "deps"), str(upstream)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_asyncio", "-q", "-rfE",
         "-o", "consider_namespace_packages=false", *MODULES, *deselect],
        cwd=upstream, env=env, capture_output=True, text=True, timeout=900,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
