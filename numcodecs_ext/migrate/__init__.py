"""Bring existing zarr data onto the spec codecs: numcodecs v2 filters mapped to ``scale_offset`` /
``cast_value``, zarr v2 stores migrated to v3, v3 stores normalized.

A tool layer: it sits above :mod:`numcodecs_ext.codecs` and :mod:`numcodecs_ext.zarr3`, and
works on whole stores, through :class:`numcodecs_ext.store.storage.Location`.
"""

from .filters import NotExpressible, filter_codecs
from .normalize import NormalizeReport, normalize
from .prove import MigrationReport
from .v2 import migrate, plan_store, verify

__all__ = ["MigrationReport", "NormalizeReport", "NotExpressible", "filter_codecs", "migrate",
           "normalize", "plan_store", "verify"]
