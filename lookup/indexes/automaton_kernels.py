"""Numba kernels of the online suffix automaton (SAM) shared by the lookup drafters.

Module-level pure functions over numpy arrays (vLLM n-gram proposer style): the owning
class (:class:`lookup.indexes.automaton.SuffixAutomaton`) allocates and grows the arrays,
the kernels only read and write them, and the tests call the kernels directly.

Layout
------
``states``  int32 [capacity, RING + R]: one row per SAM state, columns
    ``LEN``    length of the longest string of the state
    ``LINK``   suffix link (-1 for the root, state 0)
    ``FIRST``  end position of the state's earliest occurrence (firstpos)
    ``HEAD``   first hash slot of the state's transition list (-1 = none)
    ``COUNT``  end positions recorded in the ring so far (see below)
    ``RING..`` ring of the ``R`` most recent recorded end positions, ``ring[COUNT % R]`` is next
``table``   int64 [H, 2]: open-addressing hash of transitions (linear probing), per slot
    ``[0]`` key = state << 18 | token (-1 = empty) and
    ``[1]`` link = (next slot of the same source state + 1) << 32 | target state;
    key and link share a cache line, which matters once the table outgrows the caches
``tokens``  int32 [capacity]: the sequence itself
``meta``    int64 [META_SIZE]: counters (``M_*`` indices)

Transitions live in one hash table for the whole automaton, so memory per state does not
grow with the vocabulary (ids < 2**18 = 262,144). Each source state also threads its own
transitions into a singly linked list through the slots (``HEAD`` -> next -> ...): cloning a
state must copy all its transitions, and a hash keyed by (state, token) cannot otherwise
enumerate them.

Most recent occurrences
-----------------------
A state's end positions (endpos) gain position ``t`` exactly when the state lies on the
suffix-link chain of the new ``last`` state. Walking the whole chain is O(match length)
per token, so :func:`sam_extend` records ``t`` only in ``last`` and its first
``max_depth`` ancestors. The match state ``link(last)`` is always at depth 1, so it always
records the current position; its older ring entries are exact unless, at the time of that
older occurrence, the state sat deeper than ``max_depth`` in the chain, which needs more
than ``max_depth`` nested suffixes with distinct occurrence sets ending there (long runs
such as ``aaaa...`` or many repeats of one block). Then the ring misses that occurrence and
holds older ones instead: a still valid, less recent occurrence of the same string.
``FIRST`` (earliest occurrence) is always exact.
"""

from __future__ import annotations

import numpy as np

from lookup.kernel_cache import kernel
from lookup.indexes.id_map import EMPTY, hash_find
from lookup.indexes.loop import looped_token

# columns of `states`
LEN, LINK, FIRST, HEAD, COUNT, RING = 0, 1, 2, 3, 4, 5
# indices of `meta`
M_TOKENS, M_STATES, M_TRANS, M_LAST, M_MAX_DEPTH, M_TRANS_LIMIT, M_SHIFT, M_NEED = range(8)
META_SIZE = 8

TOKEN_BITS = 18
VOCAB_LIMIT = 1 << TOKEN_BITS  # ids must be in [0, VOCAB_LIMIT)
TOKEN_MASK = VOCAB_LIMIT - 1
_LOW32 = (1 << 32) - 1

# sam_extend return codes besides "tokens consumed"
BAD_TOKEN = -1


@kernel(inline="always")
def slot_target(table: np.ndarray, i: int) -> int:
    """Target state of the transition in slot ``i``."""
    return table[i, 1] & _LOW32


@kernel(inline="always")
def slot_next(table: np.ndarray, i: int) -> int:
    """Next slot of the same source state (-1 = end of its list)."""
    return (table[i, 1] >> 32) - 1


@kernel(inline="always")
def _set_target(table: np.ndarray, i: int, target: int) -> None:
    table[i, 1] = (table[i, 1] & ~np.int64(_LOW32)) | target


@kernel(inline="always")
def _key(state: int, token: int) -> int:
    return (state << TOKEN_BITS) | token


@kernel
def transition(table: np.ndarray, meta: np.ndarray, state: int, token: int) -> int:
    """Target of the transition (state, token), or -1 when there is none."""
    i = hash_find(table, _key(state, token), meta[M_SHIFT])
    return slot_target(table, i) if i >= 0 else -1


@kernel(inline="always")
def _insert_new(states, table, meta, src: int, token: int, dst: int) -> None:
    """Add a transition known to be absent; the caller guarantees a free slot (load < 1)."""
    i = -1 - hash_find(table, _key(src, token), meta[M_SHIFT])
    table[i, 0] = _key(src, token)
    table[i, 1] = ((states[src, HEAD] + 1) << 32) | dst
    states[src, HEAD] = i
    meta[M_TRANS] += 1


