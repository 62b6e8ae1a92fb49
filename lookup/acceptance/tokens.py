"""Which tokens a draft holds: how often a drafted token was accepted, per token id, learnt online.

The fitted models (:mod:`~lookup.acceptance.first_token`, :mod:`~lookup.acceptance.later_nodes`)
read the match and its occurrences, never the tokens drafted. Yet whether a copy holds depends on
what is copied: a copy tends to break where the target starts something of its own (a new
sentence, a list item, the next line of code) and to hold inside a name or a quoted phrase. Which
tokens those are differs from model to model and task to task, so it is learnt while serving:

    rates = TokenRates()
    offsets = rates.offsets(source, tokens)   # [n] log-odds to add to the models' estimates
    rates.learn(source, tokens, tried, hits)  # nodes 0..tried-1 checked, 0..hits-1 right
    rates.learn(source, tokens, tried, hits, free=True)  # and node `tried` checked for free, right

Each drafted token ``t`` at a node keeps counts of how often a node holding it was accepted, per
draft source and for first nodes apart from later ones (a first node is accepted far less often).
Its rate, ``(hits + STRENGTH * g) / (tries + STRENGTH)``, is smoothed towards ``g``, the rate of every
node of its kind; the offset is ``BETA * (logit(rate) - logit(g))``: zero for a token not seen yet.
On held-out halves of the shipped SmolLM2 benchmark the token drafted adds 0.01-0.02 of AUC to each
fitted model; ``STRENGTH`` and ``BETA`` were chosen by replay on that benchmark's public cases
(docs/notes/2026-12-06-smol60.md).
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from lookup.kernel_cache import kernel
from lookup.arrays import kernel_array
from lookup.indexes.id_map import IdMap, id_get, id_put
from lookup.indexes.id_map import warm_up as id_map_warm_up

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
    none, looked up in a hash table of the ids seen: an array indexed by token id would be as long as
    the vocabulary), so that a chain's offsets are one kernel, not a loop of Python over its nodes.
    """

    def __init__(self, strength: float = STRENGTH, beta: float = BETA) -> None:
        if strength <= 0:
            raise ValueError(f"strength must be > 0, got {strength}")
        self.strength, self.beta = float(strength), float(beta)
        self.clear()
        warm_up()

    def clear(self) -> None:
        """Forget every token seen."""
        sources = len(PRIOR)
        #: per source: token id -> slot >= 1 (absent: not seen); its count is the slots taken
        self._slot_of = [IdMap() for _ in range(sources)]
        self._tries = np.zeros((sources, 2, 64))  # [S, kind, slots] kind 0 = first node, 1 = later
        self._hits = np.zeros((sources, 2, 64))  # [S, kind, slots]
        #: per source and kind: tries and hits of every node of that kind, a prior node included  # [S, 2]
        self._all_tries = np.ones((sources, 2))
        self._all_hits = np.array(PRIOR, dtype=np.float64)

    def offsets(self, source: int, tokens: Sequence[int]) -> np.ndarray:
        """Log-odds to add to the estimate of each node holding ``tokens`` ([n] ids, a chain from
        ``source``, an index of SOURCES): zero for a token not seen yet as a node of its kind.  # [n]"""
        return _offsets(kernel_array(tokens, np.int64), *self.source_arrays(source))

    def source_arrays(self, source: int) -> tuple:
        """What the offsets' kernel reads of ``source`` after the tokens: its table of slots, its tries
        and hits per slot ([2, slots] each: first node, later), every node's ([2] each), strength, beta."""
        return (self._slot_of[source].table, self._tries[source], self._hits[source], self._all_tries[source],
                self._all_hits[source], self.strength, self.beta)

    def learn(self, source: int, tokens: Sequence[int], tried: int, hits: int, free: bool | None = None) -> None:
        """A chain from ``source`` whose nodes ``0..tried-1`` were checked and ``0..hits-1`` right; with
        ``free`` (not None), node ``tried`` too was checked (the nodes before it right: its verdict
        came for free with the target's own next token), and was right or not."""
        m = min(tried, len(tokens))
        extra = free is not None and m < len(tokens)
        if m + extra <= 0:
            return
        ids = kernel_array(tokens[: m + extra], np.int64)
        verdicts = (m, min(hits, m), int(bool(free)) if extra else -1)
        slot_of = self._slot_of[source]
        used = _learnt(ids, slot_of.room(len(ids)), slot_of.count, *self.source_arrays(source)[:5], *verdicts)
        if used == _NO_ROOM:  # nothing was counted: make room, then count
            self._make_room(source, len(ids))
            used = _learnt(ids, slot_of.room(len(ids)), slot_of.count, *self.source_arrays(source)[:5], *verdicts)
        if used == _NEGATIVE:
            raise ValueError(f"token ids are >= 0, got {int(ids.min())}")
        slot_of.count = used

    def _make_room(self, source: int, more: int) -> None:
        """Grow ``source``'s table and every source's counts (to twice their size at least) until
        ``more`` new tokens fit."""
        slot_of = self._slot_of[source]
        slot_of.reserve(more)
        room = self._tries.shape[-1]
        if slot_of.count + more >= room:
            extra = max(room, slot_of.count + more + 1 - room)
            self._tries = np.pad(self._tries, ((0, 0), (0, 0), (0, extra)))
            self._hits = np.pad(self._hits, ((0, 0), (0, 0), (0, extra)))


