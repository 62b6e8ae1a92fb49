"""A binary min-heap of item ids for numba kernels, ordered by two keys: a float, then an int (ties
of both never happen where the int is unique). The best-first trees of ``recycling`` and of the
continuation trie share it.

    size = heap_push(heap, size, item, primary, secondary)   # keys of item: primary[item], secondary[item]
    item, size = heap_pop(heap, size, primary, secondary)
"""

from __future__ import annotations

import numpy as np

from lookup.kernel_cache import kernel


@kernel(inline="always")
def _before(primary: np.ndarray, secondary: np.ndarray, a: int, b: int) -> bool:
    if primary[a] != primary[b]:
        return primary[a] < primary[b]
    return secondary[a] < secondary[b]


@kernel
def heap_push(heap: np.ndarray, size: int, item: int, primary: np.ndarray, secondary: np.ndarray) -> int:
    """Add ``item`` to ``heap[:size]``; returns the new size."""
    heap[size] = item
    i = size
    while i > 0 and _before(primary, secondary, heap[i], heap[(i - 1) // 2]):
        heap[i], heap[(i - 1) // 2] = heap[(i - 1) // 2], heap[i]
        i = (i - 1) // 2
    return size + 1


@kernel
def heap_pop(heap: np.ndarray, size: int, primary: np.ndarray, secondary: np.ndarray) -> tuple[int, int]:
    """Remove the least item of ``heap[:size]`` (size > 0); returns it and the new size."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left, right, best = 2 * i + 1, 2 * i + 2, i
        if left < size and _before(primary, secondary, heap[left], heap[best]):
            best = left
        if right < size and _before(primary, secondary, heap[right], heap[best]):
            best = right
        if best == i:
            return top, size
        heap[i], heap[best] = heap[best], heap[i]
        i = best
