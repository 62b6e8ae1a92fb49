"""The suffix automaton index over a growing token sequence (:class:`SuffixAutomaton`).

An online suffix automaton (SAM) over prompt + committed tokens, built by the numba kernels
in :mod:`lookup.indexes.automaton_kernels`. After each ``extend`` the automaton knows, with no
rescan, the longest suffix of the sequence that also occurs earlier (the state
``link(last)``), its most recent earlier occurrence and its earliest one. The drafters compose
it: :mod:`lookup.drafters.suffix_automaton`, :mod:`lookup.drafters.voting`, and :mod:`lookup.indexes.history` (earlier
requests).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.indexes import automaton_kernels as K

MAX_LOAD = 0.7  # hash load factor that triggers doubling; linear probing slows down as the table fills
_STAGE = 16  # lists up to this long are copied into a standing buffer rather than converted
_warmed = False


class SuffixAutomaton:
    """Online suffix automaton over a token sequence with ids in [0, 2**18).

    Args:
        occurrences: how many earlier end positions each state remembers (its ring holds
            this many plus the current one). 1 is enough for "most recent occurrence".
        max_depth: how many suffix-link ancestors of the new state record each new
            position (bounds extend cost; see :mod:`lookup.indexes.automaton_kernels` for the
            approximation this makes for states deeper than that).
        capacity: initial number of tokens to allocate for (arrays double when full).
    """

    def __init__(self, occurrences: int = 1, max_depth: int = 16, capacity: int = 256):
        if occurrences < 1 or max_depth < 1 or capacity < 1:
            raise ValueError("occurrences, max_depth and capacity must be >= 1")
        self.occurrences = occurrences
        self.max_depth = max_depth
        self._initial_capacity = capacity
        self.meta = np.zeros(K.META_SIZE, dtype=np.int64)  # [META_SIZE] counters, see K.M_*
        self._ends = np.zeros(occurrences, dtype=np.int64)  # [occurrences] scratch for agreement()
        self._stops = np.zeros(occurrences, dtype=np.int64)  # [occurrences] the same
        self._stage = np.zeros(_STAGE, dtype=np.int64)  # [_STAGE] short extends land here
        self._allocate(capacity)
        _warm_up()

    # ------------------------------------------------------------------ arrays
    def _allocate(self, n_tokens: int) -> None:
        """Fresh empty arrays sized for ``n_tokens`` tokens.

        A SAM has at most 2n states and 3n transitions, but typical sequences need far fewer, so
        size for the typical case and let the rare sequence grow the arrays: over-allocating
        would cost more memory than it saves. A quarter of headroom lets generation after a
        prompt run for a while without a copy.
        """
        n = max(n_tokens, 1)
        capacity = n + n // 4 + 16
        self.tokens = np.zeros(capacity, dtype=np.int32)  # [capacity] the sequence
        self.states = np.zeros((capacity, self._columns()), dtype=np.int32)  # [S, RING+R]
        self._set_hash_size(_pow2_at_least(int(n / MAX_LOAD) + 2))
        self.meta[K.M_MAX_DEPTH] = self.max_depth
        K.sam_init(self.states, self.table, self.meta)
        self._n = 0  # tokens indexed; mirrors meta[M_TOKENS] as a Python int for the hot path

    def _columns(self) -> int:
        """Row width: the fixed fields plus a ring of >= occurrences + 1, padded to 32 bytes.

        Padded rows never straddle a cache line; walking suffix links touches one row per
        ancestor, so on long sequences this saves cache misses. The padding only enlarges the ring.
        """
        return -(-(K.RING + self.occurrences + 1) // 8) * 8

    def _set_hash_size(self, size: int) -> None:
        self.table = np.full((size, 2), K.EMPTY, dtype=np.int64)  # [H, 2] (key, next/target), see K
        self.meta[K.M_SHIFT] = 64 - (size.bit_length() - 1)
        self.meta[K.M_TRANS_LIMIT] = int(size * MAX_LOAD)

    def _grow_hash(self, need: int) -> None:
        size = len(self.table)
        while int(size * MAX_LOAD) < self.meta[K.M_TRANS] + need:
            size *= 2
        old = self.table
        self._set_hash_size(size)
        K.rehash(self.states, old, self.table, self.meta[K.M_SHIFT], self.meta[K.M_STATES])

    def _grow_states(self) -> None:
        n = int(self.meta[K.M_STATES])
        grown = np.zeros((2 * len(self.states), self.states.shape[1]), dtype=np.int32)
        grown[:n] = self.states[:n]
        self.states = grown

    def _reserve_tokens(self, m: int) -> None:
        n = self._n
        if n + m > len(self.tokens):
            grown = np.zeros(max(2 * len(self.tokens), n + m), dtype=np.int32)
            grown[:n] = self.tokens[:n]
            self.tokens = grown

    # ------------------------------------------------------------------ updates
    def reset(self, prompt: Sequence[int] = ()) -> None:
        """Forget everything and index ``prompt``; arrays are sized for it in one go."""
        prompt = _as_tokens(prompt)
        self._allocate(max(len(prompt), self._initial_capacity))
        self.extend(prompt)

    def extend(self, tokens: Sequence[int] | np.ndarray) -> None:
        """Append tokens: one kernel call, O(1) amortized per token, growing arrays when needed."""
        m = len(tokens)
        if m <= _STAGE and not isinstance(tokens, np.ndarray):
            # decoding commits a few tokens per step, as a list: copying them into a standing
            # buffer is cheaper than building a new array (this path runs once per step)
            new = self._stage
            i = 0
            for t in tokens:
                new[i] = t
                i += 1
        else:
            new = _as_tokens(tokens)
            m = len(new)
        if self._n + m > len(self.tokens):
            self._reserve_tokens(m)
        done = K.sam_extend(new, m, self.tokens, self.states, self.table, self.meta)
        if done != m:
            self._extend_growing(new[:m], done)
        self._n += m

    def _extend_growing(self, new: np.ndarray, done: int) -> None:
        """The rest of an extend whose kernel call stopped to let an array grow (rare)."""
        while done != len(new):
            if done == K.BAD_TOKEN:
                raise ValueError(f"token ids must be in [0, {K.VOCAB_LIMIT}), got {new.tolist()!r}")
            new = new[done:]
            if self.meta[K.M_STATES] + 2 > len(self.states):
                self._grow_states()
            if self.meta[K.M_TRANS] + self.meta[K.M_NEED] > self.meta[K.M_TRANS_LIMIT]:
                self._grow_hash(int(self.meta[K.M_NEED]))
            done = K.sam_extend(new, len(new), self.tokens, self.states, self.table, self.meta)

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._n

    @property
    def sequence(self) -> np.ndarray:
        """The indexed tokens (a view).  # [n] int32"""
        return self.tokens[: len(self)]

    def match(self) -> tuple[int, int, int, int]:
        """(state, length, most recent end, earliest end) of the longest suffix occurring earlier.

        Ends are positions of the occurrence's last token, always < ``len(self) - 1``;
        (-1, 0, -1, -1) when nothing matches.
        """
        return K.match(self.states, self.meta)

    def match_ends(self, out: np.ndarray) -> int:
        """Write the remembered earlier end positions of the longest match (:meth:`match`) into
        ``out`` ([k] int64), newest first; returns how many (at most ``len(out)`` and
        ``occurrences``; 0 when nothing matches). The first is :meth:`match`'s most recent end."""
        state = int(self.states[self.meta[K.M_LAST], K.LINK])
        # Python ints, as every caller passes them: one compiled signature of the kernel, not one per
        # integer type (a second one would compile on the first call that passes the other)
        return int(K.recent_ends(self.states, state, int(self.meta[K.M_TOKENS]) - 1, out)) if state > 0 else 0

    def agreement(self, draft: np.ndarray, support: np.ndarray, agree: np.ndarray, loop: bool = False) -> int:
        """How the remembered earlier occurrences of the longest match (:meth:`match_ends`) continue,
        against ``draft`` ([n] int64): per depth ``d``, ``support[d]`` occurrences continue with
        ``draft[:d]`` and have a token at ``d``, and ``agree[d]`` of them continue with ``draft[d]``
        (both [>= n] int64, overwritten up to n; see :func:`lookup.indexes.automaton_kernels.chain_agreement`;
        with ``loop`` a continuation that reaches the end of the sequence goes on round its loop).
        Returns how many occurrences were read (0 when nothing matches)."""
        if len(support) < len(draft) or len(agree) < len(draft):
            raise ValueError(f"support and agree need room for the {len(draft)} draft tokens")
        k = self.match_ends(self._ends)
        self._stops[:k] = self._n  # every continuation may run to the end of the sequence
        K.chain_agreement(self.tokens, self._stops, self._ends, k, draft, support, agree, loop)
        return k

    def nbytes(self) -> int:
        """Bytes held by the arrays (allocated capacity included)."""
        return self.tokens.nbytes + self.states.nbytes + self.table.nbytes + self.meta.nbytes + self._stage.nbytes

    def stats(self) -> dict:
        """Sizes worth logging: tokens, states, transitions, hash slots, bytes."""
        return {
            "tokens": len(self),
            "states": int(self.meta[K.M_STATES]),
            "transitions": int(self.meta[K.M_TRANS]),
            "hash_slots": len(self.table),
            "nbytes": self.nbytes(),
        }


