"""zarr v3 codec classes (spec names and ``numcodecs.<id>`` adapter names).

Importing this module needs zarr. zarr finds these classes through the ``zarr.codecs`` entry
points without importing numcodecs_ext first.
"""

from . import dtypes
from .bitround import BitRound
from .cast_value import CastValue, NumcodecsCastValue
from .packbits import PackBits
from .reshape import NumcodecsReshape, Reshape
from .scale_offset import NumcodecsScaleOffset, ScaleOffset
from .transpose import NumcodecsTranspose, Transpose
from .zfp import NumcodecsZfp, Zfp

__all__ = [
    "BitRound",
    "CastValue",
    "NumcodecsCastValue",
    "NumcodecsReshape",
    "NumcodecsScaleOffset",
    "NumcodecsTranspose",
    "NumcodecsZfp",
    "PackBits",
    "Reshape",
    "ScaleOffset",
    "Transpose",
    "Zfp",
    "dtypes",
]
