"""``recycling``: a token tree that mixes a lookup chain with the target's own recycled top-k.

Lookup alone rarely offers a second candidate worth verifying: when the longest match is
wrong, other occurrences are usually wrong too. The target itself offers better ones. Every
forward computes the model's distribution after every token it verifies and the loop throws
all but the argmax away; this drafter keeps the ``width`` most likely next tokens after each
token (the idea of Token Recycling, Luo et al. 2024), in a table keyed by that
token, and rebuilds a tree from the table wherever lookup has nothing or may be wrong:

* children of a node = the lookup chain's next token (while the node is on the chain)
  and the table's row for the node's token (the most recent context that token was in);
* each candidate gets a probability: the chain's per-depth acceptance, or the rank's hit
  rate, both learnt in this sequence (a candidate that is both gets ``1 - (1-a)(1-b)``);
* the tree takes the most probable nodes, best first (a node's probability is its
  parent's times its own), up to ``max_nodes`` (or the loop's budget).

Given a cost profile (compare and replay pass the target's), it sends the prefix of that
best-first order with the most expected tokens per second, ``(1 + sum P(node)) / cost(n + 1)``
(:func:`lookup.acceptance.planner.best_cut`); without one, it sends the whole budget.

The table is filled through :meth:`Drafter.observe_top`: the prompt's rows come from the
prefill, then every step brings a row for each token it committed after. (Token Recycling also
keeps the rows of rejected draft nodes; the loop hands only the sequence's own rows, so that a
recorded trace replays this drafter exactly.) The shipped traces hold the target's top-8 rows,
so ``width`` is at most 8.
"""

from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np

from lookup.base import EMPTY_DRAFT, MAX_TOP, Draft, Drafter
from lookup.cost import CostProfile
from lookup.acceptance.planner import best_cut, forward_costs
from lookup.acceptance.rates import DecayedRate
from lookup.registry import create, register

#: the chain's lookup drafter drafts as far as its match goes; the tree decides how much to use
DEFAULT_BASE_PARAMS = {"max_tokens": 64, "length_rule": None}
#: priors, worth ``PRIOR_STRENGTH`` observations: P(chain node right | the ones before right) and
#: P(the row's rank-r token is next), falling with the rank (ranks past the table: 0)
PRIOR_CHAIN = 0.7
PRIOR_RANKS = np.array([0.45, 0.09, 0.045, 0.025, 0.02, 0.016, 0.014, 0.01])
PRIOR_STRENGTH = 2.0
#: deepest chain node with statistics of its own; deeper ones share the last
MAX_DEPTH = 64


