"""The history across requests against brute-force searches, and the drafters that keep one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from lookup.base import EMPTY_DRAFT, SOURCES
from lookup.indexes import history as history_module
from lookup.indexes.history import History


def brute_longest(history: list[int], current: list[int]) -> int:
    """Length of the longest suffix of ``current`` that occurs anywhere in ``history``."""
    best = 0
    for length in range(1, len(current) + 1):
        suffix = current[len(current) - length:]
        if not any(history[i:i + length] == suffix for i in range(len(history) - length + 1)):
            break  # a longer suffix cannot occur if this one does not
        best = length
    return best


def check_match(history: History, kept: list[list[int]], current: list[int]) -> None:
    """History.match() against the kept requests: the longest match, a real occurrence of it, and
    the rest of the request that occurrence ends in."""
    concat = [t for request in kept for t in request]
    assert history.tokens.tolist() == concat
    length, start, stop = history.match()
    want = brute_longest(concat, current)
    bounds = np.cumsum([0] + [len(r) for r in kept])
    if length == 0:
        # nothing matches, or the match ends its request: nothing to copy
        assert want == 0 or start == stop == 0
        return
    assert length == want
    assert concat[start - length:start] == current[len(current) - length:]
    segment = int(np.searchsorted(bounds, start - 1, side="right")) - 1  # the request the occurrence ends in
    assert stop == bounds[segment + 1] and start < stop


requests = st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=25), max_size=6)


@settings(deadline=None)  # the first example may compile the automaton's kernels (a fresh numba cache)
@given(earlier=requests, current=st.lists(st.integers(0, 3), max_size=30),
       cuts=st.lists(st.integers(0, 30), max_size=5))
def test_the_match_is_the_longest_suffix_found_in_earlier_requests(earlier, current, cuts):
    history = History()
    for request in earlier:
        history.add(request)
    kept = [r for r in earlier if r]
    cuts = sorted(c for c in cuts if c <= len(current))
    chunks = [current[a:b] for a, b in zip([0, *cuts], [*cuts, len(current)])]
    history.restart(chunks[0])
    seen = list(chunks[0])
    check_match(history, kept, seen)
    for chunk in chunks[1:]:
        history.follow(chunk)
        seen += chunk
        check_match(history, kept, seen)


@given(earlier=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=20), min_size=1, max_size=8),
       budget=st.integers(10, 40), current=st.lists(st.integers(0, 3), min_size=1, max_size=10))
def test_a_full_history_drops_its_oldest_requests(earlier, budget, current):
    history = History(max_tokens=budget)
    for request in earlier:
        history.add(request)
    assert len(history.tokens) <= budget
    # what is kept is the newest requests, whole, in order (the newest one cut to the budget)
    kept, total = [], 0
    for request in reversed(earlier):
        kept.insert(0, request[-budget:])
        total += len(kept[0])
        if total == len(history.tokens):
            break
    assert history.requests == len(kept)
    history.restart(current)
    check_match(history, kept, current)


@settings(max_examples=150, deadline=None)
@given(earlier=requests, current=st.lists(st.integers(0, 3), min_size=1, max_size=30),
       occurrences=st.integers(1, 6), draft=st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_agreement_reads_the_most_recent_occurrences_each_within_its_request(earlier, current, occurrences, draft):
    history = History(occurrences=occurrences, max_depth=1 << 30)  # every ring exact
    for request in earlier:
        history.add(request)
    history.restart(current)
    concat = [t for request in earlier for t in request]
    stops = np.cumsum([len(r) for r in earlier if r]).tolist()
    length = brute_longest(concat, current)
    suffix = current[len(current) - length:]
    ends = [e for e in range(len(concat) - 1, -1, -1)
            if length and e + 1 >= length and concat[e + 1 - length:e + 1] == suffix][:occurrences]
    support, agree = np.full(len(draft), -1), np.full(len(draft), -1)
    assert history.agreement(np.array(draft, dtype=np.int64), support, agree) == len(ends)
    want_support, want_agree = [0] * len(draft), [0] * len(draft)
    for e in ends:
        stop = next(s for s in stops if s > e)  # the end of the request the occurrence is in
        after = concat[e + 1:stop]
        for d in range(min(len(after), len(draft))):
            if after[:d] != draft[:d]:
                break
            want_support[d] += 1
            want_agree[d] += after[d] == draft[d]
    assert (support.tolist(), agree.tolist()) == (want_support, want_agree)


def test_adding_a_request_follows_the_current_one_again_through_the_changed_index():
    history = History(max_tokens=8)
    history.add([1, 2, 3, 4])
    history.restart([9, 2, 3])
    assert history.match() == (2, 3, 4)
    history.add([5, 6, 7, 8, 1])  # past the budget: the oldest request goes, the index is rebuilt
    support, agree = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    assert history.match() == (0, 0, 0) and history.agreement(np.array([4]), support, agree) == 0
    history.follow([6, 7])
    assert history.match() == (2, 3, 5)
    history.add([6, 7, 2])  # no drop: the newest occurrence is in the new request
    assert history.match() == (2, 7, 8)
    assert history.match_length() == 2


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "follow", "restart", "check", "cursor"]), st.integers(0, 2),
                              st.lists(st.integers(0, 3), max_size=8)), max_size=30),
       budget=st.sampled_from([12, 1 << 20]))
def test_cursors_share_what_is_added_and_each_follows_its_own_request(ops, budget):
    # Three requests served side by side, each through its own cursor of one history; whatever the
    # interleaving (adds and follows with no query between them included), each cursor matches as a
    # history built afresh from the same requests would.
    root = History(max_tokens=budget, occurrences=3, max_depth=1 << 30)
    cursors = [root, root.cursor(), root.cursor()]
    seen: list[list[int]] = [[], [], []]
    added: list[list[int]] = []
    for op, who, tokens in [*ops, ("check", 0, [])]:
        if op == "add":
            cursors[who].add(tokens)
            if tokens:
                added.append(tokens)
        elif op == "follow":
            cursors[who].follow(tokens)
            seen[who] += tokens
        elif op == "restart":
            cursors[who].restart(tokens)
            seen[who] = list(tokens)
        elif op == "cursor":  # a new request, served from now on
            cursors[who], seen[who] = root.cursor(), []
        else:
            fresh = History(max_tokens=budget, occurrences=3, max_depth=1 << 30)
            for request in added:
                fresh.add(request)
            for cursor, request in zip(cursors, seen):
                fresh.restart(request)
                assert cursor.tokens.tolist() == fresh.tokens.tolist()
                assert cursor.match() == fresh.match() and cursor.match_length() == fresh.match_length()
                draft = np.array(request[-2:] or [0], dtype=np.int64)
                got = [np.zeros(len(draft), dtype=np.int64) for _ in range(4)]
                assert cursor.agreement(draft, got[0], got[1]) == fresh.agreement(draft, got[2], got[3])
                assert got[0].tolist() == got[2].tolist() and got[1].tolist() == got[3].tolist()


def test_a_request_is_followed_again_by_its_newest_tokens_only(monkeypatch):
    monkeypatch.setattr(history_module, "REFOLLOW_TOKENS", 4)
    history = History()
    request = [1, 2, 3, 4, 5, 6, 7]
    history.restart(request[:3])
    history.follow(request[3:])
    history.add(request + [9])  # the whole request, and what followed it there
    assert history.match_length() == 4  # found afresh from the newest 4 tokens: capped there
    assert history.match() == (4, 7, 8)
    history.follow([9])
    assert history.match_length() == 5  # and it grows again as the request does


WINDOW = 5


@given(chunks=st.lists(st.lists(st.integers(0, 9), max_size=12), max_size=40))
def test_a_cursor_keeps_its_newest_tokens_whatever_the_appends(chunks):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(history_module, "REFOLLOW_TOKENS", WINDOW)
        recent, every = history_module._Recent(), []
        for chunk in chunks:
            recent.append(np.array(chunk, dtype=np.int64))
            every += chunk
            kept = recent.tokens().tolist()
            assert len(kept) >= min(len(every), WINDOW)
            assert kept == every[len(every) - len(kept):]


def test_history_rejects_a_budget_below_one():
    with pytest.raises(ValueError):
        History(max_tokens=0)


def serve(drafter, prompt, output):
    """One request through the drafter's hooks (no verify): reset, then commit the output."""
    drafter.reset(prompt)
    drafter.extend(output)


