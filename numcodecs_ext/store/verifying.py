"""How much a store tool reads back: ``--verify full|sample:N|none``, one definition for every
tool that verifies (``convert``, ``migrate``, ``normalize``).

* ``full`` (the default): every chunk is read back and compared; a run that reports success has
  verified every value.
* ``sample:N``: ``N`` chunks per array, chosen at random (a fresh seed each run, printed so a
  run can be repeated), are read back; the summary says the result was *sampled*, and how many
  chunks of how many were checked. For a quick check of a huge store; it cannot prove that the
  chunks it did not read are right.
* ``none``: nothing is read back; the summary says *not verified*.

Examples
--------
>>> plan = parse_verify("sample:3")
>>> plan.mode, plan.count, plan.describe()
('sample', 3, 'sampled (3 chunks per array, chosen at random)')
>>> plan.choose(range(10), seed=1) == plan.choose(range(10), seed=1), len(plan.choose(range(10)))
(True, 3)
>>> parse_verify("full").choose(range(4))
[0, 1, 2, 3]
>>> parse_verify("sample:0")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
numcodecs_ext.store.errors.UsageError: --verify 'sample:0': N must be a whole number >= 1; use full, sample:N
(N >= 1) or none
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import UsageError

__all__ = ["VerifyPlan", "parse_verify"]

T = TypeVar("T")

_VALID = "use full, sample:N (N >= 1) or none"


@dataclass(frozen=True)
class VerifyPlan:
    """What to read back: ``mode`` is ``"full"``, ``"sample"`` or ``"none"``; ``count`` the
    chunks per array for ``"sample"``; ``seed`` the random choice's seed (drawn when the plan is
    made unless given, so one run chooses consistently and its summary can print it)."""

    mode: str = "full"
    count: int = 0
    seed: int = field(default_factory=lambda: random.SystemRandom().randrange(2**32))

    @property
    def enabled(self) -> bool:
        """Whether anything is read back."""
        return self.mode != "none"

    @property
    def complete(self) -> bool:
        """Whether every chunk is read back (only then may a tool say "verified")."""
        return self.mode == "full"

    def choose(self, items: Iterable[T], *, seed: int | None = None, key: Any = None) -> list[T]:
        """The items to check, in their order: all of them (full), none, or ``count`` of them
        chosen at random (sample), the same for the same seed and ``key`` (an array's name,
        so that arrays of one run get different choices)."""
        items = list(items)
        if self.mode == "full":
            return items
        if self.mode == "none":
            return []
        if len(items) <= self.count:
            return items
        rng = random.Random(f"{self.seed if seed is None else seed}/{key}")
        picked = sorted(rng.sample(range(len(items)), self.count))
        return [items[i] for i in picked]

    def describe(self) -> str:
        """How the summary says it: "verified", "sampled (...)" or "not verified"."""
        if self.mode == "full":
            return "verified"
        if self.mode == "none":
            return "not verified"
        return f"sampled ({self.count} chunk{'s' * (self.count != 1)} per array, chosen at random)"

    def summary(self, checked: int, total: int) -> str:
        """A summary line's verification part, with the counts a sample read."""
        if self.mode == "sample":
            return (f"sampled: {checked:,} of {total:,} chunks read back and compared "
                    f"(seed {self.seed}); the others were not checked")
        return self.describe()


def parse_verify(text: str | VerifyPlan | None) -> VerifyPlan:
    """``full``, ``sample:N`` or ``none`` (or a plan, returned as it is; None is full)."""
    if isinstance(text, VerifyPlan):
        return text
    if text is None or text == "full":
        return VerifyPlan("full")
    if text == "none":
        return VerifyPlan("none")
    if isinstance(text, str) and text.startswith("sample:"):
        n = text[len("sample:"):]
        if n.isascii() and n.isdigit() and int(n) >= 1:  # ASCII: "sample:٣" is no number to a user
            return VerifyPlan("sample", int(n))
        raise UsageError(f"--verify {text!r}: N must be a whole number >= 1; {_VALID}")
    raise UsageError(f"--verify {text!r} is not valid; {_VALID}")
