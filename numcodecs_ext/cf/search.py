"""The search behind :func:`numcodecs_ext.cf.choose_packing`: the float type's facts, the
guaranteed error of a packing (exact, with Fractions), candidates proven through the real codecs,
and why no packing meets a tolerance when none does. See :mod:`numcodecs_ext.cf.packing`,
which imports it (the types it returns are in :mod:`numcodecs_ext.cf.packed`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..codecs._base import show as show_attribute
from .packed import INTEGER_TYPES, DataRange, Packing

__all__ = ["Floats", "finest", "float_range", "meeting", "why_not", "why_tolerance"]

# -- the float type's facts -----------------------------------------------------------------


@dataclass(frozen=True)
class Floats:
    """What the bound needs of a float type, exact."""

    dtype: np.dtype
    p: int  # significand bits, the hidden one included
    u: Fraction  # unit roundoff, 2**-p
    eta: Fraction  # smallest subnormal
    tiny: Fraction  # smallest normal
    max: float
    kmin: int  # scales are powers of two from 2**kmin (the smallest normal) ...
    kmax: int  # ... to 2**kmax (the largest below max)

    @classmethod
    def of(cls, dtype: np.dtype) -> Floats:
        info = np.finfo(dtype)
        p = int(info.nmant) + 1
        return cls(dtype, p, Fraction(1, 2**p), Fraction(float(info.smallest_subnormal)),
                   Fraction(float(info.smallest_normal)), float(info.max), int(info.minexp),
                   int(info.maxexp) - 1)

    def round(self, x: Fraction | float) -> float:
        """``x`` rounded to the nearest value of the type (inf beyond it), as a Python float."""
        if isinstance(x, Fraction):
            return _round_fraction(x, self)
        with np.errstate(over="ignore"):
            return float(self.dtype.type(x))

    def quantum(self, lo: float, hi: float) -> Fraction:
        """The largest power of two that every value of the type in [lo, hi] is a multiple of."""
        if lo <= 0 <= hi:
            return self.eta
        return self.ulp(min(abs(lo), abs(hi)))

    def ulp(self, x: float) -> Fraction:
        """The spacing of the type's values at ``|x|`` and above it in its binade."""
        if x == 0:
            return self.eta
        return max(self.eta, Fraction(2) ** (math.frexp(abs(x))[1] - self.p))


def _round_fraction(x: Fraction, f: Floats) -> float:
    """A Fraction rounded once to the float type (via float64 when that is exact enough)."""
    try:
        d = float(x)  # correctly rounded to float64
    except OverflowError:
        return math.inf if x > 0 else -math.inf
    if f.dtype == np.float64 or d == 0 or not math.isfinite(d):
        return float(f.dtype.type(d))
    # float64 -> float32/16 after float64 rounding: double rounding is harmless unless the float64
    # value sits exactly on a tie of the narrower type; decide those from the exact value
    with np.errstate(over="ignore"):
        near = f.dtype.type(d)
        if not np.isfinite(near):
            return float(near)
        below = np.nextafter(near, f.dtype.type(-np.inf))
        above = np.nextafter(near, f.dtype.type(np.inf))
    best = min((near, below, above), key=lambda c: (abs(Fraction(float(c)) - x) if np.isfinite(c) else math.inf,
                                                     int(c.view(f"u{f.dtype.itemsize}")) & 1))
    return float(best)


def _log2(x: Fraction) -> float:
    """log2 of a positive Fraction of any size."""
    return math.log2(x.numerator) - math.log2(x.denominator)


def _pow2(k: int) -> Fraction:
    return Fraction(2) ** k


def _is_pow2(x: float) -> bool:
    return x > 0 and math.frexp(x)[0] == 0.5


def _usable(f: Floats, packed: np.dtype, nan: bool) -> tuple[int, int]:
    """The codes a packing can reach: those of ``packed`` (:func:`_codes`) that the float type
    holds too (the codes are rounded floats: a float16 packing never gets past ±65504)."""
    first, last, _ = _codes(packed, nan)
    top = math.floor(f.max)
    return max(first, -top), min(last, top)