def test_the_drafter_copies_an_earlier_requests_output_never_its_prompt():
    drafter = lookup.create("suffix-automaton", history=True, max_tokens=8, length_rule=None)
    serve(drafter, [1, 2, 3, 4, 5, 6], [10, 11, 12, 13, 14, 15])
    drafter.reset([7, 7, 1, 2, 3])  # the earlier prompt's text: not in the history
    assert len(drafter.propose(8)) == 0 and drafter.evidence(EMPTY_DRAFT).source == "context"
    drafter.extend([10, 11])  # the earlier output's: copied from there
    assert drafter.evidence(EMPTY_DRAFT).source == "history" and drafter.match_length() == 2
    assert drafter.propose(8).tokens.tolist() == [12, 13, 14, 15]


def test_without_history_each_request_starts_empty():
    drafter = lookup.create("suffix-automaton", max_tokens=8, length_rule=None)
    serve(drafter, [1, 2, 3], [10, 11, 12, 13])
    drafter.reset([9, 10, 11])
    assert len(drafter.propose(8)) == 0 and drafter.evidence(EMPTY_DRAFT).source == "context"


def test_the_context_wins_a_tie_with_the_history():
    drafter = lookup.create("suffix-automaton", history=True, max_tokens=8, length_rule=None)
    serve(drafter, [0], [5, 6, 1, 2])
    drafter.reset([5, 6, 3, 4, 5, 6])  # "5 6" matched in the context (-> 3) and in the history (-> 1)
    assert drafter.evidence(EMPTY_DRAFT).source == "context"
    assert drafter.propose(2).tokens.tolist() == [3, 4]


