"""inspect and suggest on a real S3 API (moto's server on 127.0.0.1, tests/helpers/s3server.py): stores
and netCDF files in a bucket, credentials and endpoint from the standard variables or
--storage-options, the requests each run makes, and the faults users meet, from the command
line in a subprocess: a clear message, the contract's exit status, no traceback, no credential."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from tests.helpers.migrate_helpers import build_v2
from tests.helpers.s3server import ACCESS_KEY, SECRET_KEY

from numcodecs_ext.cf.suggest import suggest
from numcodecs_ext.tools.inspect import inspect_store
from numcodecs_ext.store.storage import AccessDenied, StoreNotFound

#: the standard variable that bounds botocore's attempts (the default, 5 with back-off, makes a
#: stopped server take ~40 s per command; users set it the same way)
FEW_ATTEMPTS = {"AWS_MAX_ATTEMPTS": "2"}


def cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``numcodecs-ext ARGV`` in a subprocess with this process's environment (the AWS_*
    variables the ``s3`` fixture set) and ``env``."""
    return subprocess.run([sys.executable, "-m", "numcodecs_ext.cli", *argv], check=False, capture_output=True,
                          text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def assert_clean(result: subprocess.CompletedProcess[str], status: int, says: str) -> None:
    """Exit ``status``, ``says`` on stderr, no traceback, no credential anywhere."""
    where = f"status {result.returncode}\nstdout: {result.stdout[-1500:]}\nstderr: {result.stderr[-1500:]}"
    assert result.returncode == status, where
    assert says in result.stderr, where
    for text in (result.stdout, result.stderr):
        assert "Traceback" not in text and not re.search(r": unexpected [A-Z]\w*:", text), where
        assert SECRET_KEY not in text and ACCESS_KEY not in text, where


@pytest.fixture
def v2_in_bucket(s3, tmp_path):
    """A zarr v2 hierarchy (build_v2) uploaded to ``s3://BUCKET/v2.zarr``; what each array reads."""
    values = build_v2(tmp_path / "v2.zarr")
    s3.upload(tmp_path / "v2.zarr", "v2.zarr")
    s3.proxy.reset()
    return s3, values


def _netcdf(path: Path, fmt: str) -> np.ndarray:
    t2m = (270 + 10 * np.sin(np.linspace(0, 6, 40 * 30))).reshape(40, 30).astype("f4")
    xr.Dataset({"t2m": (("y", "x"), t2m, {"units": "K"})}).to_netcdf(path, format=fmt)
    return t2m


# -- inspect ---------------------------------------------------------------------------------------


def test_inspect_a_v2_store_in_a_bucket_reads_metadata_only(v2_in_bucket):
    """Every array described; the requests are one listing page and one GET per node's
    metadata document: no chunk is read, and nothing is written."""
    s3, values = v2_in_bucket
    report = inspect_store(s3.url("v2.zarr"))
    assert sorted(a["path"] for a in report["arrays"]) == sorted(values)
    assert report["store"] == s3.url("v2.zarr") and not report["problems"]
    requests = s3.requests()
    gets = [r.key for r in requests if r.kind == "GET"]
    assert gets and all(k.rpartition("/")[2] in (".zarray", ".zgroup", ".zattrs") for k in gets), gets
    documents = [k for k in s3.keys("v2.zarr") if k.rpartition("/")[2] in (".zarray", ".zgroup")]
    assert s3.counts() == {"LIST": 1, "GET": len(documents)}
    assert report["arrays"][[a["path"] for a in report["arrays"]].index("t")]["chunk_files"] == 10


def test_inspect_command_with_storage_options_only(v2_in_bucket, monkeypatch):
    """No AWS_* variables: the endpoint and credentials from --storage-options; --json output."""
    s3, values = v2_in_bucket
    options = json.dumps({"key": ACCESS_KEY, "secret": SECRET_KEY,
                          "client_kwargs": {"endpoint_url": s3.endpoint}})
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name)
    result = cli("inspect", s3.url("v2.zarr"), "--json", "--storage-options", options)
    assert result.returncode == 0, result.stderr
    assert sorted(a["path"] for a in json.loads(result.stdout)["arrays"]) == sorted(values)
    assert SECRET_KEY not in result.stdout + result.stderr


