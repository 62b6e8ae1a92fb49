"""The continuation tree against brute force: the trie of the occurrences' continuations, cut
most-shared first; the majority chain against a depth-by-depth vote."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lookup.indexes.continuations import continuation_tree, majority_chain


def naive_loop(sequence: list[int], start: int, n: int) -> np.ndarray:
    """The ``n`` tokens from ``start`` of a text that grows by what it copies (an LZ77 overlap)."""
    text = list(sequence)
    for i in range(n if start < len(sequence) else 0):
        text.append(text[start + i])
    return np.asarray(text[len(sequence):], dtype=np.int64)


def paths(tokens: np.ndarray, parents: np.ndarray) -> list[tuple[int, ...]]:
    """Each node's path of tokens from the root."""
    out: list[tuple[int, ...]] = []
    for token, parent in zip(tokens.tolist(), parents.tolist()):
        out.append((out[parent] if parent >= 0 else ()) + (token,))
    return out


@given(
    sequence=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    data=st.data(),
    length=st.integers(1, 8),
    budget=st.integers(0, 30),
    loop=st.booleans(),
)
def test_the_tree_is_the_most_shared_prefixes_of_the_continuations(sequence, data, length, budget, loop):
    seq = np.asarray(sequence, dtype=np.int64)
    ends = data.draw(st.lists(st.integers(0, len(seq) - 1), unique=True, max_size=6))
    tokens, parents = continuation_tree(seq, ends, length, budget, loop)
    conts = [tuple((naive_loop(sequence, e + 1, length) if loop else seq[e + 1 : e + 1 + length]).tolist())
             for e in ends]
    # every distinct non-empty prefix, with how many continuations share it
    shared: dict[tuple[int, ...], int] = {}
    for c in conts:
        for k in range(1, len(c) + 1):
            shared[c[:k]] = shared.get(c[:k], 0) + 1
    got = paths(tokens, parents)
    assert all(-1 <= p < i for i, p in enumerate(parents))  # parents first: a tree
    assert len(set(got)) == len(got) == min(budget, len(shared))  # a trie, filled up to the budget
    assert all(path in shared for path in got)
    # most shared first: nothing left out is shared by more continuations than a node taken
    if got:
        left_out = [n for path, n in shared.items() if path not in set(got)]
        assert max(left_out, default=0) <= min(shared[path] for path in got)
    # siblings in order of how many continuations they hold
    for i, p in enumerate(parents.tolist()):
        earlier = [j for j in range(i) if parents[j] == p]
        assert all(shared[got[j]] >= shared[got[i]] for j in earlier)


def test_one_occurrence_is_its_continuation_as_a_chain():
    seq = np.array([1, 2, 3, 4, 1, 2], dtype=np.int64)
    tokens, parents = continuation_tree(seq, [1], 3, 10)
    assert tokens.tolist() == [3, 4, 1] and parents.tolist() == [-1, 0, 1]


def test_ties_go_to_the_newest_occurrence():
    # after [7]: ends 4 (newest, continues 9) and 0 (continues 8): one each, the newest first
    seq = np.array([7, 8, 5, 5, 7, 9, 5, 7], dtype=np.int64)
    tokens, parents = continuation_tree(seq, [4, 0], 1, 2)
    assert tokens.tolist() == [9, 8] and parents.tolist() == [-1, -1]


def naive_majority(conts: list[tuple[int, ...]], length: int) -> list[int]:
    """Depth by depth, the token most of the continuations still on the chain go on with (a tie: the
    one of the newest among them, ``conts`` newest first)."""
    chain: list[int] = []
    alive = list(conts)
    for d in range(length):
        votes = [c[d] for c in alive if len(c) > d]
        if not votes:
            break
        most = max(votes.count(t) for t in votes)
        token = next(t for t in votes if votes.count(t) == most)  # the newest's, among the most voted
        chain.append(token)
        alive = [c for c in alive if len(c) > d and c[d] == token]
    return chain


@given(
    sequence=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    data=st.data(),
    length=st.integers(1, 10),
    loop=st.booleans(),
)
def test_the_majority_chain_is_the_vote_of_the_continuations_depth_by_depth(sequence, data, length, loop):
    seq = np.asarray(sequence, dtype=np.int32)  # the automaton's token array type
    ends = data.draw(st.lists(st.integers(0, len(seq) - 1), unique=True, max_size=8))
    conts = [tuple((naive_loop(sequence, e + 1, length) if loop else seq[e + 1 : e + 1 + length]).tolist())
             for e in ends]
    out = np.full(length + 3, -7, dtype=np.int64)
    m = majority_chain(seq, np.asarray(ends, dtype=np.int64), length, loop, out)
    assert out[:m].tolist() == naive_majority(conts, length)
    assert (out[m:] == -7).all() or m == length  # nothing written past the chain


def test_the_majority_leaves_an_occurrence_that_runs_off_on_its_own():
    # a loop "1 2 3" lapped three times in an earlier answer, then "9": its newest lap's continuation
    # leaves the loop (3 -> 9), the two before go on round it; a lap later those two disagree (one
    # leaves there), and the tie goes to the newer
    seq = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 9, 0, 1, 2, 3], dtype=np.int32)
    ends = np.array([8, 5, 2], dtype=np.int64)  # the earlier ends of "... 2 3", newest first
    out = np.zeros(5, dtype=np.int64)
    assert majority_chain(seq, ends, 5, False, out) == 5 and out.tolist() == [1, 2, 3, 9, 0]
    # one occurrence: its continuation
    assert majority_chain(seq, ends[:1], 4, False, out) == 4 and out[:4].tolist() == [9, 0, 1, 2]
