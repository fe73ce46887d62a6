"""Run many ``numcodecs-ext`` command lines fast, each in a process of its own.

One interpreter imports numcodecs_ext and every tool module once, then forks a child per command
line: the child points stdout and stderr at files, caps its memory and time, and runs
``numcodecs_ext.cli.main`` as the console script does (a traceback escaping it is printed, as
Python would). The parent collects each child's exit status (``-N`` when signal N ended it),
stdout and stderr. Starting Python, zarr, xarray and dask once instead of once per command line
makes a catalogue of hundreds of hostile command lines affordable.

Usage (from the tests): ``python tests/helpers/forked_cli.py < cases.json > results.json``, where the
cases are ``[{"id", "argv", "cwd", "timeout"}]`` and the results ``{id: {"status", "stdout",
"stderr", "seconds"}}``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any

MEMORY_CAP = 6 << 30  # address space per child: a command that tries to take more fails


def _child(case: dict[str, Any], out_path: str, err_path: str) -> None:  # pragma: no cover - in a child
    import resource
    import signal
    import traceback

    status = 1
    try:
        os.chdir(case["cwd"])
        for fd, path in ((1, out_path), (2, err_path)):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        signal.alarm(int(case.get("timeout", 120)))  # SIGALRM ends a command that hangs
        from numcodecs_ext.cli import main

        sys.argv = ["numcodecs-ext", *case["argv"]]
        status = main(case["argv"])
    except SystemExit as e:  # argparse's usage errors and --help
        code = e.code
        if isinstance(code, str):
            print(code, file=sys.stderr)
        status = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # noqa: BLE001 - what Python would print for an escaped exception
        traceback.print_exc()
        status = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status if isinstance(status, int) and 0 <= status < 256 else 1)


def run(cases: list[dict[str, Any]], workers: int = 2) -> dict[str, dict[str, Any]]:
    """Run ``cases`` (at most ``workers`` at a time) and return their results by id."""
    import tempfile

    results: dict[str, dict[str, Any]] = {}
    pending = list(cases)
    running: dict[int, tuple[dict[str, Any], str, str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        while pending or running:
            while pending and len(running) < workers:
                case = pending.pop(0)
                out_path = os.path.join(tmp, f"{len(results) + len(running)}-{os.getpid()}-out")
                err_path = out_path[:-3] + "err"
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child
                    _child(case, out_path, err_path)
                running[pid] = (case, out_path, err_path, time.perf_counter())
            pid, wait_status = os.wait()
            if pid not in running:
                continue
            case, out_path, err_path, t0 = running.pop(pid)
            status = os.waitstatus_to_exitcode(wait_status)
            with open(out_path, "rb") as f:
                out = f.read().decode("utf-8", "backslashreplace")
            with open(err_path, "rb") as f:
                err = f.read().decode("utf-8", "backslashreplace")
            results[case["id"]] = {"status": status, "stdout": out, "stderr": err,
                                   "seconds": time.perf_counter() - t0}
    return results


def _warm() -> None:
    """Import every tool module (and what they import) once, before any fork."""
    from numcodecs_ext.cli import COMMANDS

    for module, _ in COMMANDS.values():
        try:
            importlib.import_module(module)
        except ImportError:  # the command itself will say what is missing
            pass
    for optional in ("xarray", "netCDF4", "dask.array", "zarr", "numcodecs", "tqdm"):
        try:
            importlib.import_module(optional)
        except ImportError:
            pass


if __name__ == "__main__":
    _warm()
    cases = json.load(sys.stdin)
    json.dump(run(cases, workers=int(os.environ.get("FORKED_CLI_WORKERS", "2"))), sys.stdout)
