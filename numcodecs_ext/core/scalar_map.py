"""The ``scalar_map`` of the cast_value codec: which elements it claims, and what they become.

Pure numpy; knows nothing about numcodecs or zarr.

Matching: a key that is a NaN with the source type's canonical bit pattern (what the JSON string
``"NaN"`` decodes to) matches *every* NaN, whatever its sign or payload; a NaN key with any other
bit pattern (hex JSON such as ``"0x7fc00001"``) matches exactly that bit pattern; every other key
matches by numerical equality (``0`` matches ``+0.0`` and ``-0.0``). The first entry with a given
key wins, and a payload key after a ``"NaN"`` key can never match.

A map is prepared once (:class:`PreparedMap`) and reused for every block and every call. Up to
:data:`SMALL_MAP` entries each is matched with one comparison per block; larger maps go through a
sorted table and a binary search, so the work per element grows with ``log(entries)`` and the
memory with the block, never with the number of entries.

Examples
--------
>>> import numpy as np
>>> m = PreparedMap([(np.float64("nan"), np.uint8(0)), (np.float64(1.5), np.uint8(9))],
...                 np.dtype("float64"), np.dtype("uint8"))
>>> x = np.array([1.5, np.nan, 2.0])
>>> hits = m.match(x, x)
>>> hits.mask.tolist()
[True, True, False]
>>> out = np.zeros(3, np.uint8)
>>> hits.apply(out)
>>> out.tolist()
[9, 0, 0]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import NumericInfo, numeric_info
from .codetable import exactly

__all__ = [
    "SMALL_MAP", "Entry", "ExactBits", "Hits", "PreparedMap", "bits_dtype", "cache_key", "prepared",
    "reserved_hits", "single_entry",
]

#: maps with more entries than this are matched through a sorted table
SMALL_MAP = 8


def bits_dtype(dt: np.dtype) -> np.dtype:
    """The unsigned integer type of ``dt``'s width (native byte order)."""
    return np.dtype(f"u{dt.itemsize}")


def _canonical_nan_bits(dt: np.dtype) -> int:
    with np.errstate(all="ignore"):
        return int(np.array(np.nan, np.float64).astype(dt).view(bits_dtype(dt))[()])


