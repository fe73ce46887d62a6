"""The refusal of a codec configuration, raised by the core's per-configuration plans and by
the numcodecs and zarr v3 classes alike (``numcodecs_ext.codecs._base`` re-exports it)."""

from __future__ import annotations

from typing import Any

from .dtypes import show

__all__ = ["ConfigurationError", "ConfigurationTypeError"]


class ConfigurationError(ValueError):
    """A codec configuration refused (at construction, or for the array or fill value it is
    given): the message is ``codec '<name>': `` followed by :attr:`detail`, which names the key,
    the value and what is valid."""

    def __init__(self, codec: str, detail: str) -> None:
        super().__init__(f"codec {show(codec)}: {detail}")
        self.codec, self.detail = codec, detail

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.codec, self.detail)


class ConfigurationTypeError(ConfigurationError, TypeError):
    """A configuration value of the wrong type (a string where a number belongs ...): a
    ValueError like every refusal, and a TypeError as Python and zarr raise for one."""
