"""The tools' storage errors, and credentials kept out of every text.

:func:`fault` turns whatever a storage library raised (s3fs, botocore, aiohttp, obstore, a zarr
store, the local disk) into one of the errors below, naming the object by its display form;
:func:`redact` takes credentials out of any text: a URL's ``user:password@``, secret query
parameters, and the secret values of storage options and of the standard variables.

Examples
--------
>>> e = fault(PermissionError(13, "Access Denied"), "s3://bucket/a.zarr/zarr.json", "write")
>>> type(e).__name__, isinstance(e, ValueError)
('AccessDenied', True)
>>> str(fault(FileNotFoundError(2, "No such key"), "s3://bucket/a.zarr/c/0", "read"))
's3://bucket/a.zarr/c/0: no such object (read)'
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ToolError, UsageError

__all__ = ["AccessDenied", "ObjectNotFound", "StorageError", "StoreNotFound", "Unreachable",
           "argument_secrets", "fault", "option_secrets", "redact", "url_secrets", "url_userinfo"]


class StorageError(ToolError, OSError):
    """A read, write or listing failed (exit status 1). Also an OSError, so that code catching
    the filesystem's own errors keeps working."""


class ObjectNotFound(StorageError, FileNotFoundError):
    """An object that is not there (or vanished between a listing and a read)."""


class Unreachable(StorageError, ConnectionError):
    """The storage service did not answer (refused, reset or timed out, after the client's
    retries)."""


class StoreNotFound(UsageError, FileNotFoundError):
    """The bucket (container) does not exist: the command cannot run as given (exit status 2)."""


class AccessDenied(UsageError, PermissionError):
    """The credentials do not allow the request: the command cannot run as given (exit 2)."""


_CONNECTION = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
               "ClientConnectorError", "ClientConnectionError", "ServerDisconnectedError", "ClientOSError",
               "ServerTimeoutError", "FSTimeoutError", "ConnectionError", "TimeoutError",
               "ConnectionRefusedError", "ConnectionResetError", "ProxyConnectionError"}
_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
           "InvalidToken", "AuthorizationHeaderMalformed", "AllAccessDisabled", "Forbidden"}
#: names whose values are secret: AWS (key, secret, token), Azure (account_key, sas_token,
#: connection_string, client_secret), GCS (token, a path or the service account's JSON),
#: passwords, signed URLs' query parameters (X-Amz-Signature, sig, se ...)
_SECRET_NAME = re.compile(r"key|secret|token|passw|credential|signature|sas|auth|session|conn(ection)?_?str"
                          r"|^sig$", re.IGNORECASE)


def option_secrets(options: Mapping[str, Any] | None) -> list[str]:
    """The secret strings among ``options`` (by name, nested dicts too) and the standard
    variables."""
    found: list[str] = []

    def visit(value: Any, secret: bool) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                visit(v, secret or bool(_SECRET_NAME.search(str(k))))
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v, secret)
        elif secret and isinstance(value, str) and value:
            found.append(value)

    visit(dict(options or {}), False)
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
                 "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING"):
        if os.environ.get(name):
            found.append(os.environ[name])
    return sorted(set(found), key=len, reverse=True)


def redact(text: str, options: Mapping[str, Any] | None = None, secrets: Sequence[str] = ()) -> str:
    """``text`` without credentials: a URL's ``user:password@``, the values of secret query
    parameters (``sig``, ``X-Amz-Signature``, ``token`` ...), and any secret value of
    ``options`` or of the standard credential variables.

    >>> redact("s3://me:pw@bucket/x?X-Amz-Signature=f00&versionId=3")
    's3://bucket/x?X-Amz-Signature=***&versionId=3'
    >>> redact("denied for AKIAXYZ", {"key": "AKIAXYZ"})
    'denied for ***'
    """
    for userinfo in url_userinfo(str(text)):
        text = str(text).replace(f"://{userinfo}@", "://")
    text = re.sub(r"(?<=[?&])([^=&\s\"']+)=([^&\s\"']*)",
                  lambda m: f"{m[1]}=***" if _SECRET_NAME.search(m[1]) else m[0], text)
    for secret in sorted({*option_secrets(options), *secrets} - {""}, key=len, reverse=True):
        if len(secret) >= 8:
            text = text.replace(secret, "***")
        else:  # a short secret is taken out where it stands alone, not out of every word holding it
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    return text