#: what :func:`_numbered` returns instead of the slots taken
_NEGATIVE, _NO_ROOM = -1, -2


@kernel
def _offsets(ids, slot_of, tries, hits, all_tries, all_hits, strength, beta):  # pragma: no cover - numba
    out = np.zeros(len(ids))
    for i in range(len(ids)):
        token = ids[i]
        slot = id_get(slot_of, token, 0)
        kind = 0 if i == 0 else 1
        if slot == 0 or tries[kind, slot] <= 0:  # not seen as a node of its kind: no offset
            continue
        g = all_hits[kind] / all_tries[kind]  # the rate of every node of its kind
        rate = (hits[kind, slot] + strength * g) / (tries[kind, slot] + strength)  # in (0, 1): g is
        out[i] = beta * (math.log(rate / (1.0 - rate)) - math.log(g / (1.0 - g)))
    return out


@kernel
def _count(ids, slot_of, tries, hits, all_tries, all_hits, m, right, free):  # pragma: no cover - numba
    # ids[:m]: a chain's nodes checked, ids[:right] right; free >= 0: ids[m] checked too, right if 1
    for i in range(m):  # a token repeated in the chain counts each time
        kind = 0 if i == 0 else 1
        slot = id_get(slot_of, ids[i], 0)
        tries[kind, slot] += 1.0
        hits[kind, slot] += 1.0 if i < right else 0.0
    if m > 0:
        all_tries[0] += 1.0
        all_tries[1] += m - 1.0
        all_hits[0] += 1.0 if right > 0 else 0.0
        all_hits[1] += max(right - 1, 0.0)
    if free >= 0:
        kind = 0 if m == 0 else 1
        slot = id_get(slot_of, ids[m], 0)
        tries[kind, slot] += 1.0
        hits[kind, slot] += float(free)
        all_tries[kind] += 1.0
        all_hits[kind] += float(free)


@kernel
def _numbered(ids, slot_of, keys_left, used, room):  # pragma: no cover - numba
    # nothing is numbered unless every id fits (``keys_left``: IdMap.room): the slots taken, or why not
    for token in ids:
        if token < 0:
            return _NEGATIVE
    if keys_left < 0 or used + len(ids) >= room:
        return _NO_ROOM
    for token in ids:
        if id_get(slot_of, token, 0) == 0:
            used += 1
            id_put(slot_of, token, used)
    return used


@kernel
def _learnt(ids, keys_left, used, slot_of, tries, hits, all_tries, all_hits, m, right,
            free):  # pragma: no cover - numba
    # TokenRates.learn: number the ids not seen yet, then count them; nothing changes unless all fit
    used = _numbered(ids, slot_of, keys_left, used, tries.shape[-1])
    if used >= 0:
        _count(ids, slot_of, tries, hits, all_tries, all_hits, m, right, free)
    return used


@kernel
def _adjusted(estimate, offsets, shift):  # pragma: no cover - numba
    out = np.empty(len(estimate))
    for i in range(len(estimate)):
        p = min(max(estimate[i], 1e-4), 1.0 - 1e-4)
        move = (offsets[i] if len(offsets) else 0.0) + shift
        out[i] = 1.0 / (1.0 + math.exp(-(math.log(p / (1.0 - p)) + move)))
    return out


_NONE = np.zeros(0)


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels once per process, off the timed path (the
    board times proposals, not construction)."""
    id_map_warm_up()
    rates = TokenRates.__new__(TokenRates)  # not __init__, which calls this
    rates.strength, rates.beta = STRENGTH, BETA
    rates.clear()
    rates.learn(0, [1, 2, 3], 2, 1, True)
    rates.offsets(0, [1, 2, 3])
    adjusted(np.full(2, 0.5), np.zeros(2), 0.1)


def adjusted(estimate: np.ndarray, offsets: np.ndarray | float | None, shift: float = 0.0) -> np.ndarray:
    """``estimate`` ([n] probabilities, clipped to [1e-4, 1 - 1e-4]) moved by ``offsets`` ([n] log-odds
    per node, one for all, or None) plus ``shift`` (log-odds on every node).  # [n]"""
    estimate = kernel_array(estimate, np.float64)
    if offsets is None:
        offsets = _NONE
    elif np.ndim(offsets) == 0:
        offsets, shift = _NONE, float(offsets) + shift
    elif len(offsets) != len(estimate):
        raise ValueError(f"{len(offsets)} offsets for {len(estimate)} estimates")
    return _adjusted(estimate, kernel_array(offsets, np.float64), float(shift))
