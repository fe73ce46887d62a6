"""zarr v3 codec classes (spec names and ``numcodecs.<id>`` adapter names).

Importing this module needs zarr. zarr finds these classes through the ``zarr.codecs`` entry
points without importing numcodecs_ext first.
"""

from .transpose import NumcodecsTranspose, Transpose
from .zfp import NumcodecsZfp, Zfp

__all__ = ["NumcodecsTranspose", "NumcodecsZfp", "Transpose", "Zfp"]
