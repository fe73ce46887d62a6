"""benchmarks/run.py runs every benchmark, reports the ones that fail and goes on (the benchmarks
themselves run in CI's quick mode, not here: these tests check the runner and the entry points)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_every_benchmark_has_the_runners_entry_point() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_run", BENCHMARKS / "run.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    names = runner.benchmarks()
    assert {"bench_bits", "bench_casts", "bench_inspect", "bench_migrate", "bench_transpose", "bench_zfp",
            "scaling", "cf_difference"} <= set(names)
    for name in names:
        tree = ast.parse((BENCHMARKS / f"{name}.py").read_text())
        runs = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "run"]
        assert runs, f"{name}.py has no run()"
        args = [a.arg for a in runs[0].args.args + runs[0].args.kwonlyargs]
        assert "quick" in args, f"{name}.py: run() takes no quick"


def test_a_failing_benchmark_is_reported_and_the_others_run(tmp_path) -> None:
    shutil.copy(BENCHMARKS / "run.py", tmp_path / "run.py")
    (tmp_path / "bench_a_ok.py").write_text("def run(quick=False):\n    print('a ran', quick)\n")
    (tmp_path / "bench_b_raises.py").write_text("def run(quick=False):\n    raise RuntimeError('b broke')\n")
    (tmp_path / "bench_c_norun.py").write_text("def main():\n    pass\n")
    (tmp_path / "bench_d_crash.py").write_text("import os\ndef run(quick=False):\n    os.abort()\n")
    (tmp_path / "bench_e_ok.py").write_text("def run(quick=False):\n    print('e ran', quick)\n")
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), "--quick"], capture_output=True, text=True,
                          timeout=300, check=False)
    out = done.stdout
    assert done.returncode == 1, out
    assert "a ran True" in out and "e ran True" in out  # the ones after the failures ran
    assert "RuntimeError: b broke" in done.stderr
    assert "has no run(quick: bool = False)" in done.stderr
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith(("a_ok", "b_", "c_", "d_", "e_"))}
    assert lines["a_ok"].endswith("ok") and lines["e_ok"].endswith("ok")
    assert "FAILED" in lines["b_raises"] and "FAILED" in lines["c_norun"] and "FAILED" in lines["d_crash"]
    assert "5 benchmarks in" in out and "3 failed: b_raises, c_norun, d_crash" in out
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), "a_ok"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0 and "a ran False" in done.stdout and "b broke" not in done.stderr
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), "nosuch"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2 and "no benchmark nosuch; the benchmarks are: a_ok" in done.stderr
