"""Traces: replay through the same loop gives exactly the live greedy run's steps (and top-k rows)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from toys import tiny_llama

import decoding
import lookup
from decoding.cost import estimated_speedup
from decoding.generate import StepRecord
from decoding.trace_target import TraceTarget
from experiments.benchmarks.traces import TraceCase, append_case, read_cases
from experiments.running.cases import Case
from experiments.running.record import record_case
from experiments.running.replay import replay_case
from pldcore.setting import reference_setting
from pldcore.cost import CostProfile
from pldcore.errors import PLDError

PROMPT = [5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9]
DRAFTERS = ["unfold", "suffix-automaton", "voting", "adaptive", "suffix-automaton:min_match=1", "recycling",
            "adaptive:base=recycling", "recycling:width=3"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=48, seed=3)


def trace_of(target, prompt, n) -> TraceCase:
    return record_case(target, Case("t/0", "test", 1, list(prompt)), n)


class RowSpy(lookup.Drafter):
    """Drafts what ``base`` drafts; keeps every budget and every top-k row the loop hands it."""

    wants_top = 8

    def __init__(self, base: str = "suffix-automaton") -> None:
        super().__init__()
        self.base = lookup.create(base)
        self.calls: list[tuple[list[int], np.ndarray, np.ndarray]] = []
        self.budgets: list[int] = []

    def reset(self, prompt):
        super().reset(prompt)
        self.base.reset(prompt)

    def extend(self, tokens):
        super().extend(tokens)
        self.base.extend(tokens)

    def propose(self, budget):
        self.budgets.append(budget)
        return self.base.propose(budget)

    def observe_top(self, tokens, top, probs):
        self.calls.append((np.asarray(tokens).tolist(), top.copy(), probs.copy()))


@pytest.mark.parametrize("spec", DRAFTERS)
def test_replay_equals_the_live_run_step_by_step(tiny, spec):
    from experiments.running.methods import parse_method

    trace = trace_of(tiny, PROMPT, 60)
    method = parse_method(spec)
    live = decoding.generate(tiny, PROMPT, method.make(reference_setting()), 60)
    replayed = replay_case(trace, method.make(reference_setting()), CostProfile.flat(64))
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


def test_replay_hands_a_drafter_exactly_the_rows_the_live_loop_does(tiny):
    """Step by step: the same tokens, the same top-8 ids and float16 probabilities, and never the
    row of the newest committed token (under greedy its top-1 would be the next token)."""
    trace = trace_of(tiny, PROMPT, 60)
    live_spy, replay_spy = RowSpy(), RowSpy()
    live = decoding.generate(tiny, PROMPT, live_spy, 60)
    replayed = replay_case(trace, replay_spy, CostProfile.flat(64))
    assert replayed.tokens == live.tokens == trace.output
    assert len(live_spy.calls) == len(replay_spy.calls) == live.stats.forwards + 1
    seq = PROMPT + live.tokens
    seen = 0
    for (lt, li, lp), (rt, ri, rp) in zip(live_spy.calls, replay_spy.calls):
        assert lt == rt == seq[seen : seen + len(lt)]
        seen += len(lt)
        assert np.array_equal(li, ri)
        np.testing.assert_allclose(lp.astype(np.float32), rp.astype(np.float32), rtol=1e-2, atol=1e-4)
        assert lp.dtype == rp.dtype == np.float16
    assert seen == len(seq) - 1  # every token's row but the newest's
    rows = np.concatenate([ids for _, ids, _ in replay_spy.calls])
    assert rows[len(PROMPT) - 1 :, 0].tolist() == live.tokens  # greedy: a row's top-1 is the next token


def test_replay_gives_the_budget_a_live_run_had_not_the_traces_length():
    """A trace that ended at EOS after 3 tokens of 20 allowed: the drafter sees the budget a live
    run had (19 at the first step), which does not tell it where the answer stops."""
    case = TraceCase("t/0", "t", 1, [1, 2, 3, 1, 2], [3, 1, 0], [], "toy", 8, [0], 20)
    spy = RowSpy()
    spy.wants_top = 0
    out = replay_case(case, spy, CostProfile.flat(64))
    assert out.tokens == [3, 1, 0] and out.stop_reason == "eos"
    assert spy.budgets[0] == 19


def test_replay_refuses_top_k_drafters_on_traces_without_rows():
    from experiments.benchmarks.traces import TraceSet
    from experiments.running.replay import default_specs, replay_rows

    assert "recycling" in default_specs() and "suffix-automaton" in default_specs()
    bare = TraceSet(None, "t", [TraceCase("t/0", "t", 1, [1, 2], [3], [], "toy", 8, [0], 1)], CostProfile.flat(64))
    bare.path = __import__("pathlib").Path("t-n1.jsonl.gz")
    with pytest.raises(PLDError, match="recycling read the target's top-8; t-n1.jsonl.gz holds no top-k rows"):
        replay_rows([bare], ["recycling"], progress=False)


def test_a_case_recorded_in_two_files_is_refused_not_mixed_up(tmp_path):
    from experiments.benchmarks.traces import load_trace_sets, trace_file
    from experiments.running.replay import ReplayComparison

    for length in (4, 8):
        case = TraceCase("t/0", "t", 1, [1, 2, 3, 1, length], [3, 1, 2], [0.01] * 3, "toy", 8, [0], 4)
        append_case(trace_file(tmp_path, "t", length), case)
    with pytest.raises(PLDError, match="t/0 is in both t-n4.jsonl.gz and t-n8.jsonl.gz"):
        ReplayComparison(load_trace_sets(tmp_path), ["none"], results_dir=None)


def test_a_benchmark_holds_each_prompt_once(tmp_path):
    """One prompt recorded twice (say at two lengths) would let a drafter that remembers earlier
    cases replay its own memory of the answer: the loader refuses it."""
    from experiments.benchmarks.traces import load_trace_sets, trace_file

    for length in (4, 8):
        case = TraceCase(f"t/{length}", "t", 1, [1, 2, 3, 1, 2], [3, 1, 2], [], "toy", 8, [0], 4)
        append_case(trace_file(tmp_path, "t", length), case)
    with pytest.raises(PLDError, match=r"cases t/4 \(t-n4.jsonl.gz\) and t/8 \(t-n8.jsonl.gz\) have the same prompt"):
        load_trace_sets(tmp_path)


def test_a_versioned_benchmark_refuses_edited_traces(tmp_path):
    from experiments.benchmarks.traces import load_trace_sets, trace_file, write_benchmark

    path = trace_file(tmp_path, "t", 4)
    append_case(path, TraceCase("t/0", "t", 1, [1, 2, 3], [3, 1, 2], [], "toy", 8, [0], 4))
    write_benchmark(tmp_path, load_trace_sets(tmp_path))
    assert load_trace_sets(tmp_path)[0].cases[0].output == [3, 1, 2]
    append_case(path, TraceCase("t/1", "t", 1, [1, 2, 4], [3, 1, 2], [], "toy", 8, [0], 4))
    with pytest.raises(PLDError, match="do not match their BENCHMARK.json"):
        load_trace_sets(tmp_path)


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


@pytest.mark.parametrize("spec", ["peer:suffix-decoding:history=true", "suffix-automaton:history=true",
                                  "adaptive:history=true"])
def test_a_stream_lets_a_history_drafter_learn_from_earlier_cases_only(tmp_path, spec):
    """--stream: one drafter serves the cases in order; a drafter with history drafts the second case's
    answer from the first case's, which a fresh drafter per case cannot."""
    from experiments.benchmarks.traces import load_trace_sets, trace_file
    from experiments.running.replay import ReplayComparison

    answer = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]
    for i in range(2):
        append_case(trace_file(tmp_path, "t", 12), TraceCase(f"t/{i}", "t", 1, [1, 2, 3 + i], answer, [], "toy", 48,
                                                            [], 12))
    taus = {}
    for stream in (False, True):
        comparison = ReplayComparison(load_trace_sets(tmp_path), [spec], results_dir=None, stream=stream)
        comparison.run(progress=False)
        taus[stream] = [comparison.rows[(f"t/{i}", spec)].tau for i in range(2)]
    assert taus[False][0] == taus[True][0] == taus[False][1] == 1.0  # nothing to copy within a case
    assert taus[True][1] > 2.0  # the stream's second case copies the first case's answer