def _codes(packed: np.dtype, nan: bool) -> tuple[int, int, int | None]:
    """(first usable code, last usable code, NaN code) of ``packed``."""
    info = np.iinfo(packed)
    if not nan:
        return int(info.min), int(info.max), None
    if packed.kind == "u":
        return 0, int(info.max) - 1, int(info.max)
    return int(info.min) + 1, int(info.max), int(info.min)


# -- one candidate, through the real codecs ---------------------------------------------------


def _sterbenz(lo: Fraction, hi: Fraction, o: Fraction) -> bool:
    """Whether x - o is exact for every x in [lo, hi] (within a factor of two of o)."""
    if o > 0:
        return o / 2 <= lo and hi <= 2 * o
    if o < 0:
        return 2 * o <= lo and hi <= o / 2
    return True


def _bound(f: Floats, lo: float, hi: float, offset: float, scale: float, q: tuple[int, int],
           y: tuple[float, float]) -> Fraction:
    """The largest error of any value of [lo, hi] (see the module docstring), exact."""
    L, H, o, sc = Fraction(lo), Fraction(hi), Fraction(offset), Fraction(scale)
    if L == H == o:
        return Fraction(0)  # x - offset = 0: code 0, decoded as offset itself
    u = f.u
    sub_exact = _sterbenz(L, H, o)  # also o == 0
    pow2 = _is_pow2(scale)
    if sub_exact and pow2:
        step = 1 / sc
        g = f.quantum(lo, hi)
        if o != 0:
            g = min(g, f.ulp(offset))
        if g >= step:  # every x - offset is a whole number of steps: no rounding anywhere
            return Fraction(0)
    M = max(abs(L - o), abs(H - o))
    Q = max(abs(q[0]), abs(q[1]))
    Y = max(abs(Fraction(y[0])), abs(Fraction(y[1])))
    bound = Fraction(1, 2) / sc
    if not sub_exact:
        bound += u * M  # x - offset rounded
    if not pow2:
        bound += u * M * (1 + u)  # (x - offset) * scale rounded
        bound += u * Q * (1 + u) / sc  # code / scale rounded
        if 1 / sc < f.tiny:
            bound += f.eta / 2  # ... possibly to a subnormal
    if o != 0:
        bound += u * Y / (1 - u)  # + offset rounded
    return bound


def _ceil_float(x: Fraction) -> float:
    """The smallest float64 >= x."""
    try:
        d = float(x)
    except OverflowError:
        return math.inf
    return d if Fraction(d) >= x else math.nextafter(d, math.inf)


def _candidate(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float, nan: bool,
               scale: float, offset: float) -> Packing | None:
    """The packing with this scale and offset if it holds up in the real codecs, else None: the
    codes of both ends fit the type, decode to finite values within the bound, NaN and the fill
    value go through and back."""
    if not (math.isfinite(scale) and scale > 0 and math.isfinite(offset)):
        return None
    first, last, nan_code = _codes(packed, nan)
    p = Packing(f.dtype, packed, offset, scale, nan_code, math.inf, r)
    try:
        so, cv = p.filters()
        x = np.array([lo, hi], dtype=f.dtype)
        with np.errstate(all="ignore"):
            codes = cv.encode(so.encode(x))
        if not (first <= int(codes[0]) and int(codes[1]) <= last):
            return None
        back = so.decode(cv.decode(codes))
        if not np.isfinite(back).all():
            return None  # decoding overflows
        fill = np.array([p.fill_value], dtype=f.dtype)
        spec = so.resolve_spec((1,), f.dtype, fill[0], strict=True)  # as zarr checks it
        cv.resolve_spec(*spec, strict=True)
        fill_back = so.decode(cv.decode(cv.encode(so.encode(fill))))
        if fill_back.tobytes() != fill.tobytes() and not (nan and np.isnan(fill_back).all()):
            return None
    except ValueError:
        return None
    bound = _bound(f, lo, hi, offset, scale, (int(codes[0]), int(codes[1])),
                   (float(back[0]), float(back[1])))
    err = np.abs(back.astype(np.float64) - x.astype(np.float64))
    if Fraction(float(err.max())) > bound:  # pragma: no cover - the analysis would be wrong
        raise AssertionError(f"packing bound {float(bound)} broken at the range ends ({float(err.max())}): {p}")
    return Packing(f.dtype, packed, offset, scale, nan_code, _ceil_float(bound), r)


