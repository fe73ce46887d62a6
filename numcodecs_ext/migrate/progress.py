"""A progress bar on stderr for long store operations (no dependency)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``[label] 42% 1.3/3.1 GB 350 MB/s``, redrawn at most five times a second.

    >>> bar = Progress(10, "copy", enabled=False)
    >>> bar.advance(4); bar.done
    4
    """

    def __init__(self, total: int, label: str, *, enabled: bool = True, unit: str = "bytes") -> None:
        self.total, self.label, self.enabled, self.unit = max(int(total), 0), label, enabled, unit
        self.done = 0
        self._start = self._drawn = time.perf_counter()

    def _amount(self, n: float) -> str:
        if self.unit != "bytes":
            return f"{n:,.0f}"
        return f"{n / 1e9:.2f} GB" if self.total >= 1e9 else f"{n / 1e6:.1f} MB"

    def advance(self, n: int) -> None:
        self.done += int(n)
        now = time.perf_counter()
        if self.enabled and now - self._drawn >= 0.2:
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        share = self.done / self.total if self.total else 1.0
        rate = self.done / max(now - self._start, 1e-9)
        speed = f"{rate / 1e6:.0f} MB/s" if self.unit == "bytes" else f"{rate:,.0f} {self.unit}/s"
        sys.stderr.write(f"\r[{self.label}] {share:4.0%} {self._amount(self.done)} of "
                         f"{self._amount(self.total)} {speed}   ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            sys.stderr.write("\n")
            sys.stderr.flush()
