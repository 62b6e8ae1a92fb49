"""Traces: replay through the same loop gives exactly the live greedy run's steps."""

from __future__ import annotations

import gzip

import pytest
from toys import tiny_llama

import decoding
import lookup
from decoding.cost import estimated_speedup
from decoding.generate import StepRecord
from decoding.trace_target import TraceTarget
from experiments.benchmarks.traces import TraceCase, append_case, read_cases
from experiments.running.replay import replay_case
from lookup.cost import CostProfile
from lookup.errors import PLDError

PROMPT = [5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9]
DRAFTERS = ["unfold", "suffix-automaton", "voting", "adaptive", "suffix-automaton:min_match=1"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=48, seed=3)


def trace_of(target, prompt, n) -> TraceCase:
    out = decoding.generate(target, prompt, lookup.create("none"), n)
    return TraceCase("t/0", "test", 1, list(prompt), out.tokens, [s.forward_s for s in out.stats.steps],
                     target.name, target.vocab_size, sorted(target.eos_token_ids), n)


@pytest.mark.parametrize("spec", DRAFTERS)
def test_replay_equals_the_live_run_step_by_step(tiny, spec):
    from experiments.running.methods import parse_method

    trace = trace_of(tiny, PROMPT, 60)
    method = parse_method(spec)
    live = decoding.generate(tiny, PROMPT, method.make(), 60)
    replayed = replay_case(trace, method.make(), CostProfile.flat(64))
    assert replayed.tokens == live.tokens == trace.output
    assert replayed.stats.tau == live.stats.tau
    assert [(s.drafted, s.accepted) for s in replayed.stats.steps] == [(s.drafted, s.accepted) for s in live.stats.steps]


def test_trace_target_times_come_from_the_profile():
    profile = CostProfile((1, 2, 8), (1.0, 2.0, 2.0))
    t = TraceTarget([1, 2], [3, 4, 5, 6], vocab_size=10, profile=profile)
    t.start([1, 2])
    s = t.score([2, 3, 4])
    assert s.argmax.tolist() == [3, 4, 5] and s.seconds == 2.0 and s.logits is None


def test_trace_target_costs_follow_the_context():
    # a forward costs its context length in seconds, whatever its size
    profile = CostProfile((1, 8), (1.0, 1.0), contexts=(1, 100), grid=((1.0, 1.0), (100.0, 100.0)))
    t = TraceTarget([1, 2], [3, 4, 5, 6], vocab_size=10, profile=profile)
    t.start([1, 2])
    assert t.score([2]).seconds == 2.0  # the prompt's 2 tokens
    t.keep(1)
    assert t.score([3, 4]).seconds == 3.0
    assert t.score_tree([3, 4, 9], [-1, 0, 0]).seconds == 3.0


def test_trace_target_refuses_other_prompts_sampling_and_overruns():
    t = TraceTarget([1, 2], [3, 4], vocab_size=10)
    with pytest.raises(PLDError, match="another prompt"):
        t.start([1, 3])
    with pytest.raises(PLDError, match="greedy"):
        decoding.generate(t, [1, 2], lookup.create("none"), 2, temperature=0.5)
    with pytest.raises(PLDError, match="max_new_tokens <= 2"):
        decoding.generate(t, [1, 2], lookup.create("none"), 5)


def test_estimated_speedup_formula():
    profile = CostProfile((1, 2, 4), (1.0, 1.5, 1.5))
    steps = [StepRecord(10, 3, 3, 4, 0.0, 0.0), StepRecord(14, 0, 0, 1, 0.0, 0.0)]
    # 5 tokens x 1.0 / (cost(4) + cost(1)) = 5 / 2.5
    assert estimated_speedup(steps, profile) == pytest.approx(2.0)


def test_trace_files_append_and_survive_a_cut_tail(tmp_path):
    path = tmp_path / "x-n4.jsonl.gz"
    a = TraceCase("a", "c", 1, [1], [2, 3], [0.1, 0.1], "m", 10, [2], 4)
    b = TraceCase("b", "c", 1, [1], [4], [0.1], "m", 10, [2], 4)
    append_case(path, a)
    append_case(path, b)
    assert [c.case for c in read_cases(path)] == ["a", "b"]
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # a crash in the middle of the last member
    assert [c.case for c in read_cases(path)] == ["a"]
    with gzip.open(path, "rt") as f:  # noqa: F841 - the file is still a readable gzip prefix
        pass


