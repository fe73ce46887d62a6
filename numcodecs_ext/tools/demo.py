"""The demonstration: every codec pipeline on an embedded temperature field, explained.

Each pipeline is written as the keyword arguments of ``zarr.create_array``; that text is what runs
(it is evaluated), what the demo prints, and what each store records in its attributes, so the code
shown can never drift from the code measured.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..store.errors import UsageError
from ..store.faults import redact
from ..store.progress import Progress

__all__ = ["LEGEND", "Pipeline", "check_plot_path", "local_path", "pipelines", "plot_tradeoff", "run_demo",
           "sample_field"]

CHUNKS = (6, 181, 360)

LEGEND = """\
columns:
  ratio        decoded size / stored size (float64 in memory vs. the chunk files on disk)
  max abs err  largest |read back - written| over the values that are not NaN, in kelvin
  promise      the largest error the pipeline guarantees (0: lossless)
  enc/dec MB/s writing / reading the whole array through zarr, one process, MB of float64 per second
  check        ok: NaN positions kept and max abs err <= promise; FAILED otherwise
  (land filled) lossy zfp refuses NaN (zarrs would decode it as garbage), so the land mask is filled
               with 273.15 K before writing and the check covers the filled field"""


def sample_field(shape: tuple[int, int, int] = (24, 181, 360), seed: int = 0) -> np.ndarray:
    """A realistic air-temperature-like field in kelvin: (time, lat, lon), NaN over land.

    Smooth latitude gradient, a seasonal cycle, travelling waves and a little noise, with a fixed
    land mask of NaN values (as ocean-only variables have).

    >>> a = sample_field((2, 19, 36))
    >>> a.shape, a.dtype, bool(np.isnan(a).any()), bool(200 < np.nanmin(a) < np.nanmax(a) < 320)
    ((2, 19, 36), dtype('float64'), True, True)
    """
    nt, ny, nx = shape
    rng = np.random.default_rng(seed)
    t = np.arange(nt)[:, None, None]
    lat = np.linspace(-90, 90, ny)[None, :, None]
    lon = np.linspace(0, 360, nx, endpoint=False)[None, None, :]
    values = (
        288.0
        - 35.0 * np.sin(np.radians(lat)) ** 2
        + 8.0 * np.sin(np.radians(lat)) * np.cos(2 * np.pi * t / 12.0)
        + 3.0 * np.sin(np.radians(3 * lon - 20 * t)) * np.cos(np.radians(lat))
        + 0.05 * rng.standard_normal(shape)
    )
    land = (np.sin(np.radians(2 * lon)) * np.cos(np.radians(3 * lat)) > 0.55)[0]
    values[:, land] = np.nan
    return values


def _fill_land(a: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(a), 273.15, a)


@dataclass
class Pipeline:
    """One way of storing the sample.

    ``code`` is Python: the keyword arguments given to ``zarr.create_array`` (it is evaluated
    with the names of :data:`NAMES`); ``promise`` the largest absolute error it guarantees.
    """

    name: str
    slug: str
    code: str
    promise: float
    fill_land: bool = False
    needs: str = ""  # "zfp" when libzfp is required
    extra: dict[str, Any] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        from zarr.codecs import ZstdCodec

        from ..zarr3 import BitRound, CastValue, ScaleOffset, Transpose, Zfp

        names = {"ZstdCodec": ZstdCodec, "Transpose": Transpose, "ScaleOffset": ScaleOffset,
                 "CastValue": CastValue, "Zfp": Zfp, "BitRound": BitRound}
        return eval(f"dict({self.code})", names)

    def create_code(self) -> str:
        """The lines that create this pipeline's array."""
        return (f"zarr.create_array(store, shape={{shape}}, chunks={CHUNKS}, dtype='float64',\n"
                f"                  fill_value=np.nan, {self.code})")


_NAN_U16 = '{"encode": [["NaN", 65535]], "decode": [[65535, "NaN"]]}'