_JSON_PAIR = re.compile(r'"([^"\\]*)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def argument_secrets(argv: Sequence[str]) -> list[str]:
    """The secrets among command-line arguments, to take out of a message that repeats them
    (argparse's "unrecognized arguments: ..."): the secret values of any JSON object (a
    mistyped ``--storage_options``, even when it is not valid JSON) and the passwords of URLs.

    >>> argument_secrets(["--storage_options", '{"key": "AKIAX", "secret": "TOP"}', "s3://u:pw@b/x"])
    ['AKIAX', 'u:pw', 'TOP', 'pw']
    """
    found: list[str] = []
    for arg in map(str, argv):
        start = arg.find("{")
        if start >= 0:
            with contextlib.suppress(ValueError, TypeError):
                found.extend(option_secrets(json.loads(arg[start:])) if arg.rstrip().endswith("}") else [])
        found.extend(v for k, v in _JSON_PAIR.findall(arg) if _SECRET_NAME.search(k) and v)
        found.extend(url_secrets(arg))
    env = set(option_secrets(None))  # the standard variables: taken out by redact anyway
    return sorted(set(found) - env, key=len, reverse=True)


_USERINFO = re.compile(r"://([^/@\s:\"']*(?::[^@\s\"']*)?)@")


def url_userinfo(text: str) -> list[str]:
    """The ``user[:password]`` parts of the URLs in ``text``. A password may hold an unescaped
    "/" (AWS secrets do); ``host:port/path@x`` is a port and a path, not a password."""
    found = []
    for m in _USERINFO.finditer(text):
        userinfo = m[1]
        _, colon, password = userinfo.partition(":")
        if colon and "/" in password and password.split("/", 1)[0].isdigit():
            continue
        found.append(userinfo)
    return found


def url_secrets(url: str | None) -> list[str]:
    """The ``user:password`` parts of a URL (chained URLs too)."""
    found = []
    for userinfo in url_userinfo(url or ""):
        password = userinfo.partition(":")[2]
        if password:
            found.append(userinfo)
            found.append(password)
    return found


def _error_code(e: BaseException) -> str:
    response = getattr(e, "response", None)
    if isinstance(response, Mapping):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _reason(e: BaseException, options: Mapping[str, Any] | None, secrets: Sequence[str]) -> str:
    text = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    text = text.strip().splitlines()[0] if text and text.strip() else type(e).__name__
    return redact(text, options, secrets)


def fault(e: BaseException, where: str, action: str, *, options: Mapping[str, Any] | None = None,
          secrets: Sequence[str] = (), bucket: str | None = None) -> BaseException:
    """The tools' error for what a storage library raised while ``action`` at ``where`` (a
    display form): StoreNotFound, AccessDenied, ObjectNotFound, Unreachable or StorageError,
    with no credential in the message. Errors that are already the tools' own pass through."""
    if isinstance(e, (ToolError, UsageError)):
        return e
    names = {cls.__name__ for cls in type(e).__mro__}
    code = _error_code(e)
    reason = _reason(e, options, secrets)
    if "NoCredentialsError" in names or "no credentials" in reason.lower():
        return AccessDenied(f"{where}: no credentials were found ({action}); set the AWS_* variables "
                            """(or fsspec's configuration), or give --storage-options '{"anon": true}' """
                            "for a public bucket")
    if "PartialCredentialsError" in names:
        return AccessDenied(f"{where}: only part of the credentials was given ({reason}); give both key "
                            "and secret (--storage-options or the AWS_* variables)")
    if isinstance(e, TypeError) and "keyword argument" in reason:
        return UsageError(f"{where}: storage options not accepted by the filesystem ({reason})")
    if (isinstance(e, PermissionError) or code in _DENIED or names & _DENIED
            or getattr(e, "status", None) in (401, 403)):
        return AccessDenied(f"{where}: access denied ({action}: {reason}); check the credentials: the "
                            "AWS_* variables, fsspec's configuration or --storage-options")
    if isinstance(e, FileNotFoundError) or code in ("NoSuchBucket", "NoSuchKey"):
        text = f"{reason} {code}".lower()
        if "bucket" in text or "container" in text:
            named = f" {bucket!r}" if bucket else ""
            return StoreNotFound(f"{where}: the bucket{named} does not exist (create it, or check the URL "
                                 "and the endpoint)")
        return ObjectNotFound(f"{where}: no such object ({action})")
    if names & _CONNECTION or "could not connect" in reason.lower():
        return Unreachable(f"{where}: the storage service cannot be reached ({action}: {reason}); "
                           "the client gave up after its retries")
    if isinstance(e, OSError):
        return StorageError(f"{where}: cannot {action} ({reason})")
    return StorageError(f"{where}: cannot {action} ({type(e).__name__}: {reason})")
