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
On held-out halves of the shipped SmolLM2 benchmark the token drafted adds 0.01-0.02 of AUC to each
fitted model; ``STRENGTH`` and ``BETA`` were chosen by replay on that benchmark's public cases
(docs/notes/2026-12-06-smol60.md).
"""

from __future__ import annotations

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


class TokenRates:
    """Acceptance per drafted token id, per (source, first node or later), from plain counts.

    Kept from one request to the next when the acceptance statistics are (``adaptive:history=true``);
    cleared with them otherwise. Not decayed: a token is drafted too rarely for recent steps to say
    more than old ones. Each source numbers the tokens it has seen (a slot per token, slot 0 for
    none), so that a chain's offsets are a few array operations, not a loop over its nodes.
    """

    def __init__(self, strength: float = STRENGTH, beta: float = BETA) -> None:
        if strength <= 0:
            raise ValueError(f"strength must be > 0, got {strength}")
        self.strength, self.beta = float(strength), float(beta)
        self.clear()

    def clear(self) -> None:
        """Forget every token seen."""
        sources = len(PRIOR)
        self._slots: list[dict[int, int]] = [{} for _ in range(sources)]  # per source: token id -> slot >= 1
        self._tries = np.zeros((sources, 2, 64))  # [S, kind, slots] kind 0 = first node, 1 = later
        self._hits = np.zeros((sources, 2, 64))  # [S, kind, slots]
        #: per source and kind: tries and hits of every node of that kind, a prior node included  # [S, 2]
        self._all_tries = np.ones((sources, 2))
        self._all_hits = np.array(PRIOR, dtype=np.float64)

    def offsets(self, source: int, tokens: Sequence[int]) -> np.ndarray:
        """Log-odds to add to the estimate of each node holding ``tokens`` ([n] ids, a chain from
        ``source``, an index of SOURCES): zero for a token not seen yet as a node of its kind.  # [n]"""
        n = len(tokens)
        index = self._slots[source]
        ids = tokens.tolist() if isinstance(tokens, np.ndarray) else tokens
        slots = np.array([index.get(t, 0) for t in ids], dtype=np.int64)  # [n]
        kinds = _kinds(n)  # [n]
        tries, hits = self._tries[source][kinds, slots], self._hits[source][kinds, slots]  # [n]
        g = self._all_hits[source] / self._all_tries[source]  # [2] the rate of each kind of node
        prior = (self.strength * g)[kinds]
        rate = (hits + prior) / (tries + self.strength)  # in (0, 1): g is, and the prior weighs in
        offset = np.log(rate / (1.0 - rate)) - np.log(g / (1.0 - g))[kinds]
        return np.where(tries > 0, self.beta * offset, 0.0)

    def learn(self, source: int, tokens: Sequence[int], tried: int, hits: int) -> None:
        """A chain from ``source`` whose nodes ``0..tried-1`` were checked and ``0..hits-1`` right."""
        m = min(tried, len(tokens))
        if m <= 0:
            return
        hits = min(hits, m)
        ids = tokens[:m].tolist() if isinstance(tokens, np.ndarray) else list(tokens[:m])
        slots = np.array([self._slot(source, t) for t in ids], dtype=np.int64)  # [m]
        kinds = _kinds(m)  # [m]
        # a slot appears once per kind but for a token repeated in the chain: add.at counts each
        np.add.at(self._tries[source], (kinds, slots), 1.0)
        np.add.at(self._hits[source], (kinds, slots), (np.arange(m) < hits).astype(np.float64))
        self._all_tries[source] += (1.0, m - 1.0)
        self._all_hits[source] += (float(hits > 0), max(hits - 1, 0.0))

    def _slot(self, source: int, token: int) -> int:
        """``token``'s slot in ``source``'s arrays: its own, or a new one (the arrays grown when full)."""
        index = self._slots[source]
        if token in index:
            return index[token]
        slot = index[token] = len(index) + 1
        if slot >= self._tries.shape[-1]:  # room for twice as many tokens
            more = self._tries.shape[-1]
            self._tries = np.pad(self._tries, ((0, 0), (0, 0), (0, more)))
            self._hits = np.pad(self._hits, ((0, 0), (0, 0), (0, more)))
        return slot

    def learn_node(self, source: int, depth: int, token: int, hit: bool) -> None:
        """One node at ``depth`` holding ``token`` was checked (the nodes before it right)."""
        slot = self._slot(source, token)
        kind = 0 if depth == 0 else 1
        self._tries[source, kind, slot] += 1.0
        self._hits[source, kind, slot] += float(hit)
        self._all_tries[source, kind] += 1.0
        self._all_hits[source, kind] += float(hit)


#: a node's kind by depth: 0 the first node, 1 a later one
_KIND_OF = np.minimum(np.arange(64), 1)


def _kinds(n: int) -> np.ndarray:
    """The kinds of a chain's first ``n`` nodes.  # [n]"""
    return _KIND_OF[:n] if n <= len(_KIND_OF) else np.minimum(np.arange(n), 1)


def adjusted(estimate: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``estimate`` ([n] probabilities) moved by ``offsets`` ([n] log-odds).  # [n]"""
    p = np.clip(np.asarray(estimate, dtype=np.float64), 1e-4, 1.0 - 1e-4)
    return 1.0 / (1.0 + np.exp(-(np.log(p / (1.0 - p)) + offsets)))
