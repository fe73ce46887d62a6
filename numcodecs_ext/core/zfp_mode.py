"""zfp's modes and their parameters: the configuration a zfp codec is given, checked once and
held as a :class:`ZfpMode` whose fields have their zfp names (``rate``, ``tolerance``,
``precision``, ``minbits``, ``maxbits``, ``maxprec``, ``minexp``).

>>> settings("expert", minbits=0, maxbits=16658, maxprec=64, minexp=-1075).lossless
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from ._libzfp import ZFP_MAX_BITS, ZFP_MAX_PREC, ZFP_MIN_EXP
from .dtypes import show

__all__ = ["MODES", "ZfpMode", "check_config", "mode_arg", "settings"]

#: The parameters each mode requires (and allows).
MODES: dict[str, tuple[str, ...]] = {
    "reversible": (),
    "fixed_accuracy": ("tolerance",),
    "fixed_rate": ("rate",),
    "fixed_precision": ("precision",),
    "expert": ("minbits", "maxbits", "maxprec", "minexp"),
}

_UINT32_MAX = 2**32 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# zfp_stream_set_rate(rate, type, 3, 0) gives every block floor(64 * rate + 0.5) bits, and pads
# each block to exactly that many. No block can use more than ZFP_MAX_BITS (a 4-D float64 block,
# all bit planes, with its header), so larger rates (or minbits) only pad blocks with zeros:
# a 16-byte array with rate 67108863 would become 512 MB.
_RATE_MAX = ZFP_MAX_BITS / 64




def _number(cfg: Mapping[str, Any], key: str, mode: str) -> float:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"zfp mode {mode!r}: {key!r} must be a number, got {show(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"zfp mode {mode!r}: {key!r} must be finite, got {show(value)}")
    return value


def _integer(cfg: Mapping[str, Any], key: str, mode: str, lo: int, hi: int, what: str) -> int:
    value = cfg[key]
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"zfp mode {mode!r}: {key!r} must be an integer, got {show(value)}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"zfp mode {mode!r}: {key!r} = {value} is out of range; {what}")
    return value


def check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a zfp codec configuration and return it normalized.

    Parameters
    ----------
    config
        The spec configuration: ``{"mode": ..., <that mode's parameters>}``.

    Returns
    -------
    dict
        ``mode`` first, then the mode's parameters in spec order; integers as ``int``, ``rate`` and
        ``tolerance`` as ``float`` (an integral number stays ``int`` so JSON stays as written).

    Raises
    ------
    ValueError, TypeError
        Unknown mode, a missing or unexpected key, or a value of the wrong type or out of range.
        The message names the key, the value and what is valid.

    Examples
    --------
    >>> check_config({"mode": "fixed_rate", "rate": 8})
    {'mode': 'fixed_rate', 'rate': 8}
    >>> check_config({"mode": "fixed_rate"})
    Traceback (most recent call last):
    ...
    ValueError: zfp mode 'fixed_rate' needs the key(s) 'rate'
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"zfp configuration must be a mapping (a JSON object), got {type(config).__name__}")
    if "mode" not in config:
        raise ValueError(f"zfp configuration has no 'mode'; valid modes: {', '.join(MODES)}")
    mode = config["mode"]
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"zfp 'mode' = {show(mode)} is not a zfp mode; valid modes: {', '.join(MODES)}")
    keys = MODES[mode]
    missing = [k for k in keys if k not in config]
    if missing:
        raise ValueError(f"zfp mode {mode!r} needs the key(s) {', '.join(map(repr, missing))}")
    extra = sorted((k for k in config if k != "mode" and k not in keys), key=str)
    if extra:
        allowed = ", ".join(map(repr, keys)) if keys else "no parameters"
        raise ValueError(
            f"zfp mode {mode!r} does not take the key(s) {', '.join(map(show, extra))}; "
            f"it takes {allowed}"
        )
    out: dict[str, Any] = {"mode": mode}
    if mode == "fixed_rate":
        rate = _number(config, "rate", mode)
        if not 0 < rate <= _RATE_MAX:
            raise ValueError(
                f"zfp mode 'fixed_rate': 'rate' = {show(config['rate'])} is out of range; it must be "
                f"> 0 and at most {_RATE_MAX} (= {ZFP_MAX_BITS} / 64, the bits of zfp's largest block)"
            )
        out["rate"] = _keep_int(config["rate"], rate)
    elif mode == "fixed_accuracy":
        tol = _number(config, "tolerance", mode)
        if tol < 0:
            raise ValueError(
                f"zfp mode 'fixed_accuracy': 'tolerance' = {show(config['tolerance'])} is out of range;"
                " it must be >= 0 (the largest absolute error allowed)"
            )
        out["tolerance"] = _keep_int(config["tolerance"], tol)
    elif mode == "fixed_precision":
        out["precision"] = _integer(
            config, "precision", mode, 1, ZFP_MAX_PREC, "it must be in [1, 64] (bit planes kept)"
        )
    elif mode == "expert":
        minbits = _integer(
            config, "minbits", mode, 0, ZFP_MAX_BITS,
            f"it must be in [0, {ZFP_MAX_BITS}] (the bits of zfp's largest block)",
        )
        maxbits = _integer(config, "maxbits", mode, 1, _UINT32_MAX, "it must be in [1, 2**32-1]")
        maxprec = _integer(config, "maxprec", mode, 1, ZFP_MAX_PREC, "it must be in [1, 64]")
        minexp = _integer(
            config, "minexp", mode, _INT32_MIN, _INT32_MAX, "it must be a 32-bit signed integer"
        )
        if minbits > maxbits:
            raise ValueError(
                f"zfp mode 'expert': 'minbits' = {minbits} must not exceed 'maxbits' = {maxbits}"
            )
        out.update(minbits=minbits, maxbits=maxbits, maxprec=maxprec, minexp=minexp)
    return out


def _keep_int(raw: Any, value: float) -> Any:
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        return int(raw)
    return value


class ZfpMode(NamedTuple):
    """A validated zfp mode (hashable): its name and the parameters it takes, under their zfp
    names; the parameters a mode does not take are 0. Make one with :func:`settings`."""

    name: str
    rate: float = 0.0  # fixed_rate: bits per value of a 3-D block (zarrs' quirk)
    tolerance: float = 0.0  # fixed_accuracy: the largest absolute error
    precision: int = 0  # fixed_precision: bit planes kept
    minbits: int = 0  # expert: the fewest bits a block takes
    maxbits: int = 0  # expert: the most bits a block may take
    maxprec: int = 0  # expert: the most bit planes kept
    minexp: int = 0  # expert: the smallest bit plane kept (< ZFP_MIN_EXP: the reversible coder)

    @classmethod
    def from_params(cls, mode: str, params: Mapping[str, Any]) -> ZfpMode:
        """The validated mode; memoised, since codecs call this with the same values per chunk."""
        try:  # the types are part of the key: rate=True must still be refused after rate=1
            key = (mode, tuple(sorted((k, type(v), v) for k, v in params.items())))
            return _mode_of(key)
        except TypeError:  # an unhashable value: validate, which words the error
            return cls._validated(mode, params)

    @classmethod
    def _validated(cls, mode: str, params: Mapping[str, Any]) -> ZfpMode:
        cfg = check_config({"mode": mode, **params})
        if mode == "fixed_rate":
            return cls(mode, rate=float(cfg["rate"]))
        if mode == "fixed_accuracy":
            return cls(mode, tolerance=float(cfg["tolerance"]))
        if mode == "fixed_precision":
            return cls(mode, precision=cfg["precision"])
        if mode == "expert":
            return cls(mode, minbits=cfg["minbits"], maxbits=cfg["maxbits"], maxprec=cfg["maxprec"],
                       minexp=cfg["minexp"])
        return cls(mode)

    @property
    def reversible_coder(self) -> bool:
        """Whether zfp runs its reversible coder: mode ``reversible``, or ``expert`` with
        ``minexp`` below ``ZFP_MIN_EXP``."""
        return self.name == "reversible" or (self.name == "expert" and self.minexp < ZFP_MIN_EXP)

    @property
    def lossless(self) -> bool:
        """Whether zfp runs its reversible algorithm with no bit budget (non-finite values safe)."""
        if self.name == "reversible":
            return True
        return (
            self.name == "expert"
            and self.minexp < ZFP_MIN_EXP
            and self.maxprec == ZFP_MAX_PREC
            and self.maxbits >= ZFP_MAX_BITS
        )

    def c_params(self) -> tuple[float, int, int, int]:
        """The parameters as the compiled session's struct holds them: (rate, tolerance or
        maxprec; precision or minbits; maxbits; minexp)."""
        if self.name == "fixed_rate":
            return (self.rate, 0, 0, 0)
        if self.name == "fixed_accuracy":
            return (self.tolerance, 0, 0, 0)
        if self.name == "fixed_precision":
            return (0.0, self.precision, 0, 0)
        return (float(self.maxprec), self.minbits, self.maxbits, self.minexp)


@lru_cache(maxsize=256)
def _mode_of(key: tuple[Any, ...]) -> ZfpMode:
    mode, items = key
    return ZfpMode._validated(mode, {k: v for k, _, v in items})


def settings(mode: str, **params: Any) -> ZfpMode:
    """The mode and its parameters, validated once: pass the result as ``mode`` (and no
    parameters) to :func:`.zfp.compress` and :func:`.zfp.decompress`, which then skip validating them
    again, as codecs do for every chunk.

    >>> settings("fixed_rate", rate=8)
    ZfpMode(name='fixed_rate', rate=8.0, tolerance=0.0, precision=0, minbits=0, maxbits=0, maxprec=0, minexp=0)
    """
    return ZfpMode.from_params(mode, params)


def mode_arg(mode: Any, params: Mapping[str, Any]) -> ZfpMode:
    """``mode`` if it is a :class:`ZfpMode` (then no ``params``), else the mode it names."""
    if isinstance(mode, ZfpMode):
        if params:
            raise TypeError(f"mode {mode} from settings() takes no more parameters, got {sorted(params)}")
        return mode
    return ZfpMode.from_params(mode, params)
