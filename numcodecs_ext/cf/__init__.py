"""CF conventions and existing netCDF data onto the spec codecs.

A CF-packed variable (``scale_factor``, ``add_offset``, ``_FillValue``, int16 ...) becomes a float
zarr array with the filters ``[scale_offset, cast_value]`` whose stored integers are exactly the
netCDF integers, decoded as xarray decodes the file (same dtype, same missing values:
:mod:`numcodecs_ext.cf.rules`); times and counts with only missing values stay integers with their
CF attributes. :func:`packing_from_attrs` gives the codecs, :func:`zarr_encoding` the ``encoding=``
for ``xarray.Dataset.to_zarr``, :func:`convert` a whole netCDF file (verified, metadata last),
:func:`choose_packing` a packing for new data with a guaranteed maximum error. The trap on the way:
``scale_offset``'s ``scale`` is the **reciprocal** of CF's ``scale_factor``.

A tool layer above :mod:`numcodecs_ext.codecs` and :mod:`numcodecs_ext.zarr3`; xarray, netCDF4
and dask are needed only when :func:`zarr_encoding` and :func:`convert` run
(``pip install "numcodecs_ext[xarray]"``): their modules import them inside the functions.
``convert`` is imported here, not lazily, so that ``numcodecs_ext.cf.convert`` is always the
function, though a submodule of the same name exists (the CLI loads the module by its full name).
"""

from .attrs import (
    PACKING_ATTRS,
    CFPacking,
    packing_from_attrs,
    packing_from_codecs,
    unpacked_attrs,
    unpacked_dtype,
)
from .convert import convert  # the function: see above
from .packing import FLOAT_TYPES, INTEGER_TYPES, DataRange, Packing, choose_packing, data_range
from .xarray import zarr_encoding

__all__ = [
    "FLOAT_TYPES",
    "INTEGER_TYPES",
    "PACKING_ATTRS",
    "CFPacking",
    "DataRange",
    "Packing",
    "choose_packing",
    "convert",
    "data_range",
    "packing_from_attrs",
    "packing_from_codecs",
    "unpacked_attrs",
    "unpacked_dtype",
    "zarr_encoding",
]
