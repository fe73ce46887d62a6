"""scale_offset's parameter errors name the value as JSON-like text, not as a numpy repr."""

from __future__ import annotations

import numpy as np
import pytest

from numcodecs_ext.core import scale_offset as so


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("offset,scale,name,shown", [("NaN", 1, "offset", "nan"), (0, "Infinity", "scale", "inf"),
                                                     (0, "-Infinity", "scale", "-inf")])
def test_non_finite_parameters_are_named_plainly(dtype: str, offset: object, scale: object, name: str,
                                                 shown: str) -> None:
    with pytest.raises(ValueError) as info:
        so.check_parameters(np.dtype(dtype), offset, scale)
    message = str(info.value)
    assert message == f"scale_offset {name} must be a finite number for {dtype}, got {shown}"
    assert "np." not in message
