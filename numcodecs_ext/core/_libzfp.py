"""Locate and bind the zfp C library (libzfp) through :mod:`ctypes`.

Nothing is loaded when this module is imported: :func:`load` finds the library on first use and
raises :class:`ImportError` with an install hint when there is none, so ``import numcodecs_ext``
works without zfp.

Where the library comes from, in order:

1. the path in the environment variable ``NUMCODECS_EXT_LIBZFP`` (when set, nothing else is tried);
2. the copy bundled in the ``zfpy`` wheel (``zfpy.libs/libzfp-*.so`` on Linux,
   ``zfpy/.dylibs/libzfp*.dylib`` on macOS, ``zfpy.libs/zfp*.dll`` on Windows), found through the
   installed distribution's file list *without importing zfpy*;
3. a system or conda libzfp found by :func:`ctypes.util.find_library`.

Every function used is declared with its ``argtypes`` and ``restype``. With the compiled kernels
built, a whole session per chunk runs in C (``_zfpcall.c``), which receives the functions'
addresses from here (:meth:`LibZfp.addresses`). Without them, ``zfp_compress`` and
``zfp_decompress`` are called through a :class:`ctypes.CDLL`, which releases the GIL for the
call, so zfp compresses chunks from several threads in parallel; libzfp has no global state, and
every session owns its own ``zfp_stream``, ``bitstream`` and ``zfp_field``. The ten or so
set-up calls around them take microseconds and go through a :class:`ctypes.PyDLL`, which keeps
the GIL: giving it up and taking it back around each would cost more than the call, and on a
busy many-core machine each retake waits behind the other threads.

The library must use 64-bit stream words and codec version 5 (zfp 0.5.5 to 1.0.x): the word size
decides where a compressed stream ends, and zarrs' chunks end on a 64-bit word boundary.

Examples
--------
>>> lib = load()
>>> lib.word_bits, lib.codec_version
(64, 5)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib.metadata
import importlib.util
import os
import sys
import threading
from pathlib import Path

__all__ = ["API_NAMES", "ENV_VAR", "INSTALL_HINT", "LibZfp", "load", "candidate_paths"]

ENV_VAR = "NUMCODECS_EXT_LIBZFP"
INSTALL_HINT = (
    "the zfp codec needs the zfp C library (libzfp). Install it with "
    "`pip install 'numcodecs_ext[zfp]'` (which installs zfpy>=1.0.1, whose wheel bundles libzfp; "
    "avoid zfpy 1.0.1.post0, which breaks `import numcodecs`), or install a system/conda libzfp "
    f"(e.g. `conda install -c conda-forge zfp`), or set {ENV_VAR} to the path of libzfp"
)

# zfp_type enumeration (zfp.h)
ZFP_TYPE_INT32 = 1
ZFP_TYPE_INT64 = 2
ZFP_TYPE_FLOAT = 3
ZFP_TYPE_DOUBLE = 4

# Constants of zfp.h that the codec relies on.
ZFP_MIN_EXP = -1074
ZFP_MAX_PREC = 64
ZFP_MAX_BITS = 16658

_vp = ctypes.c_void_p
_uint = ctypes.c_uint
_int = ctypes.c_int
_size = ctypes.c_size_t
_double = ctypes.c_double

# name: (restype, argtypes)
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    # bitstream
    "stream_open": (_vp, [_vp, _size]),
    "stream_close": (None, [_vp]),
    # zfp_stream
    "zfp_stream_open": (_vp, [_vp]),
    "zfp_stream_close": (None, [_vp]),
    "zfp_stream_set_bit_stream": (None, [_vp, _vp]),
    "zfp_stream_rewind": (None, [_vp]),
    "zfp_stream_set_reversible": (None, [_vp]),
    "zfp_stream_set_rate": (_double, [_vp, _double, _int, _uint, _int]),
    "zfp_stream_set_precision": (_uint, [_vp, _uint]),
    "zfp_stream_set_accuracy": (_double, [_vp, _double]),
    "zfp_stream_set_params": (_int, [_vp, _uint, _uint, _uint, _int]),
    "zfp_stream_maximum_size": (_size, [_vp, _vp]),
    "zfp_stream_compressed_size": (_size, [_vp]),
    # zfp_field: sizes are given x first (x varies fastest)
    "zfp_field_1d": (_vp, [_vp, _int, _size]),
    "zfp_field_2d": (_vp, [_vp, _int, _size, _size]),
    "zfp_field_3d": (_vp, [_vp, _int, _size, _size, _size]),
    "zfp_field_4d": (_vp, [_vp, _int, _size, _size, _size, _size]),
    "zfp_field_free": (None, [_vp]),
    # codec
    "zfp_compress": (_size, [_vp, _vp]),
    "zfp_decompress": (_size, [_vp, _vp]),
}
#: the calls that do the work, made with the GIL released; the others keep it
_RELEASE_GIL = frozenset({"zfp_compress", "zfp_decompress"})
#: the functions the compiled session (``_zfpcall.c``) calls, in the order of its ``zfp_api_t``
API_NAMES = (
    "stream_open", "stream_close", "zfp_stream_open", "zfp_stream_close",
    "zfp_stream_set_bit_stream", "zfp_stream_rewind", "zfp_stream_set_reversible",
    "zfp_stream_set_rate", "zfp_stream_set_precision", "zfp_stream_set_accuracy",
    "zfp_stream_set_params", "zfp_stream_maximum_size", "zfp_field_1d", "zfp_field_2d",
    "zfp_field_3d", "zfp_field_4d", "zfp_field_free", "zfp_compress", "zfp_decompress",
)


class LibZfp:
    """A loaded libzfp with the functions this package calls.

    Attributes
    ----------
    path : str
        Where the library was loaded from.
    version : str
        The library's version string, e.g. ``"zfp version 1.0.1 (December 15, 2023)"``.
    word_bits : int
        Bits per stream word (64 is required).
    codec_version : int
        The zfp codec (stream format) version (5 is required).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.cdll = ctypes.CDLL(path)
        pydll = ctypes.PyDLL(path)  # the same loaded library, called with the GIL held
        missing = [name for name in _SIGNATURES if not hasattr(self.cdll, name)]
        if missing:
            raise OSError(f"{path} is not a usable libzfp: missing functions {', '.join(missing)}")
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(self.cdll if name in _RELEASE_GIL else pydll, name)
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        try:
            self.version = ctypes.c_char_p.in_dll(self.cdll, "zfp_version_string").value.decode()
            self.codec_version = int(ctypes.c_uint.in_dll(self.cdll, "zfp_codec_version").value)
            self.word_bits = int(ctypes.c_size_t.in_dll(self.cdll, "stream_word_bits").value)
        except (ValueError, AttributeError) as exc:  # pragma: no cover - exotic builds
            raise OSError(f"{path} is not a usable libzfp: {exc}") from exc
        if self.word_bits != 64:
            raise OSError(
                f"{path} ({self.version}) uses {self.word_bits}-bit stream words; the zfp codec "
                "needs a libzfp built with 64-bit words (the default) to match zarrs' chunks"
            )
        if self.codec_version != 5:
            raise OSError(
                f"{path} ({self.version}) writes zfp codec version {self.codec_version}; "
                "the zfp codec needs codec version 5 (zfp 0.5.5 to 1.0.x)"
            )

    def addresses(self) -> tuple[int, ...]:
        """The addresses of the :data:`API_NAMES` functions in the loaded library (for the
        compiled session, which calls them directly; this object keeps the library loaded)."""
        return tuple(ctypes.cast(getattr(self.cdll, name), ctypes.c_void_p).value or 0
                     for name in API_NAMES)

    def __repr__(self) -> str:
        return f"LibZfp({self.path!r}, version={self.version!r})"


