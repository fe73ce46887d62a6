"""A rewritten run proved from its stored objects: what the store holds, decoded as zarr
decodes it, compared bit for bit; anything else defers to zarr's read (None or False)."""

from __future__ import annotations

import numpy as np
import zarr

from numcodecs_ext.migrate.readback import prove_stored
from numcodecs_ext.store.storage import Location
from numcodecs_ext.zarr3 import CastValue, ScaleOffset


def _array(tmp_path, filters, fill=250.0):
    arr = zarr.create_array(tmp_path / "s.zarr", name="t", shape=(10, 7), chunks=(4, 4), dtype="float32",
                            filters=filters, fill_value=fill)
    values = (250 + np.arange(70, dtype="f4").reshape(10, 7) / 4).astype("f4")
    values[8:, 4:] = fill  # the last chunk holds only the fill value: zarr stores no object for it
    arr[...] = values
    return arr, values, Location.parse(str(tmp_path / "s.zarr"))


FILTERS = [ScaleOffset(offset=250, scale=100), CastValue(data_type="uint16")]
SEL = (slice(0, 10), slice(0, 7))


def test_what_is_stored_proves_the_run(tmp_path):
    arr, values, loc = _array(tmp_path, FILTERS)
    assert not loc.exists("t/c/2/1")  # absent: read as the fill value
    assert prove_stored(loc, "t", arr, SEL, values, key="a") is True
    assert prove_stored(loc, "t", arr, (slice(4, 8), slice(0, 7)), values[4:8], key="a") is True


def test_a_changed_value_or_object_is_not_proved(tmp_path):
    arr, values, loc = _array(tmp_path, FILTERS)
    other = values.copy()
    other[9, 6] = np.nextafter(other[9, 6], np.float32(1e9))  # one ulp, in the absent chunk
    assert prove_stored(loc, "t", arr, SEL, other, key="b") is False
    other = values.copy()
    other[0, 0] = 250.01
    assert prove_stored(loc, "t", arr, SEL, other, key="b") is False
    path = tmp_path / "s.zarr" / "t" / "c" / "1" / "0"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # a bit flipped in the stored object
    path.write_bytes(bytes(data))
    assert prove_stored(loc, "t", arr, SEL, values, key="b") is False
    path.write_bytes(bytes(data[:-3]))  # truncated
    assert prove_stored(loc, "t", arr, SEL, values, key="b") is False
    path.unlink()  # gone: reads as the fill value, which these values are not
    assert prove_stored(loc, "t", arr, SEL, values, key="b") is False


def test_no_table_decoder_defers_to_zarr(tmp_path):
    arr, values, loc = _array(tmp_path, [])
    assert prove_stored(loc, "t", arr, SEL, values, key="c") is None
