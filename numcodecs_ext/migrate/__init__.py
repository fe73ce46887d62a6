"""Bring existing zarr data onto the spec codecs: numcodecs v2 filters mapped to ``scale_offset`` /
``cast_value``, zarr v2 stores migrated to v3, v3 stores normalized.

A tool layer: it sits above :mod:`numcodecs_ext.codecs` and :mod:`numcodecs_ext.zarr3`, and
works on whole stores, through :class:`numcodecs_ext.store.storage.Location`. A migration is one
of four functions sharing one :class:`MigrateOptions`: :func:`migrate` (to a new store),
:func:`migrate_in_place`, :func:`finish_in_place` (after it) and :func:`plan_migration` (a
dry run).
"""

from .filters import NotExpressible, filter_codecs
from .normalize import NormalizeReport, normalize
from .options import MigrateOptions
from .prove import MigrationReport
from .v2 import finish_in_place, migrate, migrate_in_place, plan_migration, plan_store, verify

__all__ = ["MigrateOptions", "MigrationReport", "NormalizeReport", "NotExpressible", "filter_codecs",
           "finish_in_place", "migrate", "migrate_in_place", "normalize", "plan_migration", "plan_store",
           "verify"]
