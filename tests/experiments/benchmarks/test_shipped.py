"""The shipped benchmark: versioned data that loads on a fresh clone, whole and untouched."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.benchmarks.traces import (BENCHMARK_FILE, SHIPPED_ROOT, benchmark_hash, case_seed, default_folder,
                                           load_trace_sets, read_benchmark, shipped_folder, traces_regime)
from pldcore.cost import CPU_SMOLLM2

pytestmark = pytest.mark.skipif(not (shipped_folder() / BENCHMARK_FILE).exists(), reason="no shipped benchmark")


@pytest.fixture(scope="module")
def sets():
    return load_trace_sets()  # the default: the shipped folder, checked against its hash


def test_it_is_the_default_and_matches_its_recorded_hash(sets):
    info = read_benchmark(shipped_folder())
    assert default_folder() == shipped_folder()
    assert benchmark_hash(sets) == info["hash"]
    assert sum(len(s.cases) for s in sets) == info["cases"] == 400
    assert {s.task: len(s.cases) for s in sets} == info["tasks"]


def test_it_is_scored_with_the_reference_profile(sets):
    assert all(s.profile == CPU_SMOLLM2 for s in sets)


def test_every_case_holds_its_top_rows_and_they_are_the_greedy_answer(sets):
    for trace_set in sets:
        for case in trace_set.cases:
            assert case.max_new_tokens == 128 and 1 <= len(case.output) <= 128
            assert case.top is not None and case.top.ids.shape == (len(case.prompt) + len(case.output) - 1, 8)
            # under greedy decoding the top-1 after each output position's context is the next token
            assert np.array_equal(case.top.ids[len(case.prompt) - 1 :, 0], case.output)
            probs = case.top.probs.astype(np.float32)
            assert (np.diff(probs, axis=1) <= 1e-3).all() and (probs.sum(axis=1) <= 1.01).all()


def test_a_case_that_stopped_early_stopped_at_eos(sets):
    for trace_set in sets:
        for case in trace_set.cases:
            if len(case.output) < case.max_new_tokens:
                assert case.output[-1] in case.eos, case.case


# -- the sampled benchmarks beside them (data/<model>/<regime>/) --------------------------------------
SAMPLED = sorted(p.parent for p in SHIPPED_ROOT.glob(f"*/*/{BENCHMARK_FILE}"))


@pytest.mark.parametrize("folder", SAMPLED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_sampled_benchmark_samples_its_models_prompts_with_a_seed_per_case(folder):
    info, sets = read_benchmark(folder), load_trace_sets(folder)  # checked against its hash
    regime = traces_regime(sets)
    assert not regime.greedy and folder.name == regime.name == info["regime"]
    assert all(s.profile == load_trace_sets(folder.parent)[0].profile for s in sets)  # the model's reference
    greedy = {c.case: c for s in load_trace_sets(folder.parent) for c in s.cases}
    for trace_set in sets:
        for case in trace_set.cases:
            assert case.seed == case_seed(info["seed"], case.case)
            assert case.top is not None and case.top.ids.shape == (len(case.prompt) + len(case.output) - 1, 8)
            # the greedy benchmark's prompts (a second turn follows the model's own sampled answer)
            assert case.case in greedy
            if case.turn == 1:
                assert case.prompt == greedy[case.case].prompt
