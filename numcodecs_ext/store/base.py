"""What every backend and the Location share, at the bottom of the store layer: a listing, the
mark of an endpoint that cannot be known, paths relative to a root, the tools' defaults for
object stores, and running a coroutine on zarr's event loop.

Nothing here imports another module of :mod:`numcodecs_ext.store`: the backends
(:mod:`.backends`, :mod:`.zarrstores`) stand on it, :mod:`.storage` (the Location) on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LISTING_CACHES", "UNKNOWN", "Listing", "attempt", "join_slash", "object_store_defaults",
           "protocols", "relative", "run_sync"]


#: an endpoint (or other part of a store's identity) that cannot be known: a location of it
#: overlaps whatever its path may overlap (see :meth:`.storage.Location.overlaps`)
UNKNOWN = "<unknown>"


@dataclass
class Listing:
    """Every object under a location: ``{relative key: size}``, and what could not be listed.
    ``unsized``: the keys whose size the listing did not give (an http(s) index page lists
    links, not sizes); they count 0 in ``files``, and what sums sizes says "unknown"."""

    files: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    unsized: set[str] = field(default_factory=set)


def attempt(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``'s result, or the error it raised (for many-object calls that report
    per object).

    >>> attempt(int, "7"), type(attempt(int, "x")).__name__
    (7, 'ValueError')
    """
    try:
        result = fn(*args)
    except Exception as e:  # noqa: BLE001 - reported per object, said the tools' way later
        return e
    return result


def join_slash(root: str, key: str) -> str:
    """``key`` below ``root``, joined by one "/".

    >>> join_slash("/data/a.zarr", "/x/zarr.json"), join_slash("", "x"), join_slash("/", "x")
    ('/data/a.zarr/x/zarr.json', 'x', '/x')
    """
    key = key.strip("/")
    if not key:
        return root
    if root in ("", "/"):
        return f"{root}{key}"
    return f"{root.rstrip('/')}/{key}"


def relative(path: str, base: str) -> str:
    """``path`` relative to ``base`` (as it is where it does not lie below it).

    >>> relative("b/p/x/0", "b/p"), relative("b/p", "b/p/"), relative("c/y", "b")
    ('x/0', '', 'c/y')
    """
    base = base.rstrip("/")
    if not base:
        return path.lstrip("/")
    if path == base:
        return ""
    return path[len(base) + 1:] if path.startswith(base + "/") else path


def protocols(fs: Any) -> tuple[str, ...]:
    """The protocols an fsspec filesystem answers to, as a tuple."""
    protocol = fs.protocol
    return tuple(protocol) if isinstance(protocol, (tuple, list)) else (protocol,)


#: Object-store filesystems cache listings per instance. zarr's FsspecStore holds an instance of
#: its own, so a listing cached by one goes stale when the other writes (zarr then reads a
#: document written a moment ago as missing). The tools keep no listing cache there.
LISTING_CACHES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"})


def object_store_defaults(scheme: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the tools' defaults for object stores, each unless the options set it:
    no listing cache (see :data:`LISTING_CACHES`); on S3, reads of one request each (s3fs >=
    2025 asks an object's size with a HEAD before every whole-object read, to split large ones
    into concurrent ranges; zarr's chunks are read whole, so that doubles the requests per chunk).

    >>> object_store_defaults("s3", {"anon": True})
    {'anon': True, 'use_listings_cache': False, 'max_concurrency': 1}
    """
    out = dict(options)
    if scheme in LISTING_CACHES:
        out.setdefault("use_listings_cache", False)
    if scheme in ("s3", "s3a"):
        out.setdefault("max_concurrency", 1)
    return out


def run_sync(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code, on zarr's event loop (the loop zarr's own
    synchronous API uses, so that a store bound to it keeps working)."""
    try:
        # private: zarr has no public home for its event loop's runner; its synchronous API
        # (zarr.api.synchronous) is built on this very function
        from zarr.core.sync import sync
    except ImportError:  # pragma: no cover - a zarr without it: a loop of our own
        import asyncio

        return asyncio.run(coro)
    return sync(coro)
