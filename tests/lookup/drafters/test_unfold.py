"""The `unfold` drafter must be the published function, exactly."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from toys import published
from lookup.drafters.unfold import find_candidate_pred_tokens


sequences = st.lists(st.integers(0, 5), min_size=0, max_size=80)


@settings(max_examples=300, deadline=None)
@given(seq=sequences, n=st.integers(1, 4), k=st.integers(1, 12))
def test_function_equals_published_transcription(seq, n, k):
    got = find_candidate_pred_tokens(torch.tensor([seq], dtype=torch.long).reshape(1, -1), n, k).tolist()
    assert got == published(seq, n, k)


@settings(max_examples=200, deadline=None)
@given(prompt=sequences, steps=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4), max_size=6),
       budget=st.integers(0, 12))
def test_drafter_proposes_published_continuation_cut_to_budget(prompt, steps, budget):
    drafter = lookup.create("unfold")
    drafter.reset(prompt)
    seq = list(prompt)
    for chunk in [[]] + steps:
        drafter.extend(chunk)
        seq += chunk
        expected = published(seq)[:budget] if budget > 0 else []
        assert drafter.propose(budget).tokens.tolist() == expected


def test_first_match_from_the_left_wins():
    # "1 2 3" occurs twice; the published function takes the leftmost with a full continuation
    seq = [1, 2, 3, *range(10, 20), 1, 2, 3, *range(30, 40), 1, 2, 3]
    assert published(seq)[:3] == [10, 11, 12]
    d = lookup.create("unfold")
    d.reset(seq)
    assert d.propose(3).tokens.tolist() == [10, 11, 12]


def test_short_continuation_is_skipped():
    # the only earlier "7 8 9" is followed by fewer than 10 tokens: no 3-gram proposal
    seq = [7, 8, 9, 1, 2, 7, 8, 9]
    d = lookup.create("unfold")
    d.reset(seq)
    assert d.propose(10).tokens.tolist() == published(seq) == []
