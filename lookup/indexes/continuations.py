"""A token tree of what followed several earlier occurrences of a match.

Where a match occurred more than once, its occurrences may continue differently; a drafter that
sends only the most recent continuation loses every step on which another one was right. On a
target whose forward costs the same for a few dozen tokens as for one (a large GPU), the others
can ride along in the same forward as branches of a tree, the idea of SuffixDecoding's and
SAM-Decoding's trees (here over the occurrences an index remembers, not over a suffix tree).

    tokens, parents = continuation_tree(sequence, ends, length, budget)
"""

from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np


def continuation_tree(sequence: np.ndarray, ends: Sequence[int], length: int,
                      budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The trie of the continuations ``sequence[e + 1 : e + 1 + length]`` of each end ``e`` in
    ``ends`` (newest first), cut to ``budget`` nodes: (tokens [n] int64, parents [n] int32, -1 =
    the root, parents before children).

    Nodes are taken most-shared first: by how many of the continuations pass through them, ties
    going to the node of the newest occurrence, then to the shallower one. A node is never shared by
    more continuations than its parent, so every prefix of the order is a tree, siblings appear in
    that order (the first child of each node is its most shared one), and with one end the tree is
    that end's continuation, a chain.
    """
    n_seq = len(sequence)
    children: list[dict[int, int]] = [{}]  # trie node -> {token: child}; node 0 = the root
    count = [0]  # continuations through each node
    first = [0]  # the newest continuation through each node (its index in ends)
    depth = [0]
    token = [-1]
    for rank, end in enumerate(ends):
        count[0] += 1
        node = 0
        for pos in range(int(end) + 1, min(int(end) + 1 + length, n_seq)):
            t = int(sequence[pos])
            child = children[node].get(t)
            if child is None:
                child = len(count)
                children[node][t] = child
                children.append({})
                count.append(0)
                first.append(rank)
                depth.append(depth[node] + 1)
                token.append(t)
            count[child] += 1
            node = child
    tokens: list[int] = []
    parents: list[int] = []
    out_index = {0: -1}  # trie node -> its index in the output
    heap = [(-count[c], first[c], depth[c], c, 0) for c in children[0].values()]
    heapq.heapify(heap)
    while heap and len(tokens) < budget:
        _, _, _, node, parent = heapq.heappop(heap)
        out_index[node] = len(tokens)
        tokens.append(token[node])
        parents.append(out_index[parent])
        for c in children[node].values():
            heapq.heappush(heap, (-count[c], first[c], depth[c], c, node))
    return np.asarray(tokens, dtype=np.int64), np.asarray(parents, dtype=np.int32)
