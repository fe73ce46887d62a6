"""The refusal of a codec configuration, raised by the core's per-configuration plans and by
the numcodecs and zarr v3 classes alike (``numcodecs_ext.codecs._base`` re-exports it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .dtypes import show

__all__ = ["ConfigurationError", "ConfigurationTypeError", "refusal", "refusing"]


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


def refusal(name: str, error: BaseException) -> ConfigurationError:
    """The error a constructor raises for an invalid configuration: ``codec '<name>': ``
    followed by what is wrong (the key, the value, what is valid; a refusal made for another
    name keeps its detail); a ValueError always, and a TypeError too where ``error`` was one
    (a value of the wrong type).

    >>> str(refusal("zfp", TypeError("zfp mode 'fixed_rate': 'rate' must be a number, got '8'")))
    "codec 'zfp': zfp mode 'fixed_rate': 'rate' must be a number, got '8'"
    >>> str(refusal("numcodecs.zfp", ConfigurationError("zfp", "tolerance = -1.0 is out of range")))
    "codec 'numcodecs.zfp': tolerance = -1.0 is out of range"
    """
    detail = error.detail if isinstance(error, ConfigurationError) else str(error)
    kind = ConfigurationTypeError if isinstance(error, TypeError) else ConfigurationError
    return kind(name, detail)


@contextlib.contextmanager
def refusing(codec_id: str) -> Iterator[None]:
    """Turn a ValueError or TypeError of the block (a core check that names the key, the value
    and what is valid) into the codec's refusal (:func:`refusal`)."""
    try:
        yield
    except (ValueError, TypeError) as e:
        raise refusal(codec_id, e) from None
