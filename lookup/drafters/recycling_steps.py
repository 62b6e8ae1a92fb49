"""The recycling drafter's bookkeeping of each step, as numba kernels: on a GPU track a step commits
dozens of tokens, and the drafter's own time is a real share of a forward that takes milliseconds.

    n_rows = remember_rows(tokens, top, slot, rows, n_rows)      # observe_top: the target's top ids
    depths = walk(parents, drafted, committed, firsts, sibling_trials, sibling_hits, max_siblings)
    known = score_rows(last, committed, slot, rows, rank_hits)    # the rows' ranks that were right

What each computes is :class:`lookup.drafters.recycling.RecyclingDrafter`'s contract (its
``observe_top`` and ``observe``); ``tests/lookup/drafters/test_recycling_steps.py`` checks them
against brute force.
"""

from __future__ import annotations

import functools

import numpy as np

from lookup.kernel_cache import kernel
from lookup.indexes.id_map import IdMap, id_get, id_put
from lookup.indexes.id_map import warm_up as warm_up_id_map


@kernel
def remember_rows(tokens: np.ndarray, top: np.ndarray, slot: np.ndarray, rows: np.ndarray,
                  n_rows: int) -> int:  # pragma: no cover - numba
    """Each token's row of ``rows`` takes the ids in ``top`` after it, a later occurrence over an
    earlier one; a token seen for the first time gets the next free row. Returns the rows in use.

    Args:
        tokens: the tokens the rows follow ([m] int64, each >= 0).
        top: the target's top ids after each ([m, w] int64, w <= rows' width; a row's ids past w stay).
        slot: each token's row (absent: none yet), the table of an :class:`~lookup.indexes.id_map.IdMap`
            with room for ``m`` more keys; updated.
        rows: the table ([R, W] int64, R >= n_rows + m), updated.
        n_rows: rows in use before.
    """
    for i in range(len(tokens)):
        token = tokens[i]
        row = id_get(slot, token, -1)
        if row < 0:
            row = n_rows
            id_put(slot, token, row)
            n_rows += 1
        for j in range(top.shape[1]):
            rows[row, j] = top[i, j]
    return n_rows


@kernel
def walk(parents: np.ndarray, drafted: np.ndarray, committed: np.ndarray, firsts: np.ndarray,
         sibling_trials: np.ndarray, sibling_hits: np.ndarray, max_siblings: int) -> int:  # pragma: no cover - numba
    """Follow ``committed`` ([c] int64) down a tree (``parents`` [n] int32, -1 = root, parents before
    children; ``drafted`` [n] int64): at each node reached, whether its first child was right goes to
    ``firsts`` ([>= c] float64, 1.0 or 0.0); where it has several children, ranks 1..min(children,
    max_siblings + 1) - 1 were each tried once more (``sibling_trials`` [max_siblings]), and the
    rank of a right younger child (at most ``max_siblings``) hit once more (``sibling_hits``). Stops
    where no child is right, or at a node without children. Returns the depths reached."""
    n = len(drafted)
    node, depths = -1, 0
    for c in range(len(committed)):
        children, hit, hit_node = 0, -1, -1
        for i in range(node + 1, n):  # a node's children come after it, in their order
            if parents[i] == node:
                if hit < 0 and drafted[i] == committed[c]:
                    hit, hit_node = children, i
                children += 1
        if children == 0:
            break
        firsts[depths] = 1.0 if hit == 0 else 0.0
        depths += 1
        for r in range(min(children, max_siblings + 1) - 1):
            sibling_trials[r] += 1.0
        if hit < 0:
            break
        if hit > 0:
            sibling_hits[min(hit, max_siblings) - 1] += 1.0
        node = hit_node
    return depths


@kernel
def score_rows(last: int, committed: np.ndarray, slot: np.ndarray, rows: np.ndarray,
               rank_hits: np.ndarray) -> int:  # pragma: no cover - numba
    """Each committed token ([c] int64) against the row of the token before it (``last`` before the
    first; a token without a row is skipped): the rank of the row's id that equals it, if any, hit
    once more (``rank_hits`` [W]). Returns how many tokens had a row (each a trial of every rank)."""
    known = 0
    before = last
    for c in range(len(committed)):
        row = id_get(slot, before, -1)
        if row >= 0:
            known += 1
            for j in range(rows.shape[1]):
                if rows[row, j] == committed[c]:
                    rank_hits[j] += 1.0
                    break
        before = committed[c]
    return known


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels once per process, off the timed path."""
    warm_up_id_map()
    slot = IdMap(8).table
    rows = np.full((4, 2), -1, dtype=np.int64)
    n = remember_rows(np.array([1, 2], dtype=np.int64), np.array([[2, 3], [1, 0]], dtype=np.int64), slot, rows, 0)
    walk(np.array([-1, 0], dtype=np.int32), np.array([2, 1], dtype=np.int64), np.array([2, 1], dtype=np.int64),
         np.zeros(2), np.zeros(2), np.zeros(2), 2)
    score_rows(1, np.array([2, 1], dtype=np.int64), slot, rows[:n], np.zeros(2))