def _zfpy_candidates() -> list[str]:
    """Paths of the libzfp bundled in an installed zfpy wheel, found without importing zfpy."""
    found: list[str] = []

    def is_libzfp(name: str) -> bool:
        name = name.lower()
        return "zfp" in name and "zfpy" not in name and (
            ".so" in name or name.endswith(".dylib") or name.endswith(".dll")
        )

    try:
        dist = importlib.metadata.distribution("zfpy")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for file in dist.files or ():
            if is_libzfp(Path(str(file)).name):
                found.append(str(dist.locate_file(file)))
    try:
        spec = importlib.util.find_spec("zfpy")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        base = Path(spec.origin).parent
        for pattern in ("zfpy.libs/*", "zfpy/.dylibs/*", ".dylibs/*", "zfpy.libs/*/*"):
            found.extend(p for p in glob.glob(str(base / pattern)) if is_libzfp(Path(p).name))
    unique: list[str] = []
    for path in found:
        if path not in unique and os.path.exists(path):
            unique.append(path)
    return unique


def candidate_paths() -> list[str]:
    """Where :func:`load` would look for libzfp, in order.

    >>> isinstance(candidate_paths(), list)
    True
    """
    override = os.environ.get(ENV_VAR)
    if override:
        return [override]
    paths = _zfpy_candidates()
    system = ctypes.util.find_library("zfp")
    if system:
        paths.append(system)
    return paths


_lock = threading.Lock()
_loaded: LibZfp | None = None


def load() -> LibZfp:
    """Load libzfp once (thread-safe) and return it.

    Raises
    ------
    ImportError
        If no usable libzfp is found; the message says how to install one and what was tried.
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        errors: list[str] = []
        for path in candidate_paths():
            try:
                _loaded = LibZfp(path)
                return _loaded
            except OSError as exc:
                errors.append(f"{path}: {exc}")
        tried = "; ".join(errors) if errors else "no candidate found"
        if os.environ.get(ENV_VAR):
            raise ImportError(
                f"could not load libzfp from {ENV_VAR}={os.environ[ENV_VAR]!r} ({tried}); "
                + INSTALL_HINT
            )
        raise ImportError(f"{INSTALL_HINT} (tried: {tried}; python {sys.version.split()[0]})")
