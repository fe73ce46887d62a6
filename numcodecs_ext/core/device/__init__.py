"""Chunk kernels for arrays that are not numpy arrays (cupy in zarr's GPU mode).

Written against the Python array API standard: the array's own namespace
(``arr.__array_namespace__()``) does the work on the array's device, nothing is converted to
numpy. Bit reinterpretation is not in the standard; bitround uses the array's ``view`` where the
array has one (cupy, numpy) and declines otherwise.

Every function returns the result, or None where it has no kernel for the case at hand or the
data need the CPU path's judgement (a value out of range, an overflow, a NaN whose bits a device
may not keep). The caller then moves the chunk to the host explicitly and runs the CPU path,
which gives the same result or raises the same error. So a device result is bit-identical to the
CPU one, and every error is raised, in its words, by the CPU path. A namespace that lacks a
function used here (an older library) declines the same way.

NaN: arithmetic and conversions on a GPU may give a NaN other bits than the CPU gives; every NaN
result here is either the input's own bits quieted, as IEEE 754 arithmetic on the CPU gives them
(scale_offset, through ``view``; without one a chunk with a NaN declines), or comes from the host
path.

Subnormals: cupy flushes float32 subnormals to zero in arithmetic, comparisons and conversions
(seen on an H200, cupy 14.2); the CPU keeps them. A float32/float64 chunk holding one, or whose
scale_offset step or narrowed cast would give one, declines (read from the bits where the array
has ``view``).

Pure array API plus numpy for the parameters; knows nothing about numcodecs or zarr.
:mod:`.namespace` finds the array's namespace and holds the checks every kernel shares;
:mod:`.numeric` and :mod:`.packbits` hold the kernels.
"""

from __future__ import annotations

from .namespace import ModuleNamespace, namespace, numpy_dtype
from .numeric import bitround, cast, reshape, scale_offset, transpose
from .packbits import pack, unpack

__all__ = ["ModuleNamespace", "bitround", "cast", "namespace", "numpy_dtype", "pack", "reshape", "scale_offset",
           "transpose", "unpack"]
