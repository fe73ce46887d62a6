"""Registration: numcodecs and zarr find every codec in a process that never imported us."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, sys, warnings
    warnings.simplefilter("error")
    import numcodecs, numpy as np, zarr
    from zarr.storage import MemoryStore

    ids = {
        "transpose": {"order": [1, 0]},
        "scale_offset": {"offset": 1, "scale": 2},
        "cast_value": {"data_type": "int16"},
        "zfp": {"mode": "reversible"},
        "zarrs.zfp": {"mode": "reversible"},
        "reshape": {"shape": [-1]},
        "numcodecs_ext.bitround": {"keepbits": 3},
        "numcodecs_ext.packbits": {"dtype": "bool"},
    }
    for codec_id, config in ids.items():
        codec = numcodecs.get_codec({"id": codec_id, **config})
        assert type(codec).__module__.startswith("numcodecs_ext."), codec

    for name, config, kind in [
        ("transpose", {"order": [1, 0]}, "filters"),
        ("numcodecs.transpose", {"order": [1, 0]}, "filters"),
        ("scale_offset", {"offset": 1}, "filters"),
        ("numcodecs.scale_offset", {"offset": 1}, "filters"),
        ("cast_value", {"data_type": "float32"}, "filters"),
        ("numcodecs.cast_value", {"data_type": "float32"}, "filters"),
        ("zfp", {"mode": "reversible"}, "serializer"),
        ("zarrs.zfp", {"mode": "reversible"}, "serializer"),
        ("numcodecs.zfp", {"mode": "reversible"}, "serializer"),
        ("reshape", {"shape": [[0, 1]]}, "filters"),
        ("numcodecs.reshape", {"shape": [-1, 3]}, "filters"),
        ("bitround", {"keepbits": 52}, "filters"),
        ("numcodecs.bitround", {"keepbits": 52}, "filters"),
        ("packbits", {}, "serializer"),
    ]:
        store = MemoryStore()
        spec = {"name": name, "configuration": config}
        kwargs = {kind: [spec] if kind == "filters" else spec}
        z = zarr.create_array(store, shape=(4, 6), chunks=(2, 3), dtype="float64", fill_value=0, **kwargs)
        z[...] = np.arange(24.0).reshape(4, 6)
        again = zarr.open_array(store, mode="r")
        assert (again[...] == np.arange(24.0).reshape(4, 6)).all(), name
        print(name, type(again.metadata.codecs[0] if kind == "filters" else again.metadata.codecs[0]).__module__)
''')


def test_fresh_process_resolves_everything_without_warnings() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split() for line in done.stdout.splitlines())
    # every name resolves to ours (transpose too: zarr's checks order against the array's
    # dimensions, so a transpose after a reshape could not open)
    for name in ("transpose", "scale_offset", "cast_value", "zfp", "zarrs.zfp", "numcodecs.zfp",
                 "numcodecs.transpose", "numcodecs.scale_offset", "numcodecs.cast_value",
                 "reshape", "numcodecs.reshape", "bitround", "numcodecs.bitround", "packbits"):
        assert lines[name].startswith("numcodecs_ext."), (name, lines[name])


def test_import_registers_and_warns_nothing() -> None:
    code = "import warnings; warnings.simplefilter('error'); import numcodecs_ext, zarr, numcodecs"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_cast_value_arrays_work_without_cast_value_rs() -> None:
    """zarr >= 3.2's own cast_value needs cast-value-rs; by default ours is used and needs nothing."""
    code = textwrap.dedent('''
        import sys, warnings
        warnings.simplefilter("error")
        sys.modules["cast_value_rs"] = None  # as if it were not installed: importing it fails
        import numpy as np, zarr
        from zarr.storage import MemoryStore
        z = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="float64", fill_value=np.nan,
                              filters=[{"name": "cast_value", "configuration": {
                                  "data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]],
                                                                       "decode": [[0, "NaN"]]}}}])
        z[:4] = [1.0, np.nan, 3.0, 4.0]
        out = z[:]
        assert np.array_equal(out, [1.0, np.nan, 3.0, 4.0, np.nan, np.nan], equal_nan=True), out
        print(type(z.metadata.codecs[0]).__module__)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "numcodecs_ext.zarr3.cast_value"


FRESH = textwrap.dedent('''
    import multiprocessing, sys, warnings
    from pathlib import Path
    warnings.simplefilter("error")
    import numpy as np, zarr
    from zarr.core.dtype import data_type_registry
    try:
        from zarr.core.dtype import Struct
    except ImportError:  # zarr 3.1, which does not load data-type entry points: arrays of our
        from zarr.core.dtype import Structured as Struct  # data types need our import there
        import numcodecs_ext

    # zarr's own dtype test setup: iterate the registry while resolving data types (which loads
    # data-type plugins, us among them, lazily)
    for cls in data_type_registry.contents.values():
        if cls is Struct:
            cls.from_native_dtype(np.dtype([("a", np.float64), ("b", np.int8)]))

    def check(store: str) -> str:
        import warnings
        warnings.simplefilter("error")
        import numpy as np, zarr
        got = zarr.open_array(store, mode="r")[...]
        expected = np.load(store[:-len(".zarr")] + ".npy")
        assert got.tobytes() == expected.tobytes(), store
        return store

    if __name__ == "__main__":
        zarr.config.reset()  # our pin is one of zarr's defaults: it survives
        stores = sorted(str(p) for p in Path(sys.argv[1]).glob("*.zarr"))
        assert stores
        for store in stores:
            check(store)
        zarr.config.reset()
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            assert sorted(pool.map(check, stores)) == stores
        z = zarr.create_array({}, shape=(4,), dtype="float64",
                              filters=[{"name": "scale_offset", "configuration": {"scale": "0.5"}}])
        z[:] = 3.0
        assert (z[:] == 3.0).all()
        print(len(stores), type(z.filters[0]).__module__)
''')


def test_fresh_process_iterates_registry_resets_config_and_spawns(tmp_path) -> None:
    """A fresh process with warnings as errors: zarr's registry iteration pattern, config resets,
    every stored array kind (including those with our data types), a spawn pool over them."""
    from pathlib import Path

    script = tmp_path / "fresh.py"
    script.write_text(FRESH)
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "zarr"
    done = subprocess.run([sys.executable, str(script), str(fixtures)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    count, module = done.stdout.split()
    assert int(count) >= 9 and module.startswith("numcodecs_ext.")


def test_registration_is_idempotent_and_survives_config_reset() -> None:
    import zarr

    from numcodecs_ext._registry import ZARR_DEFAULTS, register_all
    from numcodecs_ext.zarr3.dtypes import register_zarr_dtypes

    register_all()
    register_all()
    assert register_zarr_dtypes() == []
    zarr.config.reset()
    for name, path in ZARR_DEFAULTS.items():  # zarr pins transpose and numcodecs.bitround itself
        assert zarr.config.get("codecs")[name] == path.replace(":", "."), name
    with zarr.config.set({"codecs.scale_offset": "zarr.codecs.ScaleOffset"}):
        register_all()  # a value the user set wins over our default
        assert zarr.config.get("codecs.scale_offset") == "zarr.codecs.ScaleOffset"
