"""``voting``: earlier occurrences of the current match vote on what comes next.

The suffix automaton of :mod:`lookup.drafters.suffix_automaton` gives the longest suffix that occurred
earlier and, per state, its most recent end positions (no rescans). Each of those
occurrences contributes its continuation; the continuations form a small trie weighted by
votes (optionally decayed by recency rank). The chain draft follows the heaviest child
at every level (ties: the most recent occurrence); the tree draft takes the heaviest trie
nodes, at most ``max_branches`` children per node, within the node budget (``max_nodes`` and
the loop's budget, whichever is smaller).

When the longest match has fewer than ``min_votes`` remembered occurrences, the drafter
falls back to shorter matches (suffix-link ancestors, whose occurrences are a superset).
"""

from __future__ import annotations

import numpy as np

from lookup.kernel_cache import kernel
from lookup.indexes import automaton_kernels as K
from lookup.base import EMPTY_DRAFT, Draft
from lookup.params import require_bool
from lookup.registry import register
from lookup.indexes.automaton import SuffixAutomaton
from lookup.indexes.loop import overlapping_copy
from lookup.drafters.suffix_automaton import AutomatonDrafter


@kernel
def vote_state(states: np.ndarray, meta: np.ndarray, min_match: int, min_votes: int, ends: np.ndarray) -> tuple[int, int]:
    """Pick the matched state that votes and write its earlier end positions into ``ends``.

    Starts at the longest match link(last) and walks suffix links while the state has fewer
    than ``min_votes`` remembered earlier occurrences and the parent is still at least
    ``min_match`` long. Returns (state, occurrences written, newest first); (-1, 0) when the
    longest match is shorter than ``min_match``.
    """
    u = states[meta[K.M_LAST], K.LINK]
    if u <= 0 or states[u, K.LEN] < min_match:
        return -1, 0
    before = meta[K.M_TOKENS] - 1  # the current position is not an *earlier* occurrence
    while True:
        n = K.recent_ends(states, u, before, ends)
        parent = states[u, K.LINK]
        if n >= min_votes or parent <= 0 or states[parent, K.LEN] < min_match:
            return u, n
        u = parent


@kernel
def _better(weight: np.ndarray, creator: np.ndarray, a: int, b: int) -> bool:
    """Node a outranks node b: more votes, ties to the more recent occurrence (lower rank)."""
    return weight[a] > weight[b] or (weight[a] == weight[b] and creator[a] < creator[b])


