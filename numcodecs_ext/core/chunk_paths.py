"""What a codec's per-configuration plan keeps between chunks: the per-chunk functions worked
out once per chunk layout (zarr passes chunk after chunk of one), the fill values checked, and
the chunk specs resolved (zarr resolves the codec chain's metadata for every chunk it reads or
writes: working the fill value through the codec each time cost as much as the chunk's cast).

Neither is configuration: plans compare, hash and pickle without them (a pickled plan starts
with both empty; the functions are closures, which do not pickle)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["ChunkPaths", "fill_key"]


def fill_key(dtype: Any, fill_value: Any, ndim: int) -> Hashable:
    """What a fill value's check depends on: the dtypes themselves (every one-byte ml_dtypes
    type has the same ``.str``, '<V1'), the fill value's bytes and the number of dimensions."""
    import numpy as np

    fill = np.asarray(fill_value)
    return (np.dtype(dtype), fill.dtype, fill.tobytes(), ndim)


class ChunkPaths:
    """Per-chunk functions by key (at most 64: when full, the oldest all go), and the keys of
    the fill values already checked."""

    __slots__ = ("_fills", "_paths")

    def __init__(self) -> None:
        self._paths: dict[Hashable, Any] = {}
        self._fills: set[Hashable] = set()

    def get(self, key: Hashable) -> Any:
        """The function kept for ``key``, or None."""
        return self._paths.get(key)

    def keep(self, key: Hashable, path: Any) -> Any:
        """Keep ``path`` for ``key`` and return it."""
        if len(self._paths) >= 64:
            self._paths.clear()
        self._paths[key] = path
        return path

    def resolved(self, key: Hashable, resolve: Callable[[], Any]) -> Any:
        """``resolve()`` (not None), worked out once for ``key``, kept as the functions are (an
        error is not kept)."""
        found = self.get(("resolved", key))
        return found if found is not None else self.keep(("resolved", key), resolve())

    def check_fill_once(self, key: Hashable, check: Callable[[], Any]) -> None:
        """Run ``check`` unless it passed before for ``key``."""
        if key not in self._fills:
            check()
            self._fills.add(key)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChunkPaths)  # (not configuration: every cache compares equal)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "ChunkPaths()"
