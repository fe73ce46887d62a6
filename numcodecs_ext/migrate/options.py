"""The options of a migration, as one record: :class:`MigrateOptions`, checked when made.

:func:`~numcodecs_ext.migrate.migrate`, :func:`~numcodecs_ext.migrate.migrate_in_place` and
:func:`~numcodecs_ext.migrate.plan_migration` take it (or its fields as keywords), and
:func:`~numcodecs_ext.migrate.normalize` the fields it shares (``match``, ``wrap``,
``nan_code``, ``fill_code``, ``verify``, ``progress``, ``storage_options``).

>>> MigrateOptions(nan_code="auto", verify="sample:3").nan_code
{None: 'auto'}
>>> MigrateOptions(match="exact")
Traceback (most recent call last):
...
numcodecs_ext.store.errors.UsageError: match='exact' is not valid; use one of decode, encode
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..store.errors import UsageError
from ..store.verifying import VerifyPlan, parse_verify
from .codes import parse_code_option
from .filters import MATCHES

__all__ = ["MATCHES", "MigrateOptions", "parse_codes"]


def parse_codes(value: Any, option: str) -> dict[str | None, int | str]:
    """``nan_code=`` / ``fill_code=`` as {array or None: code or "auto"}: None, an int, "auto",
    a mapping {array: code}, or the command line's strings (``[ARRAY=]N|auto``); ``option`` is
    the name a message gives the value."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out: dict[str | None, int | str] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise UsageError(f"{option} {v!r} for {k or 'every array'} is not valid; give an integer "
                                 "code or 'auto'")
            out.update({(None if k is None else str(k).strip("/")): c
                        for c in parse_code_option([str(v)], option).values()})
        return out
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return parse_code_option([str(value)], option)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, str)) and not isinstance(v, bool)
                                                for v in value):
        return parse_code_option([str(v) for v in value], option)
    raise UsageError(f"{option} {value!r} is not valid; give an integer code, 'auto', a mapping "
                     "{array: code or 'auto'}, or a list of [ARRAY=]CODE strings")


_FLAGS = ("wrap", "keep_numcodecs", "rewrite", "progress")


@dataclass(frozen=True)
class MigrateOptions:
    """How numcodecs' filters become the spec codecs, and how a migration runs.

    Parameters
    ----------
    match : "decode" or "encode"
        Float FixedScaleOffset: read as numcodecs decoded (the default) or as it encoded, bit for
        bit (see :func:`numcodecs_ext.migrate.filters.filter_codecs`).
    wrap : bool
        Let values the stored integers cannot hold wrap, as numcodecs did (by default later
        writes of such values are refused; chunks that hold wrapped codes need ``wrap``).
    keep_numcodecs : bool
        Keep filters the spec codecs cannot express under zarr's ``numcodecs.<id>`` names
        instead of refusing.
    rewrite : bool
        Decode and encode every chunk again even where the chunks could be kept (a new store
        only).
    verify : "full", "sample:N", "none" or VerifyPlan
        What is read back and compared with the source: every chunk (the default), ``N`` chunks
        per array chosen at random (the report says it sampled), or nothing (the report says
        not verified). Kept as a :class:`~numcodecs_ext.store.verifying.VerifyPlan`.
    nan_code, fill_code : int, "auto", {array: int or "auto"}, optional
        Give NaN (or a fill value outside the packing) a stored code of its own, so that arrays
        whose fill value is NaN can be written to; "auto" picks one no stored chunk holds. Kept
        as {array or None (every array): code or "auto"}.
    progress : bool
        A progress bar on stderr.
    storage_options : mapping, optional
        For URLs (fsspec: credentials, endpoint ...); otherwise the standard configuration
        (``AWS_*`` variables including ``AWS_ENDPOINT_URL``, fsspec's files).

    Raises
    ------
    UsageError
        A value that is not valid, naming the field, the value and what is valid.
    """

    match: str = "decode"
    wrap: bool = False
    keep_numcodecs: bool = False
    rewrite: bool = False
    verify: Any = "full"
    nan_code: Any = None
    fill_code: Any = None
    progress: bool = False
    storage_options: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.match, str) or self.match not in MATCHES:
            raise UsageError(f"match={self.match!r} is not valid; use one of {', '.join(MATCHES)}")
        for name in _FLAGS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise UsageError(f"{name}={value!r} is not valid; give True or False")
        if not isinstance(self.verify, (str, VerifyPlan)) and self.verify is not None:
            raise UsageError(f"verify={self.verify!r} is not valid; use full, sample:N (N >= 1), "
                             "none or a VerifyPlan")
        try:
            object.__setattr__(self, "verify", parse_verify(self.verify))
        except UsageError as e:  # named as the command line names it: here, the field
            raise UsageError(str(e).replace("--verify ", "verify=", 1)) from None
        object.__setattr__(self, "nan_code", parse_codes(self.nan_code, "nan_code"))
        object.__setattr__(self, "fill_code", parse_codes(self.fill_code, "fill_code"))
        if self.storage_options is not None and not isinstance(self.storage_options, Mapping):
            raise UsageError(f"storage_options={self.storage_options!r} is not valid; give a mapping "
                             "(fsspec's options) or None")

    @classmethod
    def make(cls, options: MigrateOptions | None = None, /, **keywords: Any) -> MigrateOptions:
        """``options`` with ``keywords`` replaced (the fields as keywords, for calls such as
        ``migrate(src, dst, rewrite=True)``); a UsageError names an unknown keyword."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(keywords) - known)
        if unknown:
            raise UsageError(f"{', '.join(unknown)}: not a migration option; the options are "
                             f"{', '.join(sorted(known))}")
        if options is None:
            return cls(**keywords)
        if not isinstance(options, MigrateOptions):
            raise UsageError(f"options={options!r} is not valid; give a MigrateOptions or None")
        if not keywords:
            return options
        current = {f.name: getattr(options, f.name) for f in fields(cls)}
        return cls(**{**current, **keywords})

    @property
    def asks_for_migration(self) -> list[str]:
        """The migration options that differ from their defaults (what ``finish`` refuses)."""
        asked = [name for name in ("rewrite", "nan_code", "fill_code", "wrap", "keep_numcodecs") if getattr(self, name)]
        return asked + (["match"] if self.match != "decode" else [])
