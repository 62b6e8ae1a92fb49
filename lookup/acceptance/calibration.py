"""The models' estimates set right for this sequence: one log-odds offset, learnt while serving.

The fitted models (:mod:`~lookup.acceptance.first_token`, :mod:`~lookup.acceptance.later_nodes`) are
made on a benchmark's cases pooled, so on one sequence they can be off all the same way: an answer
that goes round a loop copies more than the pool did, one that paraphrases its source copies less,
and a prompt unlike the benchmark's (a held-out one) can shift every estimate. The statistics the
models read move with the sequence, but the models weigh them by a fitted coefficient, so a sequence
whose copies hold far more (or less) often than the pool's stays misjudged. This learns the shift
itself: over the chain nodes checked in this sequence (on a step with a chain to judge, its first
node is checked for free against the target's own next token, sent or not; the later ones when the
nodes before them were accepted), how many were accepted against how many the estimates expected,

    offset = log((hits + STRENGTH) / (expected + STRENGTH))

with both counts decayed by ``DECAY`` per step, and adds it to every chain node's log-odds (a tree's
nodes are judged without it). A sequence the fit judges right keeps an offset near zero; one it
misjudges gets a correction that grows with the evidence (``STRENGTH`` expected hits of agreement
before any). ``adaptive`` starts it over with each
request, a history or not: a shift is a property of the request.

``STRENGTH`` and ``DECAY`` were chosen by replay of the shipped benchmarks' public cases,
cross-fitted (``docs/acceptance.md`` gives the replays and what it changes held out).

    calibration = Calibration()
    estimate = adjusted(estimate, calibration.offset)    # tokens.adjusted: a log-odds shift
    calibration.learn(expected, hits)                     # after the verdict, before the offset
"""

from __future__ import annotations

import functools
import math

import numpy as np

from lookup.kernel_cache import kernel
from lookup.arrays import kernel_array

#: how many expected hits of agreement the offset starts from: it moves once the evidence outweighs it
STRENGTH = 2.0
#: weight kept by past nodes per step: slow, so that the offset is the sequence's, not the last steps'
DECAY = 0.999


class Calibration:
    """A log-odds offset from decayed counts of nodes accepted and of nodes expected to be.

    Args:
        strength: expected hits of agreement the offset starts from (> 0).
        decay: weight kept by past observations per step, in (0, 1].
    """

    def __init__(self, strength: float = STRENGTH, decay: float = DECAY) -> None:
        if strength <= 0 or not 0.0 < decay <= 1.0:
            raise ValueError(f"strength must be > 0 and decay in (0, 1], got {strength} and {decay}")
        self.strength, self.decay = float(strength), float(decay)
        self.clear()
        warm_up()

    def clear(self) -> None:
        """Forget every node (a new request)."""
        self.hits = 0.0  # decayed count of nodes accepted
        self.expected = 0.0  # decayed sum of their estimates before this offset
        self.offset = 0.0

    def age(self) -> None:
        """One step passes: past nodes weigh ``decay`` times less. The offset moves at the next
        :meth:`learn`, not here: until then it is the one the step's estimates were moved by, so that
        a learner can take it off them again."""
        self.hits *= self.decay
        self.expected *= self.decay

    def learn(self, expected: float, hits: float) -> None:
        """Nodes checked, whose estimates before this offset add up to ``expected``, of which ``hits``
        were accepted."""
        self.hits += float(hits)
        self.expected += float(expected)
        self.offset = self._offset()

    def _offset(self) -> float:
        return math.log((self.hits + self.strength) / (self.expected + self.strength))


def without(estimates: np.ndarray, offset: float) -> np.ndarray:
    """``estimates`` ([n] probabilities that ``offset`` was added to the log-odds of) as they were before
    it: ``sigmoid(logit(p) - offset)``, not clipped (the forward shift clips what it shifts, not what it
    returns, so this undoes it exactly up to float rounding).  # [n]"""
    return _without(kernel_array(estimates, np.float64), float(offset))


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel once per process, off the timed path."""
    without(np.full(1, 0.5), 0.0)


@kernel
def _without(p, offset):  # pragma: no cover - numba
    out = np.empty(len(p))
    for i in range(len(p)):
        if p[i] >= 1.0 or p[i] <= 0.0:  # a logit of +-inf, which stays there
            out[i] = 1.0 if p[i] >= 1.0 else 0.0
        else:
            out[i] = 1.0 / (1.0 + math.exp(-(math.log(p[i]) - math.log1p(-p[i]) - offset)))
    return out
