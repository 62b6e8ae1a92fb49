"""The cost-aware policy shared by drafters that size their own drafts (``adaptive``, ``recycling``).

Three pieces:

* :class:`DecayedRate`: acceptance rates learnt within a sequence, as decayed hit and trial
  counts per cell (recent steps weigh more) smoothed towards a prior;
* :func:`best_cut`: how many leading draft nodes to send, the count ``k`` that maximises
  expected committed tokens per second, ``(1 + sum_{i<k} P(node i on the accepted path)) / cost[k]``.
  The ``1`` is the token the target commits on its own after every forward.
* :func:`plan_chain`: the same choice for a chain, planned over the forwards that follow: what is
  not sent now can be sent at the next step if the sent part is accepted (a numba kernel).
"""

from __future__ import annotations

from types import EllipsisType

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from lookup.cost import CostProfile


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


def chain_path_probs(acceptance: np.ndarray) -> np.ndarray:
    """P(the first i+1 nodes of a chain are all accepted), from P(node i | nodes before it).

    ``acceptance``: [n] -> [n].
    """
    return np.cumprod(acceptance)


def forward_costs(profile: CostProfile, n: int, context: int | None = None) -> np.ndarray:
    """Seconds of a forward that verifies ``k`` draft nodes (``k + 1`` tokens), k = 0..n.  # [n+1]"""
    return np.array([profile.cost(k + 1, context) for k in range(n + 1)])


def best_cut(path_probs: np.ndarray, costs: np.ndarray) -> int:
    """How many leading nodes to send: the ``k`` in ``0..n`` with the most expected tokens per second.

    Args:
        path_probs: P(node i is on the accepted path), nodes in the order they would be sent;
            every prefix must be a valid draft (a chain, or a tree listed parents first).  # [n]
        costs: forward cost with ``k`` nodes, k = 0..n (at least n + 1 entries; extra ones unused).  # [>= n+1]

    Returns:
        ``argmax_k (1 + sum(path_probs[:k])) / costs[k]``; the smallest such ``k`` on ties.
    """
    n = len(path_probs)
    expected = 1.0 + np.concatenate([[0.0], np.cumsum(path_probs)])  # [n+1] committed tokens per forward
    return int(np.argmax(expected / np.asarray(costs, dtype=np.float64)[: n + 1]))


def plan_chain(acceptance: np.ndarray, costs: np.ndarray) -> int:
    """How many leading nodes of a chain to send now, planning the rest of the chain over later forwards.

    :func:`best_cut` judges each forward alone, as if the nodes it leaves out were lost. They are
    not: when every node sent is accepted, the target's own next token checks the following node
    for free, and if it matches, the next step drafts on from the same chain (the longer match
    leads to the same occurrence). Sending a short prefix first and the rest one forward later
    pays one more forward when the chain holds, and saves the dearer forward when it breaks early.

    This plans it by dynamic programming over the depth ``d`` the chain has reached:
    ``V(d) = max_k 1 + sum_{i<k} S_d(i+1) - cost[k] / cost[0] + S_d(k+1) V(d+k+1)``, with
    ``S_d(i)`` the probability that nodes ``d..d+i-1`` are all accepted and ``V = 0`` past the
    chain's end: committed tokens less forwards paid (counted in one-token forwards, the rate of
    plain decoding; the share measured on the shipped benchmark moved by under 0.1 point for
    rates from 1x to 3x that). Returns the first step's ``k``; ties go to the shortest.

    Args:
        acceptance: P(node i accepted | nodes before it accepted), for the whole chain.  # [n]
        costs: forward cost with ``k`` nodes, k = 0..n (at least n + 1 entries).  # [>= n+1]
    """
    n = len(acceptance)
    if len(costs) < n + 1:
        raise ValueError(f"plan_chain needs a cost for 0..{n} nodes, got {len(costs)} costs")
    return int(_plan_chain(np.ascontiguousarray(acceptance, dtype=np.float64),
                           np.ascontiguousarray(costs[: n + 1], dtype=np.float64)))


_warmed = False


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`plan_chain`'s kernel once per process, so that the
    first draft a drafter plans is not the one that pays for it (drafters call it when built)."""
    global _warmed
    if not _warmed:
        plan_chain(np.full(2, 0.5), np.array([1.0, 1.5, 2.0]))
        _warmed = True


@njit(cache=True)
def _plan_chain(acceptance: np.ndarray, costs: np.ndarray) -> int:
    n = len(acceptance)
    value = np.zeros(n + 2)  # value[d]: V(d) above; value[n + 1] = 0 (past the chain)
    first = 0
    for d in range(n, -1, -1):
        best, best_k = -np.inf, 0
        survive, expected = 1.0, 0.0  # P(nodes d..d+k-1 accepted), sum of those for k' <= k
        for k in range(n - d + 1):
            onward = survive * acceptance[d + k] * value[d + k + 1] if d + k < n else 0.0
            v = 1.0 + expected - costs[k] / costs[0] + onward
            if v > best + 1e-12:
                best, best_k = v, k
            if d + k < n:
                survive *= acceptance[d + k]
                expected += survive
        value[d] = best
        first = best_k
    return first
