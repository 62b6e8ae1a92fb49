"""P(a chain's node at depth d >= 1 is accepted | the nodes before it were), from the match's occurrences.

``adaptive`` learns, per match length, how often the node at each depth was accepted. That
estimate is blind to what the suffix automaton knows of this draft in particular: how many earlier
occurrences of the match continue as the draft does up to depth ``d``, and whether they go on with
the draft's token there. A copy that every remembered occurrence follows for ten tokens is a safer
bet at depth ten than one where the draft's own occurrence is the only one left. Once ``d`` nodes
are accepted, the match is ``d`` tokens longer, too. A logistic model of those inputs:

    P(node d accepted | nodes < d accepted) = sigmoid(INTERCEPT + COEFFICIENTS . features(...)[d - 1])

Its estimates are calibrated where adaptive's are not, but judged one forward at a time they
send long chains after short matches, which lose (``docs/oracle-gap.md``): ``adaptive`` uses them
with :func:`lookup.acceptance.planner.plan_chain`, which plans a chain over several forwards.

A chain copied from a history of earlier requests (``adaptive:history=true``) has a fit of its own,
with four inputs more per depth: how many occurrences of the context's own match
still follow the chain there, and whether they go on with its token (zero for a chain from the
context).

The coefficients are data (:mod:`pldcore.fits`), written by ``python experiments/traces.py
fit-acceptance --write``, which fits both models of ``adaptive``: it replays ``adaptive`` without them on the shipped benchmark (each case on its own,
and the cases as one stream for chains from the history) and collects, for every node of every
candidate chain reached with all nodes before it accepted, these features and whether the node
was accepted. The shipped fits are made on all 400 cases, for ``adaptive``'s default base, which copies from the most recent occurrence (its draft's own occurrence is then always among
those counted); a base that copies from elsewhere gets estimates fitted on another kind of draft.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from lookup.kernel_cache import kernel
from lookup.arrays import kernel_array

#: what :func:`features` returns per depth, in order; the last four read what the context says of a
#: chain from the history (zero for a chain from the context, and where the context has no match)
FEATURES = ("log(1 + match length + depth)", "log(1 + depth)", "occurrences still following",
            "share of them that agree", "share x occurrences", "only the draft's own occurrence",
            "context's occurrences still following", "share of them that agree", "none of them agree",
            "log(1 + context's match + depth)")
_NO_CONTEXT = np.zeros(0, dtype=np.float64)


def features(match_length: int, support: np.ndarray, agree: np.ndarray,
             context: tuple[int, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The model's inputs for depths 1..n-1 of a chain of n nodes copied after a match of
    ``match_length`` tokens, given ``support`` and ``agree`` ([n] each, as
    :class:`lookup.base.Agreement` holds them) and, for a chain
    from the history, ``context`` = (the context's own match length, support [n], agree [n]) as
    ``Evidence.other`` holds them (None: zeros).  # [n-1, F]"""
    inputs = _inputs(support, agree, context)
    x = np.zeros((max(len(inputs[0]) - 1, 0), len(FEATURES)))
    _fill(x, match_length, *inputs)
    return x


def probabilities(match_length: int, support: np.ndarray, agree: np.ndarray,
                  context: tuple[int, np.ndarray, np.ndarray] | None = None, *,
                  coefficients: np.ndarray, intercept: float) -> np.ndarray:
    """P(node d accepted | nodes before accepted) for d = 1..n-1, from :func:`features` and a fit
    (``coefficients`` [F], ``intercept``): one kernel, as the drafter calls it every step.  # [n-1]"""
    if len(coefficients) != len(FEATURES):
        raise ValueError(f"a later-nodes fit has {len(FEATURES)} coefficients, got {len(coefficients)}")
    return _probabilities(match_length, *_inputs(support, agree, context), kernel_array(coefficients, np.float64),
                          float(intercept))


def _floats(values) -> np.ndarray:
    return kernel_array(values, np.float64)


def _inputs(support, agree, context: tuple[int, np.ndarray, np.ndarray] | None) -> tuple:
    """The kernels' arguments after the match length: (support, agree, the context's match length,
    support and agree, whether a context is given), each array with an entry per node (the kernels
    read them unchecked)."""
    support, agree = _floats(support), _floats(agree)
    n = len(support)
    if context is None:
        seen, agreeing, length = _NO_CONTEXT, _NO_CONTEXT, 0
    else:
        length, seen, agreeing = int(context[0]), _floats(context[1]), _floats(context[2])
    if len(agree) < n or (context is not None and min(len(seen), len(agreeing)) < n):
        raise ValueError(f"agree and the context's support and agree need an entry per node ({n}), got "
                         f"{len(agree)}, {len(seen)} and {len(agreeing)}")
    return support, agree, length, seen, agreeing, context is not None


@kernel
def _fill(x, match_length, support, agree, context_length, seen, agreeing, has_context):  # pragma: no cover - numba
    # row i is depth i + 1; the one definition of the features, for fitting and for estimating
    for i in range(x.shape[0]):
        depth = i + 1.0
        s = support[i + 1]
        share = agree[i + 1] / max(s, 1.0)
        x[i, 0] = math.log1p(match_length + depth)
        x[i, 1] = math.log1p(depth)
        x[i, 2] = s
        x[i, 3] = share
        x[i, 4] = share * s
        x[i, 5] = 1.0 if s == 1.0 else 0.0
        if has_context:
            c = seen[i + 1]
            context_share = agreeing[i + 1] / max(c, 1.0)
            x[i, 6] = c
            x[i, 7] = context_share
            x[i, 8] = 1.0 if c > 0 and context_share == 0 else 0.0
            x[i, 9] = math.log1p(context_length + depth)


@kernel
def _probabilities(match_length, support, agree, context_length, seen, agreeing, has_context, coefficients,
                   intercept):  # pragma: no cover - numba
    n = max(len(support) - 1, 0)
    x = np.zeros((n, len(coefficients)))
    _fill(x, match_length, support, agree, context_length, seen, agreeing, has_context)
    out = np.empty(n)
    for i in range(n):
        z = 0.0
        for j in range(len(coefficients)):
            z += x[i, j] * coefficients[j]
        out[i] = 1.0 / (1.0 + math.exp(-(z + intercept)))
    return out


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels once per process, off the timed path (the
    board times proposals, not construction)."""
    probabilities(1, np.ones(2), np.ones(2), (1, np.ones(2), np.ones(2)), coefficients=np.zeros(len(FEATURES)),
                  intercept=0.0)
    probabilities(1, np.ones(2), np.ones(2), coefficients=np.zeros(len(FEATURES)), intercept=0.0)
