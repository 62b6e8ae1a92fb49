"""``recycling``: a token tree that mixes a lookup chain with the target's own recycled top-k.

Lookup alone rarely offers a second candidate worth verifying: when the longest match is
wrong, other occurrences are usually wrong too. The target itself offers better ones. Every
forward computes the model's distribution after every token it verifies and the loop throws
all but the argmax away; this drafter keeps the ``width`` most likely next tokens after each
token (the idea of Token Recycling, Luo et al. 2024), in a table keyed by that
token, and rebuilds a tree from the table wherever lookup has nothing or may be wrong:

* children of a node = the lookup draft's children of that node (while the node is on it: a
  chain's next token, or, from a lookup drafter that drafts a tree of several occurrences'
  continuations, each of them) and the table's row for the node's token (the most recent
  context that token was in);
* each candidate gets a probability: for the lookup draft's first child of a node, the chain's
  per-depth acceptance after a match of this length (:class:`lookup.acceptance.AcceptanceRates`,
  bucketed as ``adaptive``'s statistics are, a match of 16 tokens or more split further by length:
  the chains such matches copy run 63 nodes deep on a GPU track); for its other children, the acceptance of that
  sibling rank; for a row's token, the rank's hit rate; all learnt in this sequence (a candidate
  that is two of these gets ``1 - (1-a)(1-b)``). The candidates are different tokens and at most one
  is next, so where their estimates add up past 1 the likeliest keeps its own and the others share
  what it leaves, in proportion: a chain that a long match makes 0.99 sure leaves a row's token
  0.01, not its rank's rate, and runs deep instead of sprouting branches it would not need;
* the tree takes the most probable nodes, best first (a node's probability is its
  parent's times its own), up to ``max_nodes`` (or the loop's budget).

With ``history=true``, one drafter kept across requests, the lookup part also copies from the
earlier requests' outputs where they hold the longer match (``suffix-automaton``'s history: there the
lookup part is that occurrence's chain); the rows and the learnt acceptances stay per request.

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

from bisect import bisect_right
from typing import Sequence

import numpy as np

from lookup.arrays import kernel_array
from lookup.base import EMPTY_DRAFT, MAX_TOP, Draft, Drafter
from lookup.params import require_bool, with_history
from pldcore.setting import Setting
from lookup.acceptance.learner import BUCKET_EDGES, AcceptanceRates, match_bucket
from lookup.acceptance.model import PRIORS
from lookup.acceptance.planner import best_cut, forward_costs
from lookup.acceptance.rates import DecayedRate
from lookup.drafters.recycling_steps import remember_rows, score_rows, walk
from lookup.drafters.recycling_steps import warm_up as warm_up_steps
from lookup.drafters.recycling_tree import best_first_tree
from lookup.indexes.id_map import IdMap
from lookup.registry import create, register

#: occurrences of the match whose continuations make the lookup part of the tree (``branches``):
#: on the shipped benchmark planned and priced flat (up to 64 tokens per forward), 16 beat 1, 4 and 8
#: (docs/hardware.md), and under the CPU profile the cut leaves the same score
DEFAULT_BRANCHES = 16
#: the chain's lookup drafter drafts as far as its match goes; the tree decides how much to use
DEFAULT_BASE_PARAMS = {"max_tokens": 64, "length_rule": None}
#: deepest chain node with statistics of its own; deeper ones share the last
MAX_DEPTH = 64
#: where a long match's levels start: the shared bucketing's last bucket (10+ tokens) split further
#: for the chain, which a GPU track lets run 63 nodes deep. Measured on both shipped benchmarks (every
#: position of every case, the suffix automaton's chain): P(node right | the ones before right) is
#: 0.90-0.93 at the first depths after a match of 10-15 tokens, 0.96-0.97 after 16-31, 0.98-0.99
#: after 32-63 and 0.99-1.00 after 64+ (docs/acceptance.md), where one prior for 10+ said 0.8, then
#: 0.9: a 30-token match's chain was cut at about 25 nodes in a turn that copies the one before
LONG_EDGES = (16, 32, 64)
#: (P(first node), P(later node)) per long level: 16-31, 32-63, 64+ tokens
LONG_PRIORS = ((0.96, 0.97), (0.985, 0.99), (0.99, 0.99))
#: priors, worth ``PRIOR_STRENGTH`` observations: P(chain node right | the ones before right) per
#: long level and match-length bucket, ``adaptive``'s for a draft from the context below 16 tokens
#: (a longer match, likelier nodes; replayed against a flat 0.7 in the commit that chose them) and
#: ``LONG_PRIORS`` above (the last bucket's row; the other rows of a long level are never read), and
#: P(the row's rank-r token is next), falling with the rank (ranks past the table: 0)
_SHORT = PRIORS.depth_prior(PRIORS.first, MAX_DEPTH)  # [B, D]
PRIOR_CHAIN = np.stack([_SHORT, *(np.vstack([_SHORT[:-1], np.r_[first, np.full(MAX_DEPTH - 1, later)]])
                                  for first, later in LONG_PRIORS)])  # [G, B, D]
#: the first-node prior of each long level (0 below the first): a chain node ``d`` deep after a match
#: of ``m`` tokens, its ``d`` parents right, follows a match of ``m + d`` (chain_acceptance)
_LONG_FIRST = np.array([0.0, *(first for first, _ in LONG_PRIORS)])
PRIOR_RANKS = np.array([0.45, 0.09, 0.045, 0.025, 0.02, 0.016, 0.014, 0.01])
PRIOR_STRENGTH = 2.0
#: prior P(a lookup tree's sibling of rank r >= 1 is the next token | its parent was right)
PRIOR_SIBLING = 0.3
#: sibling ranks with statistics of their own; later ones share the last
MAX_SIBLINGS = 16


def _branches(base: str | Drafter | None, base_params: dict | None, branches: int | None) -> int:
    """``branches``, or its default: ``DEFAULT_BRANCHES`` for ``suffix-automaton`` by name (unless its
    parameters set their own), else 1."""
    if branches is not None:
        return branches
    return DEFAULT_BRANCHES if base == "suffix-automaton" and "branches" not in (base_params or {}) else 1


def _base_params(base: str | Drafter | None, base_params: dict | None, branches: int | None,
                 history: bool = False) -> dict:
    """The parameters a base given by name is built with (``history=True`` added when asked; for a
    base given otherwise, only the check that it takes no history)."""
    params = dict(DEFAULT_BASE_PARAMS if base_params is None else base_params)
    wanted = _branches(base, base_params, branches)
    if isinstance(wanted, int) and wanted > 1:
        params["branches"] = wanted
    return with_history(base, params, history)


@register("recycling")
class RecyclingDrafter(Drafter):
    """Lookup chain + recycled top-k of the target, as one best-first token tree.

    ``wants_top`` is the instance's ``width`` (the class value: the default width).
    """

    wants_top = 8
    uses_setting = True

    @classmethod
    def top_rows(cls, params: dict) -> int:
        return params.get("width", cls.wants_top)

    @classmethod
    def wrapped_specs(cls, params: dict) -> list[tuple[str, dict]]:
        """The lookup drafter it builds when ``base`` is a name (as :meth:`__init__` builds it)."""
        base = params.get("base", "suffix-automaton")
        if not isinstance(base, str):
            return []
        return [(base, _base_params(base, params.get("base_params"), params.get("branches"), params.get("history", False)))]

    def __init__(
        self,
        base: str | Drafter | None = "suffix-automaton",
        max_nodes: int = 63,
        width: int = 8,
        decay: float = 0.95,
        base_params: dict | None = None,
        branches: int | None = None,
        history: bool = False,
        *,
        setting: Setting,
        cost_aware: bool = True,
    ) -> None:
        """
        Args:
            base: the lookup drafter whose draft is the tree's lookup part (a name or an
                instance); ``None`` for recycled candidates only.
            max_nodes: most nodes in a tree (the loop's budget may cut it further).
            width: recycled candidates kept per token (the top-``width`` of the target).
            decay: weight of the past in the learnt acceptances, per step.
            base_params: parameters of ``base`` when it is a name (default: draft as far as the
                match goes).
            branches: with more than 1, the lookup part is a tree of the continuations of up to
                ``branches`` earlier occurrences of the match (``base`` by name, which must take a
                ``branches`` parameter as ``suffix-automaton`` does), each sibling rank with an
                acceptance of its own: worth it where forwards over a few dozen tokens cost about
                one (a large GPU; under a CPU profile the cut keeps what pays). None: ``DEFAULT_BRANCHES``
                for ``suffix-automaton`` by name, else 1 (the base's own draft).
            history: the lookup drafter (``base`` by name, created with ``history=True``) also
                matches the earlier requests this drafter served (:meth:`Drafter.keeps_history`); the
                tree's learnt acceptances and the table of rows stay per request.
            setting: where it runs (:class:`pldcore.setting.Setting`); its cost profile cuts the tree.
            cost_aware: cut the tree to the size with the most expected tokens per second under the
                setting's profile; False: fill the budget.
        """
        super().__init__()
        if max_nodes < 1 or not 1 <= width <= MAX_TOP or not 0.0 < decay <= 1.0:
            raise ValueError(f"max_nodes must be >= 1, width in [1, {MAX_TOP}] and decay in (0, 1]")
        branches = _branches(base, base_params, branches)
        if branches < 1:
            raise ValueError("branches must be >= 1")
        params = _base_params(base, base_params, branches, history)  # checks history against base
        if isinstance(base, str):
            base = create(base, **params)
        elif branches > 1:
            raise ValueError("branches applies to a base given by name (an instance drafts as it was made)")
        self.branches, self.history = branches, history
        self.base = base
        self.max_nodes, self.width, self.decay = max_nodes, width, decay
        self.setting = setting
        self.profile = setting.profile if require_bool("cost_aware", cost_aware) else None
        self.wants_top = width
        # P(chain node at depth d right | the nodes before it right), per long level and match-length
        # bucket (:meth:`bucket`): [G, B, D]
        self._chain = AcceptanceRates(PRIOR_CHAIN, PRIOR_STRENGTH, decay)
        # P(a row's rank-r token is the next token); every step with a row is a trial of every rank: [W]
        rank_prior = np.resize(PRIOR_RANKS, width) * (np.arange(width) < len(PRIOR_RANKS))
        self._ranks = DecayedRate(rank_prior, PRIOR_STRENGTH, decay)
        # P(the lookup tree's sibling of rank r is right | its parent right), r >= 1 (index r - 1): [S]
        self._siblings = DecayedRate(np.full(MAX_SIBLINGS, PRIOR_SIBLING), PRIOR_STRENGTH, decay)
        warm_up_steps()  # the kernels compiled off the timed path
        self._slot = IdMap()
        self.reset([])

    # -- the Drafter interface ---------------------------------------------------------------
    def reset(self, prompt: Sequence[int]) -> None:
        if self.base is not None:
            self.base.reset(prompt)
        # the target's top ids after each token (its most recent context): one row per token seen,
        # [S, width] ids, and each token's row in a table of the ids seen. A row per token id would
        # be [V, width]: 16 MB for a 262k vocabulary, allocated per request
        self._rows = np.full((0, self.width), -1, dtype=np.int64)
        self._slot.clear()
        self._n_rows = 0
        self._context = len(prompt)
        self._last = int(prompt[-1]) if len(prompt) else -1
        self._chain.clear()
        self._ranks.clear()
        self._siblings.clear()
        #: (last token, lookup draft, its statistics' row: :meth:`bucket`) of the last propose
        self._proposed: tuple[int, Draft, tuple[int, int]] | None = None
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
        tokens = kernel_array(tokens, np.int64)
        if not len(tokens):
            return
        top = kernel_array(np.asarray(top)[:, : self.width], np.int64)
        if len(top) != len(tokens):  # the kernel reads a row per token, unchecked
            raise ValueError(f"observe_top: {len(top)} rows of top ids for {len(tokens)} tokens")
        if int(tokens.min()) < 0:
            raise ValueError(f"observe_top: token ids are >= 0, got {int(tokens.min())}")
        self._slot.reserve(len(tokens))  # at most one new key per token
        if self._n_rows + len(tokens) > len(self._rows):  # room for a row per token, the table grown by doubling
            rows = np.full((max(self._n_rows + len(tokens), 2 * len(self._rows), 256), self.width), -1, dtype=np.int64)
            rows[: self._n_rows] = self._rows[: self._n_rows]  # -1: past a row narrower than width
            self._rows = rows
        self._n_rows = remember_rows(tokens, top, self._slot.table, self._rows, self._n_rows)
        self._slot.count = self._n_rows  # a row per key

    def row_of(self, token: int) -> np.ndarray | None:
        """The target's top ids after ``token`` in its most recent context (None: not seen yet).  # [width]"""
        slot = self._slot.get(token)
        if slot < 0:
            return None
        row = self._rows[slot]
        return row[row >= 0]

    def propose(self, budget: int) -> Draft:
        limit = min(budget, self.max_nodes)
        if limit <= 0 or self._last < 0:
            self._proposed = None
            return EMPTY_DRAFT
        found = self._lookup(limit)
        match = self.match_length()
        bucket = _row_of(match)
        # remembered for observe() (the last propose's, whichever call that was); it changes no
        # future proposal by itself
        self._proposed = (self._last, found, bucket)
        tokens, parents, probs = self.best_first(found, limit, bucket, match)
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
        last, found, bucket = self._proposed
        self._proposed = None
        new = self._committed
        self._chain.age()
        self._ranks.age()
        self._siblings.age()
        # walk the lookup draft down the committed tokens: at each node reached, its first child is a
        # trial of the chain's acceptance at that depth, each other child one of its sibling rank
        committed = kernel_array(new, np.int64)
        parents = np.arange(-1, len(found) - 1, dtype=np.int32) if found.parents is None else found.parents
        firsts = np.zeros(len(committed))  # per depth reached: whether the node's first child was right
        depths = walk(kernel_array(parents, np.int32), kernel_array(found.tokens, np.int64), committed, firsts, self._siblings.trials, self._siblings.hits,
                      MAX_SIBLINGS)
        self._chain.learn_walk(bucket, firsts[:depths])  # nodes deeper than MAX_DEPTH read the last depth's rate
        # each committed token checks the row of the token before it (rows as they were at propose),
        # all at once: a GPU track commits dozens of tokens a step
        self._ranks.trials += score_rows(last, committed, self._slot.table, self._rows, self._ranks.hits)

    # -- the tree --------------------------------------------------------------------------
    def bucket(self) -> tuple[int, int]:
        """The statistics' row for the lookup drafter's match now: (long level, the match-length
        bucket of :func:`lookup.acceptance.match_bucket`); level 0 below ``LONG_EDGES[0]`` tokens
        (or no match length reported)."""
        return _row_of(self.match_length())

    def chain_acceptance(self, bucket: tuple[int, int] | None = None, match: int | None = None) -> np.ndarray:
        """Estimated P(chain node d right | nodes before it right), per depth d, after a match of
        ``match`` tokens in ``bucket`` (both None: the lookup drafter's match now; no ``match``: the
        bucket's shortest). Never below the first-node prior of the long level that the match reaches
        once the d nodes before are right (``match + d`` tokens: a chain that holds lengthens its match),
        so a chain after a short match that keeps holding goes as deep as one after a long match
        (Gemma's second turns, which copy the first answer from a short match on the chat template).  # [D]"""
        if bucket is None:
            match = self.match_length()
            bucket = _row_of(match)
        if match is None:
            match = _shortest_match(bucket)
        estimate = self._chain.estimate(bucket)
        reached = _LONG_FIRST[np.searchsorted(LONG_EDGES, match + np.arange(len(estimate)), side="right")]
        return np.maximum(estimate, reached)

    def rank_acceptance(self) -> np.ndarray:
        """Estimated P(a row's rank-r token is the next token).  # [W]"""
        return self._ranks.estimate()

    def sibling_acceptance(self) -> np.ndarray:
        """Estimated P(the lookup tree's sibling of rank r is right | its parent right), r = 1.. .  # [S]"""
        return self._siblings.estimate()

    def best_first(self, found: Draft | np.ndarray, limit: int, bucket: tuple[int, int] | None = None,
                   match: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``limit`` most probable nodes, parents first: (tokens [n], parents [n], P(node) [n]),
        from the lookup draft ``found`` (a Draft, or a chain's [m] ids) copied after a match of
        ``match`` tokens in ``bucket`` (as :meth:`chain_acceptance` reads them) and the table's rows.

        Every node's probability is at most its parent's, so popping the most probable
        candidate first always yields parents before children, and any prefix is a tree.
        """
        if not isinstance(found, Draft):
            found = Draft(found)
        parents = np.arange(-1, len(found) - 1, dtype=np.int32) if found.parents is None else found.parents
        return best_first_tree(self._last, found.tokens, parents, self._rows, self._slot.table,
                               self.chain_acceptance(bucket, match), self.rank_acceptance(), self.sibling_acceptance(),
                               limit)

    def _lookup(self, limit: int) -> Draft:
        """The lookup drafter's draft (a chain, or a tree of several occurrences' continuations)."""
        return EMPTY_DRAFT if self.base is None else self.base.propose(limit)

    def match_length(self) -> int | None:
        """The lookup drafter's match length (None without a lookup drafter, or when it reports none)."""
        return None if self.base is None else self.base.match_length()

    def params(self) -> dict:
        base = None if self.base is None else {"name": self.base.name, **self.base.params()}
        return {"base": base, "max_nodes": self.max_nodes, "width": self.width, "decay": self.decay,
                "cost_aware": self.profile is not None, "branches": self.branches, "history": self.history}


def _row_of(match: int | None) -> tuple[int, int]:
    """The statistics' row of a match of ``match`` tokens (None: unknown): (long level, bucket)."""
    return bisect_right(LONG_EDGES, 0 if match is None else match), match_bucket(match)


def _shortest_match(bucket: tuple[int, int]) -> int:
    """The shortest match length of statistics row ``bucket`` (long level, match-length bucket)."""
    level, b = bucket
    return LONG_EDGES[level - 1] if level > 0 else (0, *BUCKET_EDGES)[b]