@kernel
def out_degree(states: np.ndarray, table: np.ndarray, state: int) -> int:
    """Number of transitions leaving ``state`` (walks its list)."""
    n = 0
    i = states[state, HEAD]
    while i != -1:
        n += 1
        i = slot_next(table, i)
    return n


@kernel
def sam_init(states: np.ndarray, table: np.ndarray, meta: np.ndarray) -> None:
    """Empty automaton: only the root (state 0, empty string), empty hash."""
    table[:, 0] = EMPTY
    states[0, :] = 0
    states[0, LINK] = -1
    states[0, FIRST] = -1
    states[0, HEAD] = -1
    meta[M_TOKENS] = 0
    meta[M_STATES] = 1
    meta[M_TRANS] = 0
    meta[M_LAST] = 0
    meta[M_NEED] = 0


@kernel
def _record(states: np.ndarray, cur: int, pos: int, max_depth: int) -> None:
    """Push end position ``pos`` into the rings of ``cur`` and its first ``max_depth`` ancestors."""
    ring = states.shape[1] - RING
    u = cur
    d = 0
    while u > 0 and d <= max_depth:  # the root (empty string) ends everywhere: no ring
        c = states[u, COUNT]
        states[u, RING + c % ring] = pos
        states[u, COUNT] = c + 1
        u = states[u, LINK]
        d += 1


@kernel
def sam_extend(
    new_tokens: np.ndarray,
    m: int,
    tokens: np.ndarray,
    states: np.ndarray,
    table: np.ndarray,
    meta: np.ndarray,
) -> int:
    """Append ``new_tokens[:m]`` ([>= m] int64) to the automaton; O(1) amortized per token.

    Returns how many tokens were consumed: fewer than ``m`` when ``states`` or the hash table
    must grow first (``meta[M_NEED]`` = transitions the next token adds), or ``BAD_TOKEN``
    (nothing consumed) when an id is outside [0, 2**18). The caller guarantees
    ``len(tokens) >= meta[M_TOKENS] + m``.
    """
    for j in range(m):
        if new_tokens[j] < 0 or new_tokens[j] >= VOCAB_LIMIT:
            return BAD_TOKEN
    shift = meta[M_SHIFT]
    max_depth = meta[M_MAX_DEPTH]
    for j in range(m):
        c = new_tokens[j]
        last = meta[M_LAST]
        # Dry run first: find p (first state on the chain with a c-transition) and how many
        # transitions this token will add, so that growth happens between tokens, never inside one.
        p = last
        walked = 0
        q = -1
        while p != -1:
            i = hash_find(table, _key(p, c), shift)
            if i >= 0:
                q = slot_target(table, i)
                break
            walked += 1
            p = states[p, LINK]
        need = walked
        if q != -1 and states[p, LEN] + 1 != states[q, LEN]:
            need += out_degree(states, table, q)
        nstates = meta[M_STATES]
        if nstates + 2 > states.shape[0] or meta[M_TRANS] + need > meta[M_TRANS_LIMIT]:
            meta[M_NEED] = need
            return j

        t = meta[M_TOKENS]
        tokens[t] = c
        meta[M_TOKENS] = t + 1
        cur = nstates
        meta[M_STATES] = nstates + 1
        states[cur, LEN] = states[last, LEN] + 1
        states[cur, FIRST] = t
        states[cur, HEAD] = -1
        states[cur, COUNT] = 0
        u = last
        for _ in range(walked):
            _insert_new(states, table, meta, u, c, cur)
            u = states[u, LINK]
        if p == -1:
            states[cur, LINK] = 0
        elif states[p, LEN] + 1 == states[q, LEN]:
            states[cur, LINK] = q
        else:
            clone = meta[M_STATES]
            meta[M_STATES] = clone + 1
            # the clone has q's occurrences (plus t, recorded below) and q's transitions
            states[clone, :] = states[q, :]
            states[clone, LEN] = states[p, LEN] + 1
            states[clone, HEAD] = -1
            i = states[q, HEAD]
            while i != -1:
                _insert_new(states, table, meta, clone, table[i, 0] & TOKEN_MASK, slot_target(table, i))
                i = slot_next(table, i)
            while p != -1:
                i = hash_find(table, _key(p, c), shift)
                if i < 0 or slot_target(table, i) != q:
                    break
                _set_target(table, i, clone)
                p = states[p, LINK]
            states[q, LINK] = clone
            states[cur, LINK] = clone
        meta[M_LAST] = cur
        _record(states, cur, t, max_depth)
    meta[M_NEED] = 0
    return m


