"""The options several commands share, each defined once: ``--storage-options``, ``--verify``,
``-q/--quiet``, and the migration options of ``migrate`` and ``normalize``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["QUIET_HELP", "add_migrate_options", "add_quiet", "add_storage_options", "add_verify"]

QUIET_HELP = "no progress bars or notes on stderr (results and errors are still printed)"


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-options JSON`` (``args.storage_options``, parsed by
    :func:`numcodecs_ext.store.storage.parse_storage_options`)."""
    parser.add_argument(
        "--storage-options", metavar="JSON", default=None,
        help="options for the filesystem of URL arguments, as a JSON object passed to fsspec, "
             """e.g. '{"anon": true}' for a public bucket or '{"profile": "name"}'. Credentials and """
             "endpoints otherwise come from the standard configuration (AWS_* variables including "
             "AWS_ENDPOINT_URL, fsspec's configuration files).")


def add_verify(parser: argparse.ArgumentParser, *, aliases: Sequence[str] = ("--no-verify",)) -> None:
    """``--verify full|sample:N|none`` (``args.verify``, parsed by
    :func:`numcodecs_ext.store.verifying.parse_verify`), and ``--no-verify`` as ``--verify none``."""
    parser.add_argument("--verify", default="full", metavar="full|sample:N|none",
                        help="read back every chunk and compare (full, the default), N chunks per "
                             "array chosen at random (sample:N; the summary says it sampled), "
                             "or nothing (none)")
    for alias in aliases:
        parser.add_argument(alias, dest="verify", action="store_const", const="none",
                            help="the same as --verify none")


def add_quiet(parser: argparse.ArgumentParser, help: str | None = None) -> None:  # noqa: A002
    """``-q/--quiet`` (``args.quiet``), or the spelling of it that ``parser`` lacks."""
    for spellings in (("-q", "--quiet"), ("-q",), ("--quiet",)):
        try:
            parser.add_argument(*spellings, dest="quiet", action="store_true",
                                help=(help or QUIET_HELP) if len(spellings) == 2 else "the same as " +
                                ("--quiet" if spellings == ("-q",) else "-q"))
            return
        except argparse.ArgumentError:
            continue


def add_migrate_options(parser: argparse.ArgumentParser) -> None:
    """``--match``, ``--wrap``, ``--nan-code`` and ``--fill-code``: how numcodecs' filters become
    the spec codecs, for ``migrate`` and ``normalize`` alike (the fields of
    :class:`~numcodecs_ext.migrate.MigrateOptions` of those names)."""
    from ..migrate.filters import MATCHES  # (here: the other commands need not import migrate)

    parser.add_argument("--match", choices=MATCHES, default="decode",
                        help="float FixedScaleOffset: read as numcodecs decoded (default) or as it "
                             "encoded, bit for bit")
    parser.add_argument("--wrap", action="store_true",
                        help="let values the stored integers cannot hold wrap, as numcodecs did "
                             "(default: refuse to write them)")
    parser.add_argument("--nan-code", action="append", metavar="[ARRAY=]N|auto",
                        help="give NaN a stored code, so that arrays with a NaN fill value take "
                             "writes; auto picks a free one; ARRAY= for one array")
    parser.add_argument("--fill-code", action="append", metavar="[ARRAY=]N|auto",
                        help="the same for a fill value outside the packing")
