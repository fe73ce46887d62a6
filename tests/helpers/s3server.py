"""A real S3 API on 127.0.0.1 for the tests: moto's server in a subprocess, and a counting
reverse proxy in front of it.

* :class:`MotoServer` starts ``python -m moto.server`` on a free port of 127.0.0.1 and stops it
  (``stop`` kills it: what a client sees then is a refused connection).
* :class:`CountingProxy` forwards every request to the server unchanged and records its kind
  (GET, PUT, HEAD, LIST, COPY, DELETE, BUCKET, POST), so that a test counts the requests of a
  run, in this process or in a CLI subprocess whose ``AWS_ENDPOINT_URL`` points at the proxy.
* :func:`s3_environment` is what a client needs: the standard ``AWS_*`` variables, nothing else.

Nothing here imports moto into the test process: the server is a separate program, as a user's
S3 is.
"""

from __future__ import annotations

import collections
import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["CountingProxy", "MotoServer", "Request", "S3Bucket", "free_port", "s3_environment"]

ACCESS_KEY = "AKIATESTKEY0NUMCODECS"
SECRET_KEY = "tEsTsEcReT/numcodecs-ext/never-shown"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def s3_environment(endpoint: str, *, key: str = ACCESS_KEY, secret: str = SECRET_KEY) -> dict[str, str]:
    """The standard variables every AWS client (botocore, hence s3fs) reads."""
    return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": endpoint,
            "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
            # no ~/.aws files of whoever runs the tests
            "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


def _post(url: str, data: bytes = b"") -> bytes:
    # not form-encoded: moto reads the raw body
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read()


_SERVE = """
import os, sys, threading
def watch():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
from moto.server import main
main(["-H", sys.argv[1], "-p", sys.argv[2]])
"""