def test_inspect_from_python_on_store_objects(v2_in_bucket):
    """zarr store objects from Python: an FsspecStore and obstore's ObjectStore of the bucket."""
    import obstore.store as obstore

    s3, values = v2_in_bucket
    fsspec_store = zarr.storage.FsspecStore.from_url(s3.url("v2.zarr"), read_only=True)
    object_store = zarr.storage.ObjectStore(obstore.S3Store(s3.name, prefix="v2.zarr",
                                                            client_options={"allow_http": True}))
    for store in (fsspec_store, object_store):
        assert sorted(a["path"] for a in inspect_store(store)["arrays"]) == sorted(values)


# -- suggest ---------------------------------------------------------------------------------------


def test_suggest_on_a_v2_store_in_a_bucket(v2_in_bucket):
    s3, values = v2_in_bucket
    results = suggest(s3.url("v2.zarr"), array="t", tolerance=0.01)
    r = results["t"]["range"]
    assert (r.min, r.max) == (float(values["t"].min()), float(values["t"].max()))
    assert results["t"]["choice"] is not None and results["t"]["choice"].max_error <= 0.01
    assert {x.kind for x in s3.requests()} <= {"LIST", "GET", "HEAD"}, s3.counts()


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT"])
def test_suggest_on_netcdf_in_a_bucket(s3, tmp_path, fmt):
    """A netCDF file in a bucket is read in ranges (never downloaded whole): netCDF-4 through
    h5netcdf; netCDF-3 through scipy, or a usage error naming the package to install."""
    t2m = _netcdf(tmp_path / "t.nc", fmt)
    s3.put("data/t.nc", (tmp_path / "t.nc").read_bytes())
    if fmt == "NETCDF3_64BIT" and importlib.util.find_spec("scipy") is None:
        result = cli("suggest", s3.url("data/t.nc"), "-q")
        assert_clean(result, 2, "needs scipy (pip install scipy)")
        return
    results = suggest(s3.url("data/t.nc"), tolerance=0.01)
    r = results["t2m"]["range"]
    assert (r.min, r.max) == (float(t2m.min()), float(t2m.max()))
    result = cli("suggest", s3.url("data/t.nc"), "--tolerance", "0.01", "-q")
    assert result.returncode == 0, result.stderr
    assert "t2m: float32 in" in result.stdout


def test_suggest_reads_a_big_netcdf_in_ranges(s3, tmp_path):
    """A netCDF-4 file larger than the reader's block cache: GET requests carry ranges, and no
    one of them is for the whole object."""
    rng = np.random.default_rng(1)
    big = rng.standard_normal((1200, 2048)).astype("f4")  # ~9.8 MB, stored uncompressed
    xr.Dataset({"v": (("y", "x"), big)}).to_netcdf(tmp_path / "big.nc", engine="netcdf4")
    size = (tmp_path / "big.nc").stat().st_size
    s3.put("big.nc", (tmp_path / "big.nc").read_bytes())
    s3.proxy.reset()
    results = suggest(s3.url("big.nc"), dtype="int16")
    assert results["v"]["range"].count == big.size
    gets = [r for r in s3.requests() if r.kind == "GET"]
    assert size > 8 << 20 and len(gets) >= 3
    for r in gets:  # ranged reads of at most a block (4 MiB), never the whole object
        assert r.range.startswith("bytes="), r
        first, last = (int(x) for x in r.range.removeprefix("bytes=").split("-"))
        assert last - first + 1 <= 4 << 20, r


