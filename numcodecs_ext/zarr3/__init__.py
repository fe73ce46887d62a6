"""zarr v3 codec classes (spec names and ``numcodecs.<id>`` adapter names).

Importing this module needs zarr. zarr finds these classes through the ``zarr.codecs`` entry
points without importing numcodecs_ext first.
"""

from . import dtypes
from .cast_value import CastValue, NumcodecsCastValue
from .scale_offset import NumcodecsScaleOffset, ScaleOffset
from .transpose import NumcodecsTranspose, Transpose
from .zfp import NumcodecsZfp, Zfp

__all__ = [
    "CastValue",
    "NumcodecsCastValue",
    "NumcodecsScaleOffset",
    "NumcodecsTranspose",
    "NumcodecsZfp",
    "ScaleOffset",
    "Transpose",
    "Zfp",
    "dtypes",
]
