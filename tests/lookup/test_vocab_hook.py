"""Drafters may ask for the vocabulary's strings (``Drafter.wants_vocab`` / ``set_vocab``), handed
over once (``lookup.base.hand_vocab``): a toy that ends its drafts at punctuation."""

from __future__ import annotations

import pytest
from punctuation_drafter import StopAtPunctuation

import lookup
from lookup.base import hand_vocab

#: a vocabulary of 16 ids: words, and "." (id 3), "," (id 7) and a newline (id 11)
STRINGS = tuple({3: ".", 7: ",", 11: "\n"}.get(i, f" w{i}") for i in range(16))
PROMPT = [1, 2, 3, 4, 5, 7, 6, 1, 2]  # "w1 w2 . w4 w5 , w6 w1 w2"


def test_without_strings_it_drafts_through_punctuation():
    d = StopAtPunctuation()
    d.reset(PROMPT)
    assert d.wants_vocab() and d.propose(6).tokens.tolist() == [3, 4, 5, 7, 6, 1]


def test_with_strings_it_stops_after_the_punctuation():
    d = StopAtPunctuation()
    hand_vocab(d, lambda: STRINGS)
    d.reset(PROMPT)
    assert d.propose(6).tokens.tolist() == [3]  # "." ends the draft
    d.extend([3, 4])
    assert d.propose(6).tokens.tolist() == [5, 7]  # then "w5 ,"
    assert d.stops == frozenset({3, 7, 11})


def test_the_strings_are_handed_once_and_survive_reset():
    d = StopAtPunctuation()
    hand_vocab(d, lambda: STRINGS)
    hand_vocab(d, lambda: pytest.fail("asked again"))  # it has them: the strings are not even read
    d.reset(PROMPT)
    d.reset(PROMPT)
    assert d.handed == 1 and not d.wants_vocab() and d.propose(6).tokens.tolist() == [3]


def test_a_drafter_that_does_not_ask_is_never_given_and_nothing_is_read():
    d = lookup.create("suffix-automaton")
    hand_vocab(d, lambda: pytest.fail("read for a drafter that did not ask"))
    assert not d.wants_vocab()


def test_no_strings_at_hand_leaves_the_drafter_wanting_and_working():
    d = StopAtPunctuation()
    hand_vocab(d, lambda: None)  # a target without a tokenizer, a trace folder without a vocabulary file
    d.reset(PROMPT)
    assert d.wants_vocab() and d.handed == 0 and len(d.propose(6)) == 6


def test_a_wrapper_asks_for_its_base_and_hands_the_strings_down():
    inner = StopAtPunctuation()
    outer = lookup.create("adaptive", base=inner)
    assert outer.wants_vocab()
    hand_vocab(outer, lambda: STRINGS)
    assert inner.handed == 1 and not outer.wants_vocab()