# -- the search -----------------------------------------------------------------------------


def _centre(lo: Fraction, hi: Fraction, first: int, last: int, sc: Fraction) -> Fraction:
    """The offset that puts the codes of [lo, hi] around code 0, or as near it as [first, last]
    allows (signed types: centred on 0; unsigned: from 0 up), which keeps the magnitudes, and so
    the float rounding, small."""
    n = (hi - lo) * sc
    middle = min(max(Fraction(0), first + n / 2), last - n / 2)
    return (lo + hi) / 2 - middle / sc


def _pow2_candidates(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float, nan: bool,
                     k: int) -> list[Packing]:
    """Packings with scale 2**k: the offset in the middle of the codes, on the scale's grid (so
    that subtraction can be exact), and 0 (exact subtraction and addition) where the codes fit."""
    first, last = _usable(f, packed, nan)
    sc = _pow2(k)
    L, H = Fraction(lo), Fraction(hi)
    offsets = []
    if lo == hi:
        offsets.append(lo)
    centre = _centre(L, H, first, last, sc)
    grid = Fraction(round(centre * sc)) / sc
    offsets += [f.round(grid), f.round(grid - 1 / sc), f.round(grid + 1 / sc)]
    # within a factor of two of every value (Sterbenz: x - offset exact), where there is such
    if 0 < L and H <= 4 * L and not (H / 2 <= centre <= 2 * L):
        offsets.append(f.round(Fraction(math.ceil(H / 2 * sc)) / sc if centre < H / 2 else
                               Fraction(math.floor(2 * L * sc)) / sc))
    elif H < 0 and L >= 4 * H and not (2 * H <= centre <= L / 2):
        offsets.append(f.round(Fraction(math.floor(L / 2 * sc)) / sc if centre > L / 2 else
                               Fraction(math.ceil(2 * H * sc)) / sc))
    if first <= L * sc and H * sc <= last:
        offsets.insert(0, 0.0)
    out, seen = [], set()
    for o in offsets:
        if o in seen:
            continue
        seen.add(o)
        c = _candidate(f, packed, r, lo, hi, nan, float(sc), o)
        if c is not None:
            out.append(c)
            if c.max_error == 0:
                break
    return out


def _fit_k(f: Floats, packed: np.dtype, nan: bool, lo: float, hi: float) -> int:
    """The largest k whose scale 2**k spreads [lo, hi] over the codes, leaving one spare."""
    first, last = _usable(f, packed, nan)
    if hi == lo:
        return min(f.kmax, 0)
    k = math.floor(math.log2(last - first - 1) - _log2(Fraction(hi) - Fraction(lo)))
    while _pow2(k + 1) * (Fraction(hi) - Fraction(lo)) <= last - first - 1:
        k += 1
    while k > f.kmin and _pow2(k) * (Fraction(hi) - Fraction(lo)) > last - first - 1:
        k -= 1
    return max(f.kmin, min(f.kmax, k))


def _arbitrary(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float, nan: bool,
               scale: Fraction) -> Packing | None:
    """The packing at (about) ``scale`` with the offset in the middle of the codes; the scale
    shrinks by up to a few codes where the float rounding pushes an end out of the type."""
    first, last = _usable(f, packed, nan)
    L, H = Fraction(lo), Fraction(hi)
    span = H - L
    codes = span * scale
    for extra in (0, 1, 2, 4, 8, 16, 64, 256):
        if extra and extra * 4 > codes:
            break
        sc = scale if extra == 0 else scale * (1 - Fraction(extra) / codes)
        sc_f = f.round(min(sc, Fraction(f.max)))
        if not (math.isfinite(sc_f) and sc_f >= float(f.tiny)):
            return None
        o = f.round(_centre(L, H, first, last, Fraction(sc_f)))
        c = _candidate(f, packed, r, lo, hi, nan, sc_f, o)
        if c is not None:
            return c
    return None