class ExactBits:
    """A NaN key given by its bit pattern (hex JSON): it matches exactly that pattern, even the
    canonical NaN's, which a ``"NaN"`` key (every NaN) shares."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"ExactBits({self.value!r})"


@dataclass(frozen=True)
class Entry:
    """One entry, ready to match."""

    how: str  # "nan" (any NaN), "bits" (exact bit pattern), "eq" (numerical equality)
    key: Any  # float / int for "eq", None for "nan", raw bits (int) for "bits"
    value_bits: np.ndarray  # 0-d unsigned-int array: the bit pattern of the value
    key_f: float  # the key as float64 (for range pruning), nan for NaN keys
    index: int = -1  # the entry's position in the pairs as given


def _entries(pairs: Sequence[tuple[Any, Any]], src: NumericInfo, tgt: NumericInfo) -> list[Entry]:
    entries: list[Entry] = []
    seen: set[tuple[str, Any]] = set()
    any_nan_seen = False
    canonical = None if src.is_int else _canonical_nan_bits(src.dtype)
    for index, (k, v) in enumerate(pairs):
        exact = isinstance(k, ExactBits)
        if exact:
            k = k.value
        ka = np.asarray(k)
        if ka.dtype.newbyteorder("=") != src.dtype:
            ka = np.asarray(k, dtype=src.dtype)
        ka = ka.astype(src.dtype)  # native order
        va = np.asarray(v)
        if va.dtype.newbyteorder("=") != tgt.dtype:
            va = np.asarray(v, dtype=tgt.dtype)
        va = np.array(va, dtype=tgt.dtype)
        if src.is_int:
            how, key, kf = "eq", int(ka), float(int(ka))
        else:
            with np.errstate(invalid="ignore"):  # a signalling NaN key: its bits are kept below
                kf = float(ka.astype(np.float64))
            if np.isnan(kf):
                bits = int(ka.view(bits_dtype(src.dtype))[()])
                how, key = ("nan", None) if bits == canonical and not exact else ("bits", bits)
            else:
                how, key = "eq", kf
        ident = (how, key)
        if ident in seen or (how == "bits" and any_nan_seen):
            continue  # the first occurrence wins
        seen.add(ident)
        any_nan_seen |= how == "nan"
        entries.append(Entry(how, key, va.view(bits_dtype(tgt.dtype)), kf, index))
    return entries


class Hits:
    """The elements of one block a map claims (``mask``) and how to write their values."""

    __slots__ = ("_mask", "_n", "_writes")

    def __init__(self, writes: list[tuple[np.ndarray, np.ndarray]], n: int) -> None:
        #: (values: 0-d or per-element bits, mask); where masks overlap the first-listed wins
        self._writes = writes
        self._n = n
        self._mask: np.ndarray | None = None

    def __bool__(self) -> bool:
        return bool(self._writes)

    @property
    def mask(self) -> np.ndarray | None:
        """The claimed elements (None: none)."""
        if self._mask is None and self._writes:
            if len(self._writes) == 1:
                self._mask = self._writes[0][1]
            else:
                self._mask = np.zeros(self._n, bool)
                for _, m in self._writes:
                    self._mask |= m
        return self._mask

    def unclaimed(self, m: np.ndarray) -> np.ndarray:
        """``m`` without the claimed elements."""
        mask = self.mask
        return m if mask is None else m & ~mask

    def apply(self, o: np.ndarray) -> None:
        """Write the values into the 1-D block ``o`` (reversed: the first entry is written last)."""
        for values, mask in reversed(self._writes):
            np.copyto(o.view(values.dtype), values, where=mask)


def _match_entry(entry: Entry, view: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """Boolean mask (1-D, C order of ``view``) of elements matching ``entry``; ``w`` is the
    block widened to float64/int64 (or None)."""
    if entry.how == "bits":
        bits_dt = bits_dtype(view.dtype)
        key = np.array(entry.key, bits_dt)
        if not view.dtype.isnative:
            key = key.byteswap()
        return (view.view(bits_dt) == key).reshape(-1)
    if w is None:
        w = _widen(view, isinstance(entry.key, int))
    return np.isnan(w) if entry.how == "nan" else (w == entry.key)


def _widen(view: np.ndarray, integer: bool) -> np.ndarray:
    """The block as exact float64 / int64 values (1-D)."""
    if view.dtype.isbuiltin == 1 and view.dtype.kind in ("f" if not integer else "iu"):
        return view.reshape(-1)
    return view.astype(np.int64 if integer else np.float64).reshape(-1)


class _Table:
    """Large maps: the numerical keys sorted, the NaN payload keys sorted, for binary search."""

    def __init__(self, entries: list[Entry], src: NumericInfo) -> None:
        eq = [e for e in entries if e.how == "eq"]
        key_dtype = np.float64 if not src.is_int else (np.uint64 if src.dtype == np.uint64 else np.int64)
        keys = np.array([e.key for e in eq], dtype=key_dtype)
        order = np.argsort(keys)  # (keys are unique: the first occurrence was kept)
        self.keys = keys[order]
        self.values = np.array([eq[i].value_bits for i in order], dtype=entries[0].value_bits.dtype)
        bits = [e for e in entries if e.how == "bits"]
        b_order = np.argsort(np.array([e.key for e in bits], dtype=np.uint64)) if bits else []
        self.nan_keys = np.array([bits[i].key for i in b_order], dtype=bits_dtype(src.dtype))
        self.nan_values = np.array([bits[i].value_bits for i in b_order], dtype=self.values.dtype)
        nan = next((e for e in entries if e.how == "nan"), None)
        self.nan_value = None if nan is None else nan.value_bits
        self.integer = src.is_int

    def match(self, view: np.ndarray, w: np.ndarray | None) -> Hits:
        w = _widen(view, self.integer) if w is None else w
        n = w.size
        writes = []
        if self.keys.size:
            at = np.searchsorted(self.keys, w)
            np.minimum(at, self.keys.size - 1, out=at)
            found = self.keys[at] == w  # NaN equals no key
            writes.append((self.values[at], found))
        if self.nan_keys.size or self.nan_value is not None:
            isnan = np.isnan(w)
            if isnan.any():
                where = np.flatnonzero(isnan)
                values = np.zeros(where.size, self.values.dtype)
                hit = np.zeros(where.size, bool)
                if self.nan_keys.size:
                    native = view.reshape(-1)[where].astype(view.dtype.newbyteorder("="))
                    b = native.view(bits_dtype(view.dtype))
                    at = np.minimum(np.searchsorted(self.nan_keys, b), self.nan_keys.size - 1)
                    hit = self.nan_keys[at] == b
                    values[hit] = self.nan_values[at[hit]]
                if self.nan_value is not None:
                    values[~hit] = self.nan_value
                    hit[:] = True
                full_values = np.zeros(n, self.values.dtype)
                full_values[where] = values
                mask = np.zeros(n, bool)
                mask[where] = hit
                writes.insert(0, (full_values, mask))
        return Hits(writes, n)


class PreparedMap(Sequence):
    """A scalar map prepared for one (source, target) pair of dtypes; reuse it across calls.

    It is a sequence of its ``(key, value)`` pairs, so it can stand wherever the pairs can;
    :func:`~numcodecs_ext.core.cast_value.cast_array` skips the preparation for it.
    """

    def __init__(self, pairs: Sequence[tuple[Any, Any]], src_dtype: Any, tgt_dtype: Any,
                 reserved: Sequence[tuple[Any, Any]] = ()) -> None:
        self.pairs = tuple(pairs)
        self.src, self.tgt = numeric_info(np.dtype(src_dtype)), numeric_info(np.dtype(tgt_dtype))
        self.entries = _entries(self.pairs, self.src, self.tgt)
        self._table = _Table(self.entries, self.src) if len(self.entries) > SMALL_MAP else None
        #: outputs that only an input this map claims may produce: the entries ``(code, value)``
        #: of the way back (a decode map, target -> source) that read ``code`` as something
        #: other than its plain cast; an unmapped input landing on one could not round-trip
        self.reserved_pairs = tuple(reserved)
        self.reserved = PreparedMap(reserved, tgt_dtype, src_dtype) if reserved else None
        #: every key's and value's dtype and bits: what a cache of results depends on
        self.key = cache_key(self.pairs)
        if self.key is not None and self.reserved is not None:
            self.key = (*self.key, ("reserved", self.reserved.key))
        #: conversion plans made with this map, by (target dtype, rounding, out_of_range)
        self.plans: dict[tuple[Any, ...], Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its plans (they hold per-thread state): a copy makes its own."""
        return {**self.__dict__, "plans": {}}

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: Any) -> Any:
        return self.pairs[i]

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter(self.pairs)

    @property
    def large(self) -> bool:
        return self._table is not None

    def match(self, view: np.ndarray, w: np.ndarray | None, lo: float = -np.inf,
              hi: float = np.inf, nan: bool = True) -> Hits:
        """The elements of the block ``view`` (``w``: it widened to float64/int64, or None) that
        the map claims. ``lo``/``hi`` bound the block's numerical values and ``nan`` says whether
        it may hold NaN: entries that cannot match are skipped."""
        if self._table is not None:
            return self._table.match(view, w)
        writes = []
        for entry in self.entries:
            if entry.how != "eq":
                if not nan:
                    continue
            elif not lo <= entry.key_f <= hi:
                continue
            writes.append((entry.value_bits, _match_entry(entry, view, w)))
        return Hits(writes, view.size)


