"""Open-addressing hash tables over int64 keys (Fibonacci hashing, linear probing), as numba kernels.

One table layout serves the suffix automaton's transitions and :class:`IdMap`, a map from token id
to a small number (a slot, a row) for state kept per token seen. An array indexed by token id would
be as long as the vocabulary (262,144 entries for Gemma 3), allocated for every sequence and grown
(copied) each time a larger id turns up, page by page in a fresh process; a table sized by the ids
actually seen is small (docs/notes/2026-12-07-sandbox-charge.md has what the arrays cost).

Layout: ``table`` int64 [H, 2], H a power of two; ``[i, 0]`` the key (:data:`EMPTY` = free),
``[i, 1]`` the value. Keys are >= 0.
"""

from __future__ import annotations

import functools

import numpy as np

from lookup.kernel_cache import kernel

EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * golden ratio
MAX_LOAD = 0.5  # entries per slot past which an IdMap doubles (probes stay short)


@kernel(inline="always")
def home(key: int, shift: int) -> int:
    """Home slot of ``key``: the top ``64 - shift`` bits of key * 2^64/phi."""
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@kernel
def hash_find(table: np.ndarray, key: int, shift: int) -> int:
    """Slot of ``key`` in ``table`` [H, 2], or ``-1 - slot`` of the empty slot where it would go."""
    mask = np.int64(len(table) - 1)
    i = home(key, shift)
    while True:
        k = table[i, 0]
        if k == key:
            return i
        if k == EMPTY:
            return -1 - i
        i = (i + 1) & mask


@kernel(inline="always")
def shift_of(table: np.ndarray) -> int:
    """The shift that hashes into ``table`` (64 - log2 H)."""
    shift, n = 64, len(table)
    while n > 1:
        n >>= 1
        shift -= 1
    return shift


@kernel(inline="always")
def id_get(table: np.ndarray, key: int, missing: int) -> int:
    """The value of ``key`` in an :class:`IdMap`'s ``table``, ``missing`` where it has none (or ``key`` < 0)."""
    if key < 0:
        return missing
    i = hash_find(table, key, shift_of(table))
    return table[i, 1] if i >= 0 else missing


@kernel(inline="always")
def id_put(table: np.ndarray, key: int, value: int) -> bool:
    """Give ``key`` (>= 0) the value ``value``; True when it is a new key. The caller keeps room
    (:meth:`IdMap.room`): a full table would probe for ever."""
    i = hash_find(table, key, shift_of(table))
    if i >= 0:
        table[i, 1] = value
        return False
    table[-1 - i, 0] = key
    table[-1 - i, 1] = value
    return True


@kernel
def _moved(old: np.ndarray, table: np.ndarray) -> None:  # pragma: no cover - numba
    for j in range(len(old)):
        if old[j, 0] != EMPTY:
            id_put(table, old[j, 0], old[j, 1])


def _empty(size: int) -> np.ndarray:
    return np.full((size, 2), EMPTY, dtype=np.int64)


class IdMap:
    """Token id -> int, for the ids seen so far, in a table that grows with them.

    Kernels read and write :attr:`table` with :func:`id_get` and :func:`id_put`; before a kernel
    adds up to ``n`` keys, :meth:`reserve` (or :meth:`room`, the kernel's own check) makes room.
    :attr:`count` is the caller's to keep when a kernel adds keys.
    """

    def __init__(self, size: int = 256) -> None:
        if size < 2 or size & (size - 1):
            raise ValueError(f"size must be a power of two >= 2, got {size}")
        self._size = size
        self.clear()

    def clear(self) -> None:
        """Forget every key."""
        self.table = _empty(self._size)  # [H, 2] (key, value)
        self.count = 0

    def room(self, more: int) -> int:
        """How many keys the table takes before it must grow (load :data:`MAX_LOAD`)."""
        return int(len(self.table) * MAX_LOAD) - self.count - more

    def reserve(self, more: int) -> None:
        """Grow (double, rehashing) until ``more`` new keys fit."""
        size = len(self.table)
        while int(size * MAX_LOAD) < self.count + more:
            size *= 2
        if size != len(self.table):
            old, self.table = self.table, _empty(size)
            _moved(old, self.table)

    def get(self, key: int, missing: int = -1) -> int:
        """The value of ``key``, ``missing`` where it has none."""
        return int(id_get(self.table, int(key), missing))

    def put(self, key: int, value: int) -> None:
        """Give ``key`` (>= 0) the value ``value``."""
        if key < 0:
            raise ValueError(f"keys are >= 0, got {key}")
        self.reserve(1)
        self.count += bool(id_put(self.table, int(key), int(value)))


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels once per process, off the timed path."""
    m = IdMap(4)
    for key in range(5):  # grows once
        m.put(key, key)
    m.get(3)
