"""What every numcodecs_ext codec shares: config handling, equality, repr, buffer helpers."""

from __future__ import annotations

import inspect
import json
from typing import Any, ClassVar

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray_like

__all__ = ["ExtCodec", "as_array", "check_keys"]


def check_keys(codec_id: str, config: dict[str, Any], valid: list[str], required: tuple[str, ...] = ()) -> None:
    """Refuse unknown or missing configuration keys with a message that lists the valid ones."""
    unknown = sorted(set(config) - set(valid))
    if unknown:
        raise ValueError(
            f"codec {codec_id!r}: unknown configuration key(s) {', '.join(map(repr, unknown))}; "
            f"valid keys are {', '.join(valid)}"
        )
    missing = [k for k in required if k not in config]
    if missing:
        raise ValueError(f"codec {codec_id!r}: missing required configuration key(s) {', '.join(map(repr, missing))}")


def as_array(buf: Any) -> np.ndarray:
    """View any buffer (bytes, bytearray, array.array, ndarray) as an ndarray without copying.

    ndarrays keep their shape and dtype; other buffers become 1-D ``uint8`` (or their item type).
    """
    if isinstance(buf, np.ndarray):
        return buf
    return np.asarray(ensure_contiguous_ndarray_like(buf))


class ExtCodec(Codec):
    """Base class of numcodecs_ext's numcodecs codecs.

    Subclasses set ``codec_id``, validate everything in ``__init__`` (keyword arguments are the
    config keys) and implement :meth:`_config`, the JSON-ready configuration without ``id`` and
    without keys at their defaults. The base class derives ``get_config``, ``from_config`` (which
    refuses unknown keys by name), equality, hashing and a repr that shows the configuration.
    """

    codec_id: ClassVar[str]

    def _config(self) -> dict[str, Any]:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **self._config()}

    @classmethod
    def config_keys(cls) -> list[str]:
        """The configuration keys the constructor accepts."""
        params = inspect.signature(cls.__init__).parameters
        return [p.name for p in params.values() if p.name != "self" and p.kind is not p.VAR_KEYWORD]

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ExtCodec:
        config = dict(config)
        codec_id = config.pop("id", cls.codec_id)
        if codec_id not in (cls.codec_id, *getattr(cls, "codec_aliases", ())):
            raise ValueError(f"config id {codec_id!r} does not match codec {cls.codec_id!r}")
        check_keys(cls.codec_id, config, cls.config_keys())
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), json.dumps(self.get_config(), sort_keys=True)))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._config().items())
        return f"{type(self).__name__}({params})"
