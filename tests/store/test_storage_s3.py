"""Location on S3 (moto's server on 127.0.0.1): the requests each operation makes, server-side
copies, untouched objects left untouched, and the faults users meet, said without credentials."""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
import zarr
from tests.helpers.s3server import (
    ACCESS_KEY,
    SECRET_KEY,
    CountingProxy,
    MotoServer,
    S3Bucket,
    admin_filesystem,
    free_port,
)

from numcodecs_ext.cli.options import add_storage_options
from numcodecs_ext.store.errors import ToolError, UsageError
from numcodecs_ext.store.staging import LocationStore, StagedStore
from numcodecs_ext.store.storage import (
    AccessDenied,
    Location,
    ObjectNotFound,
    StorageError,
    StoreNotFound,
    Unreachable,
    parse_storage_options,
    redact,
)


def _during(bucket: S3Bucket, fn) -> list:
    mark = len(bucket.requests())
    fn()
    return bucket.proxy.since(mark)


# -- requests ------------------------------------------------------------------------------------


def test_endpoint_from_the_standard_variable(s3):
    """AWS_ENDPOINT_URL alone (botocore reads it for s3fs) sends the requests to our server."""
    assert "AWS_ENDPOINT_URL" in os.environ and not Location.parse(s3.url()).storage_options
    Location.parse(s3.url("x")).write("k", b"1")
    assert [r.kind for r in s3.requests()] == ["PUT"]
    assert s3.get("x/k") == b"1"


def test_one_request_per_write_and_read(s3):
    loc = Location.parse(s3.url("store"))
    assert [(r.kind, r.key) for r in _during(s3, lambda: loc.write("a/zarr.json", b"{}"))] == [
        ("PUT", "store/a/zarr.json")]
    assert [(r.kind, r.key) for r in _during(s3, lambda: loc.read("a/zarr.json"))] == [
        ("GET", "store/a/zarr.json")]


def test_walk_lists_pages_not_objects(s3):
    """1,001 objects are listed in 2 LIST pages (1,000 keys each), sizes included: no HEAD."""
    s3.put_many({f"w/c/{i}": b"x" * (i % 7) for i in range(1001)})
    loc = Location.parse(s3.url("w"))
    listing = []
    requests = _during(s3, lambda: listing.append(loc.walk()))
    assert len(listing[0].files) == 1001 and listing[0].files["c/13"] == 13 % 7
    assert {r.kind for r in requests} == {"LIST"} and len(requests) == 2


def test_copies_are_server_side(s3):
    """copy_to and copy_many within a bucket are CopyObject requests: the body never comes to
    this process (no GET)."""
    for i in range(5):
        s3.put(f"src/c/{i}", bytes([i]) * 1000)
    src, dst = Location.parse(s3.url("src")), Location.parse(s3.url("dst"))
    assert src.server_side(dst)
    one = _during(s3, lambda: src.copy_to("c/0", dst, "c/0"))
    assert [r.kind for r in one if r.kind in ("COPY", "GET", "PUT")] == ["COPY"]
    many = _during(s3, lambda: src.copy_many([f"c/{i}" for i in range(1, 5)], dst))
    kinds = [r.kind for r in many]
    assert kinds.count("COPY") == 4 and "GET" not in kinds and "PUT" not in kinds
    assert all(s3.get(f"dst/c/{i}") == bytes([i]) * 1000 for i in range(5))


def test_untouched_objects_keep_their_etags(s3):
    """Objects a run does not write keep their ETag and LastModified: writes, copies and
    removals touch exactly the keys they name."""
    for i in range(20):
        s3.put(f"s/c/{i}", os.urandom(64))
    before = s3.etags("s")
    loc = Location.parse(s3.url("s"))
    loc.write("zarr.json", b"{}")
    loc.write("c/3", b"new")
    loc.copy_to("c/4", loc, "copy/4")
    loc.copy_many(["c/5", "c/6"], loc, ["copy/5", "copy/6"])
    loc.remove("c/7")
    after = s3.etags("s")
    changed = {k for k in before if after.get(k) != before[k]}
    assert changed == {"s/c/3", "s/c/7"}
    assert set(after) - set(before) == {"s/zarr.json", "s/copy/4", "s/copy/5", "s/copy/6"}


