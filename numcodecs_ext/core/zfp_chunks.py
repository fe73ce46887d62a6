"""The chunk work of one ``zfp`` configuration (:class:`ZfpChunks`), which the numcodecs
class and the zarr v3 class both run: chunk shapes and dtypes checked, chunks compressed and
decompressed by :mod:`numcodecs_ext.core.zfp` through per-layout functions worked out once
(zarr passes chunk after chunk of one layout). zfp has no device kernels: chunks on other
devices go through the host.

Examples
--------
>>> import numpy as np
>>> work = ZfpChunks({"mode": "reversible"})
>>> a = np.linspace(0, 1, 16)
>>> bool((work.decode_chunk(work.encode_chunk(a), (16,), a.dtype) == a).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native
from . import zfp as core
from .chunk_paths import ChunkPaths, fill_key
from .errors import ConfigurationError

__all__ = ["ZfpChunks"]


@dataclass(frozen=True)
class ZfpChunks:
    """The chunk work of one ``zfp`` configuration: ``spec``, the checked configuration
    (``mode`` and that mode's parameters, as :func:`~numcodecs_ext.core.zfp.check_config`
    returns it)."""

    spec: dict[str, Any] = field(hash=False)
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    def resolve_spec(
        self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any, strict: bool = True
    ) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Check that chunks of this shape and dtype can be compressed; nothing changes."""
        if len(shape) > 4:
            raise ConfigurationError(
                "zfp", f"chunks of {len(shape)} dimensions (shape {list(shape)}) are not "
                "supported; zfp handles at most 4: put a reshape codec before it, e.g. "
                "Reshape(shape=[[0, 1, 2], [3], [4], [5]]) for 6-D chunks"
            )
        core.check_chunk(shape, dtype, **self.spec)
        return tuple(shape), dtype, fill_value

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def encode_chunk(self, arr: np.ndarray) -> bytes:
        key = (arr.shape, arr.dtype, _native.ENABLED)
        encode = self.paths.get(key)
        if encode is None:
            encode = self.paths.keep(key, core.chunk_encoder(arr.shape, arr.dtype, self.settings()))
        return encode(arr)  # type: ignore[no-any-return]

    def decode_chunk(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if type(shape) is not tuple:
            shape = tuple(shape)
        if dtype.metadata is not None:  # (equal dtypes compare alike whatever their metadata)
            return core.decompress(buf, shape, dtype, self.settings())
        key = (shape, dtype, dtype.char, _native.ENABLED, "decode")
        decode = self.paths.get(key)
        if decode is None:
            decode = self.paths.keep(key, core.chunk_decoder(shape, dtype, self.settings()))
        return decode(buf)  # type: ignore[no-any-return]

    def settings(self) -> Any:
        """The validated mode, worked out on the first chunk (zarr passes chunk after chunk)."""
        found = self.paths.get("settings")
        if found is None:
            found = self.paths.keep("settings", core.settings(**self.spec))
        return found

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """No device kernel: None, so the caller compresses a host copy."""
        return None

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """No device kernel: None, so the caller decompresses on the host."""
        return None
