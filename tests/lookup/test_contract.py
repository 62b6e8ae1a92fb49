"""The drafter contract, run over every registered drafter (plug-ins and future ones included).

A drafter that needs constructor arguments (e.g. one that wraps another) gets them from
``FACTORIES``; every other name is built with ``lookup.create(name)``. ``VARIANTS`` adds
configurations worth holding to the contract too (tree output, other options).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from lookup import Draft, Drafter

TOP_ID = (1 << 18) - 1  # 262,143: the largest id a drafter must accept

# name -> how to build it with sensible defaults, for drafters whose constructor needs arguments
FACTORIES: dict[str, Callable[[], Drafter]] = {}

# extra configurations of registered drafters, held to the same contract
VARIANTS: dict[str, Callable[[], Drafter]] = {
    "suffix-automaton[earliest,linear]": lambda: lookup.create("suffix-automaton", occurrence="earliest", length_rule=(2.0, 1.0)),
    "suffix-automaton[min_match=1,shallow]": lambda: lookup.create("suffix-automaton", min_match=1, max_depth=1),
    "voting[tree]": lambda: lookup.create("voting", tree=True),
    "voting[tree,decay,min_match=1]": lambda: lookup.create("voting", tree=True, decay=0.7, min_match=1, max_branches=2),
}

CASES: dict[str, Callable[[], Drafter]] = {
    **{name: FACTORIES.get(name, lambda name=name: lookup.create(name)) for name in lookup.available()},
    **VARIANTS,
}


@pytest.fixture(params=sorted(CASES), scope="module")
def make(request) -> Callable[[], Drafter]:
    return CASES[request.param]


def test_every_registered_name_is_covered():
    assert {"none", "unfold", "suffix-automaton", "voting"} <= set(CASES)
    assert set(lookup.available()) <= set(CASES)


# small alphabets repeat a lot (many matches); a few symbols sit at the top of the id range
symbols = st.sampled_from([0, 1, 2, 3, TOP_ID - 1, TOP_ID])
token_lists = st.lists(symbols, max_size=40)
budgets = st.integers(0, 16)


def occurs_contiguously(run: list[int], context: list[int]) -> bool:
    return any(context[i : i + len(run)] == run for i in range(len(context) - len(run) + 1))


def paths(draft: Draft) -> list[list[int]]:
    """Root-to-node token path of every node (a chain is one path, all its prefixes)."""
    if draft.parents is None:
        return [draft.tokens.tolist()]
    out: list[list[int]] = []
    for i, p in enumerate(draft.parents.tolist()):
        out.append((out[p] if p >= 0 else []) + [int(draft.tokens[i])])
    return out


def same(a: Draft, b: Draft) -> bool:
    pa = None if a.parents is None else a.parents.tolist()
    pb = None if b.parents is None else b.parents.tolist()
    return a.tokens.tolist() == b.tokens.tolist() and pa == pb


def check_wellformed(draft: Draft, budget: int, context: list[int]) -> None:
    assert isinstance(draft, Draft)
    assert len(draft) <= budget
    assert draft.problem() is None
    assert draft.tokens.dtype == np.int64
    for path in paths(draft):
        assert occurs_contiguously(path, context), f"{path} is not a run of the context"


@settings(max_examples=40, deadline=None)
@given(prompt=token_lists, steps=st.lists(st.lists(symbols, min_size=1, max_size=3), max_size=8), budget=budgets)
def test_propose_is_pure_and_wellformed(make, prompt, steps, budget):
    """propose has no side effects: same answer twice, and later answers unaffected by it."""
    probed, quiet = make(), make()
    probed.reset(prompt)
    quiet.reset(prompt)
    context = list(prompt)
    for step in [[], *steps]:
        probed.extend(step)
        quiet.extend(step)
        context += step
        first = probed.propose(budget)
        second = probed.propose(budget)
        probed.propose(budget + 3)  # a different budget must not leak into later answers either
        assert same(first, second)
        assert same(first, quiet.propose(budget))
        check_wellformed(first, budget, context)


@settings(max_examples=40, deadline=None)
@given(a=token_lists, b=token_lists, budget=budgets)
def test_reset_all_at_once_equals_reset_then_extend(make, a, b, budget):
    whole, parts = make(), make()
    whole.reset(a + b)
    parts.reset(a)
    parts.extend(b)
    assert same(whole.propose(budget), parts.propose(budget))


@settings(max_examples=25, deadline=None)
@given(a=token_lists, b=token_lists, budget=budgets)
def test_reset_forgets_the_previous_sequence(make, a, b, budget):
    reused, fresh = make(), make()
    reused.reset(a)
    reused.propose(budget)
    reused.reset(b)
    fresh.reset(b)
    assert same(reused.propose(budget), fresh.propose(budget))


@pytest.mark.parametrize("prompt", [[], [7], [TOP_ID], [0, 0], [TOP_ID, TOP_ID, TOP_ID]])
def test_tiny_prompts(make, prompt):
    d = make()
    d.reset(prompt)
    for budget in (0, 1, 8):
        check_wellformed(d.propose(budget), budget, prompt)
    d.extend([TOP_ID])
    check_wellformed(d.propose(4), 4, prompt + [TOP_ID])


def test_top_ids_are_proposed(make):
    """Ids up to 262,143 survive the round trip, for drafters that propose at all."""
    d = make()
    context = [TOP_ID, TOP_ID - 1, 5, TOP_ID, TOP_ID - 1, 5, TOP_ID, TOP_ID - 1, 5] * 3 + [TOP_ID, TOP_ID - 1]
    d.reset(context)
    draft = d.propose(4)
    check_wellformed(draft, 4, context)
    if len(draft):
        assert set(draft.tokens.tolist()) <= {TOP_ID, TOP_ID - 1, 5}


def test_budget_zero_is_empty(make):
    d = make()
    d.reset([1, 2, 3, 1, 2, 3, 1, 2])
    assert len(d.propose(0)) == 0
    assert len(d.propose(-1)) == 0


def test_numpy_inputs_are_accepted(make):
    as_list, as_array = make(), make()
    as_list.reset([1, 2, 3, 1, 2])
    as_array.reset(np.array([1, 2, 3, 1, 2], dtype=np.int32))
    as_list.extend([3, 1])
    as_array.extend(np.array([3, 1], dtype=np.int64))
    assert same(as_list.propose(5), as_array.propose(5))


def test_params_are_json_serialisable(make):
    import json

    json.dumps(make().params())