@kernel
def rehash(states: np.ndarray, old: np.ndarray, table: np.ndarray, shift: int, nstates: int) -> None:
    """Move every transition of ``old`` into the larger ``table`` (hashed with ``shift``); rebuilds the lists."""
    table[:, 0] = EMPTY
    for s in range(nstates):
        states[s, HEAD] = -1
    for j in range(len(old)):
        k = old[j, 0]
        if k == EMPTY:
            continue
        src = k >> TOKEN_BITS
        i = -1 - hash_find(table, k, shift)
        table[i, 0] = k
        table[i, 1] = ((states[src, HEAD] + 1) << 32) | slot_target(old, j)
        states[src, HEAD] = i


@kernel
def recent_ends(states: np.ndarray, state: int, before: int, out: np.ndarray) -> int:
    """Write the recorded end positions of ``state`` that are < ``before`` into ``out``, newest first.

    Returns how many were written (at most ``len(out)``). Positions >= ``before`` (the current
    one) are skipped, so ``before = n_tokens - 1`` gives earlier occurrences only.
    """
    if state <= 0:
        return 0
    ring = states.shape[1] - RING
    count = states[state, COUNT]
    n = 0
    k = count - 1
    while k >= 0 and k >= count - ring and n < len(out):
        e = states[state, RING + k % ring]
        if e < before:
            out[n] = e
            n += 1
        k -= 1
    return n


@kernel
def follow(states: np.ndarray, table: np.ndarray, meta: np.ndarray, state: int, length: int,
           tokens: np.ndarray, m: int) -> tuple[int, int]:
    """Matching statistics: carry the longest match of a *foreign* sequence's suffix through ``m`` more tokens.

    (``state``, ``length``) is the longest suffix of the foreign sequence so far that occurs in the
    automaton's sequence (its state, its length; (0, 0) for none). After ``tokens[:m]`` it is the longest
    suffix of the extended foreign sequence that does: on a missing transition, fall back along suffix
    links (shorter suffixes) until one extends. O(1) amortised per token.
    """
    for i in range(m):
        token = tokens[i]
        while True:
            nxt = transition(table, meta, state, token)
            if nxt >= 0:
                state = nxt
                length += 1
                break
            if state == 0:
                length = 0
                break
            state = states[state, LINK]
            length = states[state, LEN]
    return state, length


@kernel
def match(states: np.ndarray, meta: np.ndarray) -> tuple[int, int, int, int]:
    """The longest suffix that also occurs earlier: (state, length, most recent end, earliest end).

    ``state`` is link(last); ends are positions of the occurrence's last token. (-1, 0, -1, -1)
    when no suffix occurs earlier.
    """
    v = states[meta[M_LAST], LINK]
    if v <= 0:
        return -1, 0, -1, -1
    recent = np.empty(1, dtype=np.int64)
    n = recent_ends(states, v, meta[M_TOKENS] - 1, recent)
    first = states[v, FIRST]
    return v, states[v, LEN], recent[0] if n else first, first


@kernel
def chain_agreement(tokens: np.ndarray, stops: np.ndarray, ends: np.ndarray, k: int, draft: np.ndarray,
                    support: np.ndarray, agree: np.ndarray, loop: bool = False) -> None:
    """How the continuations of ``k`` earlier occurrences (end positions ``ends[:k]``) agree with a draft.

    For each depth ``d`` of ``draft`` ([n]), ``support[d]`` counts the occurrences whose continuation
    equals ``draft[:d]`` and has a token at ``d``, and ``agree[d]`` those of them whose token there is
    ``draft[d]``. Occurrence ``j``'s continuation ends before ``stops[j]`` (the sequence's length, or
    the end of the request it is in for a history of requests); with ``loop`` (a sequence's own
    occurrences, ``stops[j]`` its length), it goes on round its loop instead: past the end of the
    text it reads the draft, as if the text went on with it (:mod:`lookup.indexes.loop`).
    ``support`` and ``agree``: [>= n]; the first n are overwritten.
    """
    n = len(draft)
    support[:n] = 0
    agree[:n] = 0
    for j in range(k):
        start = ends[j] + 1
        avail = n if loop else min(n, stops[j] - 1 - ends[j])  # tokens that follow the occurrence, up to n
        same = 0
        while same < avail and looped_token(tokens, stops[j], draft, start + same) == draft[same]:
            same += 1
        for d in range(min(same + 1, avail)):
            support[d] += 1
        for d in range(same):
            agree[d] += 1


@kernel
def request_stops(starts: np.ndarray, total: int, ends: np.ndarray, k: int, stops: np.ndarray) -> None:
    """For a sequence of requests one after the other (request ``i`` begins at ``starts[i]``, ascending;
    ``total`` tokens in all), write into ``stops[j]`` where the request holding position ``ends[j]``
    stops (the next request's start, or ``total``), for ``j < k``: binary search per end."""
    for j in range(k):
        lo, hi = 0, len(starts)  # the first start > ends[j] lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid] <= ends[j]:
                lo = mid + 1
            else:
                hi = mid
        stops[j] = starts[lo] if lo < len(starts) else total
