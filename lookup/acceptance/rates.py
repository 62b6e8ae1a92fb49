"""Acceptance rates learnt within a sequence: decayed hit and trial counts per cell (recent steps weigh
more), smoothed towards a prior."""

from __future__ import annotations

from types import EllipsisType

import numpy as np
from numpy.typing import ArrayLike


def smoothed_rate(hits: np.ndarray, trials: np.ndarray, prior: np.ndarray, strength: float) -> np.ndarray:
    """``(hits + strength * prior) / (trials + strength)``: the prior counts as ``strength`` trials.

    All arrays share one shape (or broadcast); so does the result.
    """
    return (hits + strength * prior) / (trials + strength)


class DecayedRate:
    """Hit rates per cell of a fixed shape, learnt from decayed counts and smoothed towards a prior.

    Callers add to ``trials`` and ``hits`` (both ``[*shape]`` float64) where they observed a
    trial and a hit, and call :meth:`age` once per step before adding, so that an observation
    made ``t`` steps ago weighs ``decay**t``.
    """

    def __init__(self, prior: ArrayLike, strength: float, decay: float) -> None:
        """
        Args:
            prior: the rate assumed before any observation, per cell.  # [*shape]
            strength: how many observations the prior is worth (> 0).
            decay: weight kept by past observations per step, in (0, 1].
        """
        if strength <= 0 or not 0.0 < decay <= 1.0:
            raise ValueError(f"strength must be > 0 and decay in (0, 1], got {strength} and {decay}")
        self.prior = np.asarray(prior, dtype=np.float64)  # [*shape]
        self.strength = float(strength)
        self.decay = float(decay)
        self.clear()

    def clear(self) -> None:
        """Forget every observation (a new sequence)."""
        self.trials = np.zeros_like(self.prior)  # [*shape] decayed count of trials
        self.hits = np.zeros_like(self.prior)  # [*shape] decayed count of those that hit

    def age(self) -> None:
        """One step passes: past observations weigh ``decay`` times less."""
        self.trials *= self.decay
        self.hits *= self.decay

    def estimate(self, index: int | slice | tuple | EllipsisType = ...) -> np.ndarray:
        """The smoothed rates of ``self.prior[index]`` (all cells by default)."""
        return smoothed_rate(self.hits[index], self.trials[index], self.prior[index], self.strength)
