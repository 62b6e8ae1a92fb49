"""The recycling drafter's best-first tree, as a numba kernel (it runs every step, and on a GPU
target whose forward takes milliseconds the drafter's own time is a real share of each step).

    tokens, parents, probs = best_first_tree(last, lookup_tokens, lookup_parents, rows, slot,
                                             chain_p, rank_p, sibling_p, limit)

What it computes is :meth:`lookup.drafters.recycling.RecyclingDrafter.best_first`'s contract;
``tests/lookup/drafters/test_recycling.py`` checks it against brute force.
"""

from __future__ import annotations

import numpy as np

from lookup.kernel_cache import kernel
from lookup.indexes.heap import heap_pop, heap_push
from lookup.indexes.id_map import id_get


@kernel
def best_first_tree(last: int, lookup_tokens: np.ndarray, lookup_parents: np.ndarray, rows: np.ndarray,
                    slot: np.ndarray, chain_p: np.ndarray, rank_p: np.ndarray, sibling_p: np.ndarray,
                    limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``limit`` most probable nodes, parents first (tokens [n] int64, parents [n] int32, P [n]).

    Args:
        last: the last committed token (the root's).
        lookup_tokens, lookup_parents: the lookup drafter's draft ([m] int64, [m] int32; a chain's
            parents are 0..m-2 after -1).
        rows, slot: the target's top ids after tokens ([S, W] int64, one row per token seen; -1 past
            the end of a narrower row) and each token's row in it (the table of an
            :class:`~lookup.indexes.id_map.IdMap`; absent: none).
        chain_p: P(the lookup draft's first child of a node right | the node right), by depth ([D]).
        rank_p: P(a row's rank-r token is next) ([W]).
        sibling_p: P(the lookup draft's rank-r child right | its parent right), r = 1.. ([S]).
        limit: the most nodes.

    A candidate that is both a lookup child and a row's token gets ``1 - (1-a)(1-b)``; where a node's
    candidates add up past 1, the likeliest keeps its own and the others are scaled to share the rest
    (at most one of them is next); each node's probability is its parent's times its own. Ties pop in
    the order candidates were pushed: per node, the lookup draft's children in their order, then the
    row's new tokens in rank order.
    """
    m = len(lookup_tokens)
    n_depth, width, n_sib = len(chain_p), rows.shape[1], len(sibling_p)
    # the lookup draft's children of each node, in order (CSR; index 0 = the root's)
    starts = np.zeros(m + 2, dtype=np.int64)
    for i in range(m):
        starts[lookup_parents[i] + 2] += 1
    for i in range(1, m + 2):
        starts[i] += starts[i - 1]
    kids = np.zeros(m, dtype=np.int64)
    fill = starts.copy()
    for i in range(m):
        kids[fill[lookup_parents[i] + 1]] = i
        fill[lookup_parents[i] + 1] += 1
    most_kids = 0
    for i in range(m + 1):
        most_kids = max(most_kids, starts[i + 1] - starts[i])
    per_node = most_kids + width
    cap = (limit + 1) * per_node + 1
    neg_p = np.zeros(cap)
    order = np.zeros(cap, dtype=np.int64)
    h_parent = np.zeros(cap, dtype=np.int64)
    h_token = np.zeros(cap, dtype=np.int64)
    h_at = np.zeros(cap, dtype=np.int64)  # the lookup draft's node it is (-2: off the draft; -1 root)
    h_depth = np.zeros(cap, dtype=np.int64)
    heap = np.zeros(cap, dtype=np.int64)
    c_token = np.zeros(per_node, dtype=np.int64)  # one node's candidates, merged by token
    c_p = np.zeros(per_node)
    c_at = np.zeros(per_node, dtype=np.int64)
    tokens = np.zeros(limit, dtype=np.int64)
    parents = np.zeros(limit, dtype=np.int32)
    probs = np.zeros(limit)
    size, pushed, n = 0, 0, 0
    # the node being expanded: (output index, token, P, lookup node, depth); first the root
    node, token, p_node, at, depth = -1, last, 1.0, -1, 0
    while True:
        k = 0
        if at >= -1:
            for r in range(starts[at + 1], starts[at + 2]):
                rank = r - starts[at + 1]
                child = kids[r]
                if rank == 0:
                    p = chain_p[min(depth, n_depth - 1)]
                else:
                    p = sibling_p[min(rank, n_sib) - 1]
                t = lookup_tokens[child]
                j = 0
                while j < k and c_token[j] != t:
                    j += 1
                c_token[j], c_p[j], c_at[j] = t, p, child
                if j == k:
                    k += 1
        row = id_get(slot, token, -1)
        if row >= 0:
            for rank in range(width):
                t = rows[row, rank]
                if t < 0:  # past the row's end (a row narrower than the table)
                    break
                j = 0
                while j < k and c_token[j] != t:
                    j += 1
                if j == k:
                    c_token[j], c_p[j], c_at[j] = t, 0.0, -2
                    k += 1
                c_p[j] = 1.0 - (1.0 - c_p[j]) * (1.0 - rank_p[rank])
        # the candidates are different tokens, so at most one is next: where their estimates add up
        # past 1 (a chain after a long match at 0.99 beside a row's token at its rank's rate), the
        # likeliest keeps its own and the others share what it leaves, in proportion
        total, best = 0.0, 0
        for j in range(k):
            total += c_p[j]
            if c_p[j] > c_p[best]:
                best = j
        if total > 1.0:
            scale = (1.0 - c_p[best]) / (total - c_p[best])
            for j in range(k):
                if j != best:
                    c_p[j] *= scale
        for j in range(k):
            e = pushed  # entries live at fixed slots, one per push; the heap holds slot numbers
            pushed += 1
            neg_p[e], order[e], h_parent[e], h_token[e], h_at[e], h_depth[e] = \
                -(p_node * c_p[j]), pushed, node, c_token[j], c_at[j], depth + 1
            size = heap_push(heap, size, e, neg_p, order)
        if size == 0 or n >= limit:
            break
        top, size = heap_pop(heap, size, neg_p, order)
        tokens[n], parents[n], probs[n] = h_token[top], h_parent[top], -neg_p[top]
        node, token, p_node, at, depth = n, h_token[top], -neg_p[top], h_at[top], h_depth[top]
        n += 1
        if n >= limit:
            break
    return tokens[:n], parents[:n], probs[:n]
