"""libstdc++'s ``std::priority_queue``, reproduced in Python, ties included.

SuffixDecoding's tree speculation and SGLang's frequency ("PROB") drafting pop items by
probability from a ``std::priority_queue``; equal probabilities are frequent there (a node's
next token inherits its probability, siblings share counts), and which equal item comes first
is decided by the heap algorithms. :class:`StdPriorityQueue` transcribes libstdc++'s
``std::push_heap`` / ``std::pop_heap`` (``bits/stl_heap.h``: ``__push_heap``,
``__adjust_heap``), so a port pops exactly what the original pops. Python's ``heapq`` would
break ties differently.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class StdPriorityQueue(Generic[T]):
    """A max-heap on ``key(item)`` that orders ties as libstdc++'s ``std::priority_queue`` does
    (comparator ``key(a) < key(b)``)."""

    def __init__(self, key: Callable[[T], float]):
        self._key = key
        self._heap: list[T] = []

    def __len__(self) -> int:
        return len(self._heap)

    def top(self) -> T:
        return self._heap[0]

    def push(self, item: T) -> None:
        """``push_back`` then ``std::push_heap``."""
        self._heap.append(item)
        self._sift_up(len(self._heap) - 1, 0, item)

    def pop(self) -> T:
        """``std::pop_heap`` then ``pop_back``: the largest item (the first of equal ones, as libstdc++ picks)."""
        heap = self._heap
        first = heap[0]
        if len(heap) > 1:
            value = heap[-1]
            heap[-1] = first
            self._adjust(0, len(heap) - 1, value)
        heap.pop()
        return first

    def _sift_up(self, hole: int, top: int, value: T) -> None:
        """``__push_heap``."""
        heap, key = self._heap, self._key
        parent = (hole - 1) // 2
        while hole > top and key(heap[parent]) < key(value):
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = value

    def _adjust(self, hole: int, length: int, value: T) -> None:
        """``__adjust_heap`` over ``heap[:length]``."""
        heap, key = self._heap, self._key
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if key(heap[child]) < key(heap[child - 1]):
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        self._sift_up(hole, top, value)
