"""P(the first draft token is accepted), from the evidence a lookup has before the forward.

``adaptive`` learns, within a sequence, how often a draft after a match of this length was
accepted. The suffix automaton knows two things more: how many times the match occurred before,
and whether those occurrences agree on what came next. A match followed by the same token at all
of its 8 most recent occurrences is a far safer bet than one whose occurrences each went their own
way, whatever its length. A logistic model puts the four together:

    P(first token accepted) = sigmoid(INTERCEPT + COEFFICIENTS . features(...))

With a history of earlier requests (``adaptive:history=true``) there are two indexes, and each can
say something of the other's draft: four inputs more read how many earlier occurrences the *other*
index's match has and whether they are followed by the draft's first token. A draft copied from
the history reads what the current context's own (shorter) match says of it; a draft from the
context reads what the history's match says. Each has a fit of its own, made on the benchmark
served as one stream of requests. Without a history (the ``"context"`` fit) the four are zero.

The coefficients are data (:mod:`pldcore.fits`), written by ``python
experiments/traces.py fit-acceptance --write``: it replays ``adaptive`` without the models on the
shipped benchmark (each case on its own for the context's own fit, the cases as one stream for the
other two: drafts from the history, and drafts from the context while a history is kept), collects
these features and whether the first draft token was accepted at every step, and fits them
(:func:`fit_logistic`); it prints how well each ranks acceptance on cases it was not fitted on.
"""

from __future__ import annotations

import math

import numpy as np

from lookup.kernel_cache import kernel
from lookup.arrays import kernel_array

#: what :func:`features` returns, in order; the last four read what the other index says of the draft
#: (the context of a draft from the history, the history of one from the context; zero without one,
#: and where the other index has no match)
FEATURES = ("log(1 + match length)", "adaptive's own estimate", "occurrences remembered", "share that agree",
            "other's occurrences", "share of them that agree", "none of them agree", "log(1 + other's match)")
def features(match_length: int, estimate: float, occurrences: int, agreement: float,
             other: tuple[int, int, int] | None = None) -> np.ndarray:
    """The model's inputs for one draft: the match length behind it, ``adaptive``'s own estimate of
    P(first token accepted), how many earlier occurrences of the match are remembered (at most the
    automaton's ring, 8 by default) and the share of them followed by the draft's first token; and
    what the other index says of it: ``other`` = (the other index's match length, its occurrences
    remembered, how many of them are followed by the draft's first token), or None (no other index,
    or no match there).  # [8]"""
    x = np.zeros(len(FEATURES))
    length, seen, agreeing = (0, 0, 0) if other is None else other
    fill(x, int(match_length), float(estimate), int(occurrences), float(agreement), other is not None,
         int(length), int(seen), int(agreeing))
    return x


@kernel
def fill(x, match_length, estimate, occurrences, agreement, has_other, other_length, seen,
         agreeing):  # pragma: no cover - numba
    """Write :func:`features` into ``x`` ([8] float64): the one definition of the features, for fitting,
    for :func:`first_probability` and for the chain's kernel (:mod:`lookup.acceptance.chain_kernel`)."""
    x[0] = math.log1p(match_length)
    x[1] = estimate
    x[2] = float(occurrences)
    x[3] = agreement
    if has_other:
        x[4] = float(seen)
        x[5] = agreeing / max(seen, 1)
        x[6] = 1.0 if seen > 0 and agreeing == 0 else 0.0
        x[7] = math.log1p(other_length)
    else:
        x[4] = x[5] = x[6] = x[7] = 0.0


@kernel
def probability_of(match_length, estimate, occurrences, agreement, has_other, other_length, seen, agreeing,
                   coefficients, intercept):  # pragma: no cover - numba
    """:func:`first_probability`'s kernel (the features summed in order, then the intercept)."""
    x = np.empty(len(coefficients))
    fill(x, match_length, estimate, occurrences, agreement, has_other, other_length, seen, agreeing)
    z = 0.0
    for j in range(len(coefficients)):
        z += coefficients[j] * x[j]
    return 1.0 / (1.0 + math.exp(-(intercept + z)))


def first_probability(match_length: int, estimate: float, occurrences: int, agreement: float,
                      other: tuple[int, int, int] | None = None, *, coefficients: np.ndarray,
                      intercept: float) -> float:
    """``probability(features(...), coefficients, intercept)`` for one draft, in plain floats, summed in
    order by :func:`probability_of`, the kernel the chain's estimate (``chain_kernel``) calls."""
    if len(coefficients) != len(FEATURES):
        raise ValueError(f"a first-node fit has {len(FEATURES)} coefficients, got {len(coefficients)}")
    length, seen, agreeing = (0, 0, 0) if other is None else other
    return float(probability_of(int(match_length), float(estimate), int(occurrences), float(agreement),
                                other is not None, int(length), int(seen), int(agreeing),
                                kernel_array(coefficients, np.float64), float(intercept)))


def probability(x: np.ndarray, coefficients: np.ndarray, intercept: float) -> np.ndarray:
    """``sigmoid(intercept + x . coefficients)`` for ``x`` of shape [..., F] and ``coefficients`` [F]; shape [...]."""
    return 1.0 / (1.0 + np.exp(-(np.asarray(x, dtype=np.float64) @ coefficients + intercept)))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-4, iterations: int = 100) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method: (coefficients [F], intercept) that maximise the
    log-likelihood of ``y`` ([n] 0/1) given ``x`` ([n, F]), less ``l2 * |coefficients|^2 / 2``
    (a touch of ridge keeps a separable set finite)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    design = np.column_stack([x, np.ones(len(x))])  # [n, F+1] the intercept last
    ridge = np.full(design.shape[1], l2)
    ridge[-1] = 0.0  # the intercept is not shrunk
    w = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        gradient = design.T @ (y - p) - ridge * w
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design + np.diag(ridge)
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), gradient)
        w += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w[:-1], float(w[-1])