@kernel
def vote_tree(
    tokens: np.ndarray,
    n_tokens: int,
    ends: np.ndarray,
    max_tokens: int,
    decay: float,
    max_branches: int,
    budget: int,
    loop: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted trie of the continuations after ``ends`` [k] (newest first), best nodes first.

    Occurrence of rank r votes with weight ``decay**r`` for each prefix of its continuation
    ``tokens[e+1 : min(e+1+max_tokens, n_tokens)]`` (with ``loop``, ``max_tokens`` of them, round the
    loop past the end of the text: :mod:`lookup.indexes.loop`). A node is eligible when it is among
    the ``max_branches`` best children of an eligible parent; the answer is the ``budget``
    best eligible nodes by (weight desc, depth asc, rank asc), in that order, which puts
    parents before children. Returns (tokens [b] int64, parents [b] int32, -1 = root).
    """
    k = len(ends)
    cap = k * max_tokens + 1
    tok = np.zeros(cap, dtype=np.int64)
    parent = np.full(cap, -1, dtype=np.int32)
    depth = np.zeros(cap, dtype=np.int32)
    creator = np.zeros(cap, dtype=np.int32)
    weight = np.zeros(cap, dtype=np.float64)
    first_child = np.full(cap, -1, dtype=np.int32)
    next_sibling = np.full(cap, -1, dtype=np.int32)
    nodes = 1  # node 0 is the root (the last committed token)
    path = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] one occurrence's continuation
    w = 1.0
    for r in range(k):
        node = 0
        if loop:
            m = overlapping_copy(tokens, n_tokens, ends[r] + 1, max_tokens, path)
        else:
            m = max(0, min(max_tokens, n_tokens - 1 - ends[r]))
            path[:m] = tokens[ends[r] + 1 : ends[r] + 1 + m]
        for j in range(1, m + 1):
            x = path[j - 1]
            ch = first_child[node]
            while ch != -1 and tok[ch] != x:
                ch = next_sibling[ch]
            if ch == -1:
                ch = nodes
                nodes += 1
                tok[ch] = x
                parent[ch] = node
                depth[ch] = j
                creator[ch] = r
                next_sibling[ch] = first_child[node]
                first_child[node] = ch
            weight[ch] += w
            node = ch
        w *= decay

    # nodes were created parent-first, so one forward pass settles eligibility
    eligible = np.zeros(nodes, dtype=np.bool_)
    eligible[0] = True
    for a in range(1, nodes):
        if not eligible[parent[a]]:
            continue
        rank = 0
        b = first_child[parent[a]]
        while b != -1:
            if b != a and _better(weight, creator, b, a):
                rank += 1
            b = next_sibling[b]
        eligible[a] = rank < max_branches

    # best-first: the best eligible node whose parent is already taken
    out_pos = np.full(nodes, -1, dtype=np.int32)
    out_pos[0] = -1
    taken = np.zeros(nodes, dtype=np.bool_)
    taken[0] = True
    m = min(budget, nodes - 1)
    out_tok = np.zeros(m, dtype=np.int64)
    out_par = np.zeros(m, dtype=np.int32)
    n_out = 0
    while n_out < m:
        best = -1
        for a in range(1, nodes):
            if taken[a] or not eligible[a] or not taken[parent[a]]:
                continue
            if best == -1 or weight[a] > weight[best]:
                best = a
            elif weight[a] == weight[best] and (
                depth[a] < depth[best] or (depth[a] == depth[best] and creator[a] < creator[best])
            ):
                best = a
        if best == -1:
            break
        taken[best] = True
        out_pos[best] = n_out
        out_tok[n_out] = tok[best]
        out_par[n_out] = out_pos[parent[best]]
        n_out += 1
    return out_tok[:n_out], out_par[:n_out]


@register("voting")
class VotingDrafter(AutomatonDrafter):
    """Every remembered earlier occurrence of the current match votes on the next tokens.

    Args:
        min_match: shortest suffix match used (fallback stops there).
        max_tokens: longest chain, deepest tree level.
        occurrences: most recent occurrences remembered per state (the voters), K.
        min_votes: fall back to shorter matches while the match has fewer occurrences.
        decay: the occurrence of recency rank r votes with weight ``decay**r`` (1 = plain counts).
        tree: return a token tree (parents set) instead of a chain.
        max_branches: children per tree node at most (the tree's width per level).
        max_nodes: most nodes in a tree (the loop's budget may cut it further); with ``adaptive``
            around it, the cost profile picks how many of them to send.
        max_depth: see :class:`lookup.indexes.automaton.SuffixAutomaton`; deeper than the
            ``suffix-automaton`` default because fallbacks read shallower ancestors' rings too.
        loop: a continuation that reaches the end of the text goes on round the loop it is one period
            of (:mod:`lookup.indexes.loop`), instead of stopping there.
    """

    def __init__(
        self,
        min_match: int = 2,
        max_tokens: int = 10,
        occurrences: int = 8,
        min_votes: int = 2,
        decay: float = 1.0,
        tree: bool = False,
        max_branches: int = 3,
        max_depth: int = 16,
        max_nodes: int = 32,
        loop: bool = True,
    ):
        super().__init__()
        if min_match < 1 or max_tokens < 1 or max_branches < 1 or max_nodes < 1:
            raise ValueError("min_match, max_tokens, max_branches and max_nodes must be >= 1")
        if not 1 <= min_votes <= occurrences:
            raise ValueError(f"min_votes must be in [1, occurrences={occurrences}], got {min_votes}")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {decay}")
        self.min_match = min_match
        self.max_tokens = max_tokens
        self.min_votes = min_votes
        self.decay = float(decay)
        self.tree = require_bool("tree", tree)
        self.max_branches = max_branches
        self.max_nodes = max_nodes
        self.loop = require_bool("loop", loop)
        self.sam = SuffixAutomaton(occurrences=occurrences, max_depth=max_depth)
        self._ends = np.zeros(occurrences, dtype=np.int64)  # [K] scratch for vote_state
        _warm_up()

    def voters(self) -> np.ndarray:
        """End positions of the occurrences that vote now, newest first.  # [k] int64"""
        _, n = vote_state(self.sam.states, self.sam.meta, self.min_match, self.min_votes, self._ends)
        return self._ends[:n].copy()

    def propose(self, budget: int) -> Draft:
        if budget <= 0:
            return EMPTY_DRAFT
        sam = self.sam
        _, n = vote_state(sam.states, sam.meta, self.min_match, self.min_votes, self._ends)
        if n == 0:
            return EMPTY_DRAFT
        branches = self.max_branches if self.tree else 1
        limit = min(budget, self.max_nodes) if self.tree else min(budget, self.max_tokens)
        tokens, parents = vote_tree(sam.tokens, len(sam), self._ends[:n], self.max_tokens, self.decay, branches, limit,
                                   self.loop)
        return Draft(tokens, parents if self.tree else None)

    def params(self) -> dict:
        return {
            "min_match": self.min_match,
            "max_tokens": self.max_tokens,
            "occurrences": self.sam.occurrences,
            "min_votes": self.min_votes,
            "decay": self.decay,
            "tree": self.tree,
            "max_branches": self.max_branches,
            "max_nodes": self.max_nodes,
            "max_depth": self.sam.max_depth,
            "loop": self.loop,
        }


_warmed = False


def _warm_up() -> None:
    """Compile (or load from cache) the voting kernels once per process."""
    global _warmed
    if _warmed:
        return
    _warmed = True  # first, so that the drafter built here does not recurse
    d = VotingDrafter(min_match=1, max_tokens=4, occurrences=2, min_votes=1, tree=True)
    d.reset([1, 2, 3, 1, 2, 4, 1, 2])
    d.propose(8)