def _edge_candidates(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float,
                     nan: bool) -> list[Packing]:
    """Offset 0 and the largest scale whose codes hold the range: the end farthest from 0 lands
    on the type's last code. Near the float type's largest values this is what decodes without
    overflowing (the end decodes to itself, give or take a rounding, never half a step beyond)."""
    first, last = _usable(f, packed, nan)
    limits = []
    if hi > 0:
        limits.append(Fraction(last) / Fraction(hi))
    if lo < 0:
        if first >= 0:
            return []
        limits.append(Fraction(first) / Fraction(lo))
    if not limits:
        return []
    bound = min(min(limits), Fraction(f.max))
    out = []
    k = math.floor(_log2(bound))
    while _pow2(k) > bound:
        k -= 1
    if f.kmin <= k <= f.kmax:  # a power of two: exact arithmetic throughout
        c = _candidate(f, packed, r, lo, hi, nan, float(_pow2(k)), 0.0)
        if c is not None:
            out.append(c)
    up = _round_fraction(bound, f)
    if Fraction(up) < bound:
        with np.errstate(over="ignore"):
            up = float(np.nextafter(f.dtype.type(up), f.dtype.type(np.inf)))
    for sc in (up, float(np.nextafter(f.dtype.type(up), f.dtype.type(0)))):
        c = _candidate(f, packed, r, lo, hi, nan, sc, 0.0)
        if c is not None:
            out.append(c)
            break
    return out


def finest(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float, nan: bool) -> Packing | None:
    """The packing into ``packed`` with the smallest guaranteed error."""
    first, last = _usable(f, packed, nan)
    found: list[Packing] = []
    k = _fit_k(f, packed, nan, lo, hi)
    for kk in (k, k - 1):
        found += _pow2_candidates(f, packed, r, lo, hi, nan, kk)
        if found:
            break
    if hi > lo:
        for n in {last - first - 1, min(last - first - 1, 2**f.p)}:
            c = _arbitrary(f, packed, r, lo, hi, nan, Fraction(n) / (Fraction(hi) - Fraction(lo)))
            if c is not None:
                found.append(c)
    found += _edge_candidates(f, packed, r, lo, hi, nan)
    if not found:
        return None
    return min(found, key=lambda c: (c.max_error, not _is_pow2(c.scale), c.scale))


def meeting(f: Floats, packed: np.dtype, r: DataRange, lo: float, hi: float, nan: bool,
             tol: float, finest: Packing) -> Packing | None:
    """The coarsest packing into ``packed`` whose guaranteed error is at most ``tol``."""
    found: list[Packing] = [finest] if finest.max_error <= tol else []
    k_fit = _fit_k(f, packed, nan, lo, hi)
    # powers of two, from the coarsest that could meet tol (or be lossless) to the finest
    span = Fraction(hi) - Fraction(lo)
    k_tol = math.ceil(-1 - math.log2(tol))
    if span > 0:  # never coarser than one step across the whole range
        k_tol = max(k_tol, math.floor(-_log2(span)))
    k_exact = -round(_log2(f.quantum(lo, hi)))
    start = max(f.kmin, min(k_tol, k_exact))
    for k in [*range(start, min(k_fit, start + 64) + 1), *([k_exact] if start + 64 < k_exact <= k_fit else [])]:
        good = [c for c in _pow2_candidates(f, packed, r, lo, hi, nan, k) if c.max_error <= tol]
        if good:
            found.append(min(good, key=lambda c: c.max_error))
            break
    # any scale: 0.5 / scale for the step, plus the float rounding (about constant in the scale)
    if hi > lo:
        sc = max(Fraction(0.5) / Fraction(tol), 1 / span)
        for _ in range(8):
            if sc >= Fraction(finest.scale):
                break
            c = _arbitrary(f, packed, r, lo, hi, nan, sc)
            if c is None:  # an end out of the codes or decoding out of the float type: finer
                sc *= Fraction(3, 2)
                continue
            if c.max_error <= tol:
                found.append(c)
                break
            rounding = Fraction(c.max_error) - Fraction(0.5) / Fraction(c.scale)
            if rounding >= Fraction(tol):
                break  # the float rounding alone exceeds tol at this magnitude
            needed = Fraction(0.5) / (Fraction(tol) - rounding) * (1 + Fraction(1, 1 << 20))
            sc = max(sc * (1 + Fraction(1, 4096)), needed)
    if not found:
        return None
    return min(found, key=lambda c: (c.scale, c.max_error))


