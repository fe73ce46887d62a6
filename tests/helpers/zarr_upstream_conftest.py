"""conftest.py for running zarr-python's own codec test modules with our classes.

Copied next to zarr's ``tests/`` (fetched from the zarr sdist by ``test_zarr_upstream.py``) and
loaded before zarr's ``tests/conftest.py``. ``NUMCODECS_EXT_MODE`` says how zarr's classes are
replaced by ours:

* ``config``: zarr's config selects our classes for the names ``scale_offset``, ``cast_value``
  and ``transpose`` (tests that resolve codecs by name get ours);
* ``subst``: the same, and the classes the tests import (``zarr.codecs.ScaleOffset``,
  ``CastValue``, ``TransposeCodec`` and their modules' names) are ours. zarr's private helpers
  stay zarr's.

zarr's conftest resets the config before every test, so the selection is re-applied after each
reset.
"""

import os

import zarr.codecs
from zarr.core.config import config

import numcodecs_ext.zarr3 as ours

#: None when imported anywhere else (our own doctest collection): then this module does nothing
MODE = os.environ.get("NUMCODECS_EXT_MODE")
OURS = {
    "codecs.scale_offset": "numcodecs_ext.zarr3.scale_offset.ScaleOffset",
    "codecs.cast_value": "numcodecs_ext.zarr3.cast_value.CastValue",
    "codecs.transpose": "numcodecs_ext.zarr3.transpose.Transpose",
}
REPLACED = {"ScaleOffset": ("scale_offset", ours.ScaleOffset),
            "CastValue": ("cast_value", ours.CastValue),
            "TransposeCodec": ("transpose", ours.Transpose)}

if MODE == "subst":
    import importlib

    for name, (module, cls) in REPLACED.items():
        if hasattr(zarr.codecs, name):
            setattr(zarr.codecs, name, cls)
            setattr(importlib.import_module(f"zarr.codecs.{module}"), name, cls)

if MODE is not None:
    _reset = config.reset

    def _reset_keeping_ours(*args, **kwargs):
        _reset(*args, **kwargs)
        config.set(OURS)

    config.reset = _reset_keeping_ours
    config.reset()
