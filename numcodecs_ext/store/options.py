"""The ``storage_options`` of the tools (the CLI's ``--storage-options JSON``): parsed, and
checked by name before any filesystem sees them, so that a wrong type is said naming the option
(the filesystems fail later, in ways that do not name it). No message repeats a value: it may be
a secret."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import UsageError

__all__ = ["check_storage_options", "parse_storage_options"]


def parse_storage_options(text: str | None, *, flag: str = "--storage-options") -> dict[str, Any]:
    """The ``--storage-options JSON`` argument as a dict for fsspec (``{}`` for None/empty).

    UsageError on anything but a JSON object, and on an option of a known name whose value has
    the wrong type (:func:`check_storage_options`). The message never repeats the text (it may
    hold a secret).

    >>> parse_storage_options('{"anon": true}')
    {'anon': True}
    >>> parse_storage_options('{"anon": "yes"}')
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: --storage-options: "anon" must be true or false, not a string
    >>> parse_storage_options('null')
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: --storage-options: a JSON object is needed (e.g. '{"anon": true}'), not null
    """
    if text is None or not str(text).strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{flag}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                         """give a JSON object, e.g. '{"anon": true}' or '{"profile": "name"}'""") from None
    if not isinstance(options, dict):
        raise UsageError(f"{flag}: a JSON object is needed (e.g. "
                         f"""'{{"anon": true}}'), not {_json_kind(options)}""")
    check_storage_options(options, flag=flag)
    return options


# The types of the storage options fsspec's object-store filesystems (s3fs, gcsfs, adlfs) and
# botocore take, by name; an option of another name is passed on as it is (the filesystem says
# whether it takes it). bool: true/false; "number": an integer or a float (not true/false);
# str / dict: a string / a JSON object; None: null (the filesystem's default).
_BOOL, _NUMBER, _STR, _OBJECT, _NULL = "true or false", "a number", "a string", "a JSON object", "null"
_OPTION_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("anon", "use_ssl", "use_listings_cache", "skip_instance_cache", "version_aware",
                     "cache_regions", "fixed_upload_size"), (_BOOL,)),
    **dict.fromkeys(("default_block_size", "listings_expiry_time", "max_concurrency", "max_paths",
                     "default_cache_type_size", "timeout"), (_NUMBER, _NULL)),
    **dict.fromkeys(("key", "secret", "profile", "endpoint_url", "region_name", "username", "password",
                     "account_name", "account_key", "sas_token", "connection_string", "session_token",
                     "tenant_id", "client_id", "client_secret", "project", "access"), (_STR, _NULL)),
    "token": (_STR, _OBJECT, _NULL),  # s3fs: a session token; gcsfs: a method, a path or the JSON key
    "requester_pays": (_BOOL, _STR),  # s3fs: true/false; gcsfs: the project to bill
    **dict.fromkeys(("client_kwargs", "config_kwargs", "s3_additional_kwargs", "headers"), (_OBJECT, _NULL)),
}
_NESTED_TYPES: dict[str, dict[str, tuple[str, ...]]] = {
    "client_kwargs": {
        **dict.fromkeys(("endpoint_url", "region_name", "aws_access_key_id", "aws_secret_access_key",
                         "aws_session_token", "api_version"), (_STR, _NULL)),
        "verify": (_BOOL, _STR), "use_ssl": (_BOOL,), "headers": (_OBJECT, _NULL),
    },
    "config_kwargs": {
        **dict.fromkeys(("connect_timeout", "read_timeout", "max_pool_connections"), (_NUMBER, _NULL)),
        **dict.fromkeys(("signature_version", "region_name", "user_agent", "user_agent_extra",
                         "request_checksum_calculation", "response_checksum_validation"), (_STR, _NULL)),
        **dict.fromkeys(("retries", "s3", "proxies", "proxies_config"), (_OBJECT, _NULL)),
        "tcp_keepalive": (_BOOL,),
    },
}
_RETRIES_TYPES = {"max_attempts": (_NUMBER,), "total_max_attempts": (_NUMBER,), "mode": (_STR,)}


def _json_kind(value: Any) -> str:
    """How a JSON value is named in a message (no repr: it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a JSON object"
    if isinstance(value, (list, tuple)):
        return "a JSON array"
    return f"a {type(value).__name__}"


def _is(value: Any, kinds: tuple[str, ...]) -> bool:
    return ((_BOOL in kinds and isinstance(value, bool))
            or (_NUMBER in kinds and isinstance(value, (int, float)) and not isinstance(value, bool))
            or (_STR in kinds and isinstance(value, str))
            or (_OBJECT in kinds and isinstance(value, Mapping))
            or (_NULL in kinds and value is None))


def _check(options: Mapping[str, Any], types: Mapping[str, tuple[str, ...]], flag: str, where: str) -> None:
    for name, kinds in types.items():
        if name in options and not _is(options[name], kinds):
            valid = " or ".join(kinds)
            raise UsageError(f'{flag}: "{where}{name}" must be {valid}, not {_json_kind(options[name])}')
    for name, value in options.items():
        if name in ("max_pool_connections", "max_concurrency", "max_attempts", "total_max_attempts") \
                and _is(value, (_NUMBER,)) and (value != int(value) or value < (0 if "attempts" in name else 1)):
            raise UsageError(f'{flag}: "{where}{name}" must be a whole number of at least '
                             f'{0 if "attempts" in name else 1}')
        if name in ("connect_timeout", "read_timeout", "timeout", "listings_expiry_time") \
                and _is(value, (_NUMBER,)) and not value >= 0:
            raise UsageError(f'{flag}: "{where}{name}" must be a number of seconds, 0 or more')


def check_storage_options(options: Mapping[str, Any], *, flag: str = "storage_options") -> None:
    """UsageError naming the option whose value has the wrong type for the filesystems (e.g.
    ``{"client_kwargs": "x"}``, ``{"key": 123}``, ``{"config_kwargs": {"retries": "x"}}``),
    before any filesystem sees it (they fail later, in ways that do not name it).

    >>> check_storage_options({"client_kwargs": {"endpoint_url": 5}})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: storage_options: "client_kwargs.endpoint_url" must be a string or
    null, not a number
    """
    if not isinstance(options, Mapping):
        raise UsageError(f"{flag}: a mapping of option names to values is needed, not {_json_kind(options)}")
    _check(options, _OPTION_TYPES, flag, "")
    for outer, types in _NESTED_TYPES.items():
        nested = options.get(outer)
        if isinstance(nested, Mapping):
            _check(nested, types, flag, f"{outer}.")
            retries = nested.get("retries") if outer == "config_kwargs" else None
            if isinstance(retries, Mapping):
                _check(retries, _RETRIES_TYPES, flag, "config_kwargs.retries.")
