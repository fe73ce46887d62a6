"""The hostile-input catalogue: every command on inputs a hostile user would give it.

Every command (demo, info, convert, suggest, migrate, normalize, inspect) runs, each command line
in a process of its own (``tests/helpers/forked_cli.py``: forked from one warm interpreter, with a memory
cap and a time limit), on missing paths, files given for directories and directories for files,
empty directories, garbage and truncated JSON, truncated and garbage netCDF files, links that
dangle or loop, stores with broken metadata or corrupt chunks, destinations that exist or lie
inside the source, URLs of unknown schemes or without their package, unknown options, and absurd
values for every numeric option (found by reading each command's parser, so an option added later
is covered too). Each must end with a message and a status in {0, 1, 2}: never a traceback, never
the safety net's "unexpected", never a numpy repr, never out of time or memory. Usage problems
must exit 2 and path problems say what is wrong with the path.

A few command lines also run in a fresh ``numcodecs-ext`` process, as a user starts it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from numcodecs_ext.cli import COMMANDS
from tests.helpers import HELPERS



# -- the garden of hostile inputs -------------------------------------------------------------------


def _netcdf(path: Path) -> None:
    import xarray as xr

    q = (np.arange(4 * 5 * 6) % 2000).reshape(4, 5, 6).astype("int16")
    q[0, 0, 0] = -32767
    attrs = {"scale_factor": np.float32(0.01), "add_offset": np.float32(273.15), "_FillValue": np.int16(-32767),
             "units": "K"}
    ds = xr.Dataset({"t2m": (("time", "y", "x"), q, attrs)},
                    coords={"time": np.arange(4), "y": np.arange(5.0), "x": np.arange(6.0)})
    ds.to_netcdf(path, encoding={"t2m": {"zlib": True}})


def build_garden(root: Path) -> None:
    """Every input the catalogue names, under ``root``."""
    import numcodecs
    import zarr

    root.mkdir(parents=True, exist_ok=True)
    (root / "afile").write_text("just text\n")
    (root / "emptydir").mkdir()
    (root / "loop").symlink_to("loop")
    (root / "dangling").symlink_to("nothing-here")
    _netcdf(root / "packed.nc")
    data = (root / "packed.nc").read_bytes()
    (root / "truncated.nc").write_bytes(data[: len(data) // 2])
    (root / "garbage.nc").write_bytes(bytes(range(256)) * 16)
    (root / "empty.nc").write_bytes(b"")
    (root / "notnc.zarr").mkdir()  # a directory named like a store, with nothing in it

    v2 = zarr.create_array(root / "v2.zarr", shape=(40, 30), chunks=(10, 30), dtype="float32", zarr_format=2,
                           fill_value=0, filters=[numcodecs.FixedScaleOffset(offset=270, scale=100, dtype="<f4",
                                                                             astype="<u2")])
    v2[:] = np.linspace(270, 300, 1200, dtype="float32").reshape(40, 30)
    v3 = zarr.create_array(root / "v3.zarr", shape=(40, 30), chunks=(10, 30), dtype="float32", fill_value=0)
    v3[:] = np.linspace(270, 300, 1200, dtype="float32").reshape(40, 30)
    shutil.copytree(root / "v2.zarr", root / "corruptchunk.zarr")
    (root / "corruptchunk.zarr" / "1.0").write_bytes(b"\x28\xb5\x2f\xfd garbage that is not zstd")
    shutil.copytree(root / "v3.zarr", root / "garbagejson.zarr")
    (root / "garbagejson.zarr" / "zarr.json").write_text("{not json")
    shutil.copytree(root / "v2.zarr", root / "garbagezarray.zarr")
    (root / "garbagezarray.zarr" / ".zarray").write_text("[1, 2")
    shutil.copytree(root / "v3.zarr", root / "truncjson.zarr")
    text = (root / "v3.zarr" / "zarr.json").read_text()
    (root / "truncjson.zarr" / "zarr.json").write_text(text[: len(text) // 2])
    for name, change in {"dimnames5.zarr": {"dimension_names": 5}, "shapestr.zarr": {"shape": "big"},
                         "hugeshape.zarr": {"shape": [2**62, 2**62]}, "zerochunks.zarr":
                         {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 0]}}},
                         "codecsint.zarr": {"codecs": 7}, "dtypebad.zarr": {"data_type": {"no": "name"}}}.items():
        shutil.copytree(root / "v3.zarr", root / name)
        meta = json.loads(text) | change
        (root / name / "zarr.json").write_text(json.dumps(meta))
    from zarr.storage import ZipStore

    zipped = ZipStore(root / "store.zip", mode="w")
    zarr.create_array(zipped, shape=(4,), dtype="int8", fill_value=0)[:] = 1
    zipped.close()
    data = (root / "store.zip").read_bytes()
    (root / "truncated.zip").write_bytes(data[: len(data) // 2])
    shutil.copytree(root / "v3.zarr", root / "loopinside.zarr")
    (root / "loopinside.zarr" / "c" / "back").symlink_to("..")
    (root / "loopinside.zarr" / "c" / "gone").symlink_to("nowhere")
    # a zarr v3 store written through zarr's numcodecs adapter: what normalize rewrites
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from zarr.codecs.numcodecs import FixedScaleOffset

        nc = zarr.create_array(root / "v3nc.zarr", shape=(40, 30), chunks=(10, 30), dtype="float64", fill_value=0,
                               filters=[FixedScaleOffset(offset=270, scale=100, dtype="<f8", astype="<u2")])
        nc[:] = np.linspace(270, 300, 1200).reshape(40, 30)


# -- the catalogue ----------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    argv: list[str]
    status: frozenset[int] = frozenset({0, 1, 2})  # the statuses that are right
    say: str | None = None  # a regex stderr must match (what is wrong)
    copies: list[str] = field(default_factory=list)  # inputs copied fresh for this case (changed in place)
    timeout: int = 180
    xfail: str | None = None  # the reason, for an entry a tool's owner still has to fix


USAGE = frozenset({2})
FAILED = frozenset({1})
USAGE_OR_FAILED = frozenset({1, 2})

# what each command is given in place of a path, with the status and words expected
MISSING = ("nonexist.zarr", USAGE, r"does not exist")
LOOP = ("loop", USAGE, r"loop")
DANGLING = ("dangling", USAGE, r"does not exist|dangling|link")
EMPTY_STRING = ("", USAGE, r"empty")
SCHEME = ("nosuchscheme://bucket/store.zarr", USAGE, r"unknown URL scheme")
PART_FILE = ("afile/inside.zarr", USAGE, r"does not exist|not a directory|is a file")


def _missing_backend() -> tuple[str, str] | None:
    from numcodecs_ext.store.targets import _PACKAGES

    for scheme, package in _PACKAGES.items():
        name = package.split(" ")[0]
        if importlib.util.find_spec(name) is None:
            return scheme, name
    return None


def _path_cases(command: str, before: list[str], after: list[str], kinds: dict[str, tuple[str, frozenset, str | None]]
                ) -> list[Case]:
    return [Case(f"{command} {label}", [command, *before, target, *after], status, say)
            for label, (target, status, say) in kinds.items()]


STORE_PATHS = {
    "missing store": MISSING, "a file as store": ("afile", USAGE, r"is a file|not a (zarr )?(directory|store)"),
    "an empty directory": ("emptydir", USAGE, r"not a zarr|no zarr"), "a link loop": LOOP,
    "a dangling link": DANGLING, "an empty path": EMPTY_STRING, "an unknown URL scheme": SCHEME,
    "a path through a file": PART_FILE,
}
NETCDF_PATHS = {
    "missing file": ("nonexist.nc", USAGE, r"does not exist"),
    "a directory as file": ("v3.zarr", USAGE, r"is a directory"), "a link loop": LOOP,
    "a dangling link": DANGLING, "an empty path": EMPTY_STRING, "an unknown URL scheme": SCHEME,
    "a path through a file": ("afile/x.nc", USAGE, r"does not exist|not a directory|is a file"),
    "a truncated netCDF": ("truncated.nc", FAILED, r"truncated|shorter|corrupt|not a valid|HDF|NetCDF"),
    "garbage bytes as netCDF": ("garbage.nc", USAGE_OR_FAILED, r"not a netCDF|netCDF|NetCDF|HDF|format"),
    "an empty file as netCDF": ("empty.nc", USAGE_OR_FAILED, r"empty|netCDF|NetCDF|format"),
}
BROKEN_STORES = {
    "garbage zarr.json": ("garbagejson.zarr", USAGE_OR_FAILED, None),
    "garbage .zarray": ("garbagezarray.zarr", USAGE_OR_FAILED, None),
    "truncated zarr.json": ("truncjson.zarr", USAGE_OR_FAILED, None),
    "dimension_names 5": ("dimnames5.zarr", USAGE_OR_FAILED, None),
    "shape a string": ("shapestr.zarr", USAGE_OR_FAILED, None),
    "shape 2**62 x 2**62": ("hugeshape.zarr", frozenset({0, 1, 2}), None),
    "chunks of 0": ("zerochunks.zarr", USAGE_OR_FAILED, None),
    "codecs an integer": ("codecsint.zarr", USAGE_OR_FAILED, None),
    "data_type without a name": ("dtypebad.zarr", USAGE_OR_FAILED, None),
    "links looping and dangling inside": ("loopinside.zarr", frozenset({0, 1}), None),
    "a truncated zip store": ("truncated.zip", USAGE_OR_FAILED, r"zip|is a file"),
}

# valid positionals per command, so that an option's value is what a case tests
VALID = {
    "demo": None,  # runs every pipeline: its options are tested one by one below
    "info": [],
    "convert": ["packed.nc", "{out}"],
    "suggest": ["packed.nc"],
    "migrate": ["v2.zarr", "{out}"],
    "normalize": ["{copy:v3nc.zarr}", "--dry-run"],
    "inspect": ["v3.zarr"],
}
ABSURD = ["0", "-1", "-5", "nan", "inf", "-inf", "1e308", "1e-308", "99999999999999999999", "-0", "abc", "", "0x10"]
ALWAYS_USAGE = {"nan", "-inf", "abc", ""}  # never a valid number for any option here
# options whose range is known: these values are out of it and must be refused at once
OUT_OF_RANGE = {
    ("convert", "--chunk-mib"): {"0", "-1", "-5", "-0", "inf", "1e-308"},
    ("suggest", "--tolerance"): {"0", "-1", "-5", "-0", "inf"},
}


def _numeric_options(command: str) -> list[tuple[str, object]]:
    """(option, type) for every option of ``command`` that takes a number."""
    from numcodecs_ext.cli import _parser

    parser = _parser(command)
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")  # noqa: SLF001
    p = sub.choices[command]
    out = []
    for action in p._actions:  # noqa: SLF001 - introspection, so that new options are covered
        if action.option_strings and action.type in (int, float) and action.nargs in (None, 1, "?"):
            out.append((max(action.option_strings, key=len), action.type))
    return out


def catalogue() -> list[Case]:
    cases: list[Case] = []
    backend = _missing_backend()
    for command in COMMANDS:
        cases.append(Case(f"{command} --bogus", [command, "--bogus"], USAGE, r"unrecognized arguments|usage"))
        cases.append(Case(f"{command} --help", [command, "--help"], frozenset({0})))
    cases.append(Case("an unknown command", ["bogus"], USAGE, r"unknown command 'bogus'.*inspect"))
    cases.append(Case("info with an argument", ["info", "extra"], USAGE, r"unrecognized arguments"))
    cases.append(Case("info", ["info"], frozenset({0})))
    cases.append(Case("info -q --json", ["-q", "info", "--json"], frozenset({0})))
    # demo: its paths (the pipelines themselves are tested in test_cli.py)
    cases += [
        Case("demo --out a file", ["demo", "--out", "afile"], USAGE, r"is a file"),
        Case("demo --out through a file", ["demo", "--out", "afile/sub"], USAGE, r"afile"),
        Case("demo --out a dangling link", ["demo", "--out", "dangling"], USAGE, r"dangling|cannot be made"),
        Case("demo --plot a directory", ["demo", "--plot", "emptydir"], USAGE, r"is a directory"),
        Case("demo --plot into a missing folder", ["demo", "--plot", "nofolder/t.png"], USAGE, r"does not exist"),
        Case("demo --plot not an image", ["demo", "--plot", "t.txt"], USAGE, r"\.png"),
    ]
    # the demo writes to a local folder only: a URL or an empty path is refused, not made a folder
    cases += [Case(f"demo --out {out!r}", ["demo", "--out", out, "--no-code"], USAGE, r"--out.*(empty|local folder)")
              for out in ("s3://bucket/demo", "memory://demo", "", " ")]
    # storage options of the wrong type, for every command that takes them: refused, naming the option
    wrong_options = {'{"client_kwargs": "x"}': "client_kwargs", '{"client_kwargs": {"endpoint_url": 5}}':
                     "client_kwargs.endpoint_url", '{"config_kwargs": {"retries": "x"}}': "config_kwargs.retries",
                     '{"key": 123}': '"key"', "null": "not null", '{"anon": null}': '"anon"'}
    for command, positionals in (("inspect", ["v3.zarr"]), ("suggest", ["packed.nc"]),
                                 ("convert", ["packed.nc", "{out}"]), ("migrate", ["v2.zarr", "{out}"]),
                                 ("normalize", ["{copy:v3nc.zarr}"])):
        for options, name in wrong_options.items():
            cases.append(Case(f"{command} --storage-options {options}", [command, *positionals, "--storage-options",
                                                                          options], USAGE, re.escape(name)))
    # object-store URLs without a bucket
    for command, after in (("inspect", []), ("migrate", ["{out}"]), ("convert", [])):
        first = ["packed.nc", "s3://"] if command == "convert" else ["s3://", *after]
        cases.append(Case(f"{command} s3:// without a bucket", [command, *first], USAGE, r"bucket name is needed"))
    # every command that reads a store or file, on every hostile path
    cases += _path_cases("inspect", [], [], STORE_PATHS | BROKEN_STORES)
    cases += _path_cases("inspect --json", [], ["--json"], {"garbage zarr.json": BROKEN_STORES["garbage zarr.json"]})
    cases.append(Case("inspect a zip store", ["inspect", "store.zip"], frozenset({0})))
    cases.append(Case("inspect zip:// of a missing file", ["inspect", "zip://::missing.zip"], USAGE, r"missing.zip"))
    cases += _path_cases("suggest", [], [], STORE_PATHS | BROKEN_STORES | {
        k: v for k, v in NETCDF_PATHS.items() if "netCDF" in k})
    cases.append(Case("suggest a corrupt chunk", ["suggest", "corruptchunk.zarr"], FAILED, None))
    cases += _path_cases("convert", [], ["{out}"], NETCDF_PATHS)
    cases += _path_cases("migrate", [], ["{out}"], STORE_PATHS | {
        "garbage .zarray": BROKEN_STORES["garbage .zarray"],
        "a v3 store": ("v3.zarr", USAGE, r"v3|not a zarr v2|no \.zarray|zarr v2")})
    cases.append(Case("migrate a corrupt chunk", ["migrate", "corruptchunk.zarr", "{out}"], FAILED, None))
    cases += _path_cases("normalize", [], [], STORE_PATHS | {
        "garbage zarr.json": BROKEN_STORES["garbage zarr.json"],
        "a v2 store": ("v2.zarr", USAGE, r"v2|not a zarr v3|zarr v3")})
    if backend is not None:
        scheme, package = backend
        for command, after in (("inspect", []), ("suggest", []), ("migrate", ["{out}"]), ("normalize", []),
                               ("convert", ["{out}"])):
            cases.append(Case(f"{command} {scheme}:// without {package}",
                              [command, f"{scheme}://bucket/x.zarr", *after], USAGE, rf"pip install {package}"))
    # destinations that must be refused
    for command, src in (("convert", "packed.nc"), ("migrate", "v2.zarr")):
        cases += [
            Case(f"{command} to an existing store", [command, src, "v3.zarr"], USAGE, r"exists"),
            Case(f"{command} to a file", [command, src, "afile"], USAGE, r"exists|is a file"),
            Case(f"{command} to a path through a file", [command, src, "afile/out.zarr"], USAGE,
                 r"afile|not a directory|is a file"),
            Case(f"{command} onto its source", [command, src, src], USAGE, r"exists|source|same"),
            Case(f"{command} to an unknown URL scheme", [command, src, "nosuchscheme://b/out.zarr"], USAGE,
                 r"unknown URL scheme"),
            Case(f"{command} without a destination", [command, src], USAGE, r"destination|required|DST|dst"),
        ]
    cases.append(Case("migrate into its source", ["migrate", "{copy:v2.zarr}", "{copy:v2.zarr}/sub.zarr"], USAGE,
                      r"inside|overlap|source"))
    cases.append(Case("convert without arguments", ["convert"], USAGE, r"required|usage"))
    cases.append(Case("suggest with both --tolerance and --dtype", ["suggest", "packed.nc", "--tolerance", "0.1",
                                                                    "--dtype", "int16"], USAGE, r"not allowed"))
    # absurd values of every numeric option, on otherwise valid command lines
    for command, positionals in VALID.items():
        if positionals is None:
            continue
        for option, kind in _numeric_options(command):
            for value in ABSURD:
                refused = value in ALWAYS_USAGE or value in OUT_OF_RANGE.get((command, option), ())
                status = USAGE if refused else frozenset({0, 2})
                cases.append(Case(f"{command} {option} {value!r}", [command, *positionals, option, value], status,
                                  rf"{re.escape(option)}" if status == USAGE and value not in ("abc", "") else None))
    # text options that hold numbers
    for value in ("time=0", "time=-1", "time=1e30", "time=abc", "nosuchdim=5", "=5", "time", "time=2,time=3",
                  "time=99999999999999999999"):
        cases.append(Case(f"convert --chunks {value!r}", ["convert", "packed.nc", "{out}", "--chunks", value],
                          frozenset({0, 2}) if value == "time=99999999999999999999" else USAGE,
                          r"--chunks|time|dimension"))
    cases.append(Case("suggest --array that is not there", ["suggest", "packed.nc", "--array", "nosuch"], USAGE,
                      r"nosuch"))
    for command, positionals in (("migrate", ["v2.zarr", "{out}"]), ("normalize", ["{copy:v3nc.zarr}"])):
        cases.append(Case(f"{command} --match bogus", [command, *positionals, "--match", "bogus"], USAGE,
                          r"invalid choice"))
    return [_xfail(c) for c in cases]


# entries the tools' owners still have to fix (exact reasons; the lead is told which)
XFAIL: dict[str, str] = {
}


def _zarr_31() -> bool:
    import zarr

    return tuple(int(p) for p in zarr.__version__.split(".")[:2]) < (3, 2)


# entries that fail only with some versions of zarr: {id: (whether it fails here, the reason)}
XFAIL_HERE: dict[str, tuple[bool, str]] = {
    "suggest chunks of 0": (_zarr_31(), "suggest (zarr 3.1 only): unexpected ZeroDivisionError on a chunk_shape "
                                        "of [0, 0] (zarr 3.4 refuses the metadata itself)"),
}


def _xfail(case: Case) -> Case:
    case.xfail = XFAIL.get(case.id)
    fails_here, reason = XFAIL_HERE.get(case.id, (False, None))
    if fails_here:
        case.xfail = reason
    return case


CASES = catalogue()


def _prepare(cases: list[Case], garden: Path) -> list[dict]:
    out = []
    for i, case in enumerate(cases):
        argv = []
        for arg in case.argv:
            arg = arg.replace("{out}", f"out/{i}.zarr")
            for name in re.findall(r"\{copy:([^}]+)\}", arg):
                copy = garden / "copies" / f"{i}-{name}"
                if not copy.exists():
                    shutil.copytree(garden / name, copy, symlinks=True)
                arg = arg.replace(f"{{copy:{name}}}", f"copies/{i}-{name}")
            argv.append(arg)
        out.append({"id": case.id, "argv": argv, "cwd": str(garden), "timeout": case.timeout})
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    garden = tmp_path_factory.mktemp("garden")
    build_garden(garden)
    (garden / "out").mkdir()
    cases = _prepare(CASES, garden)
    env = {k: v for k, v in os.environ.items() if k != "NUMCODECS_EXT_TRACEBACK"}
    done = subprocess.run([sys.executable, str(HELPERS / "forked_cli.py")], input=json.dumps(cases),
                          capture_output=True, text=True, env=env, timeout=3600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


NUMPY_REPR = re.compile(r"\bnp\.(float|int|uint|bool|complex|str_|datetime64|timedelta64)\w*\(")


def check(case: Case, result: dict) -> None:
    err, out, status = result["stderr"], result["stdout"], result["status"]
    where = f"{case.argv} -> status {status}\nstderr: {err[-2000:]}"
    assert status >= 0, f"ended by signal {-status} (14: out of time after {case.timeout} s): {where}"
    assert "Traceback" not in err and "Traceback" not in out, where
    assert "unexpected" not in err, where
    assert not NUMPY_REPR.search(err) and not NUMPY_REPR.search(out), where
    assert status in (0, 1, 2), where
    assert status in case.status, f"expected status {sorted(case.status)}: {where}"
    if status != 0:
        assert err.strip(), f"a failure without a message: {where}"
    if case.say is not None and status != 0:
        assert re.search(case.say, err, flags=re.S | re.I), f"stderr does not say {case.say!r}: {where}"


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=c.xfail))
                                  if c.xfail else c for c in CASES], ids=[c.id for c in CASES])
def test_hostile_input(case: Case, results: dict[str, dict]) -> None:
    check(case, results[case.id])


def test_catalogue_covers_every_command_and_option() -> None:
    ids = {c.id for c in CASES}
    for command in COMMANDS:
        assert any(c.argv[0] == command for c in CASES), command
        assert f"{command} --bogus" in ids
    for command, positionals in VALID.items():
        for option, _ in _numeric_options(command) if positionals is not None else ():
            assert f"{command} {option} 'nan'" in ids
    assert len(ids) == len(CASES), "case ids must be unique"


def test_the_check_can_fail() -> None:
    case = Case("x", ["x"], USAGE, r"does not exist")
    for bad in ({"status": 1, "stdout": "", "stderr": "does not exist"},
                {"status": 2, "stdout": "", "stderr": "Traceback (most recent call last):\n does not exist"},
                {"status": 2, "stdout": "", "stderr": "numcodecs-ext x: unexpected KeyError: does not exist"},
                {"status": 2, "stdout": "", "stderr": "fill value np.float64(1.0) does not exist"},
                {"status": 2, "stdout": "", "stderr": "no such file"},
                {"status": -14, "stdout": "", "stderr": ""}):
        with pytest.raises(AssertionError):
            check(case, bad)
    check(case, {"status": 2, "stdout": "", "stderr": "numcodecs-ext x: nonexist: does not exist"})


# -- the same in fresh processes, as a user starts them ----------------------------------------------

FRESH = [(["bogus"], 2), (["inspect", "nonexist.zarr"], 2), (["suggest", "nonexist.zarr"], 2),
         (["convert", "nonexist.nc", "out.zarr"], 2), (["migrate", "nonexist.zarr", "out.zarr"], 2),
         (["normalize", "nonexist.zarr"], 2), (["demo", "--out", "afile"], 2), (["info", "--bogus"], 2)]


@pytest.mark.parametrize(("argv", "status"), FRESH, ids=[" ".join(a) for a, _ in FRESH])
def test_fresh_process(argv: list[str], status: int, tmp_path) -> None:
    (tmp_path / "afile").write_text("x")
    done = subprocess.run([sys.executable, "-W", "error", "-m", "numcodecs_ext", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr and done.stdout == ""
    assert done.stderr.startswith(("numcodecs-ext", "usage: numcodecs-ext")), done.stderr


def test_skipped_entries_are_said(capsys) -> None:
    """The catalogue has no silent gaps: a scheme whose package is installed here is the only
    entry that can drop out, and then another scheme stands in."""
    backend = _missing_backend()
    if backend is None:
        pytest.skip("every fsspec backend named in storage._PACKAGES is installed: no scheme "
                    "without its package to try")
    assert any(backend[0] + "://" in " ".join(c.argv) for c in CASES)