def pipelines() -> list[Pipeline]:
    """The demo's pipelines (those needing libzfp only when it is installed)."""
    from ..core import _libzfp

    found = [
        Pipeline("zstd (reference)", "zstd", "compressors=[ZstdCodec(level=3)]", 0),
        Pipeline("transpose [2, 1, 0] + zstd", "transpose-zstd",
                 "filters=[Transpose(order=[2, 1, 0])], compressors=[ZstdCodec(level=3)]", 0),
        Pipeline("scale_offset+cast_value u16 + zstd", "scale_offset-cast_value-uint16-zstd",
                 "filters=[ScaleOffset(offset=200, scale=100), CastValue(data_type='uint16', "
                 f"scalar_map={_NAN_U16})], compressors=[ZstdCodec(level=3)]", 0.005),
        Pipeline("bitround keepbits 12 + zstd", "bitround12-zstd",
                 "filters=[BitRound(keepbits=12)], compressors=[ZstdCodec(level=3)]",
                 512 * 2.0**-13),  # half a unit in the 12th mantissa bit of values below 512
    ]
    try:
        _libzfp.load()
    except ImportError as exc:
        print(f"zfp pipelines skipped: {exc}", file=sys.stderr)
        return found
    found += [
        Pipeline("zfp reversible", "zfp-reversible", "serializer=Zfp(mode='reversible'), compressors=None", 0),
        Pipeline("transpose [2, 1, 0] + zfp reversible", "transpose-zfp-reversible",
                 "filters=[Transpose(order=[2, 1, 0])], serializer=Zfp(mode='reversible'), compressors=None", 0),
        Pipeline("zfp fixed_accuracy 1e-3 (land filled)", "zfp-fixed_accuracy-1e-3",
                 "serializer=Zfp(mode='fixed_accuracy', tolerance=1e-3), compressors=None", 1e-3, fill_land=True),
    ]
    return found


def _stored_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "zarr.json")


def _measure(pipeline: Pipeline, sample: np.ndarray, path: Path) -> tuple[float, float, float, float, bool]:
    import zarr

    data = _fill_land(sample) if pipeline.fill_land else sample
    z = zarr.create_array(path, shape=data.shape, chunks=CHUNKS, dtype=data.dtype, fill_value=np.nan,
                          overwrite=True, attributes={
                              "pipeline": pipeline.name,
                              "code": pipeline.create_code().replace("{shape}", str(data.shape)),
                              "max_error_promised": pipeline.promise,
                              "sample": "numcodecs_ext.tools.demo.sample_field(): air temperature in K, "
                                        "(time, lat, lon), NaN over land" + (" (land filled with 273.15)"
                                                                            if pipeline.fill_land else ""),
                          }, **pipeline.kwargs())
    t0 = time.perf_counter()
    z[...] = data
    t1 = time.perf_counter()
    back = zarr.open_array(path, mode="r")[...]
    t2 = time.perf_counter()
    same_nan = bool(np.array_equal(np.isnan(back), np.isnan(data)))
    err = float(np.nanmax(np.abs(back - data))) if same_nan else float("inf")
    mb = data.nbytes / 1e6
    return data.nbytes / _stored_bytes(path), err, mb / (t1 - t0), mb / (t2 - t1), same_nan and err <= pipeline.promise


def run_demo(out: str | Path | None = None, quiet: bool = False, show_code: bool = True) -> int:
    """Write the sample through every pipeline, read it back, check it, print the table.
    ``out``: a local folder to keep the stores in (UsageError for an empty path or a URL)."""
    if out is not None:
        out = local_path("--out", out)
    sample = sample_field()
    rows = []
    found = pipelines()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out) if out is not None else Path(tmp)
        _make_dir(root)
        with Progress(len(found), "demo", unit="pipeline", enabled=not quiet) as bar:
            for pipeline in found:
                rows.append((pipeline, *_measure(pipeline, sample, root / f"{pipeline.slug}.zarr")))
                bar.advance(1)
    print(f"sample: {sample.shape} float64 air temperature (time, lat, lon) in K, "
          f"{np.isnan(sample).mean():.0%} NaN land mask, {sample.nbytes / 1e6:.1f} MB, chunks {CHUNKS}")
    header = f"{'pipeline':40} {'ratio':>7} {'max abs err':>12} {'promise':>9} {'enc MB/s':>9} {'dec MB/s':>9}  check"
    print(header)
    print("-" * len(header))
    for p, ratio, err, enc, dec, ok in rows:
        print(f"{p.name:40} {ratio:7.2f} {err:12.3g} {p.promise:9.3g} {enc:9.0f} {dec:9.0f}  "
              f"{'ok' if ok else 'FAILED'}")
    print()
    print(LEGEND)
    if show_code:
        print("\nhow each pipeline is made (import zarr, numpy as np; from zarr.codecs import ZstdCodec;")
        print("from numcodecs_ext.zarr3 import BitRound, CastValue, ScaleOffset, Transpose, Zfp):")
        for p, *_ in rows:
            print(f"  {p.name}:\n    " + p.create_code().replace("{shape}", str(sample.shape)).replace("\n", "\n    "))
    if out is not None:
        print(f"\nstores written under {out}, one per pipeline (<name>.zarr; its attributes record the code)")
    return 0 if all(r[-1] for r in rows) else 1


