"""Token trees in the verifier: lay a tree draft out as one forward, and walk it.

Layout. A forward over a tree of ``n`` draft nodes has ``n + 1`` inputs: input 0 is the last
committed token (the root) and input ``i + 1`` is draft node ``i``. Input ``i`` sits at
position ``context + depth(i)`` (the root at depth 0) and attends to the whole context, to its
ancestors and to itself, never to its siblings or their subtrees, so its logits are those of
the chain ``root -> .. -> i`` (SpecInfer's tree attention). Parents come before children, so the
inputs are already in topological order and the model's cache can take them as they are.

Walk. The accepted path starts at the root and descends to a child while the acceptance rule
accepts one; the token the target commits after the path (correction or bonus) comes from the
last input on it. :func:`walk` serves every rule whose verdict at an input is one token (greedy:
the argmax; sampling a deterministic tree: a draw from the target); :mod:`decoding.sampling`
holds the multi-candidate rule for trees that carry ``q``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TreeLayout:
    """A draft tree as the inputs of one forward (input 0 = the last committed token)."""

    parents: np.ndarray  # [n+1] int64, input index of each input's parent; -1 for the root
    depths: np.ndarray  # [n+1] int64, 0 for the root
    children: tuple[tuple[int, ...], ...]  # [n+1] children of each input (input indices), in draft order

    @classmethod
    def of(cls, parents: np.ndarray) -> "TreeLayout":
        """Layout of a draft whose node ``i`` has parent ``parents[i]`` ([n], -1 = the root).

        The draft must be well-formed (``Draft.problem() is None``): parents before children.
        """
        n = len(parents)
        up = np.empty(n + 1, dtype=np.int64)
        up[0] = -1
        up[1:] = np.asarray(parents, dtype=np.int64) + 1  # draft parent -1 is input 0
        depths = np.zeros(n + 1, dtype=np.int64)
        children: list[list[int]] = [[] for _ in range(n + 1)]
        for i in range(1, n + 1):
            depths[i] = depths[up[i]] + 1
            children[up[i]].append(i)
        return cls(up, depths, tuple(tuple(c) for c in children))

    def __len__(self) -> int:
        return len(self.parents)

    def visible(self) -> np.ndarray:
        """``visible[i, j]``: input ``i`` attends to input ``j`` (j is i or one of its ancestors).  # [n+1, n+1] bool"""
        m = len(self.parents)
        out = np.zeros((m, m), dtype=bool)
        out[0, 0] = True
        for i in range(1, m):  # a parent's row is complete before its children's
            out[i] = out[self.parents[i]]
            out[i, i] = True
        return out

    def path_inputs(self, nodes: np.ndarray) -> np.ndarray:
        """The inputs to keep after accepting draft ``nodes`` (root to leaf): 0 then each node's input.  # [a+1]"""
        return np.concatenate([[0], np.asarray(nodes, dtype=np.int64) + 1])


def walk(layout: TreeLayout, tokens: np.ndarray, picks: np.ndarray) -> tuple[np.ndarray, int]:
    """Descend from the root while a child carries the token the target picks at its parent.

    ``tokens`` [n+1]: the inputs (input 0's value is not read); ``picks`` [n+1]: the target's
    token after each input (its argmax, or a sample). At every input the path follows the first
    child whose token is ``picks`` there (a later duplicate sibling is never reached). Returns
    (accepted draft nodes root to leaf [a] int64, the token committed after them).
    """
    nodes: list[int] = []
    at = 0
    while True:
        pick = int(picks[at])
        nxt = next((c for c in layout.children[at] if tokens[c] == pick), -1)
        if nxt < 0:
            return np.asarray(nodes, dtype=np.int64), pick
        nodes.append(nxt - 1)
        at = nxt