def test_replay_leaves_out_drafters_that_read_the_targets_logits():
    from experiments.running.replay import default_specs, replay_rows

    assert "recycling" not in default_specs() and "suffix-automaton" in default_specs()
    assert not lookup.replayable("recycling") and lookup.replayable("voting")
    with pytest.raises(PLDError, match="recycling read the target's top-k"):
        replay_rows([], ["recycling"], progress=False)


def test_a_case_recorded_in_two_files_is_refused_not_mixed_up(tmp_path):
    from experiments.benchmarks.traces import load_trace_sets, trace_file
    from experiments.running.replay import ReplayComparison

    case = TraceCase("t/0", "t", 1, [1, 2, 3, 1, 2], [3, 1, 2], [0.01] * 3, "toy", 8, [0], 4)
    for length in (4, 8):
        append_case(trace_file(tmp_path, "t", length), case)
    with pytest.raises(PLDError, match="t/0 is in both t-n4.jsonl.gz and t-n8.jsonl.gz"):
        ReplayComparison(load_trace_sets(tmp_path), ["none"], results_dir=None)


def test_a_replay_rerun_appends_nothing_and_a_code_change_replays_again(tmp_path, monkeypatch):
    from experiments.benchmarks.traces import load_trace_sets, trace_file
    from experiments.running import replay
    from experiments.running.store import ResultStore

    traces, results = tmp_path / "traces", tmp_path / "results"
    for i in range(3):
        case = TraceCase(f"t/{i}", "t", 1, [1, 2, 3, 1, 2, i], [3, 1, 2, i], [0.01] * 4, "toy", 8, [0], 4)
        append_case(trace_file(traces, "t", 4), case)

    def run(specs):
        comparison = replay.ReplayComparison(load_trace_sets(traces), specs, results)
        comparison.run(progress=False)
        return comparison, [r.method for r in ResultStore(comparison.store.path).rows()]

    first, lines = run(["none", "unfold"])
    assert len(first.rows) == 6 and len(lines) == 6
    _, lines = run(["none", "unfold"])
    assert len(lines) == 6  # nothing replayed, nothing appended
    _, lines = run(["none", "unfold", "voting"])
    assert sorted(lines) == ["none"] * 3 + ["unfold"] * 3 + ["voting"] * 3  # only the new drafter
    monkeypatch.setattr(replay, "code_key", lambda *a, **k: "changed")
    again, lines = run(["none"])
    assert len(lines) == 12 and all(r.code == "changed" for r in again.rows.values())


def test_other_traces_under_the_same_names_are_not_served_from_the_results(tmp_path):
    from experiments.benchmarks.traces import load_trace_sets, trace_file
    from experiments.running.replay import ReplayComparison

    prompt = [1, 2, 3, 1, 2, 3, 1, 2]
    for folder, output in (("a", [3, 1, 2, 3, 1, 2]), ("b", [9, 8, 7, 6, 5, 4])):
        append_case(trace_file(tmp_path / folder, "t", 8),
                    TraceCase("t/0", "t", 1, prompt, output, [0.01] * 6, "toy", 16, [0], 8))
    taus = []
    for folder in ("a", "b"):
        comparison = ReplayComparison(load_trace_sets(tmp_path / folder), ["suffix-automaton"], tmp_path / "results")
        comparison.run(progress=False)
        taus.append(comparison.rows[("t/0", "suffix-automaton")].tau)
    assert taus[0] > 1.5 and taus[1] == 1.0


@pytest.mark.parametrize("change,match", [
    (dict(prompts=-1), "--prompts must be >= 1"),
    (dict(tasks="t,typo"), "unknown task 'typo'"),
])
def test_bad_replay_options_are_one_line(tmp_path, change, match):
    import argparse

    from experiments.benchmarks.traces import trace_file
    from experiments.running.replay import ReplayComparison

    append_case(trace_file(tmp_path, "t", 8), TraceCase("t/0", "t", 1, [1, 2], [3], [0.01], "toy", 16, [0], 8))
    args = argparse.Namespace(traces=tmp_path, tasks=None, full=False, prompts=1, results=None, fresh=False)
    for key, value in change.items():
        setattr(args, key, value)
    with pytest.raises(PLDError, match=match):
        ReplayComparison.from_args(args, ["none"])