def _sweep() -> list[tuple[str, str, str, float]]:
    """(family, its setting in words, codec kwargs code, promised error) for the trade-off plot."""
    out = []
    for k in (4, 6, 8, 10, 12, 16, 20):
        out.append(("bitround + zstd", f"keepbits={k}",
                    f"filters=[BitRound(keepbits={k})], compressors=[ZstdCodec(level=3)]",
                    512 * 2.0 ** -(k + 1)))
    for bits, scale in ((8, 2), (10, 8), (12, 32), (16, 512)):  # powers of two: exact decoding
        dtype = "uint8" if bits == 8 else "uint16"
        sentinel = 2**bits - 1 if bits == 8 else 65535
        smap = f'{{"encode": [["NaN", {sentinel}]], "decode": [[{sentinel}, "NaN"]]}}'
        code = (f"filters=[ScaleOffset(offset=200, scale={scale}), CastValue(data_type='{dtype}', "
                f"scalar_map={smap})], compressors=[ZstdCodec(level=3)]")
        out.append(("scale_offset + cast_value + zstd", f"{dtype}, scale={scale}", code, 0.5 / scale))
    for tol in (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 1e-4):
        out.append(("zfp fixed_accuracy", f"tolerance={tol}",
                    f"serializer=Zfp(mode='fixed_accuracy', tolerance={tol}), compressors=None", tol))
    for rate in (4, 8, 12, 16):
        out.append(("zfp fixed_rate", f"rate={rate}",
                    f"serializer=Zfp(mode='fixed_rate', rate={rate}), compressors=None", float("nan")))
    for prec in (12, 16, 20, 24, 28):
        code = f"serializer=Zfp(mode='fixed_precision', precision={prec}), compressors=None"
        out.append(("zfp fixed_precision", f"precision={prec}", code, float("nan")))
    return out


def plot_tradeoff(path: str | Path, quiet: bool = False) -> list[tuple[str, float, float]]:
    """Draw compression ratio against maximum error for the lossy pipelines into ``path`` (PNG).

    Returns the measured points ``(family, max abs error, ratio)``. Needs matplotlib
    (``pip install "numcodecs_ext[plot]"``); zfp points need libzfp.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..core import _libzfp

    try:
        _libzfp.load()
        have_zfp = True
    except ImportError:
        have_zfp = False
    sample = sample_field()
    points = []
    sweep = [s for s in _sweep() if have_zfp or not s[0].startswith("zfp")]
    with tempfile.TemporaryDirectory() as tmp, \
            Progress(len(sweep), "plot", unit="configuration", enabled=not quiet) as bar:
        for i, (family, _setting, code, promise) in enumerate(sweep):
            p = Pipeline(family, f"p{i}", code, float("inf") if np.isnan(promise) else promise,
                         fill_land=family.startswith("zfp"))
            ratio, err, *_ = _measure(p, sample, Path(tmp) / f"p{i}.zarr")
            points.append((family, err, ratio))
            bar.advance(1)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for family in dict.fromkeys(f for f, _, _ in points):
        xs = [max(e, 1e-9) for f, e, _ in points if f == family]
        ys = [r for f, _, r in points if f == family]
        ax.plot(xs, ys, "o-", label=family)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("maximum absolute error (K)")
    ax.set_ylabel("compression ratio (float64 / stored)")
    ax.set_title("numcodecs_ext: ratio against error on the demo's temperature field")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return points


def local_path(flag: str, value: str | Path) -> Path:
    """``value`` as a local path, or a UsageError: the demo writes to a local disk only, and an
    empty path is refused (as by every tool), not taken as the working directory."""
    text = os.fspath(value)
    if not text.strip():
        raise UsageError(f"{flag}: an empty path; give a folder (or file) name")
    if "://" in text or "::" in text:
        raise UsageError(f"{flag} {redact(text)}: the demo writes to a local folder only, not to a URL; "
                         "give a local path (convert and migrate write to object stores)")
    return Path(text)


def _make_dir(root: Path) -> None:
    """``root`` as a directory for the stores, or a UsageError saying what is in the way."""
    if root.exists() and not root.is_dir():
        raise UsageError(f"--out {root}: is a file, not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a dangling link, or a file among the parents
        raise UsageError(f"--out {root}: cannot be made a directory (a file or a dangling link "
                         "is in the way)") from None
    except OSError as e:
        raise UsageError(f"--out {root}: cannot be made a directory ({e.strerror or e})") from None


def check_plot_path(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"--plot {path}: is a directory; give a file name such as tradeoff.png")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--plot {path}: the folder {parent} does not exist")
    if path.suffix.lower() not in (".png", ".svg", ".pdf", ".jpg", ".jpeg"):
        raise UsageError(f"--plot {path}: give a .png (or .svg, .pdf, .jpg) file name")
