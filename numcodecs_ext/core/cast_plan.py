"""The cast of the ``cast_value`` codec, element by element in cache-sized blocks: a
:class:`CastPlan` holds what one (source, target, rounding, out-of-range, scalar map) needs, and
runs the compiled kernels where they apply, the numpy ones (:mod:`.cast_rounding`) elsewhere.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

try:  # the clip ufunc itself: np.clip's Python wrapper costs a few microseconds per call
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip  # type: ignore[no-redef]

from . import _native
from .blocks import BLOCK, contiguous, iter_blocks, scratch
from .cast_rounding import OUT_OF_RANGE_MODES, ROUNDING_MODES, is_native_c, ROUND_SCALAR, CastError
from .cast_rounding import round_float_grid, round_int_grid, round_to_int, is_exact_cast
from .dtypes import NumericInfo, scalar_text
from .scalar_map import Hits, bits_dtype, prepared, reserved_hits, single_entry

__all__ = ["CastPlan"]

#: elements per block where the compiled kernels run (no numpy scratch between them)
FAST_BLOCK = 262144
_ONE_U8 = np.uint8(1)


#: attributes of a plan that are per thread, and their values before a thread sets them
_PER_THREAD = {"wbuf": None, "tmp": None, "tmp2": None, "mbuf": None, "kbuf": None,
               "expect_nan": False}


class CastPlan:
    """One configured conversion from ``src`` to ``tgt``; ``run`` fills ``out`` block by block."""

    def __init__(
        self, src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None,
        scalar_map: Sequence[tuple[Any, Any]],
    ) -> None:
        if rounding not in ROUNDING_MODES:
            raise ValueError(
                f"rounding={rounding!r} is not valid; choose one of {', '.join(ROUNDING_MODES)}"
            )
        if out_of_range is not None and out_of_range not in OUT_OF_RANGE_MODES:
            raise ValueError(
                f"out_of_range={out_of_range!r} is not valid; choose one of "
                f"{', '.join(OUT_OF_RANGE_MODES)}, or leave it unset to make out-of-range values "
                f"an error"
            )
        if out_of_range == "wrap" and not tgt.is_int:
            raise ValueError(
                f"out_of_range='wrap' is only valid for integer targets, not {tgt.name}"
            )
        self.src, self.tgt = src, tgt
        self.rounding, self.mode = rounding, out_of_range
        self.map = prepared(scalar_map, src, tgt)
        self.entries = self.map.entries
        self.reserved = self.map.reserved
        self.exact = is_exact_cast(src, tgt)
        self.direct = src.dtype.isbuiltin == 1
        self.via = None
        if self.exact and not np.can_cast(src.dtype, tgt.dtype, "unsafe"):
            self.via = np.dtype(np.int64 if src.is_int else np.float64)
        big_int = src.is_int and src.bits == 64
        if self.exact:
            self.kernel = self._exact
            self.wdtype = None
        elif src.is_int and tgt.is_int:
            self.kernel = self._i2i
            self.wdtype = np.dtype(np.uint64 if src.kind == "uint" and src.bits == 64 else np.int64)
        elif big_int:  # int64/uint64 -> float
            self.kernel = self._i2f
            self.wdtype = src.dtype
        elif tgt.is_int:
            self.kernel = self._f2i
            self.wdtype = np.dtype(np.float64)
        else:
            self.kernel = self._f2f
            self.wdtype = np.dtype(np.float64)
        if tgt.is_int:
            hi_f = float(tgt.hi)
            if int(hi_f) > tgt.hi:
                hi_f = float(np.nextafter(hi_f, -np.inf))
            self.lo_f, self.hi_f = float(tgt.lo), hi_f
        else:
            # below this magnitude float64 -> numpy float rounds (nearest-even) to a finite value
            with np.errstate(over="ignore"):
                up = float(np.ldexp(1.0, int(np.frexp(tgt.max)[1])))
            self.thr = tgt.max / 2 + up / 2
        self.native_float_tgt = tgt.dtype.type in (np.float16, np.float32, np.float64)
        # float -> integer fast path: the common configurations decided once per call, per block
        # only a NaN mask and the range (see _f2i_fast); anything unusual goes to _f2i
        self.nan_entry = next((e for e in self.entries if e.how == "nan"), None)
        self.eq_entries = [e for e in self.entries if e.how == "eq"]
        if self.kernel == self._f2i and self.hi_f == tgt.hi and not self.map.large and not any(
                e.how == "bits" for e in self.entries):
            self.kernel = self._f2i_fast
        if self.kernel == self._f2i_fast:
            self.round_scalar = ROUND_SCALAR[rounding]
            self.lo_0d, self.hi_0d = np.array(self.lo_f), np.array(self.hi_f)
            # one-byte targets write the NaN value with byte arithmetic instead of a masked copy
            self.nan_byte = None
            if self.nan_entry is not None and tgt.dtype.itemsize == 1:
                self.nan_byte = np.uint8(self.nan_entry.value_bits.view(np.uint8)[()])
        # per-thread state (a plan serves every thread converting with its configuration): the
        # scratch blocks, and ``expect_nan``: after a block with NaN, test for NaN with a mask
        # first
        self._state = threading.local()

    @functools.cached_property
    def native_args(self) -> tuple[Any, ...] | None:
        """The compiled float -> integer loop's arguments after ``x, out`` (see
        :meth:`native_run`), or None where it does not apply."""
        src, tgt = self.src, self.tgt
        reserved = self.reserved.entries if self.reserved is not None else []
        if (src.dtype.type not in (np.float32, np.float64) or tgt.dtype.kind not in "iu"
                or not tgt.dtype.isbuiltin or len(self.entries) > 64 or len(reserved) > 64):
            return None
        how = {"nan": 0, "bits": 1, "eq": 2}
        keys_f = [0.0 if e.how != "eq" else e.key_f for e in self.entries]
        keys_bits = [e.key if e.how == "bits" else 0 for e in self.entries]
        values = [int(e.value_bits) for e in self.entries]
        # an integer target's reserved codes as bit patterns of its width (keys are integers)
        codes = [int(np.array(e.key, tgt.dtype).view(bits_dtype(tgt.dtype))) for e in reserved]
        return (
            tgt.dtype.itemsize, tgt.kind == "int", ROUNDING_MODES.index(self.rounding),
            (None, "clamp", "wrap").index(self.mode),
            np.array([how[e.how] for e in self.entries], np.uint8),
            np.array(keys_f, np.float64), np.array(keys_bits, np.uint64),
            np.array(values, np.uint64), np.array(codes, np.uint64),
        )

    def native_run(self, arr: np.ndarray, flat: np.ndarray, offset: Any = None,
                   scale: Any = None) -> bool:
        """Convert ``arr`` (``(arr - offset) * scale`` if given) into the 1-D ``flat`` with the
        compiled loop; False if it does not apply or declined an element (an error: the caller
        then runs the numpy kernels, which raise it)."""
        kernels = _native.kernels()
        if (kernels is None or self.native_args is None or not arr.size
                or not flat.flags.aligned):  # the compiled loop needs aligned items
            return False
        size, signed, rounding, mode, *entries = self.native_args
        affine = offset is not None
        off, sc = (float(offset), float(scale)) if affine else (0.0, 1.0)

        def run(x: np.ndarray, o: np.ndarray) -> bool:
            return kernels.f2i(x, o, x.itemsize, size, signed, affine, off, sc, rounding, mode,
                               *entries) < 0

        # other layouts (zarr hands over views of the caller's array): one contiguous copy,
        # then one call, both without the GIL
        return run(contiguous(arr, "native").reshape(-1), flat)

    def __getattr__(self, name: str) -> Any:
        """This thread's scratch blocks and adaptive flags (see ``__init__``)."""
        if name in _PER_THREAD:
            return getattr(self._state, name, _PER_THREAD[name])
        raise AttributeError(name)

    def _scratch(self, n: int) -> None:
        """Take this thread's scratch blocks (``n`` elements: the largest block)."""
        state = self._state
        if getattr(state, "tmp", None) is not None and state.tmp.size >= n:
            return
        state.wbuf = scratch("w", n, self.wdtype) if self.wdtype is not None else None
        state.tmp = scratch("tmp", n, np.float64)
        state.tmp2 = scratch("tmp2", n, np.float64)
        state.mbuf = scratch("mask", n, bool)
        state.kbuf = scratch("bytes", n, np.uint8)

    # -- driver --------------------------------------------------------------------------------

    @property
    def block_elements(self) -> int:
        """Elements per block this conversion is fastest with."""
        if self.kernel == self._f2i_fast:
            return FAST_BLOCK
        return BLOCK if self.wdtype is not None else BLOCK * 2

    def run(self, arr: np.ndarray, out: np.ndarray) -> np.ndarray:
        flat = out.reshape(-1)
        if self.native_run(arr, flat):
            return out
        nelem = self.block_elements
        with np.errstate(all="ignore"):
            self.prepare(min(nelem, arr.size))
            for view, start, stop in iter_blocks(arr, nelem):
                self.run_block(view, flat[start:stop])
        return out

    def prepare(self, n: int) -> None:
        """Ready this thread's scratch for blocks of up to ``n`` elements."""
        if self.wdtype is not None:
            self._scratch(max(n, 1))

    def run_block(self, view: np.ndarray, o: np.ndarray) -> None:
        """Convert one block (at most the ``prepare``d size) into the 1-D ``o``; the caller
        sets ``np.errstate(all="ignore")``."""
        if self.wdtype is None:
            self.kernel(view, None, o)
        else:
            if view.dtype == self.wdtype and is_native_c(view):
                w = view.reshape(-1)
            else:
                w = self.wbuf[: view.size]
                np.copyto(w.reshape(view.shape), view, casting="unsafe")
            self.kernel(view, w, o)
        if self.reserved is not None:
            self._check_reserved(view, o)

    def _check_reserved(self, view: np.ndarray, o: np.ndarray) -> None:
        """Refuse an element that no encode entry claims but that lands on a code the way back
        reads as something else (it would not round-trip)."""
        at = reserved_hits(self.reserved, o)
        if at is None:
            return
        where = np.flatnonzero(at)  # (few, or the mapped NaN: only those inputs are looked at)
        inputs = view.reshape(-1)[where]
        claimed = self.map.match(inputs, None).mask if self.entries else None
        if claimed is not None and claimed.all():
            return
        i = int(where[0] if claimed is None else where[np.flatnonzero(~claimed)[0]])
        value, code = view.reshape(-1)[i], o[i]
        entry = next(e for e in self.reserved.entries
                     if reserved_hits(single_entry(self.reserved, e), o[i:i + 1]) is not None)
        key, back = self.reserved.pairs[entry.index]
        key = getattr(key, "value", key)
        v, b = scalar_text(value, self.src.dtype), scalar_text(back, self.src.dtype)
        raise ValueError(
            f"cast_value cannot encode {v}: it becomes {scalar_text(code, self.tgt.dtype)}, which the "
            f"decode entry [{scalar_text(key, self.tgt.dtype)}, {b}] reads back as {b}, so it would "
            f"not round-trip; map {v} in the encode scalar_map"
        )

    def _masks(self, view: np.ndarray, w: np.ndarray | None, lo: float, hi: float,
               has_nan: bool, slack: float = 0.0, all_: bool = False) -> Hits:
        """The map's hits in this block (``lo``/``hi``: block range, widened by ``slack``;
        ``all_``: no range or NaN pruning)."""
        if all_:
            return self.map.match(view, w)
        return self.map.match(view, w, lo - slack, hi + slack, nan=has_nan)

    @staticmethod
    def _claimed(hits: Hits, n: int) -> np.ndarray:
        return hits.mask if hits.mask is not None else np.zeros(n, bool)

    def _fail(self, what: str, values: np.ndarray) -> None:
        v = values.reshape(-1)[0]
        raise CastError(f"cast_value cannot convert {scalar_text(v, self.src.dtype)} ({self.src.name}) to "
                        f"{self.tgt.name}: {what}", what)

    # -- kernels ---------------------------------------------------------------------------------

    def _exact(self, view: np.ndarray, w: None, o: np.ndarray) -> None:
        # ml_dtypes has no direct cast between some of its types: go through an exact widening
        src = view if self.via is None else view.astype(self.via)
        np.copyto(o.reshape(view.shape), src, casting="unsafe")
        if self.entries:  # (a pure copy: no range to prune the keys with)
            self._masks(view, None, 0.0, 0.0, True, all_=True).apply(o)

    def _i2i(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        tgt = self.tgt
        lo, hi = int(w.min()), int(w.max())
        ok = tgt.lo <= lo and hi <= tgt.hi
        hits = self._masks(view, w, lo, hi, False)
        if not ok:
            claimed = self._claimed(hits, w.size)
            oor = np.zeros(w.size, bool)
            if tgt.lo > np.iinfo(w.dtype).min:
                oor |= w < tgt.lo
            if tgt.hi < np.iinfo(w.dtype).max:
                oor |= w > tgt.hi
            bad = oor & ~claimed
            if self.mode is None and bad.any():
                self._fail(f"outside [{tgt.lo}, {tgt.hi}] and out_of_range is not set", w[bad])
            if self.mode == "clamp":
                lo_c = max(tgt.lo, int(np.iinfo(w.dtype).min))
                hi_c = min(tgt.hi, int(np.iinfo(w.dtype).max))
                np.copyto(o, np.clip(w, w.dtype.type(lo_c), w.dtype.type(hi_c)), casting="unsafe")
            elif self.mode == "wrap" and not tgt.dtype.isbuiltin:
                mask = w.dtype.type(2**tgt.bits - 1)
                shifted = (w - w.dtype.type(tgt.lo % 2**64 if w.dtype.kind == "u" else tgt.lo))
                wrapped = (shifted & mask).astype(np.int64) + tgt.lo
                np.copyto(o, wrapped, casting="unsafe")
            else:  # wrap (numpy integer casts keep the low bits) or all offenders mapped
                np.copyto(o, w, casting="unsafe")
        else:
            np.copyto(o, w, casting="unsafe")
        hits.apply(o)

    def _f2i_fast(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        """float -> integer whose range is exact in float64 (up to 32 bits), no bit-pattern keys.

        Per block: the range (two reductions) and, once a block has had a NaN, a NaN mask (the
        map needs it anyway); then round, clamp when needed, convert, map. Blocks with
        infinities, unmapped NaN, or out-of-range values without ``clamp`` go to :meth:`_f2i`,
        which finds the error or does the general work.
        """
        n = w.size
        m = None
        if self.expect_nan:
            m = np.isnan(w, out=self.mbuf[:n])
            has_nan = bool(m.any())
        else:
            lo = float(np.minimum.reduce(w))  # NaN if there is one
            has_nan = math.isnan(lo)
            if has_nan:
                self._state.expect_nan = True
                m = np.isnan(w, out=self.mbuf[:n])
            else:
                hi = float(np.maximum.reduce(w))
        r = self.tmp[:n]
        rounded = False
        if has_nan:
            if self.nan_entry is None:
                self._f2i(view, w, o)  # raises (unmapped NaN)
                return
            # the range of the other values, taken after rounding: rounding quiets signalling
            # NaNs, which numpy's fmin/fmax (IEEE minNum) would take for a value, losing the range
            round_to_int(w, self.rounding, r, self.tmp2[:n])
            rounded = True
            lo, hi = float(np.fmin.reduce(r)), float(np.fmax.reduce(r))
            if math.isnan(lo):  # all NaN
                o_bits = o.view(self.nan_entry.value_bits.dtype)
                np.copyto(o_bits, self.nan_entry.value_bits)
                return
        elif self.expect_nan:
            lo, hi = float(np.minimum.reduce(w)), float(np.maximum.reduce(w))
        if lo == -np.inf or hi == np.inf:
            self._f2i(view, w, o)
            return
        # rounding is monotone and keeps integers, so the rounded range is (round(lo), round(hi))
        clamp = not (self.round_scalar(lo) >= self.lo_f and self.round_scalar(hi) <= self.hi_f)
        if clamp and self.mode != "clamp":
            self._f2i(view, w, o)
            return
        if not rounded:
            round_to_int(w, self.rounding, r, self.tmp2[:n])
        if clamp:
            _clip(r, self.lo_0d, self.hi_0d, out=r)  # NaN passes through (mapped below)
        np.copyto(o, r, casting="unsafe")
        writes = []
        if has_nan:
            if self.nan_byte is None:
                writes.append((self.nan_entry.value_bits, m))
            else:  # one-byte target: o = o & (m - 1) | m * value, on the bits
                mu = m.view(np.uint8)
                k = self.kbuf[:n]
                ob = o.view(np.uint8)
                np.subtract(mu, _ONE_U8, out=k)  # 0x00 at NaN, 0xff elsewhere
                np.bitwise_and(ob, k, out=ob)
                if self.nan_byte:
                    np.multiply(mu, self.nan_byte, out=k)
                    np.bitwise_or(ob, k, out=ob)
        for entry in self.eq_entries:  # (NaN and the numerical keys never match the same input)
            if lo - 1.0 <= entry.key_f <= hi + 1.0:
                writes.append((entry.value_bits, w == entry.key))
        Hits(writes, n).apply(o)

    def _f2i(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        tgt = self.tgt
        r = self.tmp[: w.size]
        round_to_int(w, self.rounding, r, self.tmp2[: w.size])
        lo, hi = float(r.min()), float(r.max())
        if lo >= self.lo_f and hi <= self.hi_f:  # no NaN, no inf, nothing out of range
            hits = self._masks(view, w, lo, hi, False, slack=1.0)
            np.copyto(o, r, casting="unsafe")
            hits.apply(o)
            return
        has_nan = bool(np.isnan(lo))
        if has_nan:  # the range of the non-NaN values
            lo, hi = float(np.fmin.reduce(r)), float(np.fmax.reduce(r))
        hits = self._masks(view, w, lo, hi, has_nan, slack=1.0, all_=np.isnan(lo))
        unclaimed = hits.unclaimed

        if has_nan and self.nan_entry is None:  # (a "NaN" entry claims every NaN)
            bad = unclaimed(np.isnan(r))
            if bad.any():
                self._fail(f"{tgt.name} has no NaN; map it in scalar_map", w[bad])
        if np.isinf(lo) or np.isinf(hi):
            bad = unclaimed(np.isinf(r))
            if bad.any():
                self._fail(f"{tgt.name} has no infinity; map it in scalar_map", w[bad])
        above = None
        if lo < self.lo_f or hi > self.hi_f:
            if self.mode is None:
                bad = unclaimed((r < self.lo_f) | (r > self.hi_f))
                if bad.any():
                    self._fail(
                        f"rounds to a value outside [{tgt.lo}, {tgt.hi}] and out_of_range is "
                        f"not set", w[bad],
                    )
                np.clip(r, self.lo_f, self.hi_f, out=r)  # only mapped values: overwritten below
            elif self.mode == "clamp":
                if self.hi_f != tgt.hi:
                    above = r > self.hi_f
                np.clip(r, self.lo_f, self.hi_f, out=r)
            else:
                r[np.isinf(r)] = 0.0  # mapped (checked above); fmod(inf) would be NaN
                self._wrap_float(r, (r < self.lo_f) | (r > self.hi_f))
        if self.mode == "wrap" and tgt.kind == "uint" and tgt.bits == 64:
            # 2**64 - 1 and friends are not float64 values: go through int64's bit pattern
            r[r >= 2.0**63] -= 2.0**64
            np.copyto(o.view(np.int64), r, casting="unsafe")
        else:
            np.copyto(o, r, casting="unsafe")
        if above is not None:
            o[above] = tgt.hi  # 2**63-1 and 2**64-1 are not float64 values
        hits.apply(o)

    def _wrap_float(self, r: np.ndarray, oor: np.ndarray) -> None:
        """Replace out-of-range integer-valued floats by their residue in the target's range."""
        tgt = self.tgt
        period = 2.0**tgt.bits
        v = np.fmod(r[oor], period)  # exact; |v| < 2**bits
        v[v < -period / 2] += period  # exact: result fits the significand of an integer float
        v[v >= period / 2] -= period
        if tgt.kind == "uint" and tgt.bits < 64:
            v[v < 0] += period
        r[oor] = v

    def _f2f(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        if self.native_float_tgt and self.rounding == "nearest-even":
            lo, hi = float(w.min()), float(w.max())
            if -self.thr < lo and hi < self.thr:  # finite, no NaN, no overflow: numpy is exact
                hits = self._masks(view, w, lo, hi, False)
                np.copyto(o, w, casting="unsafe")
                hits.apply(o)
                return
        self._f2f_generic(view, w, o, None)

    def _f2f_generic(self, view: np.ndarray, w: np.ndarray, o: np.ndarray,
                     r: np.ndarray | None) -> None:
        tgt = self.tgt
        if r is None:
            r = self.tmp[: w.size]
            if tgt.dtype == np.float64:
                np.copyto(r, w)
            else:
                round_float_grid(w, tgt, self.rounding, r, self.tmp2[: w.size])
        hits = self._masks(view, w, 0.0, 0.0, True, all_=True)
        unclaimed = hits.unclaimed

        nan = np.isnan(r)
        if not tgt.has_nan and unclaimed(nan).any():
            self._fail(f"{tgt.name} has no NaN; map it in scalar_map", w[unclaimed(nan)])
        inf = np.isinf(w) if w.dtype.kind == "f" else np.zeros(w.size, bool)
        if not tgt.has_inf and unclaimed(inf).any():
            self._fail(f"{tgt.name} has no infinity; map it in scalar_map", w[unclaimed(inf)])
        fin = ~(nan | inf)
        if tgt.signed:
            above = fin & (r > tgt.max)
            below = fin & (r < -tgt.max)
        else:
            above = fin & (r > tgt.max)
            below = fin & (r < tgt.min_pos)
        if not tgt.has_zero:
            below |= fin & (r == 0)
        oor = above | below
        if oor.any():
            if self.mode is None and unclaimed(oor).any():
                self._fail(
                    f"outside the finite range of {tgt.name} after rounding and out_of_range is "
                    "not set", w[unclaimed(oor)],
                )
            big = np.inf if tgt.has_inf else tgt.max
            r[above] = big
            r[below] = -big if tgt.signed else tgt.min_pos
        if not tgt.has_nan:
            r[nan] = 0.0  # mapped; the map writes them below
        if not tgt.has_inf:
            r[inf] = 0.0
        if not tgt.has_negzero:
            r += 0.0  # -0.0 + 0.0 == +0.0: formats without -0 must not get their NaN pattern
        np.copyto(o, r, casting="unsafe")
        hits.apply(o)

    def _i2f(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        lo, hi = int(w.min()), int(w.max())
        if -(2**53) <= lo and hi <= 2**53:  # exact in float64: use the float path
            wf = self.tmp2[: w.size]
            np.copyto(wf, w, casting="unsafe")
            wf = wf.copy()
            self._f2f(view, wf, o)
            return
        r = round_int_grid(w, self.tgt, self.rounding)
        self._f2f_generic(view, w, o, r)
