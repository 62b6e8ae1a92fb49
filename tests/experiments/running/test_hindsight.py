"""Hindsight ceilings: the same drafter's candidates, sent knowing which tokens the target accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from experiments.benchmarks.traces import TraceCase, TraceSet
from experiments.running.explain import explain
from experiments.running.hindsight import Hindsight, accepted_path
from experiments.running.methods import parse_method
from experiments.running.oracle import sequence_of
from experiments.running.replay import replay_case
from lookup.base import Draft
from lookup.cost import CPU_SMOLLM2

DRAFTERS = ["adaptive", "suffix-automaton", "voting:tree=true", "unfold"]


def make(spec: str) -> lookup.Drafter:
    return parse_method(spec).make(CPU_SMOLLM2)


def case_of(seq: list[int], start: int) -> TraceCase:
    return TraceCase("t/0", "t", 1, seq[:start], seq[start:], [], "toy", 16, [], len(seq) - start)


def brute_path(tokens: list[int], parents: list[int], future: list[int]) -> list[int]:
    """The accepted path by trying every node: a node is on it when its ancestors' tokens, root
    first, are the future's first tokens; the deepest such node's ancestors are the path."""
    def chain(i):
        out = []
        while i >= 0:
            out.insert(0, i)
            i = parents[i]
        return out
    best: list[int] = []
    for i in range(len(tokens)):
        nodes = chain(i)
        ok = len(nodes) <= len(future) and all(tokens[n] == future[d] for d, n in enumerate(nodes))
        # siblings are tried in order: the first child carrying the token wins
        if ok and len(nodes) > len(best) and all(
                min(k for k in range(len(tokens)) if parents[k] == (parents[n]) and tokens[k] == tokens[n]) == n
                for n in nodes):
            best = nodes
    return best


@st.composite
def trees(draw):
    n = draw(st.integers(0, 12))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    tokens = [draw(st.integers(0, 2)) for _ in range(n)]
    return tokens, parents


@given(tree=trees(), future=st.lists(st.integers(0, 2), max_size=8))
def test_the_accepted_path_is_the_one_verification_accepts(tree, future):
    tokens, parents = tree
    if not tokens:
        return
    draft = Draft(np.array(tokens), np.array(parents, dtype=np.int32))
    assert accepted_path(draft, future) == brute_path(tokens, parents, future)
    chain = Draft(np.array(tokens))
    n = next((i for i, (a, b) in enumerate(zip(tokens, future)) if a != b), min(len(tokens), len(future)))
    assert accepted_path(chain, future) == list(range(n))


@settings(max_examples=30, deadline=None)
@given(seq=st.lists(st.integers(0, 4), min_size=8, max_size=100), drafter=st.sampled_from(DRAFTERS))
def test_hindsight_commits_the_same_tokens_and_only_saves_time(seq, drafter):
    """gate and trim change what is sent, never what is committed: the steps are the drafter's own,
    each no dearer; cut wastes no draft token."""
    case = case_of(seq, len(seq) // 3)
    own = replay_case(case, make(drafter), CPU_SMOLLM2).stats.steps
    times = {}
    for mode in ("gate", "trim"):
        steps = replay_case(case, Hindsight(make(drafter), sequence_of(case), mode, CPU_SMOLLM2),
                            CPU_SMOLLM2).stats.steps
        assert [(s.context, s.committed) for s in steps] == [(s.context, s.committed) for s in own]
        times[mode] = [CPU_SMOLLM2.cost(s.drafted + 1, s.context) for s in steps]
        if mode == "gate":
            assert all(s.accepted > 0 or s.drafted == 0 for s in steps)
        else:
            assert all(s.accepted == s.drafted for s in steps)
    mine = [CPU_SMOLLM2.cost(s.drafted + 1, s.context) for s in own]
    assert all(t <= g + 1e-15 and g <= m + 1e-15 for t, g, m in zip(times["trim"], times["gate"], mine))
    cut = replay_case(case, Hindsight(make(drafter), sequence_of(case), "cut", CPU_SMOLLM2),
                      CPU_SMOLLM2).stats.steps
    assert all(s.accepted == s.drafted for s in cut)


def test_explain_takes_a_stream_and_hindsight():
    answer = list(range(20, 40))
    cases = [TraceCase(f"t/{i}", "t", 1, [1, 2, 3 + i], answer, [], "toy", 48, [], len(answer)) for i in range(2)]
    sets = [TraceSet(Path("t.jsonl.gz"), "t", cases, CPU_SMOLLM2)]
    alone = explain(sets, "suffix-automaton:history=true")["(all)"]
    stream = explain(sets, "suffix-automaton:history=true", stream=True)["(all)"]
    def forwards(loss):  # the estimated forward time: the drafter's own measured time left out
        return loss.run - loss.parts["drafter"]

    assert forwards(stream) < forwards(alone)  # the second request copies the first one's answer
    ceiling = explain(sets, "suffix-automaton:history=true", stream=True, hindsight="trim")["(all)"]
    assert forwards(ceiling) <= forwards(stream)
    with pytest.raises(ValueError, match="hindsight mode"):
        explain(sets, "unfold", hindsight="perfect")
