"""The oracle-gap decomposition: its parts add up to the gap, on any trace and any drafter."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from decoding.cost import estimated_times
from experiments.benchmarks.traces import TraceCase, TraceSet
from experiments.running.explain import PARTS, explain, explain_case
from experiments.running.oracle import cost_aware_oracle_times, cost_aware_plan
from experiments.running.replay import replay_case
from experiments.running.rows import case_result
from pldcore.cost import CPU_SMOLLM2, CostProfile

LOOKUP = ["unfold", "suffix-automaton", "voting", "adaptive", "none"]


def case_of(seq: list[int], start: int) -> TraceCase:
    return TraceCase("t/0", "t", 1, seq[:start], seq[start:], [], "toy", 16, [], len(seq) - start)


sequences = st.lists(st.integers(0, 5), min_size=4, max_size=120).filter(lambda s: len(s) >= 4)


@settings(max_examples=40, deadline=None)
@given(seq=sequences, split=st.floats(0.1, 0.9), drafter=st.sampled_from(LOOKUP),
       profile=st.sampled_from([CPU_SMOLLM2, CostProfile.flat(64)]))
def test_the_parts_add_up_to_the_gap_and_lookup_never_beats_the_oracle(seq, split, drafter, profile):
    case = case_of(seq, max(1, min(len(seq) - 1, int(len(seq) * split))))
    result = replay_case(case, lookup.create(drafter), profile)
    loss = explain_case(case, result, profile)
    assert sum(loss.parts.values()) == pytest.approx(loss.gap, abs=1e-9)
    # the run is priced as its row is, and the board's (decoding phase, all the drafter's time included)
    row = case_result(case.case, case.category, case.turn, len(case.prompt), drafter, {}, result, profile=profile,
                      experiment="", code="", with_prefill=False, measured=False)
    assert loss.run == pytest.approx(row.est_run_s, rel=1e-12) and loss.plain == pytest.approx(row.est_plain_s)
    assert loss.speedup == pytest.approx(row.decode_speedup) == pytest.approx(row.est_speedup)
    plain, spent = estimated_times(result.stats.steps, profile, with_prefill=False)
    assert loss.plain == pytest.approx(plain) and loss.run >= spent  # the steps' time, and the reset's
    assert (loss.plain, loss.oracle) == pytest.approx(cost_aware_oracle_times(case, profile))
    # a drafter that copies from the context reaches no further than the oracle's runs
    assert loss.parts["beyond"] == 0
    assert all(loss.parts[p] >= -1e-12 for p in PARTS)
    assert loss.run - loss.parts["drafter"] >= loss.oracle - 1e-12


def test_plain_decoding_loses_only_by_missing():
    case = case_of([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4], 6)
    loss = explain_case(case, replay_case(case, lookup.create("none"), CPU_SMOLLM2), CPU_SMOLLM2)
    assert loss.gap > 0 and loss.parts["missed"] == pytest.approx(loss.gap - loss.parts["drafter"])
    assert all(loss.parts[p] == 0 for p in ("wrong", "short", "long", "beyond"))


def test_the_plan_drafts_only_correct_runs_and_finishes_at_zero():
    case = case_of([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 9, 9, 1, 2, 3, 4], 5)
    plan = cost_aware_plan(case, CostProfile.flat(64))
    assert plan.best[-1] == 0 and (plan.choice <= plan.runs).all()
    assert np.all(np.diff(plan.best) <= 0)  # less left to generate is never dearer


def brute_force_plan(seq: list[int], start: int, profile: CostProfile, cap: int) -> tuple[list[int], list[float]]:
    """(runs, best) straight from their definitions: the longest capped common prefix after an earlier
    occurrence of the last token, and the cheapest way through the rest, one position at a time."""
    n = len(seq) - start
    runs = []
    for pos in range(start, len(seq)):
        limit, run = min(cap, len(seq) - pos - 1), 0
        for j in range(pos - 1):
            if seq[j] == seq[pos - 1]:
                k = 0
                while k < limit and seq[j + 1 + k] == seq[pos + k]:
                    k += 1
                run = max(run, k)
        runs.append(run)
    best = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = min(min(profile.cost(m, start + i) for m in range(k + 1, cap + 2)) + best[i + k + 1]
                      for k in range(runs[i] + 1))
    return runs, best


@settings(max_examples=40, deadline=None)
@given(seq=sequences, split=st.floats(0.1, 0.9), profile=st.sampled_from([CPU_SMOLLM2, CostProfile.flat(64)]),
       cap=st.sampled_from([1, 4, 64]))
def test_the_plan_equals_brute_force_and_is_kept_by_content(seq, split, profile, cap):
    start = max(1, int(len(seq) * split))
    plan = cost_aware_plan(case_of(seq, start), profile, cap)
    runs, best = brute_force_plan(seq, start, profile, cap)
    assert plan.runs.tolist() == runs and plan.best.tolist() == pytest.approx(best, rel=1e-12, abs=0)
    # kept: the same tokens (another case object) give the same plan, read-only; other tokens or
    # another profile give their own
    assert cost_aware_plan(case_of(list(seq), start), profile, cap) is plan
    assert not (plan.runs.flags.writeable or plan.best.flags.writeable or plan.choice.flags.writeable)
    other = [*seq[:start], 99, *seq[start + 1:]]  # a token never seen before: the runs there change
    assert cost_aware_plan(case_of(other, start), profile, cap).runs.tolist() == brute_force_plan(other, start, profile, cap)[0]
    flat = CostProfile.flat(64) if profile is CPU_SMOLLM2 else CPU_SMOLLM2
    assert cost_aware_plan(case_of(seq, start), flat, cap).best.tolist() == \
        pytest.approx(brute_force_plan(seq, start, flat, cap)[1], rel=1e-12, abs=0)


def test_explain_pools_groups_and_all():
    cases = [TraceCase(f"c/{i}", "code", 1, [1, 2, 3, 1, 2, i + 5], [3, 1, 2, 3], [], "toy", 16, [], 4)
             for i in range(3)]
    cases += [TraceCase("m/0#2", "chat", 2, [4, 5, 6, 4, 5], [6, 4, 5], [], "toy", 16, [], 3)]
    sets = [TraceSet(None, "t", cases, CPU_SMOLLM2)]
    by_group = explain(sets, "suffix-automaton")
    assert list(by_group) == ["chat (turn 2)", "code", "(all)"]
    assert by_group["(all)"].cases == 4 and by_group["code"].cases == 3
    pooled = by_group["(all)"]
    assert pooled.gap == pytest.approx(by_group["code"].gap + by_group["chat (turn 2)"].gap)
    assert sum(pooled.parts.values()) == pytest.approx(pooled.gap)


class SlowReset(lookup.Drafter):
    """Drafts nothing; its reset takes a known while."""

    def reset(self, prompt) -> None:
        super().reset(prompt)
        time.sleep(0.02)

    def propose(self, budget):
        return lookup.Draft(np.zeros(0, dtype=np.int64))


def test_the_drafters_reset_counts_as_its_own_time_as_the_board_counts_it():
    case = case_of([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4], 6)
    result = replay_case(case, SlowReset(), CPU_SMOLLM2)
    loss = explain_case(case, result, CPU_SMOLLM2)
    in_steps = sum(s.drafter_s for s in result.stats.steps)
    assert loss.parts["drafter"] >= in_steps + 0.02 and loss.run == pytest.approx(loss.oracle + loss.gap)
    assert sum(loss.parts.values()) == pytest.approx(loss.gap, abs=1e-9)
