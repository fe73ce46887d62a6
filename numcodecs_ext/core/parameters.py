"""Checks of numeric codec parameters that the core's chunk plans and the numcodecs classes
share: the data type a parameter is for, and a parameter as a scalar of it."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import dtype_kind, dtype_name, parse_dtype, show
from .errors import ConfigurationError
from .scalar_json import scalar_from_json

__all__ = ["check_numeric_dtype", "representable"]


def check_numeric_dtype(codec_id: str, key: str, value: Any) -> np.dtype:
    """Parse ``value`` as a data type that is an integer or real float type, or raise
    ValueError naming it (complex, bool, raw, string and variable-size types are refused)."""
    try:
        if not isinstance(value, (str, np.dtype, type)):
            raise ValueError("not a data type name")
        dt = parse_dtype(value)
    except (ValueError, TypeError):
        dt, reason = None, "not a data type"
    else:
        kind = dtype_kind(dt)
        reason = f"a {kind} type"
    if dt is None or kind not in ("int", "uint", "float"):
        invalid = "Invalid target data type: " if key == "data_type" else ""
        # zarr's own wording (its tests match it): kinds that are not numbers, and types that are
        # not fixed-size ones at all
        supported = "integer and floating-point" if dt is not None else "fixed-size integer and floating-point"
        raise ConfigurationError(
            codec_id, f"{invalid}{key}={show(value)} is {reason}; it only supports {supported} data types"
        )
    return dt


def representable(data: Any, dtype: np.dtype, label: str, note: str = "") -> Any:
    """``data`` (fill-value JSON) as a scalar of ``dtype``, or a ValueError that says
    ``<label> <data> <note> is not representable in dtype <name>`` and why (zarr's wording)."""
    what = f"{label} {show(data)}{note} is not representable in dtype {dtype_name(dtype)}"
    return scalar_from_json(data, dtype, what=what)
