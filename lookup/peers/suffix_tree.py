"""SuffixDecoding's suffix tree (ArcticInference's ``SuffixTree``), ported to Python.

Follows ``csrc/suffix_decoding/suffix_tree.{h,cc}`` of arctic-inference 0.3.0 (PyPI sdist,
Apache-2.0, Snowflake Inc.) function for function. The tree indexes every suffix of several
sequences, truncated to ``max_depth`` tokens, with path compression (a node holds a run of
tokens by reference into a sequence). Each node counts the suffixes that pass through it, and
keeps its children in a list ordered by decreasing count; children of equal count form groups,
and where a child lands among equal counts when its count changes follows the C++ linked-list
moves exactly (:func:`_increment_count`, :func:`_decrement_count`), because speculation follows
the first child and so ties are decided by that order. Probabilities and scores are computed in
float32, as the C++ does, so equal-score ties resolve the same way.

``tests/lookup/peers/test_suffix_decoding.py`` compiles the original C++ and compares speculation
after random appends and removals, and checks against a brute-force count of suffixes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from lookup.peers.std_heap import StdPriorityQueue

_f32 = np.float32


class Group:
    """Siblings of equal count: ``head`` is the first of them in the sibling list."""

    __slots__ = ("head", "next", "prev")

    def __init__(self, head: Node):
        self.head = head
        self.next: Group | None = None
        self.prev: Group | None = None


class Node:
    """A node: ``length`` tokens starting at ``seqs[ref_seq][ref_idx]``; ``count`` suffixes pass
    through it; ``endpoints`` maps each sequence whose (truncated) suffix ends here to its end index."""

    __slots__ = ("count", "token", "length", "ref_seq", "ref_idx", "endpoints", "parent", "children",
                 "head_child", "tail_child", "next_sibling", "prev_sibling", "group")

    def __init__(self, count: int = 0, token: int = 0, length: int = 0, ref_seq: int = 0, ref_idx: int = -1):
        self.count = count
        self.token = token
        self.length = length
        self.ref_seq = ref_seq
        self.ref_idx = ref_idx
        self.endpoints: dict[int, int] = {}
        self.parent: Node | None = None
        self.children: dict[int, Node] = {}  # first token -> child
        self.head_child: Node | None = None  # highest count first
        self.tail_child: Node | None = None
        self.next_sibling: Node | None = None
        self.prev_sibling: Node | None = None
        self.group: Group | None = None


@dataclass
class SuffixDraft:
    """``Draft`` of the C++: tokens, each one's parent index (-1: root), estimated probabilities,
    their sum (``score``) and the match length behind them."""

    token_ids: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: np.float32 = field(default_factory=lambda: _f32(0.0))
    match_len: int = 0


# ---------------------------------------------------------------------- sibling list, transcribed

def _remove_from_siblings(node: Node) -> None:
    group = node.group
    if group.head is node:
        if node.next_sibling is not None and node.next_sibling.count == node.count:
            group.head = node.next_sibling  # others remain in the group
            node.group = None
        else:  # the only member: the group goes with it
            if group.prev is not None:
                group.prev.next = group.next
            if group.next is not None:
                group.next.prev = group.prev
            group.prev = group.next = None
    else:
        node.group = None
    if node.next_sibling is not None:
        node.next_sibling.prev_sibling = node.prev_sibling
    else:
        node.parent.tail_child = node.prev_sibling
    if node.prev_sibling is not None:
        node.prev_sibling.next_sibling = node.next_sibling
    else:
        node.parent.head_child = node.next_sibling
    node.prev_sibling = node.next_sibling = None


def _insert_into_siblings_before(node: Node, other: Node) -> None:
    if other.prev_sibling is not None:
        other.prev_sibling.next_sibling = node
    else:
        node.parent.head_child = node
    node.next_sibling = other
    node.prev_sibling = other.prev_sibling
    other.prev_sibling = node
    prev_sibling = node.prev_sibling
    if prev_sibling is not None and node.count == prev_sibling.count:
        node.group = prev_sibling.group
    elif node.count == other.count:
        node.group = other.group
        node.group.head = node
    else:
        group = node.group
        if group is None:
            group = node.group = Group(node)
        if prev_sibling is not None:
            group.prev = prev_sibling.group
            group.prev.next = group
        group.next = other.group
        group.next.prev = group


def _insert_into_siblings_after(node: Node, other: Node) -> None:
    if other.next_sibling is not None:
        other.next_sibling.prev_sibling = node
    else:
        node.parent.tail_child = node
    node.prev_sibling = other
    node.next_sibling = other.next_sibling
    other.next_sibling = node
    next_sibling = node.next_sibling
    if next_sibling is not None and node.count == next_sibling.count:
        node.group = next_sibling.group
        if node.group.head is next_sibling:
            node.group.head = node
    elif node.count == other.count:
        node.group = other.group
    else:
        group = node.group
        if group is None:
            group = node.group = Group(node)
        if next_sibling is not None:
            group.next = next_sibling.group
            group.next.prev = group
        group.prev = other.group
        group.prev.next = group


def _replace_in_siblings(old: Node, new: Node) -> None:
    if old.next_sibling is not None:
        old.next_sibling.prev_sibling = new
    else:
        old.parent.tail_child = new
    if old.prev_sibling is not None:
        old.prev_sibling.next_sibling = new
    else:
        old.parent.head_child = new
    new.prev_sibling = old.prev_sibling
    new.next_sibling = old.next_sibling
    old.prev_sibling = old.next_sibling = None
    if old.group.head is old:
        old.group.head = new
    new.group = old.group
    old.group = None


def _increment_count(node: Node) -> None:
    """Count + 1, moving the node ahead of the siblings it now outnumbers."""
    if node.parent is None:
        node.count += 1
        return
    prev = node.prev_sibling
    if prev is None or prev.count > node.count + 1:
        if node.next_sibling is None or node.next_sibling.count < node.count:
            node.count += 1
        else:  # split off from its group into a new one
            orig = node.group
            orig.head = node.next_sibling
            new = Group(node)
            new.next = orig
            if orig.prev is not None:
                new.prev = orig.prev
                new.prev.next = new
            orig.prev = new
            node.group = new
            node.count += 1
    else:
        other = prev.group.head
        _remove_from_siblings(node)
        node.count += 1
        _insert_into_siblings_before(node, other)


def _decrement_count(node: Node) -> None:
    """Count - 1, moving the node behind the siblings that now outnumber it."""
    if node.parent is None:
        node.count -= 1
        return
    nxt = node.next_sibling
    if nxt is None or nxt.count < node.count - 1:
        if node.prev_sibling is None or node.prev_sibling.count > node.count:
            node.count -= 1
        else:  # split off from its group into a new one
            orig = node.group
            new = Group(node)
            new.prev = orig
            if orig.next is not None:
                new.next = orig.next
                new.next.prev = new
            orig.next = new
            node.group = new
            node.count -= 1
    elif nxt.count == node.count - 1:
        nxt.group.head = node  # joins the next group as its head
        if node.group.head is node:  # its own group (of one) goes
            group = node.group
            if group.prev is not None:
                group.prev.next = group.next
            group.next.prev = group.prev
        node.group = nxt.group
        node.count -= 1
    else:
        other_group = node.group.next
        _remove_from_siblings(node)
        node.count -= 1
        if other_group is None:
            _insert_into_siblings_after(node, node.parent.tail_child)
        else:
            _insert_into_siblings_before(node, other_group.head)


# ---------------------------------------------------------------------- the tree

class SuffixTree:
    """ArcticInference's ``SuffixTree(max_depth)``: ``extend`` / ``remove`` sequences, ``speculate``."""

    def __init__(self, max_depth: int):
        self._max_depth = max_depth
        self._root = Node()
        self._seqs: dict[int, list[int]] = {}
        self._active: dict[int, deque[Node]] = {}  # per sequence: nodes where its last suffixes end

    def num_seqs(self) -> int:
        return len(self._seqs)

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.append(seq_id, int(token))

    def append(self, seq_id: int, token: int) -> None:
        """Append ``token`` to sequence ``seq_id``: every active suffix grows by it (``SuffixTree::append``)."""
        root = self._root
        if seq_id not in self._seqs:
            self._seqs[seq_id] = []
            self._active[seq_id] = deque()
        seq = self._seqs[seq_id]
        active = self._active[seq_id]

        active.append(root)  # the new, empty suffix
        root.endpoints[seq_id] = len(seq)
        root.count += 1
        if len(active) > self._max_depth:
            active.popleft()
        seq.append(token)
        seq_len = len(seq)

        for i in range(len(active)):  # C++: for (Node*& active_node : active_nodes), updated in place
            node = active[i]
            child = node.children.get(token)
            if child is None:
                if node.count == 1 and node is not root:
                    # Case 1a: only this suffix ends here, so the node is a leaf: lengthen it.
                    node.length += 1
                    node.endpoints[seq_id] += 1
                else:
                    # Case 1b: extend the suffix into a new child.
                    new_child = Node(1, token, 1, seq_id, seq_len - 1)
                    new_child.parent = node
                    new_child.endpoints[seq_id] = seq_len
                    node.children[token] = new_child
                    del node.endpoints[seq_id]
                    if len(node.children) == 1:
                        node.head_child = node.tail_child = new_child
                        new_child.group = Group(new_child)
                    else:
                        _insert_into_siblings_after(new_child, node.tail_child)
                    active[i] = new_child
            elif node.count == child.count + 1 and node is not root:
                # Case 2: every other suffix through this node goes on into that child.
                if child.length == 1:
                    # Case 2a: the child is one token: fuse the node into it.
                    child.count += 1
                    child.token = node.token
                    child.length = node.length + 1
                    child.ref_seq = seq_id
                    child.ref_idx = seq_len - child.length
                    child.endpoints[seq_id] = seq_len
                    child.parent = node.parent
                    _replace_in_siblings(node, child)
                    del node.children[token]
                    node.parent.children[child.token] = child
                    active[i] = child
                else:
                    # Case 2b: lengthen the node by one token taken from the front of the child.
                    node.length += 1
                    node.endpoints[seq_id] += 1
                    node.ref_seq = seq_id
                    node.ref_idx = seq_len - node.length
                    child.length -= 1
                    child.ref_idx += 1
                    child.token = self._seqs[child.ref_seq][child.ref_idx]
                    if child.token != token:
                        del node.children[token]
                        node.children[child.token] = child
            else:
                # Case 3: move into the child.
                if child.length == 1:
                    # Case 3a
                    del node.endpoints[seq_id]
                    child.endpoints[seq_id] = seq_len
                    _increment_count(child)
                    active[i] = child
                else:
                    # Case 3b: split the child after its first token.
                    new_node = Node(child.count, token, 1, seq_id, seq_len - 1)
                    new_node.parent = node
                    _replace_in_siblings(child, new_node)
                    node.children[token] = new_node
                    child.length -= 1
                    child.ref_idx += 1
                    child.token = self._seqs[child.ref_seq][child.ref_idx]
                    new_node.children[child.token] = child
                    child.parent = new_node
                    del node.endpoints[seq_id]
                    new_node.endpoints[seq_id] = seq_len
                    new_node.head_child = new_node.tail_child = child
                    child.group = Group(child)
                    _increment_count(new_node)
                    active[i] = new_node

    def remove(self, seq_id: int) -> None:
        """Remove sequence ``seq_id`` and every suffix it contributed (``SuffixTree::remove``)."""
        seq = self._seqs[seq_id]
        root = self._root
        for start in range(len(seq)):
            node = root
            node.count -= 1
            idx = start
            path: list[Node] = []
            while idx < len(seq):
                token = seq[idx]
                child = node.children.get(token)
                if child is None:
                    break
                if child.count > 1:
                    _decrement_count(child)
                else:  # remove the child with its whole subtree
                    _remove_from_siblings(child)
                    del node.children[token]
                    break
                child.endpoints.pop(seq_id, None)
                idx += child.length
                node = child
                path.append(node)
            # the last node visited may merge with its only child
            if node is not root and len(node.children) == 1:
                only = next(iter(node.children.values()))
                if node.count == only.count:
                    only.token = node.token
                    only.length += node.length
                    only.ref_idx -= node.length
                    only.parent = node.parent
                    _replace_in_siblings(node, only)
                    path[-1] = node = only
                    node.parent.children[node.token] = node
            # refs on the path may point into the removed sequence: re-point them via any leaf below
            leaf, distance = node, 0
            while leaf.children:
                leaf = next(iter(leaf.children.values()))
                distance += leaf.length
            if not leaf.endpoints or seq_id in leaf.endpoints:
                continue  # visited again later in this removal
            ref_seq, end = next(iter(leaf.endpoints.items()))
            ref_idx = end - distance
            while path:
                n = path.pop()
                ref_idx -= n.length
                if n.ref_seq == seq_id:
                    n.ref_seq = ref_seq
                    n.ref_idx = ref_idx
        del self._seqs[seq_id]
        del self._active[seq_id]

    # ------------------------------------------------------------------ speculation
    def _match_context(self, context: Sequence[int]) -> tuple[Node | None, int]:
        """The node and offset inside it where ``context`` ends, walking from the root."""
        node, idx, ref = self._root, 0, None
        for token in context:
            if idx >= node.length:
                node = node.children.get(token)
                if node is None:
                    return None, -1
                ref, base = self._seqs[node.ref_seq], node.ref_idx
                idx = 0
            if ref[base + idx] != token:
                return None, -1
            idx += 1
        return node, idx

    def speculate(self, context: Sequence[int], max_spec_tokens: int, max_spec_factor: float,
                  max_spec_offset: float, min_token_prob: float, use_tree_spec: bool) -> SuffixDraft:
        """The best-scoring draft over match lengths 1 .. len(context) - 1 (``SuffixTree::speculate``)."""
        best = SuffixDraft()
        factor, offset = _f32(max_spec_factor), _f32(max_spec_offset)
        min_prob = _f32(min_token_prob)
        for match_len in range(1, len(context)):
            node, idx = self._match_context(context[len(context) - match_len :])
            if node is None:
                break
            # float arithmetic as in the C++: int * float + float, then + 1e-6 in double
            max_tokens = min(max_spec_tokens, int(float(_f32(match_len) * factor + offset) + 1e-6))
            max_tokens = max(max_tokens, 0)
            if use_tree_spec:
                draft = self._speculate_tree(node, idx, max_tokens, min_prob)
            else:
                draft = self._speculate_path(node, idx, max_tokens, min_prob)
            if draft.score >= best.score:
                best = draft
                best.match_len = match_len
        return best

    def _speculate_path(self, node: Node, idx: int, max_spec_tokens: int, min_token_prob: np.float32) -> SuffixDraft:
        """Follow the most frequent child while the estimated probability stays >= ``min_token_prob``."""
        ret = SuffixDraft()
        prob = _f32(1.0)
        ref, base = self._seqs[node.ref_seq], node.ref_idx
        while len(ret.token_ids) < max_spec_tokens and prob >= min_token_prob:
            if idx < node.length:
                ret.parents.append(len(ret.token_ids) - 1)
                ret.token_ids.append(ref[base + idx])
                ret.probs.append(float(prob))
                ret.score = _f32(ret.score + prob)
                idx += 1
            else:
                child = node.head_child
                if child is None:
                    break
                prob = _f32(prob * (_f32(child.count) / _f32(node.count)))
                node = child
                ref, base = self._seqs[node.ref_seq], node.ref_idx
                idx = 0
        return ret

    def _speculate_tree(self, node: Node, idx: int, max_spec_tokens: int, min_token_prob: np.float32) -> SuffixDraft:
        """Best-first expansion by estimated probability (a ``std::priority_queue``, ties as in C++)."""
        ret = SuffixDraft()
        queue: StdPriorityQueue[tuple] = StdPriorityQueue(key=lambda item: item[0])
        queue.push((_f32(1.0), node, idx, -1))  # (prob, node, idx, parent)
        while len(ret.token_ids) < max_spec_tokens and len(queue):
            prob, n, i, parent = queue.pop()
            if i < n.length:
                ret.token_ids.append(self._seqs[n.ref_seq][n.ref_idx + i])
                ret.parents.append(parent)
                ret.probs.append(float(prob))
                ret.score = _f32(ret.score + prob)
                queue.push((prob, n, i + 1, len(ret.token_ids) - 1))
            else:
                child = n.head_child
                while child is not None:
                    # it.prob * child->count / static_cast<float>(it.node->count), left to right
                    child_prob = _f32(_f32(prob * _f32(child.count)) / _f32(n.count))
                    if child_prob < min_token_prob:
                        break
                    queue.push((child_prob, child, 0, parent))
                    child = child.next_sibling
        return ret

    # ------------------------------------------------------------------ for tests
    def check_integrity(self) -> str:
        """Empty when every node's count equals the number of (truncated) suffixes through it and
        every sibling list is ordered by decreasing count; else what is wrong."""
        visits: dict[int, int] = {}
        for seq in self._seqs.values():
            for start in range(len(seq)):
                node, idx = self._root, start
                visits[id(node)] = visits.get(id(node), 0) + 1
                while idx < len(seq) and idx - start < self._max_depth:
                    node = node.children.get(seq[idx])
                    if node is None:
                        return f"suffix at {start} is missing"
                    visits[id(node)] = visits.get(id(node), 0) + 1
                    idx += node.length
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.count != visits.get(id(node), 0):
                return f"count {node.count} != {visits.get(id(node), 0)} suffixes"
            child, counts = node.head_child, []
            while child is not None:
                counts.append(child.count)
                child = child.next_sibling
            if sorted(counts, reverse=True) != counts or len(counts) != len(node.children):
                return f"siblings out of order: {counts}"
            stack.extend(node.children.values())
        return ""
