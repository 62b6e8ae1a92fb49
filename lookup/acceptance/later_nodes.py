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

import numpy as np

from lookup.acceptance import first_token

#: what :func:`features` returns per depth, in order; the last four read what the context says of a
#: chain from the history (zero for a chain from the context, and where the context has no match)
FEATURES = ("log(1 + match length + depth)", "log(1 + depth)", "occurrences still following",
            "share of them that agree", "share x occurrences", "only the draft's own occurrence",
            "context's occurrences still following", "share of them that agree", "none of them agree",
            "log(1 + context's match + depth)")
def features(match_length: int, support: np.ndarray, agree: np.ndarray,
             context: tuple[int, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The model's inputs for depths 1..n-1 of a chain of n nodes copied after a match of
    ``match_length`` tokens, given ``support`` and ``agree`` ([n] each, as
    :class:`lookup.base.Agreement` holds them) and, for a chain
    from the history, ``context`` = (the context's own match length, support [n], agree [n]) as
    ``Evidence.other`` holds them (None: zeros).  # [n-1, F]"""
    support = np.asarray(support[1:], dtype=np.float64)  # [n-1]
    depth = np.arange(1, len(support) + 1, dtype=np.float64)  # [n-1]
    x = np.zeros((len(support), len(FEATURES)))  # filled column by column: the drafter calls this every step
    x[:, 0] = np.log1p(match_length + depth)
    x[:, 1] = np.log1p(depth)
    x[:, 2] = support
    x[:, 3] = np.asarray(agree[1:], dtype=np.float64) / np.maximum(support, 1.0)
    x[:, 4] = x[:, 3] * support
    x[:, 5] = support == 1.0
    if context is not None:
        length, seen, agreeing = context
        x[:, 6] = seen[1:]
        x[:, 7] = np.asarray(agreeing[1:], dtype=np.float64) / np.maximum(x[:, 6], 1.0)
        x[:, 8] = (x[:, 6] > 0) & (x[:, 7] == 0)
        x[:, 9] = np.log1p(length + depth)
    return x


def probabilities(match_length: int, support: np.ndarray, agree: np.ndarray,
                  context: tuple[int, np.ndarray, np.ndarray] | None = None, *,
                  coefficients: np.ndarray, intercept: float) -> np.ndarray:
    """P(node d accepted | nodes before accepted) for d = 1..n-1, from :func:`features` and a fit
    (``coefficients`` [F], ``intercept``).  # [n-1]"""
    return first_token.probability(features(match_length, support, agree, context), coefficients, intercept)
