"""Sampled traces: plain sampling with a seed per case, replayed exactly for deterministic drafts.

With our sampler the token committed at each output position is the sample its own uniform picks
from the target's law, whatever was drafted; so a trace of plain sampling is what any deterministic
drafter commits with that seed, and replaying it ("accepted while the draft matches") gives the
live run's steps, chains and trees alike. On a toy model (no float boundaries in sight) they are
equal exactly; the embedded model's check, with its boundary cases, is test_sampled_replay_model.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from toys import tiny_llama

import decoding
import lookup
from decoding.generate import DraftError
from experiments.benchmarks.traces import (TraceCase, TraceSet, append_case, case_seed, load_trace_sets, read_cases,
                                          traces_regime, traces_setting)
from experiments.running.cases import Case
from experiments.running.methods import Sampling, parse_method
from experiments.running.record import record, record_case
from experiments.running.replay import regime_traces, replay_case
from experiments.benchmarks.tasks import Prompt
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime, reference_setting

PROMPT = [5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9]
#: low enough that the toy model's loops survive and drafts are accepted; any T > 0 samples
REGIME = Regime(0.4)
CHAINS_AND_TREES = ["suffix-automaton", "unfold", "adaptive", "recycling", "recycling:width=3"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=48, seed=3)


def sampled_trace(target, seed: int = 11, n: int = 60) -> TraceCase:
    return record_case(target, Case("t/0", "test", 1, list(PROMPT)), n, regime=REGIME, seed=seed)


@pytest.mark.parametrize("spec", CHAINS_AND_TREES)
def test_a_sampled_trace_replays_the_live_run_step_by_step(tiny, spec):
    trace = sampled_trace(tiny)
    assert trace.regime == REGIME and trace.seed == case_seed(11, "t/0")
    greedy = decoding.generate(tiny, PROMPT, lookup.create("none"), 60).tokens
    assert trace.output != greedy  # sampled, not the greedy answer
    method = parse_method(spec)
    live = decoding.generate(tiny, PROMPT, method.make(reference_setting()), 60, temperature=REGIME.temperature,
                             seed=trace.seed)
    replayed = replay_case(trace, method.make(reference_setting()), CostProfile.flat(64))
    assert live.tokens == replayed.tokens == trace.output
    steps = lambda out: [(s.drafted, s.accepted) for s in out.stats.steps]  # noqa: E731
    assert steps(replayed) == steps(live)
    assert live.stats.accepted > 0  # the check has drafts to compare


def test_cases_get_seeds_of_their_own_and_the_same_seed_again(tmp_path):
    tiny = tiny_llama(vocab_size=48, seed=3)
    prompts = [Prompt("a", "test", ["x"]), Prompt("b", "test", ["yy"])]
    tiny.chat_ids = lambda history, system=None: list(PROMPT) + [len(history[-1]["content"])]
    path = record(tiny, "test", prompts, 12, tmp_path, regime=REGIME, seed=3)
    cases = read_cases(path)
    assert [c.seed for c in cases] == [case_seed(3, "a"), case_seed(3, "b")] and cases[0].seed != cases[1].seed
    assert traces_regime(load_trace_sets(tmp_path)) == REGIME
    # recording again adds nothing; another seed or regime into the same file is refused
    assert record(tiny, "test", prompts, 12, tmp_path, regime=REGIME, seed=3) == path and len(read_cases(path)) == 2
    for regime, seed in ((REGIME, 4), (GREEDY, 3), (Regime(1.0), 3)):
        with pytest.raises(PLDError, match="holds cases recorded"):
            record(tiny, "test", prompts, 12, tmp_path, regime=regime, seed=seed)


def test_a_sampled_case_round_trips_and_a_greedy_one_is_stored_as_before(tiny, tmp_path):
    sampled, greedy = sampled_trace(tiny, n=8), record_case(tiny, Case("g/0", "test", 1, list(PROMPT)), 8)
    assert "sampling" not in greedy.to_json()  # greedy benchmarks keep their bytes, and their hash
    append_case(tmp_path / "x-n8.jsonl.gz", sampled)
    back = read_cases(tmp_path / "x-n8.jsonl.gz")[0]
    assert back.sampling == sampled.sampling and back.regime == REGIME and back.output == sampled.output


@pytest.mark.parametrize("bad", [
    {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 1},  # sampled at temperature 0 is not sampled
    {"temperature": 1.0, "top_k": 0, "top_p": 1.5, "seed": 1},
    {"temperature": 1.0, "top_k": -1, "top_p": 1.0, "seed": 1},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": "1"},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 1, "extra": 2},
    "t1",
])
def test_a_case_with_a_malformed_sampling_field_is_dropped(tiny, tmp_path, bad):
    data = sampled_trace(tiny, n=4).to_json()
    data["sampling"] = bad
    with pytest.raises(ValueError, match="sampling"):
        TraceCase.from_json(data)


def test_one_folder_holds_one_regime(tiny, tmp_path):
    a, b = sampled_trace(tiny, n=6), record_case(tiny, Case("g/0", "test", 1, list(PROMPT[:-1])), 6)
    sets = [TraceSet(tmp_path / "a-n6.jsonl.gz", "a", [a], CPU_SMOLLM2),
            TraceSet(tmp_path / "b-n6.jsonl.gz", "b", [b], CPU_SMOLLM2)]
    with pytest.raises(PLDError, match="mix regimes"):
        traces_setting(sets)
    assert traces_setting(sets[:1]).regime == REGIME and traces_setting(sets[1:]).regime == GREEDY


class ProbableDrafter(lookup.Drafter):
    """Drafts one token and says it drew it from a distribution: a stochastic draft."""

    name = "probable"

    def propose(self, budget):
        if budget < 1:
            return lookup.EMPTY_DRAFT
        probs = np.full((1, 48), 1 / 48, dtype=np.float32)
        return lookup.Draft(np.array([5]), probs=probs)


def test_a_sampled_trace_refuses_drafts_that_carry_probabilities(tiny):
    with pytest.raises(DraftError, match="deterministic drafts only"):
        replay_case(sampled_trace(tiny, n=8), ProbableDrafter(), CostProfile.flat(64))
    # a greedy trace verifies greedily, live and replayed alike: the probabilities play no part
    greedy = record_case(tiny, Case("g/0", "test", 1, list(PROMPT)), 8)
    assert replay_case(greedy, ProbableDrafter(), CostProfile.flat(64)).tokens == greedy.output


def test_a_replay_reads_the_regimes_folder_and_refuses_one_it_lacks(tiny, tmp_path):
    greedy_case = record_case(tiny, Case("g/0", "test", 1, list(PROMPT)), 6)
    append_case(tmp_path / "test-n6.jsonl.gz", greedy_case)
    sub = tmp_path / REGIME.name
    append_case(sub / "test-n6.jsonl.gz", sampled_trace(tiny, n=6))
    def read_from(folder, sampling):
        return {Path(s.path).parent for s in regime_traces(folder, sampling)}

    assert read_from(tmp_path, Sampling()) == {tmp_path}
    assert read_from(tmp_path, Sampling(temperature=0.4)) == {sub}
    assert read_from(sub, Sampling(temperature=0.4)) == {sub}
    with pytest.raises(PLDError, match="no traces sampled at temperature 0.7"):
        regime_traces(tmp_path, Sampling(temperature=0.7, top_p=0.9))
    with pytest.raises(PLDError, match="--seed with --replay"):
        regime_traces(tmp_path, Sampling(temperature=0.4, seed=5))
