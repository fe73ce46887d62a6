"""What one task of convert's write does: write a run's chunks, prove them, record the run.

A run is the chunks of one variable in one region (about
:data:`~numcodecs_ext.cf.write.RUN_BYTES` of values). The task reads the run from the source once
(netCDF-C's lock held only for that read), writes it through a
:class:`~numcodecs_ext.store.staging.StagedStore` in the stored types, and, for a variable of
numbers, proves it there (:func:`prove_run`): the chunks read back through the final metadata as
``open_zarr`` reads them, compared with the source's values already in memory, decoded as xarray
decodes the file. Other variables are read back through xarray on both sides
(:func:`~numcodecs_ext.cf.verify.check_block`). Tasks are pickled to dask workers with
:class:`Job`.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.errors import VerificationError
from ..store.journal import Journal, is_journal_key
from .handles import NETCDF_LOCK
from .plan import GroupPlan, VariablePlan
from .verify import check_block, check_values, opened

__all__ = ["Done", "Job", "Raw", "Run", "describe_run", "do_run", "prove_in_tasks", "store_over"]


@dataclass
class Run:
    """One task: the chunks of variable ``name`` (of ``group``) in ``region``."""

    index: int
    group: str | None
    name: str
    vp: VariablePlan
    region: tuple[slice, ...]
    nchunks: int
    nbytes: int
    data: Any = None  # the values to write (a lazy xarray Variable); None: already written
    checks: list[tuple[slice, ...]] = field(default_factory=list)  # regions read back
    checked: int = 0  # chunks in ``checks``
    raw: Raw | None = None  # proved in the task that writes it (see :func:`prove_run`)
    probe: bool = False  # only the xarray-level comparison of ``checks``: not marked, not counted


@dataclass(frozen=True)
class Raw:
    """How xarray decodes a variable's stored values: the source's stored type, attributes and
    encoding (as opened with ``mask_and_scale=False``), for :func:`_decode` in memory."""

    dtype: np.dtype
    dims: tuple[str, ...]
    attrs: dict[str, Any]
    encoding: dict[str, Any]


@dataclass
class Done:
    """What a task found: the largest difference of an inexact packing, and the first chunk it
    compared that holds missing values (NaN after xarray's decoding), for the xarray-level probe."""

    worst: float = 0.0
    missing: tuple[slice, ...] | None = None


@dataclass
class Job:
    """What every task shares (pickled with each)."""

    source: Any
    engine: str
    write_store: Any
    read_store: Any
    journal: Journal
    zarr_format: int
    token: str = field(default_factory=lambda: uuid.uuid4().hex)  # this command's: the opened results' cache


def store_over(loc: Any, docs: dict[str, bytes], *, read_only: bool = False) -> Any:
    """A StagedStore over ``loc`` serving ``docs`` whose listings leave the journal out (zarr
    would warn about it as an object it does not recognise)."""
    from ..store.staging import StagedStore

    class _Store(StagedStore):
        async def list_dir(self, prefix: str) -> Any:
            async for key in super().list_dir(prefix):
                if prefix.strip("/") or not is_journal_key(key):
                    yield key

        def __reduce__(self) -> tuple[Any, ...]:
            return (_rebuild_store, (self.location, dict(self.staged), self.read_only))

    return _Store(loc, read_only=read_only, _staged=dict(docs))


def _rebuild_store(loc: Any, docs: dict[str, bytes], read_only: bool) -> Any:
    return store_over(loc, docs, read_only=read_only)


def prove_in_tasks(source: Any, engine: str, plans: list[GroupPlan], runs: list[Run]) -> None:
    """Give the runs of every variable whose values the writing task can prove (numbers, stored
    as they are or packed, that xarray decodes to numbers of the planned type) what the task
    needs to decode the stored values as xarray decodes the source's: the source's stored type,
    attributes and encoding, read here once (no values)."""
    wanted = {(r.group, r.name) for r in runs}
    raws: dict[tuple[str | None, str], Raw] = {}
    for plan in plans:
        names = [n for n in plan.variables if (plan.group, n) in wanted and _provable(plan, n)]
        if names:
            raws.update({(plan.group, n): r for n, r in _raw_of(source, engine, plan, names).items()})
    for run in runs:
        run.raw = raws.get((run.group, run.name))


def _provable(plan: GroupPlan, name: str) -> bool:
    vp, out = plan.variables[name], plan.dataset.variables[name]
    return (vp.route in ("packed", "as is") and vp.dtype.kind in "biuf" and out.dtype.kind in "biuf"
            and out.dtype.names is None and out.ndim > 0)


def _raw_of(source: Any, engine: str, plan: GroupPlan, names: list[str]) -> dict[str, Raw]:
    import xarray as xr

    from .handles import open_source
    from .verify import open_quietly

    out: dict[str, Raw] = {}
    target = source.target() if hasattr(source, "target") else source
    with NETCDF_LOCK:
        ds = open_quietly(open_source, target, engine, plan.group, chunks=None, mask_and_scale=False,
                           decode_times=False, decode_timedelta=False)
        try:
            for name in names:
                var = ds.variables[name]
                written = plan.dataset.variables[name]
                raw = Raw(var.dtype, tuple(var.dims), dict(var.attrs), dict(var.encoding))
                if var.dtype.kind not in "biuf" or var.dtype.itemsize != written.dtype.itemsize:
                    continue
                decoded = open_quietly(xr.conventions.decode_cf_variable, name, var, decode_times=False,
                                        decode_timedelta=False)
                if decoded.dtype == plan.variables[name].dtype and decoded.dims == var.dims:
                    out[name] = raw
        finally:
            ds.close()
    return out


def describe_run(run: Run) -> str:
    where = ", ".join(f"{s.start}:{s.stop}" for s in run.region)
    return f"variable {run.vp.name!r} [{where}]"


def do_run(job: Job, run: Run) -> Done:
    """One task: write the run's chunks (unless written), prove or read back what it must, mark
    it in the journal (a probe: only compare); what it found."""
    # (no dask.config.set here: entered and left from several threads at once it leaves its value
    # behind for the whole process; the datasets are opened without dask chunks anyway)
    values = _write_run(job, run) if run.data is not None else None
    done = Done()
    if run.checks and values is not None and run.raw is not None:
        done = prove_run(job, run, values)
    elif run.checks:
        with opened(job.source, job.engine, job.read_store, run.group) as sides:
            for region in run.checks:
                done.worst = max(done.worst, check_block(sides, run.vp, run.name, region))
    if not run.probe:
        state = "verified" if run.checked >= run.nchunks else "written"
        job.journal.record(run.index, state=state, checked=run.checked, worst=done.worst)
    return done


def prove_run(job: Job, run: Run, values: np.ndarray) -> Done:
    """Prove the run just written, in its task: each region to check read back from the store
    (the stored bytes, decoded by the final metadata's codecs, then by xarray, as ``open_zarr``
    reads them) and compared, by :func:`~numcodecs_ext.cf.verify.check_values`'s rules, with
    the source's values already in memory, decoded as xarray decodes the file
    (:func:`_decode`). The source is not read again; netCDF-C's lock is not held."""
    raw = run.raw
    with NETCDF_LOCK:  # (the warnings' filters are the process's: changed by one thread at a time)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _result(job, run.group).variables[run.name]
            decoded = _decode(run.name, raw, values)
    with np.errstate(all="ignore"):
        x_all = np.asarray(decoded.values)
    if x_all.dtype != run.vp.dtype:
        raise VerificationError(f"variable {run.vp.name!r}: decoded in memory as {x_all.dtype}, "
                                f"where xarray reads the source as {run.vp.dtype}")
    done = Done()
    for region in run.checks:
        local = tuple(slice(c.start - r.start, c.stop - r.start) for c, r in zip(region, run.region))
        y = np.asarray(result[region].values)
        x = x_all[local]
        done.worst = max(done.worst, check_values(run.vp, x, y, values[local], region))
        if done.missing is None and x.dtype.kind == "f" and np.isnan(x).any():
            done.missing = region
    return done


_RESULTS: dict[tuple[str, str | None], Any] = {}


_RESULTS_LOCK = threading.Lock()


def _result(job: Job, group: str | None) -> Any:
    """The result's group as ``xarray.open_zarr`` reads it (lazily, times left as numbers),
    opened once per command, group and process (the last few kept)."""
    import xarray as xr

    key = (job.token, group)
    with _RESULTS_LOCK:
        ds = _RESULTS.get(key)
        if ds is None:
            # (times not decoded: a run may not have written a time coordinate yet; the variables
            # proved here are numbers, and every variable's dtype is compared at the commit)
            ds = xr.open_zarr(job.read_store, group=group, consolidated=False, chunks=None, decode_times=False,
                              decode_timedelta=False)
            while len(_RESULTS) >= 8:
                _RESULTS.pop(next(iter(_RESULTS))).close()
            _RESULTS[key] = ds
    return ds


def _decode(name: str, raw: Raw, values: np.ndarray) -> Any:
    """The run's stored ``values`` as xarray decodes the source's (lazily): its CF decoding
    (``_FillValue``, ``missing_value``, ``scale_factor``, ``add_offset``, ``_Unsigned``) applied in
    memory, with the source's stored type, attributes and encoding."""
    import xarray as xr

    stored = values.view(raw.dtype) if values.dtype != raw.dtype else values  # (same size: _provable)
    var = xr.Variable(raw.dims, stored, attrs=dict(raw.attrs), encoding=dict(raw.encoding))
    return xr.conventions.decode_cf_variable(name, var, decode_times=False, decode_timedelta=False)


def _write_run(job: Job, run: Run) -> np.ndarray | None:
    """Write the run's chunks in the stored types. The values are those xarray would store:
    the file's own (packed and copied variables) straight through zarr; times and durations
    (variables stored decoded) through xarray's region write, which encodes them with the units
    of the array's metadata. The values written, in the stored type (None for times)."""
    store = store_over(job.write_store.location, job.write_store.staged)  # its own documents
    var = run.data
    if var.dtype.kind in "mM":
        import xarray as xr

        with NETCDF_LOCK:  # the file's values, read while no other thread touches netCDF-C
            plain = _load(var)
        plain.attrs = {}  # the array's own encoding (units, fill value) applies; attributes are not written here
        xr.Dataset({run.name: plain}).to_zarr(store, group=run.group, mode="r+", consolidated=False,
                                             region=dict(zip(var.dims, run.region)), zarr_format=job.zarr_format,
                                             write_empty_chunks=True)
        return None
    import zarr

    path = run.name if run.group is None else f"{run.group}/{run.name}"
    array = zarr.open_array(store, path=path, mode="r+", zarr_format=job.zarr_format)
    # every chunk an object: a resumed run checks they are there
    array = array.with_config({"write_empty_chunks": True})
    with NETCDF_LOCK:
        values = np.asarray(_load(var).values)
    array[run.region] = values
    return values


def _load(var: Any) -> Any:
    """The run's values in memory, read in this thread. The variable is a dask array; computed
    with the default scheduler inside a task on a worker it would submit its pieces to the
    cluster from that task and wait for them: with every worker thread so waiting, nothing runs
    (a deadlock on one thread per worker)."""
    return var.copy(deep=False).load(scheduler="synchronous")
