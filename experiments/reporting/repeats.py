"""Figures measured again and again (a benchmark's rounds): their median and range, their quartiles,
and the one rule for calling one method faster than another.

    s = Spread.of(tokens_per_s_by_round)      # median, min, max, n
    q = quartiles(acceptance_by_request)      # median and interquartile range
    verdict(ours_by_round, none_by_round)     # "faster" / "slower" only where the ranges do not overlap

A machine shared with other work drifts over minutes, so one method beats another only where every
round of the one beats every round of the other; anything less is "within noise".

Standard library only: ``experiments/bench_vllm.py`` imports this where vLLM's engine processes
import that file again, and they must not load numba (``import lookup`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Sequence

__all__ = ["Spread", "quartiles", "verdict"]


@dataclass(frozen=True)
class Spread:
    """The median of some repeated figures and a range around it (``lo``..``hi``: min-max, or the
    quartiles from :func:`quartiles`), over ``n`` values."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Spread | None":
        """The median and min-max of ``values`` (None when there are none)."""
        return cls(float(median(values)), float(min(values)), float(max(values)), len(values)) if values else None


def quartiles(values: Sequence[float]) -> Spread | None:
    """The median and the interquartile range (linear interpolation); None when there are no values."""
    if not values:
        return None
    v = sorted(values)

    def q(p: float) -> float:
        x = p * (len(v) - 1)
        i = int(x)
        return v[i] + (v[min(i + 1, len(v) - 1)] - v[i]) * (x - i)

    return Spread(q(0.5), q(0.25), q(0.75), len(v))


def verdict(a: Sequence[float], b: Sequence[float]) -> str | None:
    """``a`` against ``b`` (a figure over rounds, higher is better): "faster" or "slower" only where
    their ranges do not overlap, else "within noise"; None with fewer than 2 values on either side
    (no spread to judge by)."""
    if len(a) < 2 or len(b) < 2:
        return None
    if min(a) > max(b):
        return "faster"
    if max(a) < min(b):
        return "slower"
    return "within noise"