# -- faults, from the command line -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["inspect", "suggest"])
def test_missing_bucket(s3, command):
    result = cli(command, f"s3://no-such-{s3.name}/store.zarr")
    assert_clean(result, 2, f"the bucket 'no-such-{s3.name}' does not exist")


@pytest.mark.parametrize("command", ["inspect", "suggest"])
def test_missing_store_in_a_bucket(s3, command):
    result = cli(command, s3.url("nothing.zarr"))
    assert_clean(result, 2, "does not exist")


@pytest.mark.parametrize("command", ["inspect", "suggest"])
@pytest.mark.full
def test_server_that_stops(v2_in_bucket, command):
    """The server stops answering (connections dropped): the client's bounded retries, then a
    clear message naming the store, exit 1."""
    s3, _ = v2_in_bucket
    s3.proxy.cut_after(0)
    try:
        result = cli(command, s3.url("v2.zarr"), env=FEW_ATTEMPTS)
    finally:
        s3.proxy.cut_after(None)
    assert_clean(result, 1, "the storage service cannot be reached")
    assert s3.url("v2.zarr") in result.stderr


@pytest.mark.full
def test_suggest_server_stops_mid_run(v2_in_bucket):
    """The server stops after the metadata was read: suggest ends with one message (not one
    per array after each one's retries), exit 1."""
    s3, _ = v2_in_bucket
    s3.proxy.cut_after(12)
    try:
        result = cli("suggest", s3.url("v2.zarr"), "-q", env=FEW_ATTEMPTS)
    finally:
        s3.proxy.cut_after(None)
    assert_clean(result, 1, "the storage service cannot be reached")


@pytest.mark.parametrize("command", ["inspect", "suggest"])
def test_access_denied(guarded_server, command, monkeypatch):
    """A user whose key may not read the bucket: access denied, exit 2, no credential shown."""
    server, bucket, keys = guarded_server
    key, secret = keys["nobody"]
    for name, value in (("AWS_ACCESS_KEY_ID", key), ("AWS_SECRET_ACCESS_KEY", secret),
                        ("AWS_ENDPOINT_URL", server.endpoint)):
        monkeypatch.setenv(name, value)
    result = cli(command, bucket.url("s"), env=FEW_ATTEMPTS)
    assert_clean(result, 2, "access denied")
    assert secret not in result.stderr + result.stdout and key not in result.stderr + result.stdout
    options = {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": server.endpoint},
               "config_kwargs": {"retries": {"max_attempts": 2}}}
    with pytest.raises(AccessDenied):
        inspect_store(bucket.url("s"), storage_options=options)
    with pytest.raises(AccessDenied):
        suggest(bucket.url("s"), storage_options=options)


@pytest.mark.parametrize("command", ["inspect", "suggest"])
def test_bad_storage_options(s3, command):
    result = cli(command, s3.url("x.zarr"), "--storage-options", '{"anon": "yes"}')
    assert_clean(result, 2, '"anon" must be true or false')
    result = cli(command, s3.url("x.zarr"), "--storage-options", '{"no_such_option": 1}')
    assert_clean(result, 2, "storage options not accepted")


def test_python_callers_get_the_storage_errors(s3):
    with pytest.raises(StoreNotFound):
        inspect_store(f"s3://no-such-{s3.name}/x.zarr")
    with pytest.raises(StoreNotFound):
        suggest(f"s3://no-such-{s3.name}/x.zarr")


# -- storage options of the wrong type, URLs users spell otherwise (review3) -----------------------