def float_range(f: Floats, r: DataRange) -> tuple[float, float]:
    """The range in the float type, rounded outwards (a value of the range, rounded to the type,
    stays inside); ValueError if it lies beyond the type's finite values."""
    out = []
    for name, v, way in (("min", float(r.min), -math.inf), ("max", float(r.max), math.inf)):
        with np.errstate(over="ignore"):
            x = f.dtype.type(v)
        if not np.isfinite(x):
            raise ValueError(f"data_range {name}={show_attribute(v)} is beyond the finite values of "
                             f"{f.dtype.name} (±{f.max:g}): such data is ±Infinity in {f.dtype.name}")
        if (float(x) < v and way > 0) or (float(x) > v and way < 0):
            with np.errstate(over="ignore"):
                nxt = np.nextafter(x, f.dtype.type(way))
            x = nxt if np.isfinite(nxt) else x
        out.append(float(x))
    return out[0], out[1]


def why_not(f: Floats, packed: np.dtype, lo: float, hi: float, nan: bool) -> str:
    """Why no packing into ``packed`` exists (the search found none)."""
    first, last = _usable(f, packed, nan)
    name = f.dtype.name
    if first >= 0 and Fraction(hi) - Fraction(lo) > Fraction(f.max):
        return (f"the range is wider than the largest {name} ({f.max:g}), so x - offset overflows "
                f"{name} at one end for every offset that keeps the codes of an unsigned type "
                "non-negative; use a signed type")
    return (f"every scale and offset of {name} puts an end of the range outside its codes "
            f"[{first}, {last}] or decodes beyond the finite {name} values")


def _g(x: Fraction) -> str:
    """A positive Fraction for a message, however large."""
    try:
        return f"{float(x):.3g}"
    except OverflowError:
        e = math.floor(math.log10(x.numerator) - math.log10(x.denominator))
        return f"{float(x / Fraction(10) ** e):.3g}e+{e}"


def why_tolerance(f: Floats, lo: float, hi: float, tol: float, nan: bool, best: Packing | None) -> str:
    """Which limits keep every packing above ``tol``: both ways a packing can meet it, rounding
    to steps of at most 2 × tol, or keeping every value exact, and what each would need."""
    name = f.dtype.name
    codes = 2**32 - (1 if nan else 0)  # the most codes any type has (uint32)
    span = Fraction(hi) - Fraction(lo)

    def need(scale: Fraction) -> str | None:
        if scale > Fraction(f.max):
            return f"a scale of {_g(scale)}, above the largest {name} ({f.max:g})"
        if span * scale + 1 > codes:
            return f"{_g(span * scale + 1)} codes, more than the {codes} of {INTEGER_TYPES[-1]}"
        return None

    rounding = need(1 / (2 * Fraction(tol)))
    if rounding is None:
        far = max(abs(lo), abs(hi))
        rounding = (f"the codecs' {name} arithmetic alone errs by more ({name} values near {far:.3g} "
                    f"are {float(f.ulp(far)):.3g} apart)")
    else:
        rounding = f"steps of at most 2 × tolerance need {rounding}"
    exact = need(1 / f.quantum(lo, hi))
    exact = (f"keeping every value exact needs {exact}" if exact is not None else
             "keeping every value exact needs an offset that subtracts exactly, which no type's codes "
             "hold here")
    hint = f"; the best is {best.max_error:.3g} with {best.packed.name}" if best is not None else ""
    return f"{rounding}; {exact}{hint}"
