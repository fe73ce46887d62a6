"""Tools that work on whole zarr stores: ``numcodecs-ext inspect``.

A tool layer above :mod:`numcodecs_ext.codecs` and :mod:`numcodecs_ext.zarr3`.
"""
