"""The acceptance-rate learner: P(node at depth d accepted | the nodes before it accepted), per
match-length bucket, from decayed counts smoothed towards a prior.

    rates = AcceptanceRates(prior, strength=2.0, decay=0.98)   # prior: [*groups, BUCKETS, L]
    key = (*group, match_bucket(drafter.match_length()))       # one row of L depths
    rates.estimate(key)                                        # [L]
    rates.age()                                                # once per step, before learning
    rates.learn_prefix(key, tried, hits)                       # a chain: nodes 0..tried-1 checked, 0..hits-1 right
    rates.learn_node(key, depth, hit)                          # one node, where a walk reached it
    rates.learn_walk(key, hits)                                # a walk: depth d checked, hits[d] right

One learner and one bucketing for every user of such rates: ``adaptive``'s acceptance model
(:class:`lookup.acceptance.model.AcceptanceModel`, groups = draft sources), ``recycling``'s lookup
chain and the vLLM proposer's batch rule (no groups). A draft copied after a longer match is
accepted more often, so its nodes are judged apart from a short match's; a learner can take another
learner as its prior (the vLLM proposer: each request's rates smoothed towards every request's).
"""

from __future__ import annotations

from bisect import bisect_right
from types import EllipsisType
from typing import Union

import numpy as np
from numpy.typing import ArrayLike

from lookup.acceptance.rates import DecayedRate, smoothed_rate

#: where a new match-length bucket starts: [0-1], 2, 3, [4-5], [6-9], [10+] tokens. Set by hand when
#: ``adaptive``'s statistics were written (docs/acceptance.md); its priors are per bucket.
BUCKET_EDGES = (2, 3, 4, 6, 10)
#: how many buckets: the learner's second-to-last axis
BUCKETS = len(BUCKET_EDGES) + 1
#: the match length assumed for a drafter that reports none (a middling one)
UNKNOWN_MATCH = 3


def match_bucket(length: int | None) -> int:
    """The bucket of a draft copied after a match of ``length`` tokens (None: unknown, taken as
    :data:`UNKNOWN_MATCH`), in ``0..BUCKETS-1``."""
    # bisect, not numpy: called every step, where numpy's per-call overhead is most of the cost
    return bisect_right(BUCKET_EDGES, UNKNOWN_MATCH if length is None else length)


Key = tuple[int, ...]  # an index of the learner's leading axes: (*group, bucket), ints


class AcceptanceRates(DecayedRate):
    """P(node at depth d accepted | the nodes before it accepted), per row ``(*group, bucket)``.

    The counts ``trials`` and ``hits`` are ``[*groups, BUCKETS, L]`` float64, decayed by
    :meth:`age`; an estimate is ``(hits + strength * prior) / (trials + strength)`` per cell, where
    the prior is an array or another learner's estimate of the same cell.
    """

    def __init__(self, prior: Union[ArrayLike, "AcceptanceRates"], strength: float, decay: float) -> None:
        """
        Args:
            prior: the rates assumed before any observation (``[*groups, BUCKETS, L]``), or a learner
                of that shape whose current estimate is the prior (a hierarchy: its own learning
                moves this one's prior).
            strength: how many observations the prior is worth (> 0).
            decay: weight kept by past observations per step, in (0, 1].
        """
        self.parent = prior if isinstance(prior, AcceptanceRates) else None
        super().__init__(prior.prior if self.parent is not None else prior, strength, decay)
        if self.prior.ndim < 2 or self.prior.shape[-2] != BUCKETS:
            raise ValueError(f"an acceptance prior is [*groups, {BUCKETS} buckets, depths], got {self.prior.shape}")

    @property
    def depths(self) -> int:
        """The deepest node with statistics of its own (L)."""
        return self.prior.shape[-1]

    def estimate(self, key: Key | EllipsisType = ...) -> np.ndarray:
        """The smoothed rates of row ``key`` (``[L]``; all rows by default)."""
        if self.parent is None:
            return super().estimate(key)
        return smoothed_rate(self.hits[key], self.trials[key], self.parent.estimate(key), self.strength)

    def counts(self, key: Key) -> tuple[np.ndarray, np.ndarray]:
        """The decayed (trials, hits) per depth of row ``key`` (copies).  # [L], [L]"""
        return self.trials[key].copy(), self.hits[key].copy()

    def learn_prefix(self, key: Key, tried: int, hits: int) -> None:
        """A chain judged at row ``key``: its nodes ``0..tried-1`` were checked and ``0..hits-1`` of them
        right (``hits <= tried``); nodes past ``L`` are not counted."""
        self.trials[key][:tried] += 1
        self.hits[key][:hits] += 1

    def learn_walk(self, key: Key, hits: list[bool]) -> None:
        """A walk down a tree judged at row ``key``: the node at each depth ``d < len(hits)`` was
        checked (its parent right) and right or not (``hits[d]``); as :meth:`learn_node` per depth."""
        n = min(len(hits), self.depths)
        self.trials[key][:n] += 1
        self.hits[key][:n] += np.asarray(hits[:n], dtype=np.float64)

    def learn_node(self, key: Key, depth: int, hit: bool) -> None:
        """One node at ``depth`` of row ``key`` was checked (its parent right), and was right or not;
        a node deeper than ``L`` reads the last depth's rate without adding to it."""
        if depth < self.depths:
            self.trials[key][depth] += 1
            self.hits[key][depth] += float(hit)