def _pow2_at_least(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


def _as_tokens(tokens: Sequence[int] | np.ndarray) -> np.ndarray:
    """Contiguous 1-d int64 array, the one array type the kernels are compiled for.  # [m] int64"""
    new = np.ascontiguousarray(tokens, dtype=np.int64)
    return new if new.ndim == 1 else new.reshape(-1)


def _warm_up() -> None:
    """Compile (or load from cache) every kernel once per process, off the timed path."""
    global _warmed
    if _warmed:
        return
    _warmed = True  # first, so that the automaton built here does not recurse
    sam = SuffixAutomaton(max_depth=4, capacity=1)
    sam.extend([1, 2, 1, 2, 3, 1, 2, 3, 4, 2, 3, 1] * 3)  # forces clones, state growth and rehash
    sam.extend(np.array([5, 1], dtype=np.int64))  # the array path
    sam.match()
    K.transition(sam.table, sam.meta, 1, 2)
    K.follow(sam.states, sam.table, sam.meta, 0, 0, np.array([3, 9, 1, 2], dtype=np.int64), 4)  # lookup.indexes.history
    K.request_stops(np.array([0, 4], dtype=np.int64), 9, np.array([5], dtype=np.int64), 1, np.zeros(1, dtype=np.int64))
    sam.agreement(np.array([1, 2], dtype=np.int64), np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64))
