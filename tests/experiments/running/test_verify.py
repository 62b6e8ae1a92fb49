"""traces.py verify: re-decoding recorded cases on the model here tells which ones still hold."""

from __future__ import annotations

import pytest
from toys import tiny_llama

import decoding
import lookup
from experiments.benchmarks.traces import TraceCase, TraceSet, spread_cases
from experiments.running.verify import check_traces
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

PROMPTS = [[5, 9, 11, 5, 9], [3, 4, 5, 3, 4, 5], [7, 8, 9, 10]]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=48, seed=5)


def recorded(target, n: int = 12) -> list[TraceSet]:
    cases = []
    for i, prompt in enumerate(PROMPTS):
        out = decoding.generate(target, prompt, lookup.create("none"), n)
        cases.append(TraceCase(f"t/{i}", "t", 1, prompt, out.tokens, [0.0] * len(out.tokens), target.name,
                               target.vocab_size, sorted(target.eos_token_ids), n))
    return [TraceSet(None, "t", cases, CostProfile.flat(8))]


def test_the_models_own_traces_are_identical(tiny):
    checks = check_traces(tiny, recorded(tiny), 3, progress=False)
    assert [c.case for c in checks] == ["t/0", "t/1", "t/2"] and all(c.identical for c in checks)


def test_a_changed_token_is_found_with_the_margin_there(tiny):
    sets = recorded(tiny)
    case = sets[0].cases[1]
    case.output = case.output[:4] + [(case.output[4] + 1) % 48] + case.output[5:]
    checks = check_traces(tiny, sets, 3, progress=False)
    bad = [c for c in checks if not c.identical]
    assert [c.case for c in bad] == ["t/1"]
    assert bad[0].mismatch.position == 4 and bad[0].mismatch.margin > 0


def test_another_models_traces_and_a_bad_count_are_one_line(tiny):
    sets = recorded(tiny)
    with pytest.raises(PLDError, match="vocabulary of 48"):
        check_traces(tiny_llama(vocab_size=64), sets, 1, progress=False)
    with pytest.raises(PLDError, match="--cases must be >= 1"):
        check_traces(tiny, sets, 0, progress=False)


def test_cases_spread_over_tasks_first_cases_first():
    def trace_set(task: str, n: int) -> TraceSet:
        return TraceSet(None, task, [TraceCase(f"{task}/{i}", task, 1, [1], [2], [], "m", 8, [], 1)
                                     for i in range(n)], CostProfile.flat(8))

    picked = spread_cases([trace_set("a", 3), trace_set("b", 1), trace_set("c", 2)], 5)
    assert [c.case for _, c in picked] == ["a/0", "b/0", "c/0", "a/1", "c/1"]
    assert len(spread_cases([trace_set("a", 2)], 10)) == 2
