"""numcodecs_ext: array codecs for zarr and numcodecs.

``transpose``, ``scale_offset``, ``cast_value``, ``zfp``, ``bitround``, ``packbits`` and
``reshape`` as numcodecs codecs (zarr v2 filters,
standalone encode/decode) and zarr v3 codecs (spec names and ``numcodecs.<id>`` adapter names).
Importing the package registers every codec with numcodecs and zarr; the entry points in the
``numcodecs.codecs`` and ``zarr.codecs`` groups make that unnecessary in practice.

Examples
--------
>>> import numcodecs, numcodecs_ext
>>> numcodecs.get_codec({"id": "transpose", "order": [1, 0]})
Transpose(order=[1, 0])
"""

from __future__ import annotations

from . import _command

if _command.is_command():  # numcodecs-ext itself: no traceback from a Ctrl-C during the imports below
    _command.guard()

from importlib.metadata import PackageNotFoundError, version

from ._registry import register_all
from .codecs.bitround import BitRound
from .codecs.cast_value import CastValue
from .codecs.packbits import PackBits
from .codecs.reshape import Reshape
from .codecs.scale_offset import ScaleOffset
from .codecs.transpose import Transpose
from .codecs.zfp import Zfp

try:
    __version__ = version("numcodecs_ext")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "BitRound", "CastValue", "PackBits", "Reshape", "ScaleOffset", "Transpose", "Zfp",
    "__version__",
]

register_all()
