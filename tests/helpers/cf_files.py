"""Real netCDF files for the CF tests, written with netCDF4, attributes exactly as given.

netCDF4-python sets ``_FillValue`` only at creation and in the variable's type, but files in the
wild hold other ones (ERA-Interim's int16 variables carry a double NaN ``_FillValue``). For the
classic formats :func:`write_variable` writes such a value under a placeholder name of the same
length and renames it in the header, which stores names as plain bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

PLACEHOLDER = "_FillValuX"
CLASSIC = ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA")


def fill_is_native(value: Any, dtype: Any) -> bool:
    """Whether netCDF4 can write ``value`` as ``_FillValue`` of a ``dtype`` variable at creation."""
    arr = np.asarray(value)
    if arr.size != 1:
        return False
    dtype = np.dtype(dtype)
    v = arr.reshape(())[()]
    if dtype.kind == "f":
        return arr.dtype == dtype
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.isfinite(v) and float(v).is_integer()):
        return False
    info = np.iinfo(dtype)
    return info.min <= int(v) <= info.max and arr.dtype == dtype


def write_variable(path: Path | str, fmt: str, data: np.ndarray, attrs: dict[str, Any], *, name: str = "v",
                   dims: tuple[str, ...] | None = None, unlimited: str | None = None) -> None:
    """A file holding one variable ``name`` with ``data`` (its dtype as stored) and ``attrs``."""
    import netCDF4

    attrs = dict(attrs)
    fill = attrs.pop("_FillValue", None)
    native = fill is not None and fill_is_native(fill, data.dtype)
    if fill is not None and not native and fmt not in CLASSIC:
        raise ValueError("a _FillValue of another type can only be written to the classic formats")
    dims = dims or tuple(f"d{i}" for i in range(data.ndim))
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        for d, n in zip(dims, data.shape):
            nc.createDimension(d, None if d == unlimited else n)
        v = nc.createVariable(name, data.dtype, dims, fill_value=data.dtype.type(fill) if native else None)
        v.set_auto_maskandscale(False)
        v.set_auto_chartostring(False)
        for key, value in attrs.items():
            v.setncattr(key, value)
        if fill is not None and not native:
            v.setncattr(PLACEHOLDER, fill)
        if data.size:
            v[...] = data
    if fill is not None and not native:
        raw = Path(path).read_bytes()
        assert raw.count(PLACEHOLDER.encode()) == 1
        Path(path).write_bytes(raw.replace(PLACEHOLDER.encode(), b"_FillValue"))


def write_strings(path: Path | str, *, group: bool = False) -> Path | str:
    """A netCDF-4 file with a variable-length string variable ``names`` ("a", "bé", "c") and a
    char array ``chars`` (b"ab", b"cd", b"ef"); with ``group``, a group ``g`` holding string
    ``labels`` ("p", "q") too."""
    import netCDF4

    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 3)
        nc.createDimension("n", 4)
        v = nc.createVariable("names", str, ("x",))
        v[:] = np.array(["a", "bé", "c"], dtype=object)
        c = nc.createVariable("chars", "S1", ("x", "n"))
        c[:] = netCDF4.stringtochar(np.array(["ab", "cd", "ef"], "S4"))
        if group:
            g = nc.createGroup("g")
            g.createDimension("y", 2)
            g.createVariable("labels", str, ("y",))[:] = np.array(["p", "q"], dtype=object)
    return path