@register("recycling")
class RecyclingDrafter(Drafter):
    """Lookup chain + recycled top-k of the target, as one best-first token tree.

    ``wants_top`` is the instance's ``width`` (the class value: the default width).
    """

    wants_top = 8
    uses_profile = True

    def __init__(
        self,
        base: str | Drafter | None = "suffix-automaton",
        max_nodes: int = 32,
        width: int = 8,
        profile: CostProfile | str | None = None,
        decay: float = 0.95,
        base_params: dict | None = None,
    ) -> None:
        """
        Args:
            base: the lookup drafter whose chain is the tree's first branch (a name or an
                instance); ``None`` for recycled candidates only.
            max_nodes: most nodes in a tree (the loop's budget may cut it further).
            width: recycled candidates kept per token (the top-``width`` of the target).
            profile: the target's cost profile (or a path to a saved one); with one, the tree is
                cut to the size with the most expected tokens per second, without one it fills
                the budget.
            decay: weight of the past in the learnt acceptances, per step.
            base_params: parameters of ``base`` when it is a name (default: draft as far as the
                match goes).
        """
        super().__init__()
        if max_nodes < 1 or not 1 <= width <= MAX_TOP or not 0.0 < decay <= 1.0:
            raise ValueError(f"max_nodes must be >= 1, width in [1, {MAX_TOP}] and decay in (0, 1]")
        if isinstance(base, str):
            base = create(base, **(DEFAULT_BASE_PARAMS if base_params is None else base_params))
        self.base = base
        self.max_nodes, self.width, self.decay = max_nodes, width, decay
        self.profile = CostProfile.load(profile) if isinstance(profile, str) else profile
        self.wants_top = width
        # P(chain node at depth d right | the nodes before it right): [D]
        self._chain = DecayedRate(np.full(MAX_DEPTH, PRIOR_CHAIN), PRIOR_STRENGTH, decay)
        # P(a row's rank-r token is the next token); every step with a row is a trial of every rank: [W]
        rank_prior = np.resize(PRIOR_RANKS, width) * (np.arange(width) < len(PRIOR_RANKS))
        self._ranks = DecayedRate(rank_prior, PRIOR_STRENGTH, decay)
        self.reset([])

    # -- the Drafter interface ---------------------------------------------------------------
    def reset(self, prompt: Sequence[int]) -> None:
        if self.base is not None:
            self.base.reset(prompt)
        self._rows: dict[int, np.ndarray] = {}  # token -> [width] the target's top ids after it, most recent
        self._context = len(prompt)
        self._last = int(prompt[-1]) if len(prompt) else -1
        self._chain.clear()
        self._ranks.clear()
        self._proposed: tuple[int, np.ndarray] | None = None  # (last token, chain) of the last propose
        self._committed: list[int] = []

    def extend(self, tokens: Sequence[int]) -> None:
        if self.base is not None:
            self.base.extend(tokens)
        self._committed = [int(t) for t in tokens]
        self._context += len(tokens)
        if self._committed:
            self._last = self._committed[-1]

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        """Remember the target's top ids after each token; a later occurrence replaces an earlier."""
        top = np.asarray(top)[:, : self.width]
        for token, row in zip(np.asarray(tokens).tolist(), top):
            self._rows[token] = row

    def propose(self, budget: int) -> Draft:
        limit = min(budget, self.max_nodes)
        if limit <= 0 or self._last < 0:
            self._proposed = None
            return EMPTY_DRAFT
        chain = self._lookup_chain(limit)
        # remembered for observe() (the last propose's, whichever call that was); it changes no
        # future proposal by itself
        self._proposed = (self._last, chain)
        tokens, parents, probs = self.best_first(chain, limit)
        if self.profile is None:
            n = len(tokens)
        else:
            n = best_cut(probs, forward_costs(self.profile, len(probs), self._context))
        return Draft(tokens[:n], parents[:n]) if n else EMPTY_DRAFT

    def observe(self, draft: Draft, accepted: int) -> None:
        """Learn from the committed tokens, against every candidate the tree could have held."""
        if self.base is not None:
            self.base.observe(draft, accepted)
        if self._proposed is None:
            return
        last, chain = self._proposed
        self._proposed = None
        new = self._committed
        self._chain.age()
        self._ranks.age()
        right = 0
        while right < min(len(chain), len(new)) and chain[right] == new[right]:
            right += 1
        tried = min(right + 1, len(chain), len(new))  # chain nodes the committed tokens could check
        self._chain.trials[: min(tried, MAX_DEPTH)] += 1
        self._chain.hits[: min(right, MAX_DEPTH)] += 1
        # each committed token checks the row of the token before it (rows as they were at propose)
        for parent, token in zip([last, *new[:-1]], new):
            row = self._rows.get(parent)
            if row is not None:
                self._ranks.trials += 1
                hit = np.flatnonzero(row == token)
                if len(hit):
                    self._ranks.hits[hit[0]] += 1

    # -- the tree --------------------------------------------------------------------------
    def chain_acceptance(self) -> np.ndarray:
        """Estimated P(chain node d right | nodes before it right), per depth d.  # [D]"""
        return self._chain.estimate()

    def rank_acceptance(self) -> np.ndarray:
        """Estimated P(a row's rank-r token is the next token).  # [W]"""
        return self._ranks.estimate()

    def best_first(self, chain: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``limit`` most probable nodes, parents first: (tokens [n], parents [n], P(node) [n]).

        Every node's probability is at most its parent's, so popping the most probable
        candidate first always yields parents before children, and any prefix is a tree.
        """
        chain_p, rank_p = self.chain_acceptance(), self.rank_acceptance()
        tokens: list[int] = []
        parents: list[int] = []
        probs: list[float] = []
        heap: list[tuple[float, int, int, int, int]] = []  # (-P, order, parent node, token, chain depth or -1)
        order = 0

        def push_children(node: int, token: int, p_node: float, depth: int) -> None:
            nonlocal order
            candidates: dict[int, tuple[float, int]] = {}
            if 0 <= depth < len(chain):  # the node is on the lookup chain
                candidates[int(chain[depth])] = (chain_p[min(depth, MAX_DEPTH - 1)], depth + 1)
            row = self._rows.get(token)
            if row is not None:
                for rank, t in enumerate(row.tolist()):
                    p, next_depth = candidates.get(t, (0.0, -1))
                    candidates[t] = (1.0 - (1.0 - p) * (1.0 - rank_p[rank]), next_depth)
            for t, (p, next_depth) in candidates.items():
                order += 1
                heapq.heappush(heap, (-p_node * p, order, node, t, next_depth))

        push_children(-1, self._last, 1.0, 0)
        while heap and len(tokens) < limit:
            neg_p, _, parent, token, depth = heapq.heappop(heap)
            tokens.append(token)
            parents.append(parent)
            probs.append(-neg_p)
            if len(tokens) < limit:
                push_children(len(tokens) - 1, token, -neg_p, depth)
        return np.asarray(tokens, dtype=np.int64), np.asarray(parents, dtype=np.int32), np.asarray(probs)

    def _lookup_chain(self, limit: int) -> np.ndarray:
        """The lookup drafter's chain (a tree from it counts by its first branch only)."""
        if self.base is None:
            return np.zeros(0, dtype=np.int64)
        draft = self.base.propose(limit)
        if draft.is_chain:
            return draft.tokens
        n = 0
        while n < len(draft) and draft.parents[n] == n - 1:
            n += 1
        return draft.tokens[:n]

    def match_length(self) -> int | None:
        """The lookup drafter's match length (None without a lookup drafter, or when it reports none)."""
        return None if self.base is None else self.base.match_length()

    def params(self) -> dict:
        base = None if self.base is None else {"name": self.base.name, **self.base.params()}
        return {"base": base, "max_nodes": self.max_nodes, "width": self.width, "decay": self.decay,
                "cost_aware": self.profile is not None}