def test_requests_of_a_subprocess_are_counted(s3):
    """A CLI run in a subprocess reaches the server through the proxy (AWS_ENDPOINT_URL in its
    environment), so its requests are counted too."""
    code = ("from numcodecs_ext.store.storage import Location; "
            f"loc = Location.parse('{s3.url('cli')}'); loc.write('a', b'1'); loc.read('a'); loc.walk()")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=120)
    assert s3.counts() == {"PUT": 1, "GET": 1, "LIST": 1}


def test_overlaps_on_s3(s3):
    a = Location.parse(s3.url("data/a.zarr"))
    assert a.overlaps(Location.parse(s3.url("data"))) and Location.parse(s3.url("data/a.zarr/x")).overlaps(a)
    assert not a.overlaps(Location.parse(s3.url("data/a.zarr2")))
    assert not a.overlaps(Location.parse(s3.url("data/b.zarr")))
    assert not a.overlaps(Location.parse(f"s3://other-{s3.name}/data/a.zarr"))
    elsewhere = Location.parse(s3.url("data/a.zarr"),
                               storage_options={"client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}})
    assert not a.overlaps(elsewhere), "another endpoint is another store"
    assert not a.overlaps(Location.parse(f"memory://{s3.name}/data/a.zarr"))
    import obstore.store as obstore
    ours = Location.parse(zarr.storage.ObjectStore(obstore.S3Store(s3.name, prefix="data",
                                                                   client_options={"allow_http": True})))
    assert ours.child("a.zarr").overlaps(a) and not ours.child("b.zarr").overlaps(a)


def test_object_store_copies_server_side(s3):
    import obstore.store as obstore
    s3.put("o/c/0", b"abc")
    loc = Location.parse(zarr.storage.ObjectStore(obstore.S3Store(s3.name, prefix="o",
                                                                  client_options={"allow_http": True})))
    kinds = [r.kind for r in _during(s3, lambda: loc.copy_to("c/0", loc, "d/0"))]
    assert "COPY" in kinds and "GET" not in kinds
    assert s3.get("o/d/0") == b"abc"


# -- faults --------------------------------------------------------------------------------------


def test_missing_bucket(s3):
    loc = Location.parse(f"s3://no-such-{s3.name}/store.zarr")
    for action in (lambda: loc.read("zarr.json"), lambda: loc.walk(), lambda: loc.write("zarr.json", b"{}")):
        with pytest.raises(StoreNotFound) as e:
            action()
        assert isinstance(e.value, UsageError) and isinstance(e.value, FileNotFoundError)
        assert str(e.value).startswith(f"s3://no-such-{s3.name}/store.zarr")
        assert f"the bucket 'no-such-{s3.name}' does not exist" in str(e.value)
    assert not loc.exists()


def test_object_vanishes_between_listing_and_reading(s3):
    for i in range(3):
        s3.put(f"v/c/{i}", b"1")
    loc = Location.parse(s3.url("v"))
    listed = loc.walk().files
    s3.delete("v/c/1")
    with pytest.raises(ObjectNotFound, match=rf"^s3://{s3.name}/v/c/1: no such object \(read\)$"):
        loc.read("c/1")
    got = loc.read_many(list(listed))
    assert got["c/0"] == b"1" and isinstance(got["c/1"], ObjectNotFound)
    with pytest.raises(ObjectNotFound, match="c/1"):
        loc.copy_many(list(listed), Location.parse(s3.url("w")))


def test_zarr_write_when_the_server_dies_mid_run(s3):
    """The server stops answering after a few chunk writes: zarr's write through the staged
    store ends with the tools' error naming the store (after the client's bounded retries),
    and nothing that claims to be an array is left."""
    loc = Location.parse(s3.url("dying.zarr"), storage_options={
        "config_kwargs": {"retries": {"max_attempts": 2}, "connect_timeout": 5, "read_timeout": 5}})
    staged = StagedStore(loc)
    z = zarr.create_array(staged, shape=(40,), chunks=(2,), dtype="i4", fill_value=0)
    s3.proxy.cut_after(5)
    try:
        with pytest.raises(ToolError) as e:
            z[:] = np.arange(40, dtype="i4")
    finally:
        s3.proxy.cut_after(None)
    assert isinstance(e.value, (Unreachable, StorageError))
    assert f"s3://{s3.name}/dying.zarr" in str(e.value)
    keys = s3.keys("dying.zarr")
    assert keys and not any(k.endswith("zarr.json") for k in keys)


@pytest.fixture
def lonely_server():
    """A server of one test's own, to stop."""
    with MotoServer() as server:
        fs = admin_filesystem(server)
        yield server, S3Bucket(server, fs=fs), fs


def test_server_stopped(lonely_server, monkeypatch):
    """A server that is gone (connection refused): the client's bounded retries, then an
    Unreachable naming the location; the calling thread is not left waiting for ever."""
    server, bucket, _ = lonely_server
    options = {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": {"endpoint_url": server.endpoint}}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    loc = Location.parse(bucket.url("s"), storage_options=options)
    loc.write("a", b"1")
    server.stop()
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            loc.read("a")
        except BaseException as e:  # noqa: BLE001 - the outcome is examined below
            outcome.append(e)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive(), "a read from a stopped server must end"
    assert len(outcome) == 1 and isinstance(outcome[0], Unreachable), outcome
    message = str(outcome[0])
    assert message.startswith(f"s3://{bucket.name}/s/a: the storage service cannot be reached")
    assert SECRET_KEY not in message and ACCESS_KEY not in message


def test_access_denied(guarded_server, monkeypatch, caplog):
    server, bucket, keys = guarded_server
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.DEBUG)
    key, secret = keys["reader"]
    reader = Location.parse(bucket.url("s"), storage_options={
        "key": key, "secret": secret, "client_kwargs": {"endpoint_url": server.endpoint}})
    assert reader.read("zarr.json") == b"{}" and list(reader.walk().files) == ["zarr.json"]
    messages = []
    with pytest.raises(AccessDenied) as e:
        reader.write("zarr.json", b"[]")
    messages.append(str(e.value))
    assert isinstance(e.value, PermissionError) and isinstance(e.value, UsageError)
    assert str(e.value).startswith(f"s3://{bucket.name}/s/zarr.json: access denied (write")
    assert "--storage-options" in str(e.value)
    with pytest.raises(AccessDenied) as e:  # the staged store too (zarr's own writes)
        zarr.create_array(StagedStore(reader), shape=(2,), chunks=(1,), dtype="i1", fill_value=0)[:] = 1
    messages.append(str(e.value))
    for wrong in ({"key": "AKIANOSUCHKEY000", "secret": secret}, {"key": key, "secret": "wrong" + secret}):
        nobody = Location.parse(bucket.url("s"), storage_options={
            **wrong, "client_kwargs": {"endpoint_url": server.endpoint}})
        with pytest.raises(AccessDenied) as e:
            nobody.read("zarr.json")
        messages.append(str(e.value))
        messages.append(repr(nobody) + str(nobody) + repr(StagedStore(nobody))
                        + repr(pickle.loads(pickle.dumps(nobody))))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for text in messages:
        assert secret not in text and key not in text and "AKIANOSUCHKEY000" not in text, text
    assert secret not in logged  # botocore's own debug log shows key ids, never a secret


# -- credentials ---------------------------------------------------------------------------------


def test_credentials_never_shown(s3, monkeypatch, caplog, tmp_path):
    """Keys in storage_options and user:password in URLs appear in no display, repr, str,
    message or log record, whatever fails."""
    caplog.set_level(logging.DEBUG)
    secret, key = "S3cr3t/Never+Shown", "AKIAKEYNEVERSHOWN"
    options = {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": s3.endpoint}}
    texts: list[str] = []
    loc = Location.parse(s3.url("c"), storage_options=options)
    texts += [loc.display, repr(loc), str(loc), repr(loc.child("x")), repr(LocationStore(loc)),
              str(StagedStore(loc)), repr(pickle.loads(pickle.dumps(StagedStore(loc))))]
    gone = Location.parse(f"s3://no-{s3.name}/c", storage_options=options)
    dead = Location.parse(s3.url("c"), storage_options={
        **options, "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{free_port()}"},
        "config_kwargs": {"retries": {"max_attempts": 1}}})
    sneaky = {**options, "client_kwargs": {"endpoint_url": f"http://{key}:{secret}@127.0.0.1:{free_port()}"}}
    web = Location.parse(f"https://user:{secret}@127.0.0.1:{free_port()}/x.zarr")
    for failing in (lambda: gone.read("zarr.json"), lambda: gone.write("a", b"1"), lambda: dead.read("a"),
                    lambda: web.read("zarr.json"), lambda: Location.parse(f"s3://{key}:{secret}@{s3.name}/x"),
                    lambda: parse_storage_options('{"secret": "SECRET",}'.replace("SECRET", secret)),
                    lambda: Location.parse(s3.url("c"), storage_options=sneaky)):
        with pytest.raises((ToolError, UsageError)) as e:
            failing()
        texts.append(str(e.value))
    texts += [web.display, repr(web)]
    assert web.display == "https://127.0.0.1:" + web.display.split(":")[2]
    for text in texts + [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]:
        assert secret not in text and f"user:{secret}" not in text, text
        assert key not in text, text
    # at debug level too, no secret (botocore's own debug log shows the access key id, an
    # identifier, in the signed request's headers: that is botocore's, at the user's request)
    assert not [r.getMessage() for r in caplog.records if secret in r.getMessage()]


def test_redact():
    assert redact("https://u:p@h/x?X-Amz-Credential=AK/1&X-Amz-Signature=abc&part=2") == (
        "https://h/x?X-Amz-Credential=***&X-Amz-Signature=***&part=2")
    assert redact("abfs://c/x?sv=2020&sig=abc%2F") == "abfs://c/x?sv=2020&sig=***"
    assert redact("token is tok-123456 here", {"client_kwargs": {"session_token": "tok-123456"}}) == (
        "token is *** here")


# -- --storage-options ---------------------------------------------------------------------------


def test_parse_storage_options():
    assert parse_storage_options(None) == {} and parse_storage_options("  ") == {}
    assert parse_storage_options('{"anon": true, "client_kwargs": {"region_name": "eu-west-1"}}') == {
        "anon": True, "client_kwargs": {"region_name": "eu-west-1"}}
    for bad, why in (('{"anon": 1}', '"anon" must be true or false, not a number'), ("[1, 2]", "not a JSON array"),
                     ("{'anon': true}", "not valid JSON"), ('"s"', "not a string"), ("null", "not null"),
                     ("3", "not a number"), ('{"account_key": 5}', '"account_key" must be a string or null')):
        with pytest.raises(UsageError, match=why):
            parse_storage_options(bad)
    parser = argparse.ArgumentParser()
    add_storage_options(parser)
    args = parser.parse_args(["--storage-options", '{"anon": true}'])
    assert parse_storage_options(args.storage_options) == {"anon": True}


def test_anonymous_access(s3):
    """anon (a public bucket) sends unsigned requests: a public object is read, a private one
    is refused as access denied."""
    s3.fs.pipe_file(s3.path("pub/a"), b"1", ACL="public-read")
    s3.put("pub/private", b"2")
    loc = Location.parse(s3.url("pub"), storage_options=parse_storage_options('{"anon": true}'))
    assert loc.read("a") == b"1"
    with pytest.raises(AccessDenied, match="pub/private: access denied"):
        loc.read("private")


def test_options_rejected_by_the_filesystem(s3):
    with pytest.raises(UsageError, match="storage options not accepted"):
        Location.parse(s3.url("x"), storage_options={"no_such_option": 1}).walk()


def test_counting_proxy_alone(s3_service):
    """The proxy forwards to the server and counts, on its own too."""
    server, _, fs = s3_service
    proxy = CountingProxy(server.endpoint).start()
    try:
        bucket = S3Bucket(server, proxy, fs=fs)
        options = {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": {"endpoint_url": proxy.endpoint}}
        Location.parse(bucket.url("p"), storage_options=options).write("k", b"1")
        assert proxy.counts() == {"PUT": 1} and bucket.get("p/k") == b"1"
    finally:
        proxy.stop()


def test_zarr_reads_a_chunk_in_one_request(s3):
    """Through the location's zarr store, reading an array is one GET per chunk (and per
    metadata document): no HEAD before each read."""
    loc = Location.parse(s3.url("r.zarr"))
    staged = StagedStore(loc)
    zarr.create_array(staged, shape=(8,), chunks=(2,), dtype="i2", fill_value=0)[:] = np.arange(8)
    staged.commit()
    mark = len(s3.requests())
    assert zarr.open_array(LocationStore(loc), mode="r")[:].tolist() == list(range(8))
    requests = s3.proxy.since(mark)
    assert "HEAD" not in [r.kind for r in requests]
    chunks = sorted(r.key for r in requests if r.kind == "GET" and "/c/" in r.key)
    assert chunks == [f"r.zarr/c/{i}" for i in range(4)], requests


def test_http_basic_auth_from_the_url(caplog):
    """http(s)://user:password@host/... reads with basic auth, and the password reaches no URL
    the libraries see (nor their debug logs)."""
    import base64
    import http.server

    password = "pa55/w0rd-never-logged"
    expected = "Basic " + base64.b64encode(f"reader:{password}".encode()).decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            ok = self.headers.get("Authorization") == expected
            body = b'{"zarr_format": 3}' if ok else b"no"
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    caplog.set_level(logging.DEBUG)
    try:
        loc = Location.parse(f"http://reader:{password}@127.0.0.1:{server.server_address[1]}/x.zarr")
        assert loc.read("zarr.json") == b'{"zarr_format": 3}'
        assert password not in loc.display and password not in loc.url
        stranger = Location.parse(f"http://127.0.0.1:{server.server_address[1]}/x.zarr")
        with pytest.raises(AccessDenied, match="x.zarr/zarr.json: access denied"):
            stranger.read("zarr.json")
    finally:
        server.shutdown()
        server.server_close()
    assert not [r for r in caplog.records if password in r.getMessage()]


# -- obstore's S3Store: its place, whatever obstore can say of it (review3) ------------------------


def _s3store(s3, prefix: str, **kwargs):
    import obstore.store as obstore

    return zarr.storage.ObjectStore(obstore.S3Store(
        s3.name, prefix=prefix, endpoint=s3.endpoint, region="us-east-1", access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY, **kwargs))


@pytest.mark.parametrize("how", ["keyword", "client_options"])
def test_migrate_refuses_an_s3store_inside_the_source(s3, tmp_path, capfd, how):
    """obstore 0.12 panics when the config of an S3Store given allow_http=True as a keyword is
    read: its place is then known from its prefix and bucket, and where its endpoint cannot be
    read, a path that may overlap is refused (never assumed elsewhere). No Rust panic output."""
    import numcodecs

    from numcodecs_ext.migrate import migrate

    a = zarr.create_array(str(tmp_path / "s.zarr"), name="t", shape=(20,), chunks=(10,), dtype="f8",
                          fill_value=0.0, zarr_format=2,
                          filters=[numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="f8", astype="i2")])
    a[:] = 10 + np.arange(20) / 7
    s3.upload(tmp_path / "s.zarr", "a")
    kwargs = {"allow_http": True} if how == "keyword" else {"client_options": {"allow_http": True}}
    for prefix in ("a/sub", "a", ""):
        with pytest.raises(UsageError, match="overlap"):
            migrate(s3.url("a"), _s3store(s3, prefix, **kwargs))
    assert s3.keys("a/sub") == [] and not [k for k in s3.keys("a") if k.endswith("zarr.json")]
    # elsewhere in the bucket: no overlap, whatever obstore can say
    assert not Location.parse(_s3store(s3, "ab", **kwargs)).overlaps(Location.parse(s3.url("a")))
    err = capfd.readouterr().err
    assert "panicked" not in err and "RUST_BACKTRACE" not in err, err


def test_redact_every_secret_name_and_short_secrets():
    """Azure's and GCS's secret options are secrets too, and a short secret is taken out where
    it stands alone (not out of every word that holds its letters)."""
    options = {"connection_string": "DefaultEndpointsProtocol=https;AccountKey=QUVJT1U=", "account_key": "Zm9vYmFy",
               "sas_token": "sv=2022&sig=c2ln", "token": {"private_key": "-----PRIVATE-----"}, "secret": "x9",
               "password": "pw"}
    text = (f"failed with {options['connection_string']} {options['account_key']} {options['sas_token']} "
            "-----PRIVATE----- x9 pw (a pwd in x9y is no secret)")
    said = redact(text, options)
    for value in ("QUVJT1U=", "Zm9vYmFy", "c2ln", "PRIVATE", " x9 ", " pw "):
        assert value not in said, said
    assert "a pwd in x9y is no secret" in said
    assert redact("s3://a:b@bucket/x") == "s3://bucket/x"