class MotoServer:
    """moto's S3 (and IAM) server in a subprocess on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> MotoServer:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        # the server ends when its standard input closes: when the test process ends, however
        # it ends (even killed), no server is left behind
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, "127.0.0.1", str(self.port)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto server exited at start (status {self._process.returncode}); "
                                   "is moto[server] installed?")
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/data.json", timeout=2).read()
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto server did not answer within {timeout} s") from None
                time.sleep(0.05)

    def reset(self) -> None:
        """Forget every bucket, object, user and policy."""
        _post(f"{self.endpoint}/moto-api/reset")

    def require_auth(self, on: bool = True) -> None:
        """From now on every request must be signed by an IAM user's key and allowed by its
        policies (moto's IAM enforcement); ``on=False`` goes back to accepting anything."""
        _post(f"{self.endpoint}/moto-api/reset-auth", b"0" if on else b"inf")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
        self._process = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class Request:
    """One request that went through the proxy."""

    kind: str
    method: str
    bucket: str
    key: str
    query: str
    status: int
    range: str = ""  # the Range header of a ranged GET


def _kind(method: str, bucket: str, key: str, query: dict[str, list[str]], headers: Any) -> str:
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if not key and bucket and ({"list-type", "prefix", "delimiter", "marker"} & set(query) or not query):
            return "LIST"
        return "GET" if key else "BUCKET"
    if method == "PUT":
        if headers.get("x-amz-copy-source"):
            return "COPY"
        return "PUT" if key else "BUCKET"
    if method == "DELETE":
        return "DELETE" if key else "BUCKET"
    if method == "POST":
        return "DELETE" if "delete" in query else "POST"
    return method


class CountingProxy:
    """A threaded HTTP reverse proxy in front of ``upstream`` that records every request."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._cut_at: int | None = None
        self._forwarded = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self) -> None:
                if not proxy._admit():
                    # the server is "gone": the connection drops with no answer, as when the
                    # server process dies under a client
                    self.close_connection = True
                    return
                length = self.headers.get("Content-Length")
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = self._read_chunked()
                else:
                    body = self.rfile.read(int(length)) if length else b""
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("transfer-encoding", "connection", "content-length")}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=120)
                recorded = False
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                    # recorded before the client has its answer: a test that looks right after
                    # a call returns sees every request of it
                    proxy._record(self.command, self.path, self.headers, response.status)
                    recorded = True
                    self.send_response(response.status, response.reason)
                    for k, v in response.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                            self.send_header(k, v)
                    if self.command == "HEAD":
                        self.send_header("Content-Length", response.getheader("Content-Length", "0"))
                    else:
                        self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except OSError:  # upstream gone: the client sees a dropped connection too
                    self.close_connection = True
                    if not recorded:
                        proxy._record(self.command, self.path, self.headers, 0)
                finally:
                    conn.close()

            def _read_chunked(self) -> bytes:
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline().strip():  # trailers
                            pass
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-proxy", daemon=True)

    def start(self) -> CountingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def cut_after(self, n: int | None) -> None:
        """Forward ``n`` more requests, then drop every connection unanswered (the server
        seems to die mid-run, while it keeps its state for the test to inspect); None ends it."""
        with self._lock:
            self._cut_at = None if n is None else self._forwarded + n

    def _admit(self) -> bool:
        with self._lock:
            if self._cut_at is not None and self._forwarded >= self._cut_at:
                return False
            self._forwarded += 1
            return True

    def _record(self, method: str, raw: str, headers: Any, status: int) -> None:
        parts = urlsplit(raw)
        if parts.path.startswith("/moto-api"):
            return
        path = parts.path.lstrip("/")
        bucket, _, key = path.partition("/")
        query = parse_qs(parts.query, keep_blank_values=True)
        request = Request(_kind(method, bucket, key, query, headers), method, bucket,
                          unquote(key), parts.query, status, headers.get("Range", "") or "")
        with self._lock:
            self.requests.append(request)

    # -- what tests ask -------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def snapshot(self) -> list[Request]:
        with self._lock:
            return list(self.requests)

    def counts(self, requests: list[Request] | None = None) -> collections.Counter[str]:
        """Requests by kind (of ``requests``, or of everything recorded since the reset)."""
        return collections.Counter(r.kind for r in (self.snapshot() if requests is None else requests))

    def since(self, mark: int) -> list[Request]:
        """The requests recorded after ``mark`` (a ``len(proxy.snapshot())`` taken earlier)."""
        return self.snapshot()[mark:]


def describe(counts: collections.Counter[str]) -> str:
    return json.dumps(dict(sorted(counts.items())))




def admin_filesystem(server: MotoServer, key: str = ACCESS_KEY, secret: str = SECRET_KEY) -> Any:
    """An s3fs client of the tests' own, straight to the server (not through the proxy), with
    no listing cache to go stale. Keep it for as long as the server runs: a filesystem that is
    garbage collected leaves aiohttp's session unclosed (a ResourceWarning)."""
    import s3fs

    return s3fs.S3FileSystem(key=key, secret=secret, skip_instance_cache=True, use_listings_cache=False,
                             client_kwargs={"endpoint_url": server.endpoint})


class S3Bucket:
    """One empty bucket (a fresh name) on a server, and what tests ask of it, answered by a
    client of their own (a separate s3fs instance that talks to the server directly, so that
    the proxy counts only the code under test)."""

    def __init__(self, server: MotoServer, proxy: CountingProxy | None = None, name: str | None = None,
                 fs: Any = None) -> None:
        import uuid

        self.server = server
        self.proxy = proxy
        self.name = name or f"bkt-{uuid.uuid4().hex[:12]}"
        self.endpoint = proxy.endpoint if proxy is not None else server.endpoint
        self.fs = fs if fs is not None else admin_filesystem(server)
        self.fs.mkdir(self.name)
        if proxy is not None:
            proxy.reset()

    def url(self, key: str = "") -> str:
        return f"s3://{self.name}/{key}".rstrip("/") if key else f"s3://{self.name}"

    def path(self, key: str = "") -> str:
        return f"{self.name}/{key}".rstrip("/")

    def put(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(self.path(key), data)

    def put_many(self, objects: dict[str, bytes]) -> None:
        """Many objects at once (concurrent requests)."""
        self.fs.pipe({self.path(k): v for k, v in objects.items()})

    def get(self, key: str) -> bytes:
        return self.fs.cat_file(self.path(key))

    def upload(self, local: Any, prefix: str) -> list[str]:
        """Every file below the local directory ``local``, as objects below ``prefix``; their keys."""
        import pathlib

        root = pathlib.Path(local)
        objects = {f"{prefix}/{p.relative_to(root).as_posix()}": p.read_bytes()
                   for p in sorted(root.rglob("*")) if p.is_file()}
        self.put_many(objects)
        return sorted(objects)

    def keys(self, prefix: str = "") -> list[str]:
        self.fs.invalidate_cache()
        found = self.fs.find(self.path(prefix)) if prefix else self.fs.find(self.name)
        return sorted(p[len(self.name) + 1:] for p in found)

    def etags(self, prefix: str = "") -> dict[str, tuple[str, Any]]:
        """``{key: (ETag, LastModified)}`` of every object below ``prefix``."""
        self.fs.invalidate_cache()
        found = self.fs.find(self.path(prefix) if prefix else self.name, detail=True)
        return {p[len(self.name) + 1:]: (i["ETag"], i["LastModified"]) for p, i in found.items()}

    def delete(self, key: str) -> None:
        self.fs.rm_file(self.path(key))

    def requests(self) -> list[Request]:
        assert self.proxy is not None
        return self.proxy.snapshot()

    def counts(self) -> collections.Counter[str]:
        assert self.proxy is not None
        return self.proxy.counts()

