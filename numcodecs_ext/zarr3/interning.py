"""One codec object per configuration in a process, and the key of a resolved chunk spec.

zarr parses the codec entries of zarr.json and evolves them each time it opens an array, and
resolves the chain's metadata for every chunk it reads or writes. Our codecs are immutable, so
the same configuration can be one object, whose chunk work keeps its per-chunk functions and its
resolved specs (:class:`~numcodecs_ext.core.chunk_paths.ChunkPaths`) across the opens of a
tool's tasks.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["interned", "spec_key"]


_INTERNED: dict[tuple[type, str], Any] = {}
_INTERNED_LOCK = threading.Lock()


def interned(cls: type, name: str, configuration: dict[str, Any], bound: Any = None) -> Any:
    """The codec of a zarr.json entry (or of ``bound``, a numcodecs codec bound to a chunk shape
    and dtype), one object per class and JSON in a process (the last 256). The codecs are
    immutable, and zarr parses and evolves the codec entries each time it opens an array: a task
    that opens an array per run then reuses the chunk work's kept functions and resolved specs
    instead of working them out again."""
    import json

    def make() -> Any:
        return cls(codec=cls.parse_configuration(configuration, name) if bound is None else bound, name=name)

    try:
        what = configuration if bound is None else ["bound", bound.get_config()]
        text = json.dumps(what, sort_keys=True)
        plain = json.loads(text) == what  # (a tuple, an int key ...: not one JSON, parsed as it is)
    except (TypeError, ValueError, RecursionError):  # (not JSON: refused by the parsing, in its words)
        return make()
    if not plain:
        return make()
    key = (cls, name + "\0" + text)
    with _INTERNED_LOCK:
        found = _INTERNED.get(key)
    if found is not None:
        return found
    codec = make()
    with _INTERNED_LOCK:
        if len(_INTERNED) >= 256:
            _INTERNED.pop(next(iter(_INTERNED)))
        _INTERNED[key] = codec
    return codec


def spec_key(shape: Any, dtype: np.dtype, fill: Any) -> tuple[Any, ...] | None:
    """What a chunk spec's resolution depends on, hashable (None: a fill value of no fixed
    bytes, resolved every time)."""
    fill_array = np.asarray(fill)
    if fill_array.dtype.hasobject:
        return None
    # (the dtypes themselves: every one-byte ml_dtypes type has the same .str, '<V1')
    return (tuple(shape), np.dtype(dtype), fill_array.dtype, fill_array.tobytes())
