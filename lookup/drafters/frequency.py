"""``frequency``: SuffixDecoding's choice of draft, on our suffix automaton.

SuffixDecoding (arctic-inference; vLLM's ``suffix`` method) counts, in a suffix tree, how often each
continuation followed the context's suffix, and for every match length drafts the most frequent
continuation token by token while its estimated probability (the product of ``child / parent``
counts) stays at or above ``min_prob``, at most ``spec_factor * match length`` tokens. Of those
drafts it keeps the one with the highest score: the sum of the estimated probabilities of its nodes,
the expected number of accepted tokens if the estimates were right. Short matches are seen often and
so estimated well; long ones earn long drafts.

This drafter makes the same choice over the suffix automaton's states instead of a tree: each state
on the suffix-link chain of the longest match is one match length (its longest), and its most recent
``occurrences`` end positions (the automaton's ring) stand in for the tree's counts. As in the tree,
where the occurrences branch, the current position counts among the match's occurrences but has no
continuation, and so does an occurrence whose continuation has reached the end of the sequence;
where they all agree, the estimate does not drop.
The chain is walked from the longest match down and stops once a shorter match's length cap cannot
beat the best score (a draft's score is at most its length).

SuffixDecoding also scores each match in a second tree, of earlier responses and the current one
(vLLM's ``suffix`` keeps the active requests' outputs there). This drafter does without it, so its
draft does not depend on where the prompt ended (what that second tree was measured to be worth:
docs/integrations.md).

Follows ``SuffixTree::speculate`` / ``_speculate_path`` of arctic-inference 0.3.0 (Apache-2.0; ported
exactly in :mod:`lookup.peers.suffix_tree`), on other data: counts from at most ``occurrences``
recent occurrences, one state per range of match lengths, no depth limit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.kernel_cache import kernel
from lookup.base import EMPTY_DRAFT, SOURCES, Agreement, Draft, Evidence
from lookup.drafters.suffix_automaton import AutomatonDrafter
from lookup.indexes import automaton_kernels as K
from lookup.indexes.automaton import SuffixAutomaton
from lookup.indexes.loop import looped_token
from lookup.params import require_bool
from lookup.registry import register


@kernel
def frequency_path(tokens: np.ndarray, n_tokens: int, ends: np.ndarray, n_ends: int, max_tokens: int,
                   min_prob: float, out: np.ndarray, loop: bool = False) -> tuple[int, float]:
    """The most frequent continuation of the occurrences ending at ``ends[:n_ends]`` (newest first).

    At each depth the occurrences that agree with the draft so far vote for their next token (one
    whose continuation has reached ``n_tokens`` votes for none but still counts); the winner (most
    votes; ties to the token of the earliest occurrence, as the tree orders children of equal count by
    their first appearance) is taken with probability ``prob *= votes / count``,
    where at depth 0 the count also holds the current position, or ``prob`` unchanged when every
    vote is for it (as SuffixDecoding's tree, which divides only where the occurrences branch). Stops
    before a node whose probability would fall below ``min_prob``, at ``max_tokens`` nodes, or when
    no occurrence goes on. With ``loop``, an occurrence whose continuation reaches the end of the
    text goes on round its loop (:mod:`lookup.indexes.loop`): it reads the draft so far, as if the
    draft were already text, and so never stops short.

    Returns (nodes written into ``out``, score = the sum of their probabilities).
    """
    alive = np.ones(n_ends, dtype=np.bool_)
    count = n_ends + 1  # the current position is an occurrence with nothing after it
    prob = 1.0
    score = 0.0
    n = 0
    while n < max_tokens and count > 0:
        best, best_votes, voting = -1, 0, 0
        for r in range(n_ends - 1, -1, -1):
            if not alive[r] or (not loop and ends[r] + 1 + n >= n_tokens):
                continue
            voting += 1
            x = looped_token(tokens, n_tokens, out, ends[r] + 1 + n)
            if best != -1 and x == best:
                continue  # counted already, with the older occurrence that voted for it first
            votes = 0
            for s in range(0, r + 1):
                if (alive[s] and (loop or ends[s] + 1 + n < n_tokens)
                        and looped_token(tokens, n_tokens, out, ends[s] + 1 + n) == x):
                    votes += 1
            if votes > best_votes:
                best, best_votes = x, votes
        if best_votes == 0:
            break
        # A unanimous vote keeps the probability: in the tree that is a step along one edge, where
        # the occurrences that stop short (the current one, the end of the text) are not counted.
        share = 1.0 if best_votes == voting else best_votes / count
        if prob * share < min_prob:
            break
        prob *= share
        out[n] = best
        score += prob
        n += 1
        for r in range(n_ends):  # the occurrences that go on along the draft
            alive[r] = (alive[r] and (loop or ends[r] + n < n_tokens)
                        and looped_token(tokens, n_tokens, out, ends[r] + n) == best)
        count = best_votes
    return n, score


@kernel
def frequency_draft(states: np.ndarray, meta: np.ndarray, tokens: np.ndarray, min_match: int, max_tokens: int,
                    spec_factor: float, spec_offset: float, min_prob: float, ends: np.ndarray,
                    out: np.ndarray, scratch: np.ndarray, loop: bool = False) -> tuple[int, int]:
    """The best-scoring :func:`frequency_path` over the match lengths of the suffix-link chain.

    Each state from the longest match ``link(last)`` down to ``min_match`` tokens drafts at most
    ``min(max_tokens, int(len * spec_factor + spec_offset))`` nodes from its recent occurrences (into
    ``ends``; round the loop with ``loop``); the highest score wins, the longer match on ties. Returns
    (the nodes written into ``out`` (0: nothing drafted), the state they were drafted after (0: none)).
    """
    n_tokens = meta[K.M_TOKENS]
    before = n_tokens - 1  # the current position is not an *earlier* occurrence
    u = states[meta[K.M_LAST], K.LINK]
    best_n, best_score, best_state = 0, 0.0, 0
    while u > 0 and states[u, K.LEN] >= min_match:
        length = states[u, K.LEN]
        cap = min(max_tokens, int(length * spec_factor + spec_offset + 1e-6))
        if cap <= best_score:
            break  # a score is at most the draft's length, and shorter matches have smaller caps
        k = K.recent_ends(states, u, before, ends)
        if cap > 0 and k > 0:
            n, score = frequency_path(tokens, n_tokens, ends, k, cap, min_prob, scratch, loop)
            if n > 0 and score > best_score:
                best_n, best_score, best_state = n, score, u
                out[:n] = scratch[:n]
        u = states[u, K.LINK]
    return best_n, best_state


@register("frequency")
class FrequencyDrafter(AutomatonDrafter):
    """Draft the most frequent continuation of the best-scoring suffix match (SuffixDecoding's rule).

    Args:
        min_match: shortest suffix match drafted from.
        max_tokens: longest draft (the loop's budget may cut it further).
        spec_factor, spec_offset: a match of ``m`` tokens drafts at most ``int(m * spec_factor +
            spec_offset)`` tokens (SuffixDecoding's ``max_spec_factor`` and ``max_spec_offset``;
            vLLM's defaults 1.0 and 0).
        min_prob: stop the draft before a token whose estimated probability (the product of vote
            shares along the draft) falls below this (vLLM's default 0.1).
        occurrences: most recent occurrences per match that vote (the counts' sample).
        max_depth: see :class:`lookup.indexes.automaton.SuffixAutomaton`; the shorter matches' rings
            are read too, so deeper than ``suffix-automaton``'s default.
        loop: an occurrence whose continuation reaches the end of the text goes on round the loop it
            is one period of (:func:`frequency_path`), instead of voting for nothing from there.
    """

    def __init__(self, min_match: int = 1, max_tokens: int = 16, spec_factor: float = 1.0,
                 spec_offset: float = 0.0, min_prob: float = 0.1, occurrences: int = 8, max_depth: int = 16,
                 loop: bool = True):
        super().__init__()
        if min_match < 1 or max_tokens < 1 or occurrences < 1:
            raise ValueError("min_match, max_tokens and occurrences must be >= 1")
        if not (spec_factor >= 0 and spec_offset >= 0 and 0 <= min_prob <= 1):
            raise ValueError(f"spec_factor and spec_offset must be >= 0 and min_prob in [0, 1], "
                             f"got {spec_factor!r}, {spec_offset!r}, {min_prob!r}")
        self.min_match, self.max_tokens = min_match, max_tokens
        self.spec_factor, self.spec_offset, self.min_prob = float(spec_factor), float(spec_offset), float(min_prob)
        self.loop = require_bool("loop", loop)
        self.sam = SuffixAutomaton(occurrences=occurrences, max_depth=max_depth)
        self._ends = np.zeros(occurrences, dtype=np.int64)  # [K] scratch: a state's recent occurrences
        self._out = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] the best draft so far
        self._scratch = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] the draft being scored
        self._support = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] evidence(): occurrences following
        self._agree = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] evidence(): those that agree
        self._stops = np.zeros(occurrences, dtype=np.int64)  # [K] evidence(): where each continuation may run
        #: the state (match) the last propose drafted after: what evidence() describes (0: none)
        self._chosen = 0

    def reset(self, prompt: Sequence[int]) -> None:
        super().reset(prompt)
        self._chosen = 0  # a state of the automaton before: meaningless now

    def extend(self, tokens: Sequence[int]) -> None:
        super().extend(tokens)
        self._chosen = 0  # the last draft's match is the past's; match_length() is the longest now

    def propose(self, budget: int) -> Draft:
        if budget <= 0:
            self._chosen = 0
            return EMPTY_DRAFT
        sam = self.sam
        n, self._chosen = frequency_draft(sam.states, sam.meta, sam.tokens, self.min_match,
                                          min(budget, self.max_tokens), self.spec_factor, self.spec_offset,
                                          self.min_prob, self._ends, self._out, self._scratch, self.loop)
        return Draft(self._out[:n].copy()) if n else EMPTY_DRAFT

    def match_length(self) -> int:
        """The length of the match the last :meth:`propose` drafted after (since the last ``extend``;
        before one, the longest match)."""
        return int(self.sam.states[self._chosen, K.LEN]) if self._chosen > 0 else super().match_length()

    def evidence(self, draft: Draft) -> Evidence:
        """The match ``draft`` (the last :meth:`propose`'s) was drafted after and, for a chain, the votes
        behind it: per depth, the occurrences that voted (those that followed the draft so far and have a
        token there; round the loop with ``loop``) and those that voted for the draft's token, as
        :class:`lookup.base.Agreement` counts them for ``adaptive``'s acceptance model."""
        if self._chosen <= 0 or not len(draft):
            return Evidence(SOURCES[0], 0 if self._chosen <= 0 else self.match_length())
        sam, state = self.sam, self._chosen
        length = int(sam.states[state, K.LEN])
        own = None
        if draft.is_chain:
            tokens = np.ascontiguousarray(draft.tokens, dtype=np.int64)
            n = len(tokens)
            if len(self._support) < n:
                self._support, self._agree = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
            k = K.recent_ends(sam.states, state, len(sam) - 1, self._ends)
            self._stops[:k] = len(sam)
            K.chain_agreement(sam.tokens, self._stops, self._ends, k, tokens, self._support, self._agree, self.loop)
            own = Agreement(length, self._support[:n], self._agree[:n]) if k else None
        return Evidence(SOURCES[0], length, own)

    def params(self) -> dict:
        return {
            "min_match": self.min_match,
            "max_tokens": self.max_tokens,
            "spec_factor": self.spec_factor,
            "spec_offset": self.spec_offset,
            "min_prob": self.min_prob,
            "occurrences": self.sam.occurrences,
            "max_depth": self.sam.max_depth,
            "loop": self.loop,
        }
