"""Acceptance rules: how many draft tokens the target agrees with, and which token it adds.

Each rule is a small pure function, testable alone. Greedy (chains and trees) is here; the
sampling rules live in :mod:`decoding.sampling`.
"""

from __future__ import annotations

import numpy as np

from decoding.tree import TreeLayout, walk


def accept_greedy(draft: np.ndarray, argmax: np.ndarray) -> tuple[int, int]:
    """Longest prefix of ``draft`` ([k]) equal to the target's argmax ([k+1]).

    Returns ``(accepted, next_token)``: the target's own token after the accepted prefix is
    the correction (on a mismatch) or the bonus (when the whole draft matched).
    """
    k = len(draft)
    mismatch = np.flatnonzero(draft != argmax[:k])
    accepted = int(mismatch[0]) if len(mismatch) else k
    return accepted, int(argmax[accepted])


def accept_greedy_tree(draft: np.ndarray, parents: np.ndarray, argmax: np.ndarray) -> tuple[np.ndarray, int]:
    """Greedy verification of a token tree: ``draft`` [n] tokens, ``parents`` [n] (-1 = root),
    ``argmax`` [n+1] the target's argmax after each input (input 0 = the last committed token).

    Follows, from the root, the child whose token is the target's argmax. Returns (accepted
    nodes root to leaf [a] int64, the target's token after them).
    """
    inputs = np.empty(len(draft) + 1, dtype=np.int64)
    inputs[0] = -1
    inputs[1:] = draft
    return walk(TreeLayout.of(parents), inputs, argmax)
