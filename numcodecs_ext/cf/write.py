"""convert's write: chunks through a :class:`~numcodecs_ext.tools.staging.StagedStore`, the packed
arrays declared, the result read back and verified through the staged store, and only then the
metadata committed (arrays first, the root last). Whatever fails or is interrupted on the way, no
metadata is written and the chunks are removed: nothing opens.
"""

from __future__ import annotations

from typing import Any

from ..tools.errors import ToolError, UsageError
from .plan import GroupPlan, declare_packing

__all__ = ["write_verify_commit"]


def write_verify_commit(src: Any, engine: str, loc: Any, existed: bool, plans: list[GroupPlan],
                        zarr_format: int, differences: dict[str, float], *, progress: bool,
                        verify: bool) -> bool:
    """Chunks through a StagedStore, packings declared, the result verified through the staged
    store (``differences`` receives each inexact packing's largest difference), then the metadata
    committed; whether it was verified. Any failure discards the staged metadata and removes the
    chunks written (``existed``: ``loc`` was an empty directory before, and stays one)."""
    from ..tools.staging import StagedStore

    staged = StagedStore(loc)
    try:
        _write(staged, plans, zarr_format, progress)
        for plan in plans:
            prefix = "" if plan.group is None else plan.group + "/"
            for name, vp in plan.variables.items():
                if vp.packing is not None:
                    declare_packing(staged.staged, prefix + name, vp.packing, zarr_format)
        _consolidate(staged, zarr_format)
        if verify:
            _verify(src, engine, staged, plans, differences, progress)
        staged.commit()
        return verify
    except BaseException as e:
        staged.discard()
        left = _clean_up(loc, existed)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if isinstance(e, (ToolError, UsageError)):  # (UsageError: a bucket that went, access denied)
            raise type(e)(f"{e}\n{left}") from None
        raise ToolError(f"writing {loc.display} failed ({type(e).__name__}: {e})\n{left}") from e


def _write(staged: Any, plans: list[GroupPlan], zarr_format: int, progress: bool) -> None:
    """Write every chunk: as dask tasks on the user's scheduler (a distributed.Client in this
    process, dask's configuration, DASK_SCHEDULER_ADDRESS; :func:`~numcodecs_ext.tools.parallel.find_scheduler`),
    else on threads here. A destination in this process's memory is written here."""
    import dask

    from ..tools.parallel import find_scheduler
    from ..tools.progress import Progress

    delayed = []
    for i, plan in enumerate(plans):
        delayed.append(plan.dataset.to_zarr(
            staged, group=plan.group, mode="w-" if i == 0 else "a", zarr_format=zarr_format,
            encoding=plan.encoding, consolidated=False, write_empty_chunks=True, compute=False))
    with find_scheduler() as where:
        if where.distributed and staged.location.is_shared:
            _on_cluster(where.client, delayed, progress)
            return
    with _TaskBar(Progress, "writing chunks", enabled=progress):
        dask.compute(*delayed, scheduler="threads")


def _on_cluster(client: Any, delayed: list[Any], progress: bool) -> None:
    """The chunk writes as tasks of a dask cluster. The tools' bar counts the groups written;
    the cluster's dashboard shows every task (its address is said on stderr)."""
    import sys

    from ..tools.progress import Progress

    if progress:
        link = getattr(client, "dashboard_link", None)
        print(f"writing chunks on {client.scheduler.address}" + (f" (progress: {link})" if link else ""),
              file=sys.stderr)
    futures = client.compute(delayed)
    try:
        with Progress(len(futures), "writing groups", enabled=progress, unit="group") as bar:
            for future in futures:
                future.result()  # the first task's error, raised as it was
                bar.advance(1, chunks=0)
    finally:
        client.cancel([f for f in futures if not f.done()])


class _TaskBar:
    """dask's callbacks driving the tools' progress bar: one step per finished task."""

    def __init__(self, progress_cls: Any, label: str, *, enabled: bool) -> None:
        from dask.callbacks import Callback

        self.bar: Any = None

        outer = self

        class _Callback(Callback):
            def _start_state(self, dsk: Any, state: Any) -> None:
                total = len(state["ready"]) + len(state["waiting"]) + len(state["running"])
                outer.bar = progress_cls(total, label, enabled=enabled, unit="task")

            def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
                if outer.bar is not None:
                    outer.bar.advance(1, chunks=1)

        self.callback = _Callback()

    def __enter__(self) -> _TaskBar:
        self.callback.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.callback.__exit__(*exc)
        if self.bar is not None:
            self.bar.close()


def _consolidate(staged: Any, zarr_format: int) -> None:
    """Consolidated metadata (into the staged documents): xarray opens the store in one read."""
    import zarr

    zarr.consolidate_metadata(staged, zarr_format=zarr_format)


def _verify(src: Any, engine: str, staged: Any, plans: list[GroupPlan], differences: dict[str, float],
            progress: bool) -> None:
    from ..tools.progress import Progress
    from .verify import verify_group

    total = sum(int(p.dataset[name].size) * (vp.dtype.itemsize if vp.dtype.kind != "O" else 8)
                for p in plans for name, vp in p.variables.items())
    with Progress(total, "verifying", enabled=progress) as bar:
        for plan in plans:
            verify_group(src, engine, staged, plan, differences, bar)


def _clean_up(loc: Any, existed: bool) -> str:
    """Remove the chunks a failed run wrote; what is left, in words."""
    try:
        if existed:  # it was an empty directory: everything in it is ours
            for entry in loc.fs.ls(loc.root, detail=False):
                loc.fs.rm(entry, recursive=True)
            return f"{loc.display} is empty again, as it was before."
        if loc.exists():
            loc.fs.rm(loc.root, recursive=True)
        return f"nothing was left at {loc.display}."
    except OSError as e:
        return (f"{loc.display} holds chunk objects and no metadata, which open as nothing; they could not "
                f"be removed ({e}): remove {loc.display} before running again.")
