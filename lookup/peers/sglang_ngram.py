"""``peer:sglang-ngram``: SGLang's ``NGRAM`` speculative algorithm (its n-gram trie), ported.

Follows sgl-project/sglang ``python/sglang/srt/speculative/cpp_ngram/``: ``trie_cache.cpp``
(commit 0657507f725139b33b7a471ef31b7aeaa83ce019; the trie of the earlier ``ngram.cpp``, moved
into its own class), ``trie_cache.h`` (4ef715730f599fe7066e8e3affe47cd5d43ca0b1), ``result.cpp``
(0657507f), and ``ngram_worker.py``, which drives it, with ``ServerArgs``' defaults
(``speculative_ngram_*``: windows 1..12, BFS breadth 1..10, match type ``BFS``, branch length
18, capacity 10M nodes; ``speculative_num_draft_tokens`` defaults to the max window, 12, which
counts the root: 11 draft nodes).

How it drafts, per step of one request:

* after each verify step the worker inserts the last ``branch_length`` committed tokens into a
  trie: every suffix of that window (longer than ``min_match_window_size``), counting each
  node's frequency and keeping each node's children in most-recently-used order. The prompt is
  not inserted (a known gap the worker's own comment flags: only the window at its end gets in, with the first step);
* to draft, the last ``max_match_window_size`` tokens are matched in the trie at every length
  from the longest down to ``min_match_window_size``; from each match, a breadth-first walk
  takes the most recently used children (more of them for shorter matches: breadth from
  ``max_bfs_breadth`` down to ``min_bfs_breadth``) into one draft *tree* of up to
  ``draft_token_num - 1`` nodes. ``match_type="PROB"`` expands the most frequent paths instead.

Node order in the tree follows ``std::unordered_map`` (reproduced by
:class:`lookup.peers.std_int_map.StdIntMap`), and PROB's heap ties follow
``std::priority_queue`` (:class:`lookup.peers.std_heap.StdPriorityQueue`), so drafts equal the
original's node for node; ``tests/lookup/peers/test_sglang_ngram.py`` compiles the original and
compares. Because the trie learns once per step, what it holds depends on how the committed
tokens were split into steps (``reset(a + b)`` is not ``reset(a); extend(b)``): the contract
suite exempts this peer from that one rule.

Cross-request history: SGLang's trie is one per server, shared by all requests. Default here
(``history=False``): a fresh trie per request (``reset``). ``history=True`` keeps it across
``reset``, as a server does across requests. Left out: the zero padding of drafts to a fixed
size (padding nodes are never accepted) and batch-size dependent draft sizes (``batch_*``).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Sequence

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.params import require_bool
from lookup.peers.std_heap import StdPriorityQueue
from lookup.peers.std_int_map import StdIntMap
from lookup.registry import register

MATCH_TYPES = ("BFS", "PROB")


class TrieNode:
    """``TrieNode``: a token, its frequency, and its children in recency order (most recent last)."""

    __slots__ = ("token", "parent", "freq", "children")

    def __init__(self, token: int = 0, parent: TrieNode | None = None):
        self.token = token
        self.parent = parent
        self.freq = 0
        # token -> child, least recently used first: C++'s `child` map and `lru` list in one
        self.children: OrderedDict[int, TrieNode] = OrderedDict()

    def by_recency(self):
        """Children, most recently used first (C++ ``lru``)."""
        return reversed(self.children.values())

    def by_frequency(self) -> list[TrieNode]:
        """Children by decreasing frequency, then increasing token (C++ ``sorted_children``)."""
        return sorted(self.children.values(), key=lambda n: (-n.freq, n.token))


class Trie:
    """SGLang's ``TrieCache``: ``insert`` windows, ``build_recency`` / ``build_frequency`` drafts.

    Args:
        capacity: most nodes (root included); the least recently used leaves make room.
        branch_length: longest suffix inserted.
        min_match_window_size: suffixes must be longer than this to be inserted.
    """

    def __init__(self, capacity: int, branch_length: int, min_match_window_size: int):
        self.branch_length = branch_length
        self.min_window = min_match_window_size
        self.capacity = capacity
        self.root = TrieNode()
        self.free = capacity - 1  # free_node_count_ after the root is taken
        # global_lru_: every node but the root, least recently used first
        self.lru: OrderedDict[TrieNode, None] = OrderedDict()

    def insert(self, tokens: Sequence[int]) -> None:
        """``TrieCache::insert``: every suffix of ``tokens`` (up to ``branch_length`` long)."""
        size = len(tokens)
        i = 0
        while i + self.min_window < size:
            end = i + min(size - i, self.branch_length)
            if end - i > self.free:
                self.squeeze(end - i - self.free)
            cursor = self.root
            path = []
            for token in tokens[i:end]:
                node = cursor.children.get(token)
                if node is None:
                    node = TrieNode(token, cursor)
                    self.free -= 1
                    cursor.children[token] = node  # lru.emplace_front: the most recent
                    self.lru[node] = None
                    self.lru.move_to_end(node, last=False)  # global_lru_.emplace_back: the least recent
                    node.freq = 1
                else:
                    node.freq += 1
                    cursor.children.move_to_end(token)  # lru.splice to the front
                cursor = node
                path.append(node)
            for node in reversed(path):  # splice to the global front, deepest first
                self.lru.move_to_end(node)
            i += 1

    def squeeze(self, count: int) -> None:
        """``TrieCache::squeeze``: release the ``count`` least recently used nodes (leaves)."""
        if self.capacity < self.free + count:  # node_pool_.size() >= free_node_count_ + count
            raise RuntimeError(f"Insufficient node size to release required nodes: {count}")
        for _ in range(count):
            node, _ = self.lru.popitem(last=False)
            if node.children:
                raise RuntimeError("The node to be released still has child nodes and cannot be released.")
            del node.parent.children[node.token]
            self.free += 1

    def match(self, context: Sequence[int], min_window: int, max_window: int) -> list[tuple[TrieNode, int]]:
        """``TrieCache::match``: the trie node of each suffix of ``context`` that is in the trie,
        with its length, longest first (lengths ``max_window`` down to ``min_window``)."""
        out = []
        for size in range(min(len(context), max_window), min_window - 1, -1):
            cursor = self.root
            for token in context[len(context) - size :]:
                cursor = cursor.children.get(token)
                if cursor is None:
                    break
            if cursor is not None:
                out.append((cursor, size))
        return out

    def build_recency(self, context: Sequence[int], draft_token_num: int, min_window: int, max_window: int,
                      min_bfs_breadth: int, max_bfs_breadth: int) -> list[StdIntMap]:
        """``TrieCache::buildRecency``: the draft tree (``tree[i]``: token -> child index, 0 = root)."""
        anchors = self.match(context, min_window, max_window)
        scale = (max_bfs_breadth - min_bfs_breadth) / (max_window - min_window + 1)
        tree = [StdIntMap() for _ in range(draft_token_num + 1)]
        cursor = 1
        for node, depth in anchors:
            queue = deque([(0, (max_window - depth) * scale + min_bfs_breadth, node)])
            while queue and cursor <= draft_token_num:
                parent, cur_breadth, trie_node = queue.popleft()
                breadth = max(1, int(cur_breadth))  # int32_t(): truncation toward zero
                for i, child in enumerate(trie_node.by_recency()):
                    if i >= breadth or cursor > draft_token_num:
                        break
                    pos = tree[parent].get(child.token)
                    if pos is None:
                        pos = cursor
                        tree[parent].set(child.token, cursor)
                        cursor += 1
                    queue.append((pos, cur_breadth - scale, child))
        return tree

    def build_frequency(self, context: Sequence[int], draft_token_num: int, min_window: int, max_window: int,
                        max_bfs_breadth: int) -> list[StdIntMap]:
        """``TrieCache::buildFrequency``: best-first by estimated probability, ``max_bfs_breadth`` children a node."""
        anchors = self.match(context, min_window, max_window)
        heap: StdPriorityQueue[tuple] = StdPriorityQueue(key=lambda item: item[2])  # (parent, node, prob)
        tree = [StdIntMap() for _ in range(draft_token_num + 1)]
        cursor = 1

        def add_to_heap(parent: int, trie_node: TrieNode, prob: float) -> None:
            top = trie_node.by_frequency()[:max_bfs_breadth]
            total = float(sum(child.freq for child in top)) or 1.0
            for child in top:
                heap.push((parent, child, child.freq / total * prob))

        for node, _ in anchors:
            add_to_heap(0, node, 1.0)
            while len(heap) and cursor <= draft_token_num:
                parent, trie_node, prob = heap.pop()
                pos = tree[parent].get(trie_node.token)
                if pos is None:
                    pos = cursor
                    cursor += 1
                    tree[parent].set(trie_node.token, pos)
                add_to_heap(pos, trie_node, prob)
        return tree


def tree_to_draft(tree: list[StdIntMap]) -> Draft:
    """``fillResult`` without its root and zero padding: nodes breadth first, children in map order."""
    tokens: list[int] = []
    parents: list[int] = []
    queue = deque((token, child, -1) for token, child in tree[0].items())
    while queue:
        token, index, parent = queue.popleft()
        tokens.append(token)
        parents.append(parent)
        me = len(tokens) - 1
        queue.extend((t, child, me) for t, child in tree[index].items())
    return Draft(tokens, parents=parents) if tokens else EMPTY_DRAFT


@register("peer:sglang-ngram")
class SglangNgram(Drafter):
    """SGLang's n-gram drafter: a tree from a trie of recent windows of the output.

    Args:
        draft_token_num: nodes verified per step, the root included (``speculative_num_draft_tokens``;
            SGLang's default is ``max_match_window_size``, 12): at most ``draft_token_num - 1`` draft nodes.
        min_match_window_size, max_match_window_size: suffix lengths matched (1, 12).
        min_bfs_breadth, max_bfs_breadth: children taken per node, longest match narrowest (1, 10).
        match_type: ``"BFS"`` (most recently used children) or ``"PROB"`` (most frequent paths).
        branch_length: window inserted after each step, and the trie's depth (18).
        capacity: most trie nodes (10,000,000).
        history: keep the trie across ``reset`` (one trie per server, as SGLang). Default off.
    """

    def __init__(self, draft_token_num: int | None = None, min_match_window_size: int = 1,
                 max_match_window_size: int = 12, min_bfs_breadth: int = 1, max_bfs_breadth: int = 10,
                 match_type: str = "BFS", branch_length: int = 18, capacity: int = 10_000_000,
                 history: bool = False):
        super().__init__()
        draft_token_num = max_match_window_size if draft_token_num is None else draft_token_num
        checks = [
            (branch_length > 1, "branch_length must be greater than 1"),
            (min_match_window_size > 0, "min_match_window_size must be greater than 0"),
            (min_match_window_size <= max_match_window_size, "min_match_window_size must be <= max_match_window_size"),
            (max_match_window_size < branch_length, "max_match_window_size must be less than branch_length"),
            (min_bfs_breadth > 0, "min_bfs_breadth must be greater than 0"),
            (min_bfs_breadth <= max_bfs_breadth, "min_bfs_breadth must be <= max_bfs_breadth"),
            (draft_token_num > 0, "draft_token_num must be greater than 0"),
            (match_type in MATCH_TYPES, f"match_type must be one of {MATCH_TYPES}, got {match_type!r}"),
            (capacity > branch_length, "capacity must exceed branch_length"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self.draft_token_num = draft_token_num
        self.min_match_window_size = min_match_window_size
        self.max_match_window_size = max_match_window_size
        self.min_bfs_breadth = min_bfs_breadth
        self.max_bfs_breadth = max_bfs_breadth
        self.match_type = match_type
        self.branch_length = branch_length
        self.capacity = capacity
        self.history = require_bool("history", history)
        self.trie = self._new_trie()

    def _new_trie(self) -> Trie:
        return Trie(self.capacity, self.branch_length, self.min_match_window_size)

    def reset(self, prompt: Sequence[int]) -> None:
        self.context = [int(t) for t in prompt]  # not inserted: SGLang inserts after verify steps only
        if not self.history:
            self.trie = self._new_trie()

    def extend(self, tokens: Sequence[int]) -> None:
        if len(tokens) == 0:
            return
        self.context.extend(int(t) for t in tokens)
        self.trie.insert(self.context[-self.branch_length :])  # _update_ngram_cache, once a step

    def propose(self, budget: int) -> Draft:
        nodes = min(self.draft_token_num - 1, budget)  # get_draft_token_num: the root is not a draft node
        if nodes <= 0 or not self.context:
            return EMPTY_DRAFT
        window = self.context[-self.max_match_window_size :]
        if self.match_type == "BFS":
            tree = self.trie.build_recency(window, nodes, self.min_match_window_size, self.max_match_window_size,
                                           self.min_bfs_breadth, self.max_bfs_breadth)
        else:
            tree = self.trie.build_frequency(window, nodes, self.min_match_window_size, self.max_match_window_size,
                                             self.max_bfs_breadth)
        return tree_to_draft(tree)

    def keeps_history(self) -> bool:
        return self.history

    def params(self) -> dict:
        return {"draft_token_num": self.draft_token_num, "min_match_window_size": self.min_match_window_size,
                "max_match_window_size": self.max_match_window_size, "min_bfs_breadth": self.min_bfs_breadth,
                "max_bfs_breadth": self.max_bfs_breadth, "match_type": self.match_type,
                "branch_length": self.branch_length, "capacity": self.capacity, "history": self.history}
