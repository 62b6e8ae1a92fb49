"""The frequency drafter against a brute force over every match length (SuffixDecoding's loop)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.drafters.frequency import FrequencyDrafter, frequency_path

UNBOUNDED = 1 << 30  # record every ancestor: the rings are exact, as brute force assumes


def brute_ends(seq: list[int], length: int, k: int) -> list[int]:
    """End positions (newest first) of the k most recent earlier occurrences of the last ``length`` tokens."""
    n = len(seq)
    suffix = seq[n - length:]
    return [e for e in range(n - 2, length - 2, -1) if seq[e - length + 1: e + 1] == suffix][:k]


def brute_path(seq: list[int], ends: list[int], cap: int, min_prob: float,
               loop: bool = False) -> tuple[list[int], float]:
    """Most voted next token among the occurrences that agree so far; where they branch, the current
    position and those that stopped short count too. With ``loop`` the text read is the sequence
    followed by the draft so far, so no occurrence stops short."""
    draft: list[int] = []
    alive, count, prob, score = list(ends), len(ends) + 1, 1.0, 0.0
    while len(draft) < cap and count:
        text = seq + draft if loop else seq
        votes: dict[int, int] = {}
        oldest: dict[int, int] = {}
        for r, e in enumerate(alive):
            if e + 1 + len(draft) < len(text):
                x = text[e + 1 + len(draft)]
                votes[x] = votes.get(x, 0) + 1
                oldest[x] = r
        if not votes:
            break
        best = min(votes, key=lambda x: (-votes[x], -oldest[x]))  # ties: the earliest occurrence's token
        share = 1.0 if len(votes) == 1 else votes[best] / count  # unanimous: one edge of the tree
        if prob * share < min_prob:
            break
        prob *= share
        score += prob
        alive = [e for e in alive if e + 1 + len(draft) < len(text) and text[e + 1 + len(draft)] == best]
        draft.append(best)
        count = votes[best]
    return draft, score


def brute_draft(seq, min_match, max_tokens, factor, offset, min_prob, k, loop=False) -> list[int]:
    """Every match length from the longest down; the best score wins, the longer match on ties."""
    return brute_choice(seq, min_match, max_tokens, factor, offset, min_prob, k, loop)[0]


def brute_choice(seq, min_match, max_tokens, factor, offset, min_prob, k, loop=False) -> tuple[list[int], int]:
    """(the draft, the match length it was drafted after: the longest of its state's, 0 for none)."""
    best, best_score, best_m = [], 0.0, 0
    for m in range(len(seq) - 1, min_match - 1, -1):
        ends = brute_ends(seq, m, k)
        if not ends:
            continue
        cap = min(max_tokens, int(m * factor + offset + 1e-6))
        draft, score = brute_path(seq, ends, cap, min_prob, loop)
        if draft and score > best_score:
            best, best_score, best_m = draft, score, m
    return best, best_m


@st.composite
def frequency_case(draw):
    alphabet = draw(st.integers(1, 4))
    seq = draw(st.lists(st.integers(0, alphabet - 1), min_size=1, max_size=60))
    params = dict(
        min_match=draw(st.integers(1, 3)),
        max_tokens=draw(st.integers(1, 8)),
        spec_factor=draw(st.sampled_from([0.5, 1.0, 2.0])),
        spec_offset=draw(st.sampled_from([0.0, 1.0])),
        min_prob=draw(st.sampled_from([0.0, 0.1, 0.3])),
        occurrences=draw(st.integers(1, 6)),
        loop=draw(st.booleans()),
    )
    return seq, params


@settings(max_examples=300, deadline=None)
@given(frequency_case(), st.integers(0, 10))
def test_draft_equals_brute_force(case, budget):
    seq, params = case
    d = FrequencyDrafter(max_depth=UNBOUNDED, **params)
    split = len(seq) // 2
    d.reset(seq[: max(split, 1)])
    d.extend(seq[max(split, 1):])
    want = brute_draft(seq, params["min_match"], min(budget, params["max_tokens"]), params["spec_factor"],
                       params["spec_offset"], params["min_prob"], params["occurrences"], params["loop"])
    assert d.propose(budget).tokens.tolist() == (want if budget > 0 else [])


def test_path_kernel_by_hand():
    # "1 2" occurred twice before, followed by 3 both times, then once by 4 after "1 2 3"
    seq = np.array([1, 2, 3, 9, 1, 2, 3, 4, 1, 2], dtype=np.int64)
    out = np.zeros(4, dtype=np.int64)
    ends = np.array([5, 1], dtype=np.int64)  # newest first
    n, score = frequency_path(seq, len(seq), ends, 2, 4, 0.0, out)
    # 3 by both votes (unanimous: the probability stays 1), then 4 and 9 tie at 1 vote of 2: the
    # earliest occurrence's (9), then that occurrence goes on alone
    assert out[:n].tolist() == [3, 9, 1, 2]
    assert score == pytest.approx(1 + 1 / 2 + 1 / 2 + 1 / 2)
    n, _ = frequency_path(seq, len(seq), ends, 2, 4, 0.6, out)
    assert out[:n].tolist() == [3]  # 1/2 < 0.6: the cut stops the draft before 9
    n, _ = frequency_path(seq, len(seq), ends[:1], 1, 4, 0.0, out)
    assert out[:n].tolist() == [3, 4, 1, 2]


def test_spec_factor_caps_short_matches():
    d = FrequencyDrafter(min_prob=0.0)
    d.reset([5, 6, 7, 8, 5])  # the match "5" is 1 token long
    assert d.propose(8).tokens.tolist() == [6]
    d = FrequencyDrafter(min_prob=0.0, spec_factor=3.0)
    d.reset([5, 6, 7, 8, 5])
    assert d.propose(8).tokens.tolist() == [6, 7, 8]


@pytest.mark.parametrize("kwargs", [dict(min_match=0), dict(max_tokens=0), dict(occurrences=0),
                                    dict(spec_factor=-1.0), dict(min_prob=1.5)])
def test_bad_params_raise(kwargs):
    with pytest.raises(ValueError):
        FrequencyDrafter(**kwargs)


def brute_votes(seq: list[int], ends: list[int], draft: list[int], loop: bool) -> tuple[list[int], list[int]]:
    """Per depth d: the occurrences that followed ``draft[:d]`` and have a token at d (they vote), and
    those that vote for ``draft[d]``; with ``loop`` read on into the draft."""
    text = seq + draft if loop else seq
    support, agree = [0] * len(draft), [0] * len(draft)
    for e in ends:
        for d in range(len(draft)):
            if e + 1 + d >= len(text) or text[e + 1 : e + 1 + d] != draft[:d]:
                break
            support[d] += 1
            agree[d] += text[e + 1 + d] == draft[d]
    return support, agree


@settings(max_examples=200, deadline=None)
@given(frequency_case(), st.integers(1, 10))
def test_evidence_is_the_votes_of_the_chosen_match(case, budget):
    """What ``adaptive`` reads of a frequency draft: the match it was drafted after and, per depth, how
    many of that match's occurrences voted and how many voted for the draft's token."""
    seq, params = case
    d = FrequencyDrafter(max_depth=UNBOUNDED, **params)
    d.reset(seq)
    draft = d.propose(budget)
    want, m = brute_choice(seq, params["min_match"], min(budget, params["max_tokens"]), params["spec_factor"],
                           params["spec_offset"], params["min_prob"], params["occurrences"], params["loop"])
    evidence = d.evidence(draft)
    assert draft.tokens.tolist() == want
    if not want:
        return
    # the state's longest length: brute force finds the longest m with the same occurrences
    assert evidence.match_length >= m and evidence.own is not None
    ends = brute_ends(seq, evidence.match_length, params["occurrences"])
    assert ends == brute_ends(seq, m, params["occurrences"])
    support, agree = brute_votes(seq, ends, want, params["loop"])
    assert evidence.own.support.tolist() == support and evidence.own.agree.tolist() == agree
    assert d.match_length() == evidence.match_length
