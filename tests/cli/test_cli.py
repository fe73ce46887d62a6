"""The numcodecs-ext command: the demonstration on the embedded sample and ``info``."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from numcodecs_ext.cli import main
from numcodecs_ext.tools.demo import run_demo, sample_field
from numcodecs_ext.store.errors import UsageError


def test_demo_verifies_every_pipeline(tmp_path, capsys) -> None:
    assert main(["--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    for name in ("transpose [2, 1, 0] + zstd", "scale_offset+cast_value", "zfp reversible", "zfp fixed_accuracy"):
        assert name in out
    assert not any(line.rstrip().endswith("FAILED") for line in out.splitlines())
    assert len(list(tmp_path.glob("*.zarr"))) >= 5


def test_info_lists_codecs_and_versions(capsys) -> None:
    import json

    from numcodecs_ext._registry import ZARR
    from numcodecs_ext.tools.info import info

    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for word in ("numcodecs", "zarr", "libzfp: LibZfp", "scale_offset", "cast_value", "numcodecs.zfp",
                 "kernels (scale_offset, cast_value, transpose, zfp checks, bitround): "):
        assert word in out
    # every zarr name, numcodecs.* included, with the class zarr uses and why
    section = out.split("implementation zarr uses for each name:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in section] == list(ZARR)
    found = info()
    assert main(["info", "--json"]) == 0 and json.loads(capsys.readouterr().out) == found
    names = found["zarr_names"]
    assert names["numcodecs.scale_offset"]["uses"] == "numcodecs_ext.zarr3.scale_offset.NumcodecsScaleOffset"
    assert "reshape" in names["transpose"]["why"] and "Rust" not in names["transpose"]["why"]
    assert "integer" in names["numcodecs.bitround"]["why"] and "Rust" not in names["numcodecs.bitround"]["why"]
    assert "cast-value-rs" in names["cast_value"]["why"]
    assert "Rust" not in names["scale_offset"]["why"]


def test_python_dash_m() -> None:
    done = subprocess.run([sys.executable, "-W", "error", "-m", "numcodecs_ext", "info"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert ("numcodecs ids: transpose, scale_offset, cast_value, zfp, zarrs.zfp, reshape, "
            "numcodecs_ext.bitround, numcodecs_ext.packbits") in done.stdout


def test_sample_is_realistic() -> None:
    a = sample_field()
    assert a.shape == (24, 181, 360)
    assert 0.05 < float(np.isnan(a).mean()) < 0.5
    assert 200 < float(np.nanmin(a)) < float(np.nanmax(a)) < 320


def test_demo_explains_itself_and_names_its_stores(tmp_path, capsys) -> None:
    import json

    import zarr

    assert main(["--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    for word in ("ratio        decoded size / stored size", "promise", "(land filled)", "check        ok:",
                 "how each pipeline is made", "filters=[ScaleOffset(offset=200, scale=100)"):
        assert word in out
    stores = {p.name for p in tmp_path.glob("*.zarr")}
    assert {"zstd.zarr", "transpose-zstd.zarr", "scale_offset-cast_value-uint16-zstd.zarr",
            "bitround12-zstd.zarr", "zfp-reversible.zarr", "zfp-fixed_accuracy-1e-3.zarr"} <= stores
    z = zarr.open_array(tmp_path / "bitround12-zstd.zarr", mode="r")
    assert z.attrs["pipeline"] == "bitround keepbits 12 + zstd"
    assert "BitRound(keepbits=12)" in z.attrs["code"] and z.attrs["max_error_promised"] > 0
    meta = json.loads((tmp_path / "bitround12-zstd.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0] == {"name": "bitround", "configuration": {"keepbits": 12}}
    # the code shown is the code that runs: evaluating it gives the same codecs
    assert main(["--out", str(tmp_path), "--quiet", "--no-code"]) == 0  # runs again over its stores
    assert "how each pipeline is made" not in capsys.readouterr().out


def test_help_is_plain_text() -> None:
    done = subprocess.run([sys.executable, "-m", "numcodecs_ext", "--help"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "``" not in done.stdout and ":mod:" not in done.stdout
    for command in ("demo", "info", "convert", "suggest", "migrate", "normalize", "inspect"):
        assert f"\n    {command}" in done.stdout, command


def test_plot_draws_the_tradeoff(tmp_path, capsys) -> None:
    import pytest

    pytest.importorskip("matplotlib")
    from numcodecs_ext.tools.demo import plot_tradeoff

    points = plot_tradeoff(tmp_path / "t.png", quiet=True)
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    families = {f for f, _, _ in points}
    assert {"bitround + zstd", "scale_offset + cast_value + zstd"} <= families
    by_family = {}
    for family, err, ratio in points:
        by_family.setdefault(family, []).append((err, ratio))
    # more error allowed, more compression: each family's ratio grows with its error
    for family, pts in by_family.items():
        pts.sort()
        assert pts[-1][1] > pts[0][1], family


# -- one program: help, version, unknown commands, -q, closed pipes -------------------------------

from numcodecs_ext.cli import COMMANDS  # noqa: E402


def _cli(*args: str, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error", "-m", "numcodecs_ext", *args], capture_output=True,
                          text=True, timeout=300, check=False, cwd=cwd, **kwargs)


def test_version_and_unknown_commands() -> None:
    from numcodecs_ext import __version__

    done = _cli("--version")
    assert (done.returncode, done.stdout) == (0, f"numcodecs-ext {__version__}\n")
    done = _cli("bogus")
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown command 'bogus'; the commands are: " + ", ".join(COMMANDS) in done.stderr
    done = _cli("inpsect", "x.zarr")
    assert done.returncode == 2 and "(did you mean inspect?)" in done.stderr


def test_each_command_has_its_own_plain_help() -> None:
    for command, (_, summary) in COMMANDS.items():
        done = _cli(command, "--help")
        assert done.returncode == 0, (command, done.stderr)
        text = done.stdout
        assert text.startswith(f"usage: numcodecs-ext {command} "), (command, text[:200])
        assert "-q, --quiet" in text or ("-q" in text and "--quiet" in text), command
        for markup in ("``", ":mod:", ":func:", ":class:", ":meth:", "::\n", ".. "):
            assert markup not in text, (command, markup)
    top = _cli("--help").stdout
    assert "exit status (every command):" in top and "2  the command cannot run as given" in top


def test_quiet_before_or_after_the_command(tmp_path) -> None:
    import zarr

    zarr.create_array(tmp_path / "s.zarr", shape=(4,), dtype="i1", fill_value=0)
    for args in (["-q", "inspect", "s.zarr"], ["inspect", "-q", "s.zarr"], ["inspect", "s.zarr", "--quiet"]):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.startswith("store s.zarr: 1 array(s)"), (args, done.stderr)


def _closed_pipe(args: list[str], cwd, close: str = "stdout") -> tuple[int, str]:
    """Run the command with its ``close`` stream a pipe whose reader is gone before it writes."""
    p = subprocess.Popen([sys.executable, "-W", "error", "-m", "numcodecs_ext", *args], cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    other = p.stderr if close == "stdout" else p.stdout
    (p.stdout if close == "stdout" else p.stderr).close()
    with other:
        text = other.read().decode()
    return p.wait(timeout=300), text


PIPED = {  # every command, printing to a reader that went away
    "demo": ["demo", "--no-code", "--out", "demo"],
    "info": ["info"],
    "convert": ["convert", "packed.nc", "piped.zarr", "-q"],
    "suggest": ["suggest", "packed.nc"],
    "migrate": ["migrate", "v2.zarr", "piped_v3.zarr", "-q"],
    "normalize": ["normalize", "v3nc.zarr", "--dry-run"],
    "inspect": ["inspect", "v3.zarr", "--json"],
    "inspect --help": ["inspect", "--help"],
}


def test_a_closed_pipe_ends_quietly(tmp_path) -> None:
    from tests.cli.test_hostile_cli import build_garden

    assert set(COMMANDS) <= {args[0] for args in PIPED.values()}
    build_garden(tmp_path)
    for name, args in PIPED.items():
        status, err = _closed_pipe(args, tmp_path)
        assert status == 0, (name, err)  # the reader of the results went away: the work was done
        for word in ("Traceback", "Exception ignored", "BrokenPipe", "Broken pipe", "unexpected"):
            assert word not in err, (name, err)
    import zarr

    assert zarr.open_group(tmp_path / "piped.zarr", mode="r")["t2m"].shape == (4, 5, 6)  # complete


def test_a_closed_stderr_interrupts_quietly(tmp_path) -> None:
    # the progress bar's reader went away while the demo worked: stopped, status 1, no traceback
    status, out = _closed_pipe(["demo", "--no-code"], tmp_path, close="stderr")
    assert status == 1 and out == ""


def test_head_reads_one_line(tmp_path) -> None:
    done = subprocess.run(f"set -o pipefail; '{sys.executable}' -m numcodecs_ext info | head -n 1",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0 and done.stdout.startswith("numcodecs_ext ") and done.stderr == ""


# -- arguments that hold secrets, and paths the demo cannot write (review3) -----------------------


@pytest.mark.parametrize("argv", [
    ["inspect", "memory://x", "--storage_options", '{"key": "AKIAX", "secret": "TOPSECRETX"}'],
    ["inspect", "memory://x", '--storage_options={"secret": "TOPSECRETX"}'],
    ["inspect", "memory://x", "--storage_options", '{"account_key": "TOPSECRETX", "broken JSON'],
    ["inspect", "memory://x", "--storage_options", '{"connection_string": "AccountKey=TOPSECRETX"}'],
    ["inspect", "memory://x", "extra", "https://user:TOPSECRETX@example.org/x"],
    ["migrate", "memory://x", "memory://y", "--match", "s3://u:TOPSECRETX@b/x"],
    ["https://user:TOPSECRETX@example.org/x"],
    ["inspect", "memory://x", "--storage_options", '{"sas_token": "sv=1&sig=TOPSECRETX"}'],
    ["inspect", "memory://x", "--storage_options", '{"token": "k9"}'],
])
def test_argument_errors_never_repeat_a_secret(argv) -> None:
    """argparse repeats arguments it does not take ("unrecognized arguments: ...", "invalid
    choice: ..."): their secrets are taken out, short ones too."""
    done = _cli(*argv)
    assert done.returncode == 2, done.stderr
    assert "TOPSECRETX" not in done.stderr + done.stdout, done.stderr
    assert not re.search(r"\bk9\b", done.stderr), done.stderr
    assert "unrecognized arguments" in done.stderr or "invalid choice" in done.stderr \
        or "unknown command" in done.stderr, done.stderr


@pytest.mark.parametrize("out", ["s3://bucket/demo", "memory://demo", "S3://bucket/demo", "zip::demo.zip", "",
                                 "   "])
def test_demo_writes_only_to_a_local_folder(tmp_path, out) -> None:
    """demo --out with a URL or an empty path is refused (exit 2), and nothing is written in the
    working directory."""
    done = _cli("demo", "--out", out, "-q", "--no-code", cwd=str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "--out" in done.stderr and ("empty" in done.stderr or "local folder" in done.stderr), done.stderr
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UsageError, match="--out"):
        run_demo(out)
    done = _cli("demo", "--plot", out or "", "-q", "--no-code", cwd=str(tmp_path))
    assert done.returncode == 2 and list(tmp_path.iterdir()) == [], done.stderr
