"""The numeric core: pure functions on numpy arrays, independent of numcodecs and zarr."""
