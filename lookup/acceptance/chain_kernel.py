""":meth:`lookup.acceptance.AcceptanceModel.chain` in one kernel: a chain's estimates, every step.

The estimate of a chain is made of five parts, each defined in its own module: the statistics'
smoothed rates (:mod:`~lookup.acceptance.rates`), the first node's model
(:mod:`~lookup.acceptance.first_token`), the later nodes' (:mod:`~lookup.acceptance.later_nodes`),
the tokens' offsets (:mod:`~lookup.acceptance.tokens`) and the calibration's shift. Called one after
another from Python, their wrappers, checks and small numpy operations cost more than the
arithmetic; this kernel calls each part's own kernel in turn, so that a step pays one call. The
wrapper (``AcceptanceModel.chain``) decides which parts apply and checks the inputs.
"""

from __future__ import annotations

import functools

import numpy as np

from lookup.kernel_cache import kernel
from lookup.acceptance.first_token import probability_of
from lookup.acceptance.later_nodes import _probabilities
from lookup.acceptance.tokens import _adjusted, _offsets


@kernel
def chain_estimate(n, hits, trials, prior, row, strength,
                   first_on, first_coefficients, first_intercept, later_on, later_coefficients, later_intercept,
                   match_length, support, agree, first_other, later_other, other_length, other_support, other_agree,
                   tokens_on, tokens, slot_of, token_tries, token_hits, all_tries, all_hits, token_strength, beta,
                   shift):  # pragma: no cover - numba
    """P(node i accepted | nodes before it accepted) for the first ``n`` nodes of a chain ([min(n, L)]).

    Args:
        hits, trials, prior: the statistics' counts and prior ([S, B, L] each), read at ``row``
            ((source, bucket)), and ``strength``, the prior's weight.
        first_on, later_on: the first node's model, and the later nodes', apply, with their fits
            (coefficients [8] and [10], intercepts).
        match_length, support, agree: the chain's own evidence (``Agreement``: support and agree
            [>= n] int64); ``first_other`` and ``later_other``: each model reads the other index's
            (``other_length``, ``other_support``, ``other_agree``).
        tokens_on: the tokens' offsets apply: ``tokens`` ([>= n] int64) and a source's counts as
            :class:`~lookup.acceptance.tokens.TokenRates` keeps them (its table, tries and hits [2, slots],
            every node's [2], strength, beta).
        shift: the calibration's log-odds shift (0: none).
    The estimates are clipped to [1e-4, 1 - 1e-4] only where an offset or a shift moves them.
    """
    source, bucket = row
    m = min(n, hits.shape[2])
    estimate = np.empty(m)
    for i in range(m):
        estimate[i] = ((hits[source, bucket, i] + strength * prior[source, bucket, i])
                       / (trials[source, bucket, i] + strength))
    if m == 0:
        return estimate
    if first_on:
        occurrences = support[0]
        seen, agreeing = (other_support[0], other_agree[0]) if first_other else (0, 0)
        estimate[0] = probability_of(match_length, estimate[0], occurrences, agree[0] / max(occurrences, 1),
                                     first_other, other_length, seen, agreeing, first_coefficients, first_intercept)
    if later_on and m > 1:
        none = np.zeros(0)
        seen_f = other_support[:m].astype(np.float64) if later_other else none
        agreeing_f = other_agree[:m].astype(np.float64) if later_other else none
        estimate[1:] = _probabilities(match_length, support[:m].astype(np.float64), agree[:m].astype(np.float64),
                                      other_length if later_other else 0, seen_f, agreeing_f, later_other,
                                      later_coefficients, later_intercept)
    if tokens_on:
        offsets = _offsets(tokens[:m], slot_of, token_tries, token_hits, all_tries, all_hits, token_strength, beta)
        return _adjusted(estimate, offsets, shift)
    if shift != 0.0:
        return _adjusted(estimate, np.zeros(0), shift)
    return estimate


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel once per process, off the timed path (the board
    times proposals, not construction)."""
    counts = np.zeros((1, 1, 4))
    support = np.ones(4, dtype=np.int64)
    table = np.full((4, 2), -1, dtype=np.int64)
    for on in (True, False):
        chain_estimate(4, counts, counts, counts + 0.5, (0, 0), 1.0, on, np.zeros(8), 0.0, on, np.zeros(10), 0.0,
                       2, support, support, on, on, 1, support, support, on, support, table, np.zeros((2, 2)),
                       np.zeros((2, 2)), np.ones(2), np.ones(2), 1.0, 0.5, 0.1 if on else 0.0)
