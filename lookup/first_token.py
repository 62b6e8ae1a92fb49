"""P(the first draft token is accepted), from the evidence a lookup has before the forward.

``adaptive`` learns, within a sequence, how often a draft after a match of this length was
accepted. The suffix automaton knows two things more: how many times the match occurred before,
and whether those occurrences agree on what came next. A match followed by the same token at all
of its 8 most recent occurrences is a far safer bet than one whose occurrences each went their own
way, whatever its length. A logistic model puts the four together:

    P(first token accepted) = sigmoid(INTERCEPT + COEFFICIENTS . features(...))

A draft copied from a history of earlier requests (``adaptive:history=true``) has a fit of its own
(:data:`FITS`), and four inputs more: what the current context says of it, i.e. how many earlier
occurrences the context's own (shorter) match has and whether they are followed by the draft's
first token. For a draft from the context those four are zero.

Fitting it is ``python experiments/traces.py fit-acceptance``: it replays ``adaptive`` without
the model on the shipped benchmark (each case on its own for drafts from the context, the cases as
one stream for drafts from the history), collects these features and whether the first draft
token was accepted at every step, and fits them (:func:`fit_logistic`). The numbers below are its
fits on all 400 cases; fitted on half the cases, the model ranks first-token acceptance on the
other half with an AUC of 0.81-0.83 for drafts from the context (0.75 for ``adaptive``'s own
estimate), and 0.80 for drafts from the history (0.61-0.64) (``docs/oracle-gap.md``).
"""

from __future__ import annotations

import math

import numpy as np

#: what :func:`features` returns, in order; the last four read what the context says of a draft from
#: the history (zero for a draft from the context, and where the context has no match)
FEATURES = ("log(1 + match length)", "adaptive's own estimate", "occurrences remembered", "share that agree",
            "context's occurrences", "share of them that agree", "none of them agree", "log(1 + context's match)")
#: the fit on the shipped benchmark (hash 173c9375a857b781), by ``traces.py fit-acceptance``
COEFFICIENTS = np.array([1.138, 1.174, 0.227, 3.497, 0.0, 0.0, 0.0, 0.0])
INTERCEPT = -5.301
#: the same for drafts from a history of earlier requests (``adaptive:history=true``), fitted on the
#: benchmark served as one stream of requests
HISTORY_COEFFICIENTS = np.array([1.005, 1.471, 0.178, 3.113, 0.036, 2.670, -0.517, -0.683])
HISTORY_INTERCEPT = -5.412
#: the fit per source of the draft (``lookup.adaptive.SOURCES``): (coefficients [F], intercept)
FITS = {"context": (COEFFICIENTS, INTERCEPT), "history": (HISTORY_COEFFICIENTS, HISTORY_INTERCEPT)}


def features(match_length: int, estimate: float, occurrences: int, agreement: float,
             context: tuple[int, int, int] | None = None) -> np.ndarray:
    """The model's inputs for one draft: the match length behind it, ``adaptive``'s own estimate of
    P(first token accepted), how many earlier occurrences of the match are remembered (at most the
    automaton's ring, 8 by default) and the share of them followed by the draft's first token; and,
    for a draft from the history, what the context says of it: ``context`` = (the context's own match
    length, its occurrences remembered, how many of them are followed by the draft's first token), or
    None (a draft from the context, or no match there).  # [8]"""
    return np.array(_features(match_length, estimate, occurrences, agreement, context), dtype=np.float64)


def _features(match_length: int, estimate: float, occurrences: int, agreement: float,
              context: tuple[int, int, int] | None) -> tuple[float, ...]:
    own = math.log1p(match_length), float(estimate), float(occurrences), float(agreement)
    if context is None:
        return *own, 0.0, 0.0, 0.0, 0.0
    length, seen, agreeing = context
    return *own, float(seen), agreeing / max(seen, 1), float(seen > 0 and agreeing == 0), math.log1p(length)


def first_probability(match_length: int, estimate: float, occurrences: int, agreement: float,
                      context: tuple[int, int, int] | None = None, source: str = "context") -> float:
    """``probability(features(...))`` with the shipped fit for drafts from ``source`` (:data:`FITS`), for
    one draft, in plain floats: the drafter calls it every step, where numpy's per-call overhead on
    a few numbers would dominate."""
    coefficients, intercept = FITS[source]
    x = _features(match_length, estimate, occurrences, agreement, context)
    z = intercept + sum(c * f for c, f in zip(coefficients.tolist(), x))
    return 1.0 / (1.0 + math.exp(-z))


def probability(x: np.ndarray, coefficients: np.ndarray | None = None, intercept: float | None = None) -> np.ndarray:
    """``sigmoid(intercept + x . coefficients)`` for ``x`` of shape [..., F]; shape [...]. By default
    the shipped fit (``COEFFICIENTS``, ``INTERCEPT``)."""
    coefficients = COEFFICIENTS if coefficients is None else coefficients
    intercept = INTERCEPT if intercept is None else intercept
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
