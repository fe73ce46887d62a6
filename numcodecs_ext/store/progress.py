"""The one progress bar of the tools: tqdm on stderr, bytes and chunks done.

Every tool that works through a store chunk by chunk reports here, so that ``--quiet`` and the
look of the bar are the same everywhere. Work that dask runs shows dask's own progress instead.

Examples
--------
>>> with Progress(4096, "copy", chunks=2, enabled=False) as bar:
...     bar.advance(2048); bar.advance(2048)
>>> bar.bytes_done, bar.chunks_done
(4096, 2)
"""

from __future__ import annotations

import sys
from types import TracebackType

__all__ = ["Progress"]


class Progress:
    """Bytes (and chunks) done out of a total, drawn by tqdm on stderr unless ``enabled`` is
    false; ``advance`` is cheap enough to call per chunk."""

    def __init__(self, total: int, label: str, *, chunks: int | None = None, enabled: bool = True,
                 unit: str = "B") -> None:
        self.bytes_done = 0
        self.chunks_done = 0
        self.chunks_total = chunks
        self._bar = None
        if enabled:
            from tqdm import tqdm

            scaled = unit == "B"
            self._bar = tqdm(total=max(int(total), 0), desc=label, unit=unit, unit_scale=scaled,
                             unit_divisor=1024 if scaled else 1000, file=sys.stderr,
                             dynamic_ncols=True, leave=True, mininterval=0.2)

    @property
    def done(self) -> int:
        """What is done, in the bar's unit (bytes by default)."""
        return self.bytes_done

    def advance(self, n: int, chunks: int = 1) -> None:
        """``n`` more units (bytes) and ``chunks`` more chunks done."""
        self.bytes_done += int(n)
        self.chunks_done += chunks
        if self._bar is not None:
            if self.chunks_total is not None:
                self._bar.set_postfix_str(f"{self.chunks_done}/{self.chunks_total} chunks", refresh=False)
            self._bar.update(int(n))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