def reserved_hits(reserved: PreparedMap, out: np.ndarray) -> np.ndarray | None:
    """Mask (1-D) of the elements of the output block ``out`` at a reserved code, or None."""
    hits = reserved.match(out, None)
    mask = hits.mask
    return mask if mask is not None and mask.any() else None


def cache_key(scalar_map: Sequence[tuple[Any, Any]]) -> tuple[Any, ...] | None:
    """A hashable key telling apart every map (each entry's dtypes and bit patterns), computed
    once for a :class:`PreparedMap`; None for entries that are not numeric scalars."""
    if isinstance(scalar_map, PreparedMap):
        return scalar_map.key
    try:
        return tuple((("bits", *exactly(k.value)) if isinstance(k, ExactBits) else exactly(k),
                      exactly(v)) for k, v in scalar_map)
    except TypeError:
        return None


def prepared(scalar_map: Sequence[tuple[Any, Any]], src: NumericInfo, tgt: NumericInfo) -> PreparedMap:
    """``scalar_map`` prepared for ``src`` -> ``tgt`` (as given, if it already is)."""
    if isinstance(scalar_map, PreparedMap) and scalar_map.src.dtype == src.dtype \
            and scalar_map.tgt.dtype == tgt.dtype:
        return scalar_map
    return PreparedMap(scalar_map, src.dtype, tgt.dtype, getattr(scalar_map, "reserved_pairs", ()))


def single_entry(reserved: PreparedMap, entry: Any) -> PreparedMap:
    """The one-entry map of ``entry`` (to tell which reserved entry a code hit)."""
    return PreparedMap([reserved.pairs[entry.index]], reserved.src.dtype, reserved.tgt.dtype)
