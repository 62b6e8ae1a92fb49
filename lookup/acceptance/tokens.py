"""Which tokens a draft holds: how often a drafted token was accepted, per token id, learnt online.

The fitted models (:mod:`~lookup.acceptance.first_token`, :mod:`~lookup.acceptance.later_nodes`)
read the match and its occurrences, never the tokens drafted. Yet whether a copy holds depends on
what is copied: a copy tends to break where the target starts something of its own (a new
sentence, a list item, the next line of code) and to hold inside a name or a quoted phrase. Which
tokens those are differs from model to model and task to task, so it is learnt while serving:

    rates = TokenRates()
    offsets = rates.offsets(source, tokens)   # [n] log-odds to add to the models' estimates
    rates.learn(source, tokens, tried, hits)  # nodes 0..tried-1 checked, 0..hits-1 right

Each drafted token ``t`` at a node keeps counts of how often a node holding it was accepted, per
draft source and for first nodes apart from later ones (a first node is accepted far less often).
Its rate, ``(hits + STRENGTH * g) / (tries + STRENGTH)``, is smoothed towards ``g``, the rate of every
node of its kind; the offset is ``BETA * (logit(rate) - logit(g))``: zero for a token not seen yet.
Counted across the ranked tokens' first and later nodes on held-out halves of the shipped SmolLM2
benchmark, the token drafted adds 0.01-0.02 of AUC to each fitted model (docs/notes/2026-12-06-smol60.md);
``STRENGTH`` and ``BETA`` were chosen by replay on that benchmark's public cases.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: how many nodes of its kind a token's prior rate is worth
STRENGTH = 2.0
#: how much of a token's log-odds against its kind's the estimates take (a shrinkage: the counts
#: are few and the fitted models already read part of what a token says)
BETA = 0.7
#: the rate assumed per kind before any node is seen, worth one node: (first, later) nodes, per
#: source (context, history), as ``AcceptanceModel`` numbers the sources
PRIOR = ((0.4, 0.85), (0.3, 0.6))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1.0 - 1e-4)
    return math.log(p / (1.0 - p))


class TokenRates:
    """Acceptance per drafted token id, per (source, first node or later), from plain counts.

    Kept from one request to the next when the acceptance statistics are (``adaptive:history=true``);
    cleared with them otherwise. Not decayed: a token is drafted too rarely for recent steps to say
    more than old ones.
    """

    def __init__(self, strength: float = STRENGTH, beta: float = BETA) -> None:
        if strength <= 0:
            raise ValueError(f"strength must be > 0, got {strength}")
        self.strength, self.beta = float(strength), float(beta)
        self.clear()

    def clear(self) -> None:
        """Forget every token seen."""
        #: per (source, kind): token id -> [tries, hits]; kind 0 = first node, 1 = later
        self._counts: dict[tuple[int, int], dict[int, list[float]]] = {}
        #: per (source, kind): [tries, hits] of every node of that kind, the prior node included
        self._kinds = {(s, k): [1.0, PRIOR[s][k]] for s in range(len(PRIOR)) for k in (0, 1)}

    def offsets(self, source: int, tokens: Sequence[int]) -> np.ndarray:
        """Log-odds to add to the estimate of each node holding ``tokens`` ([n] ids, a chain from
        ``source``, an index of SOURCES).  # [n]"""
        out = np.zeros(len(tokens))
        for d, token in enumerate(tokens.tolist() if isinstance(tokens, np.ndarray) else tokens):
            kind = (source, 0 if d == 0 else 1)
            tries, hits = self._counts.get(kind, {}).get(token, (0.0, 0.0))
            if tries:
                all_tries, all_hits = self._kinds[kind]
                g = all_hits / all_tries
                out[d] = self.beta * (_logit((hits + self.strength * g) / (tries + self.strength)) - _logit(g))
        return out

    def learn(self, source: int, tokens: Sequence[int], tried: int, hits: int) -> None:
        """A chain from ``source`` whose nodes ``0..tried-1`` were checked and ``0..hits-1`` right."""
        for d in range(min(tried, len(tokens))):
            self.learn_node(source, d, int(tokens[d]), d < hits)

    def learn_node(self, source: int, depth: int, token: int, hit: bool) -> None:
        """One node at ``depth`` holding ``token`` was checked (the nodes before it right)."""
        kind = (source, 0 if depth == 0 else 1)
        counts = self._counts.setdefault(kind, {}).setdefault(int(token), [0.0, 0.0])
        counts[0] += 1.0
        counts[1] += float(hit)
        self._kinds[kind][0] += 1.0
        self._kinds[kind][1] += float(hit)


def adjusted(estimate: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``estimate`` ([n] probabilities) moved by ``offsets`` ([n] log-odds).  # [n]"""
    p = np.clip(np.asarray(estimate, dtype=np.float64), 1e-4, 1.0 - 1e-4)
    return 1.0 / (1.0 + np.exp(-(np.log(p / (1.0 - p)) + offsets)))