@pytest.mark.parametrize(("options", "names"), [
    ('{"client_kwargs": "x"}', "client_kwargs"),
    ('{"client_kwargs": {"endpoint_url": 5}}', "client_kwargs.endpoint_url"),
    pytest.param('{"client_kwargs": {"verify": 3}}', "client_kwargs.verify", marks=pytest.mark.full),
    pytest.param('{"config_kwargs": {"retries": "x"}}', "config_kwargs.retries", marks=pytest.mark.full),
    ('{"config_kwargs": {"retries": {"max_attempts": "2"}}}', "config_kwargs.retries.max_attempts"),
    pytest.param('{"config_kwargs": {"connect_timeout": -1}}', "config_kwargs.connect_timeout", marks=pytest.mark.full),
    pytest.param('{"config_kwargs": []}', "config_kwargs", marks=pytest.mark.full),
    pytest.param('{"key": 123}', '"key"', marks=pytest.mark.full),
    ('{"secret": ["TOPSECRETX"]}', '"secret"'),
    pytest.param('{"anon": "yes"}', '"anon"', marks=pytest.mark.full),
    pytest.param('{"use_ssl": 1}', '"use_ssl"', marks=pytest.mark.full),
    pytest.param('{"default_block_size": true}', '"default_block_size"', marks=pytest.mark.full),
    ("null", "not null"),
    pytest.param("[1, 2]", "not a JSON array", marks=pytest.mark.full),
    pytest.param('"x"', "not a string", marks=pytest.mark.full),
])
def test_storage_options_of_the_wrong_type_are_usage_errors(s3, options, names):
    """A value of the wrong type is an invalid argument: exit 2 naming the option (before any
    request), never a crash of the filesystem later."""
    s3.put("s/zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    for command in ("inspect", "suggest"):
        result = cli(command, s3.url("s"), "-q", "--storage-options", options, env=FEW_ATTEMPTS)
        assert_clean(result, 2, "--storage-options")
        assert names in result.stderr and "TOPSECRETX" not in result.stderr, result.stderr
    result = cli("migrate", s3.url("s"), s3.url("t"), "-q", "--storage-options", options, env=FEW_ATTEMPTS)
    assert_clean(result, 2, names)


def test_storage_options_of_the_wrong_type_from_python(s3):
    from numcodecs_ext.store.errors import UsageError
    from numcodecs_ext.store.storage import Location

    with pytest.raises(UsageError, match=r'storage_options: "client_kwargs" must be a JSON object or null, '
                                         "not a string"):
        Location.parse(s3.url("s"), storage_options={"client_kwargs": "x"})
    with pytest.raises(UsageError, match=r'"key" must be a string or null, not a number'):
        inspect_store(s3.url("s"), storage_options={"key": 123})


def test_only_a_key_is_a_usage_error(s3):
    s3.put("s/zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    env = {k: "" for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    result = cli("inspect", s3.url("s"), "-q", "--storage-options", '{"key": "AKIAONLYKEY"}',
                 env={**env, **FEW_ATTEMPTS})
    assert_clean(result, 2, "credentials")
    assert "AKIAONLYKEY" not in result.stderr


def test_url_schemes_are_case_insensitive_and_need_a_bucket(s3):
    s3.put("s/zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    for url in (f"S3://{s3.name}/s", f"s3://{s3.name}/s".replace("s3", "S3", 1)):
        assert_clean(cli("inspect", url, "-q"), 0, "")
    for url in ("s3://", "s3:///", "S3://", "gs://"):
        result = cli("inspect", url, "-q")
        assert_clean(result, 2, "a bucket name is needed")


def test_a_zip_in_a_bucket_is_said_how_to_open(s3, tmp_path):
    with zarr.storage.ZipStore(tmp_path / "z.zip", mode="w") as store:
        zarr.create_array(store, shape=(3,), dtype="i4", fill_value=0)[:] = [1, 2, 3]
    s3.put("z.zip", (tmp_path / "z.zip").read_bytes())
    result = cli("inspect", s3.url("z.zip"), "-q")
    assert_clean(result, 2, f"zip::s3://{s3.name}/z.zip")
    assert "a .zip file or a URL" not in result.stderr
    result = cli("inspect", f"zip::s3://{s3.name}/z.zip", "-q")  # as the message says
    assert_clean(result, 0, "")
    assert "int32" in result.stdout, result.stdout