def test_adaptive_learns_history_drafts_apart_from_context_drafts():
    adaptive = lookup.create("adaptive", history=True)
    assert adaptive.base.history is not None
    serve(adaptive, [0], [5, 6, 7, 8])
    adaptive.reset([9, 5, 6])
    history_row = adaptive.candidate(32).row
    assert SOURCES[history_row.source] == "history"  # judged by the history's statistics
    adaptive.reset([5, 6, 1, 5, 6])
    context_row = adaptive.candidate(32).row
    assert SOURCES[context_row.source] == "context"
    # apart: what the history's drafts teach moves their row only
    context_before, history_before = adaptive.model.rates(context_row).copy(), adaptive.model.rates(history_row).copy()
    adaptive.model.learn_chain(history_row, np.array([7, 8]), 2, 0, [1])
    assert np.array_equal(adaptive.model.rates(context_row), context_before)
    assert adaptive.model.rates(history_row)[0] < history_before[0]  # a miss at the first node, learnt


def test_history_needs_a_named_base_that_keeps_one():
    with pytest.raises(ValueError, match="by name"):  # every wrapper's rule: tests/lookup/test_params.py
        lookup.create("adaptive", base=lookup.create("suffix-automaton"), history=True)
    with pytest.raises(TypeError, match="history"):
        lookup.create("adaptive", base="unfold", history=True)


def test_the_history_and_the_automaton_pass_the_kernel_the_same_integer_types(monkeypatch):
    """One compiled signature of ``recent_ends`` serves both: a numpy int32 state from one and a Python
    int from the other compiled it twice, the second time inside a timed step."""
    from lookup.indexes import automaton_kernels as K

    seen, kernel = set(), K.recent_ends

    def spy(states, state, before, out):
        seen.add((type(state), type(before)))
        return kernel(states, state, before, out)

    monkeypatch.setattr(K, "recent_ends", spy)
    drafter = lookup.create("suffix-automaton", history=True, occurrences=4, max_tokens=8, length_rule=None)
    serve(drafter, [1, 2, 3], [10, 11, 12, 10, 11, 13])
    drafter.reset([10, 11, 12, 10, 11])
    drafter.evidence(drafter.propose(8))  # the history's match and agreement, the context's agreement
    assert seen == {(int, int)}


def test_a_drafter_sees_what_another_request_adds_to_a_shared_history_at_once():
    """The drafter keeps its match in the history between changes of its text; an output another
    request adds to the shared history changes it too (batched serving ends requests mid-step)."""
    first = lookup.create("suffix-automaton", history=True, max_tokens=8, length_rule=None)
    second = lookup.create("suffix-automaton", history=True, max_tokens=8, length_rule=None)
    second.share_history(first.history.cursor())
    first.reset([5])
    first.extend([20, 21])
    assert len(first.propose(8)) == 0 and first.match_length() == 0  # "21" occurs nowhere yet
    serve(second, [0], [20, 21, 22, 23])
    second.reset([9])  # the second request's output joins the shared history
    assert first.propose(8).tokens.tolist() == [22, 23] and first.match_length() == 2
