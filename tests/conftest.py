from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import FULL

#: the tests of the other implementations: CI runs them in an environment of their own, without
#: numcodecs_ext (``.ci/run``'s interop step, ``--noconftest``); here they could only skip
collect_ignore = ["interop/test_deviations_others.py", "interop/test_deviations_zarrita.py",
                  "interop/test_interop_zarrita_driver.py"]

settings.register_profile(
    "default", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "full", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("full" if FULL else "default")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "full: a long matrix, run only with NUMCODECS_EXT_FULL=1 (CI sets it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without the switch, the tests marked ``full`` are deselected (not skipped: nothing they
    need is missing, and pytest's summary counts them as deselected)."""
    if FULL:
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("full") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _c_compiler() -> str | None:
    """The C compiler this Python builds extensions with, where one is on the machine."""
    import shutil
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def require_compiled():
    """The compiled kernels module, whatever ``_native.ENABLED`` says at the moment.

    Where a C compiler is present the install must have built them, so their absence fails the
    test instead of skipping it (a skip would hide a broken build); without a compiler it skips.
    """
    from numcodecs_ext.core import _native

    if _native._compiled is not None:
        return _native._compiled
    if _c_compiler():
        pytest.fail(f"a C compiler is present ({_c_compiler()}) but the compiled kernels were not "
                    f"built: {_native.status()}")
    pytest.skip(f"no C compiler, so no compiled kernels: {_native.status()}")


@pytest.fixture(scope="session")
def compiled():
    """The compiled kernels module (see :func:`require_compiled`)."""
    return require_compiled()


@pytest.fixture(scope="module", params=["compiled", "numpy"])
def kernels(request):
    """Run a module's tests with the compiled kernels and again with the numpy kernels alone
    (module-scoped, so that hypothesis tests can use it too)."""
    from numcodecs_ext.core import _native

    if request.param == "compiled":
        require_compiled()
    saved = _native.ENABLED
    _native.ENABLED = request.param == "compiled"
    yield request.param
    _native.ENABLED = saved


# -- a real S3 API on 127.0.0.1 (tests/helpers/s3server.py) ----------------------------------------


@pytest.fixture(scope="session")
def s3_service():
    """moto's server (a subprocess) with the counting proxy in front, for the whole session."""
    from tests.helpers.s3server import CountingProxy, MotoServer, admin_filesystem

    server = MotoServer().start()
    proxy = CountingProxy(server.endpoint).start()
    yield server, proxy, admin_filesystem(server)
    proxy.stop()
    server.stop()


@pytest.fixture
def s3(s3_service, monkeypatch):
    """A fresh, empty bucket on the session's S3 server, reached through the counting proxy,
    with the standard AWS_* variables set (clients find the endpoint and credentials the way
    they find a user's)."""
    from tests.helpers.s3server import S3Bucket, s3_environment

    server, proxy, admin = s3_service
    server.reset()
    for name, value in s3_environment(proxy.endpoint).items():
        monkeypatch.setenv(name, value)
    return S3Bucket(server, proxy, fs=admin)


@pytest.fixture
def guarded_server():
    """A server of its own that enforces IAM: a 'reader' user may list and get, not put; a
    'nobody' user may do nothing; keys[user] = (key id, secret)."""
    import boto3
    from tests.helpers.s3server import MotoServer, S3Bucket, admin_filesystem

    with MotoServer() as server:
        iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        keys = {}
        for user, actions in (("reader", ["s3:GetObject", "s3:ListBucket"]), ("admin", ["s3:*", "iam:*"]),
                              ("nobody", [])):
            iam.create_user(UserName=user)
            if actions:
                iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=(
                    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": '
                    f'{list(actions)!r}, "Resource": "*"}}]}}'.replace("'", '"')))
            made = iam.create_access_key(UserName=user)["AccessKey"]
            keys[user] = (made["AccessKeyId"], made["SecretAccessKey"])
        admin = admin_filesystem(server, *keys["admin"])
        bucket = S3Bucket(server, fs=admin)
        bucket.put("s/zarr.json", b"{}")
        server.require_auth(True)
        yield server, bucket, keys
        server.require_auth(False)


@pytest.fixture(autouse=True)
def _no_leftover_default_client():
    """No distributed.Client left by an earlier test as the default one: the tools take the
    default client first, so a leftover one would decide where a later test's work runs (every
    test's own clients are context managers, closed by then)."""
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            client = distributed.default_client()
        except ValueError:
            client = None
        if client is not None:
            client.close()
    yield
