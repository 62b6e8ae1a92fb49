"""The voting drafter against a brute-force vote counter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.drafters.voting import VotingDrafter, vote_tree

UNBOUNDED = 1 << 30  # record every ancestor: the rings are exact, as brute force assumes


# ---------------------------------------------------------------- brute force


def brute_voters(seq: list[int], min_match: int, min_votes: int, k: int) -> list[int]:
    """End positions (newest first) of the k most recent earlier occurrences of the voting match."""
    n = len(seq)

    def ends(length: int) -> list[int]:
        suffix = seq[n - length :]
        return [e for e in range(n - 2, length - 2, -1) if seq[e - length + 1 : e + 1] == suffix][:k]

    longest = max((m for m in range(1, n) if ends(m)), default=0)
    if longest < min_match:
        return []
    for length in range(longest, min_match - 1, -1):  # fall back to shorter matches
        found = ends(length)
        if len(found) >= min_votes:
            return found
    return ends(min_match)


def continuations(seq: list[int], voters: list[int], max_tokens: int, loop: bool = False) -> list[list[int]]:
    """What follows each voter, up to ``max_tokens``; with ``loop``, from a text that grows by what it
    copies (round the loop past the end of the text)."""
    out = []
    for e in voters:
        text = list(seq)
        for i in range(max_tokens if loop else 0):
            text.append(text[e + 1 + i])
        out.append(text[e + 1 : e + 1 + max_tokens])
    return out


def brute_chain(seq, voters, max_tokens, decay, budget, loop=False) -> list[int]:
    """Greedy: at each position the token with most (decayed) votes among agreeing voters, ties to recent."""
    conts = continuations(seq, voters, max_tokens, loop)
    weights = [decay**r for r in range(len(voters))]
    chain: list[int] = []
    while len(chain) < min(budget, max_tokens):
        score: dict[int, float] = {}
        newest: dict[int, int] = {}
        for r, c in enumerate(conts):  # summed in rank order, as the kernel does
            if len(c) > len(chain) and c[: len(chain)] == chain:
                x = c[len(chain)]
                score[x] = score.get(x, 0.0) + weights[r]
                newest.setdefault(x, r)
        if not score:
            break
        chain.append(min(score, key=lambda x: (-score[x], newest[x])))
    return chain


def brute_tree(seq, voters, max_tokens, decay, max_branches, budget, loop=False) -> tuple[list[int], list[int]]:
    """All continuation prefixes scored, top max_branches per parent, best budget nodes by sort."""
    conts = continuations(seq, voters, max_tokens, loop)
    weight: dict[tuple, float] = {}
    creator: dict[tuple, int] = {}
    for r, c in enumerate(conts):
        for j in range(1, len(c) + 1):
            weight[tuple(c[:j])] = weight.get(tuple(c[:j]), 0.0) + decay**r
            creator.setdefault(tuple(c[:j]), r)
    eligible: set[tuple] = set()
    for node in sorted(weight, key=len):  # parents first
        if len(node) > 1 and node[:-1] not in eligible:
            continue
        siblings = [s for s in weight if len(s) == len(node) and s[:-1] == node[:-1]]
        siblings.sort(key=lambda s: (-weight[s], creator[s]))
        if siblings.index(node) < max_branches:
            eligible.add(node)
    chosen = sorted(eligible, key=lambda s: (-weight[s], len(s), creator[s]))[:budget]
    index = {node: i for i, node in enumerate(chosen)}
    return [node[-1] for node in chosen], [index[node[:-1]] if len(node) > 1 else -1 for node in chosen]


# ---------------------------------------------------------------- strategies


@st.composite
def voting_case(draw):
    k = draw(st.integers(2, 4))
    symbols = st.integers(0, k - 1)
    # motifs repeated in random order give many equal-length matches with diverging
    # continuations, so vote ties and fallbacks happen often
    motifs = st.lists(st.lists(symbols, min_size=1, max_size=4), min_size=1, max_size=3)
    seq = draw(
        st.one_of(
            st.lists(symbols, min_size=8, max_size=60),
            motifs.flatmap(lambda ms: st.lists(st.sampled_from(ms), max_size=15)).map(lambda parts: sum(parts, [])),
        )
    )
    occurrences = draw(st.integers(1, 6))
    params = dict(
        min_match=draw(st.integers(1, 3)),
        max_tokens=draw(st.integers(1, 8)),
        occurrences=occurrences,
        min_votes=draw(st.integers(1, occurrences)),
        decay=draw(st.sampled_from([1.0, 0.5, 0.8])),
        max_branches=draw(st.integers(1, 3)),
        loop=draw(st.booleans()),
    )
    split = draw(st.integers(0, len(seq)))
    return seq, split, params


def built(seq, split, params, **extra) -> VotingDrafter:
    d = VotingDrafter(max_depth=UNBOUNDED, **params, **extra)
    d.reset(seq[:split])
    for i in range(split, len(seq), 3):
        d.extend(seq[i : i + 3])
    return d


# ---------------------------------------------------------------- tests


@settings(max_examples=150, deadline=None)
@given(voting_case())
def test_voters_equal_brute_force(case):
    seq, split, params = case
    d = built(seq, split, params)
    want = brute_voters(seq, params["min_match"], params["min_votes"], params["occurrences"])
    assert d.voters().tolist() == want


@settings(max_examples=150, deadline=None)
@given(voting_case(), st.integers(0, 10))
def test_chain_equals_brute_force_vote(case, budget):
    seq, split, params = case
    d = built(seq, split, params)
    voters = brute_voters(seq, params["min_match"], params["min_votes"], params["occurrences"])
    draft = d.propose(budget)
    assert draft.parents is None
    assert draft.tokens.tolist() == brute_chain(seq, voters, params["max_tokens"], params["decay"], budget,
                                                params["loop"])


@settings(max_examples=150, deadline=None)
@given(voting_case(), st.integers(0, 24))
def test_tree_equals_brute_force_and_is_valid(case, budget):
    seq, split, params = case
    d = built(seq, split, params, tree=True)
    voters = brute_voters(seq, params["min_match"], params["min_votes"], params["occurrences"])
    draft = d.propose(budget)
    tokens, parents = brute_tree(seq, voters, params["max_tokens"], params["decay"], params["max_branches"], budget,
                                 params["loop"])
    assert draft.tokens.tolist() == tokens
    assert (draft.parents.tolist() if draft.parents is not None else []) == parents
    # structural validity, independent of the reference
    assert len(draft) <= budget and draft.problem() is None
    if len(draft):
        pairs = list(zip(draft.parents.tolist(), draft.tokens.tolist()))
        assert len(set(pairs)) == len(pairs), "duplicate siblings"
        children = np.bincount(draft.parents + 1)
        assert children.max() <= params["max_branches"]
        assert draft.depths().max() <= params["max_tokens"]


def test_vote_tree_kernel_by_hand():
    #            0  1  2  3  4  5  6  7  8  9
    tokens = np.array([7, 1, 2, 7, 1, 3, 7, 1, 2, 7], dtype=np.int32)
    ends = np.array([6, 3, 0], dtype=np.int64)  # earlier 7s, newest first
    tok, par = vote_tree(tokens, 10, ends, 3, 1.0, 2, 10)
    # continuations: e=6 -> 1,2,7 (rank 0); e=3 -> 1,3,7 (rank 1); e=0 -> 1,2,7 (rank 2)
    # weights: 1:3, 1-2:2, 1-2-7:2, 1-3:1, 1-3-7:1; heavier first, shallower first on ties
    assert tok.tolist() == [1, 2, 7, 3, 7]
    assert par.tolist() == [-1, 0, 1, 0, 3]
    tok, par = vote_tree(tokens, 10, ends, 3, 1.0, 1, 10)  # one branch: the chain
    assert tok.tolist() == [1, 2, 7] and par.tolist() == [-1, 0, 1]
    tok, _ = vote_tree(tokens, 10, ends[:2], 3, 1.0, 1, 10)  # 1-1 tie: the most recent (e=6) wins
    assert tok.tolist() == [1, 2, 7]
    tok, _ = vote_tree(tokens, 10, ends[1:], 3, 1.0, 1, 10)  # now e=3 is the most recent
    assert tok.tolist() == [1, 3, 7]


def test_decay_lets_recent_minority_win():
    seq = [5, 1, 5, 1, 5, 1, 5, 2, 5]  # after 5: "1" three times long ago, "2" most recently
    plain = VotingDrafter(min_match=1, max_tokens=1, occurrences=4)
    plain.reset(seq)
    assert plain.propose(1).tokens.tolist() == [1]
    recent = VotingDrafter(min_match=1, max_tokens=1, occurrences=4, decay=0.3)
    recent.reset(seq)
    assert recent.propose(1).tokens.tolist() == [2]


@pytest.mark.parametrize("kwargs", [dict(min_votes=0), dict(min_votes=9, occurrences=8), dict(decay=0.0), dict(max_branches=0)])
def test_bad_params_raise(kwargs):
    with pytest.raises(ValueError):
        VotingDrafter(**kwargs)
