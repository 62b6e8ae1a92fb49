"""The planner: how much of a draft to send, under the target's cost profile.

Shared by drafters that size their own drafts (``adaptive``, ``recycling``):

* :func:`best_cut`: how many leading draft nodes to send, the count ``k`` that maximises
  expected committed tokens per second, ``(1 + sum_{i<k} P(node i on the accepted path)) / cost[k]``.
  The ``1`` is the token the target commits on its own after every forward.
* :func:`plan_chain`: the same choice for a chain, planned over the forwards that follow: what is
  not sent now can be sent at the next step if the sent part is accepted (a numba kernel);
* :class:`Planner`: both under one cost profile, with the forward costs looked up at about the
  current context.
"""

from __future__ import annotations

import numpy as np

from pldcore.cost import CostProfile

from lookup.kernel_cache import kernel


def chain_path_probs(acceptance: np.ndarray) -> np.ndarray:
    """P(the first i+1 nodes of a chain are all accepted), from P(node i | nodes before it).

    ``acceptance``: [n] -> [n].
    """
    return np.cumprod(acceptance)


def forward_costs(profile: CostProfile, n: int, context: int | None = None) -> np.ndarray:
    """Seconds of a forward that verifies ``k`` draft nodes (``k + 1`` tokens), k = 0..n.  # [n+1]"""
    return profile.costs(n + 1, context)


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


#: tokens of context between two look-ups of the cost table
COST_REFRESH = 128


class Planner:
    """What to send of a candidate under ``profile`` (the target's cost profile), drafts of at most
    ``max_tokens`` nodes: :meth:`chain` for a chain (planned over later forwards when ``planned``,
    else judged by this forward alone), :meth:`tree` for a token tree. Holds no acceptance state: the
    probabilities come from the caller (``lookup.acceptance.AcceptanceModel``)."""

    def __init__(self, profile: CostProfile, max_tokens: int, planned: bool = True) -> None:
        self.profile, self.max_tokens, self.planned = profile, max_tokens, planned
        self._context = -1  # the context bucket the table was looked up at
        self._table = np.zeros(0)
        if planned:
            warm_up()  # off the timed path: the board times proposals, not construction

    def costs(self, context: int) -> np.ndarray:
        """Forward cost over k+1 tokens, k = 0..max_tokens, at about ``context`` committed tokens.  # [L+1]

        Longer contexts make multi-token forwards dearer relative to one token, so the table is
        looked up again every COST_REFRESH tokens (never, for a profile without a context axis).
        """
        bucket = context // COST_REFRESH * COST_REFRESH if self.profile.contexts else 0
        if bucket != self._context:
            self._table = forward_costs(self.profile, self.max_tokens, bucket + COST_REFRESH // 2)
            self._context = bucket
        return self._table

    def chain(self, acceptance: np.ndarray, context: int) -> int:
        """The chain length (0..n) to send now, given ``acceptance[i]`` = P(node i accepted | nodes
        before it accepted) ([n], n <= max_tokens), at ``context`` committed tokens: :func:`plan_chain`
        when ``planned``, else :func:`best_cut` of this forward alone."""
        if self.planned:
            return plan_chain(acceptance, self.costs(context))
        return best_cut(chain_path_probs(acceptance), self.costs(context))

    def tree(self, path_probs: np.ndarray, context: int) -> int:
        """The number of leading tree nodes (0..n) with the most expected tokens per second, given
        ``path_probs[i]`` = P(node i on the accepted path) ([n], parents before children)."""
        n = len(path_probs)
        costs = self.costs(context) if n <= self.max_tokens else forward_costs(self.profile, n, context)
        return best_cut(path_probs, costs)


_warmed = False


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`plan_chain`'s kernel once per process, so that the
    first draft a drafter plans is not the one that pays for it (drafters call it when built)."""
    global _warmed
    if not _warmed:
        plan_chain(np.full(2, 0.5), np.array([1.0, 1.5, 2.0]))
        _warmed = True


@kernel
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
