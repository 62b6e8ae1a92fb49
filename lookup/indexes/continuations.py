"""A token tree of what followed several earlier occurrences of a match.

Where a match occurred more than once, its occurrences may continue differently; a drafter that
sends only the most recent continuation loses every step on which another one was right. On a
target whose forward costs the same for a few dozen tokens as for one (a large GPU), the others
can ride along in the same forward as branches of a tree, the idea of SuffixDecoding's and
SAM-Decoding's trees (here over the occurrences an index remembers, not over a suffix tree).

    tokens, parents = continuation_tree(sequence, ends, length, budget)
    n = majority_chain(sequence, ends, length, loop, out)   # the chain most of them follow, in out[:n]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.kernel_cache import kernel
from lookup.indexes.heap import heap_pop, heap_push
from lookup.indexes.loop import overlapping_copy


def continuation_tree(sequence: np.ndarray, ends: Sequence[int], length: int,
                      budget: int, loop: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The trie of the continuations ``sequence[e + 1 : e + 1 + length]`` of each end ``e`` in
    ``ends`` (newest first), cut to ``budget`` nodes: (tokens [n] int64, parents [n] int32, -1 =
    the root, parents before children). With ``loop``, a continuation that runs into the end of
    ``sequence`` goes on round its loop to ``length`` tokens (:func:`lookup.indexes.loop.overlapping_copy`).

    Nodes are taken most-shared first: by how many of the continuations pass through them, ties
    going to the node of the newest occurrence, then to the shallower one. A node is never shared by
    more continuations than its parent, so every prefix of the order is a tree, siblings appear in
    that order (the first child of each node is its most shared one), and with one end the tree is
    that end's continuation, a chain. (A numba kernel: drafters call it every step.)
    """
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    if budget <= 0 or length <= 0 or len(ends) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    return _tree(np.ascontiguousarray(sequence), ends, int(length), int(budget), bool(loop))


@kernel
def _continuation(sequence, end, length, loop, out):
    """Write into ``out`` the (at most ``length``) tokens that follow ``end`` in ``sequence``, round its
    loop past its end with ``loop``; return how many."""
    if loop:
        return overlapping_copy(sequence, len(sequence), end + 1, length, out)
    m = max(0, min(length, len(sequence) - 1 - end))
    out[:m] = sequence[end + 1 : end + 1 + m]
    return m


@kernel
def _tree(sequence, ends, length, budget, loop):
    path = np.zeros(length, dtype=np.int64)  # [length] one occurrence's continuation
    cap = len(ends) * length + 1
    first_child = np.full(cap, -1, dtype=np.int64)  # the trie as first-child / next-sibling links
    next_sibling = np.full(cap, -1, dtype=np.int64)
    count = np.zeros(cap, dtype=np.int64)  # continuations through each node
    first = np.zeros(cap, dtype=np.int64)  # the newest continuation through it (its index in ends)
    depth = np.zeros(cap, dtype=np.int64)
    token = np.zeros(cap, dtype=np.int64)
    nodes = 1
    for rank in range(len(ends)):
        count[0] += 1
        node = 0
        m = _continuation(sequence, ends[rank], length, loop, path)
        for i in range(m):
            t = path[i]
            child, last = first_child[node], -1
            while child != -1 and token[child] != t:
                last, child = child, next_sibling[child]
            if child == -1:
                child = nodes
                nodes += 1
                token[child], first[child], depth[child] = t, rank, depth[node] + 1
                if last == -1:
                    first_child[node] = child
                else:
                    next_sibling[last] = child
            count[child] += 1
            node = child
    # best first: a heap of trie nodes whose parent is taken, the most shared first, then the newest
    # occurrence's, then the shallower, then the one made first
    primary = -count[:nodes].astype(np.float64)
    secondary = (first[:nodes] * (length + 1) + depth[:nodes]) * nodes + np.arange(nodes)
    heap = np.zeros(nodes, dtype=np.int64)
    size = 0
    out_index = np.full(nodes, -1, dtype=np.int64)
    parent_of = np.zeros(nodes, dtype=np.int64)
    tokens = np.zeros(min(budget, nodes - 1), dtype=np.int64)
    parents = np.zeros(min(budget, nodes - 1), dtype=np.int32)
    n = 0
    node = 0
    while True:  # take node (the root first: not output), then push its children
        child = first_child[node]
        while child != -1:
            parent_of[child] = node
            size = heap_push(heap, size, child, primary, secondary)
            child = next_sibling[child]
        if size == 0 or n >= budget:
            break
        node, size = heap_pop(heap, size, primary, secondary)
        out_index[node] = n
        tokens[n] = token[node]
        parents[n] = -1 if parent_of[node] == 0 else out_index[parent_of[node]]
        n += 1
    return tokens[:n], parents[:n]


def majority_chain(sequence: np.ndarray, ends: Sequence[int], length: int, loop: bool, out: np.ndarray) -> int:
    """Write into ``out[:m]`` the chain that most continuations of ``ends`` (newest first) follow, depth
    by depth, and return m (at most ``length``): at each depth the token most of the continuations
    that went the chain's way so far go on with, ties to the newest occurrence's; it stops where none
    goes on. With ``loop``, a continuation that runs into the end of ``sequence``
    goes on round its loop (:func:`lookup.indexes.loop.overlapping_copy`). ``out``: [>= length].

    With one end, or where the newest occurrence's continuation is the majority's, it is that
    continuation. Where the newest runs off on its own (the last lap of a loop in an earlier answer,
    which the output is still going round), the chain follows the others."""
    if length <= 0 or len(ends) == 0:
        return 0
    return int(_majority(np.ascontiguousarray(sequence), np.ascontiguousarray(ends, dtype=np.int64), int(length),
                         bool(loop), out))


@kernel
def _majority(sequence, ends, length, loop, out):
    k = len(ends)
    paths = np.zeros((k, length), dtype=np.int64)  # [k, length] each occurrence's continuation
    lens = np.zeros(k, dtype=np.int64)
    for r in range(k):
        lens[r] = _continuation(sequence, ends[r], length, loop, paths[r])
    alive = np.ones(k, dtype=np.bool_)  # continuations that went the chain's way so far
    for d in range(length):
        best, best_count = -1, 0
        for r in range(k):  # newest first: a tie keeps the newest's token
            if not alive[r] or lens[r] <= d:
                continue
            c = 0
            for q in range(k):
                if alive[q] and lens[q] > d and paths[q, d] == paths[r, d]:
                    c += 1
            if c > best_count:
                best, best_count = paths[r, d], c
        if best_count == 0:
            return d
        out[d] = best
        for r in range(k):
            alive[r] = alive[r] and lens[r] > d and paths[r, d] == best
    return length
