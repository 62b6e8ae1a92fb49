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
from experiments.running.hindsight import (Hindsight, Signal, accepted_path, parse_mode, rank_auc, signal_sigma,
                                           with_hindsight)
from experiments.running.methods import parse_method
from experiments.running.oracle import sequence_of
from experiments.running.replay import replay_case
from lookup.base import Draft
from pldcore.setting import reference_setting
from pldcore.cost import CPU_SMOLLM2
from pldcore.errors import PLDError

DRAFTERS = ["adaptive", "suffix-automaton", "voting:tree=true", "unfold"]


def make(spec: str) -> lookup.Drafter:
    return parse_method(spec).make(reference_setting(CPU_SMOLLM2))


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
    with pytest.raises(PLDError, match="hindsight mode"):
        explain(sets, "unfold", hindsight="perfect")


def test_hindsight_modes_parse_and_refuse_what_they_do_not_know():
    assert parse_mode("trim") == ("trim", None)
    assert parse_mode("signal:0.9") == ("signal", 0.9)
    assert parse_mode("signal:1") == ("signal", 1.0)
    for bad in ("perfect", "trim:2", "signal", "signal:0.4", "signal:1.5", "signal:high"):
        with pytest.raises(PLDError, match="hindsight mode"):
            parse_mode(bad)
    with pytest.raises(PLDError, match="needs an adaptive drafter"):
        with_hindsight(make("unfold"), [1, 2, 3], "signal:0.9", CPU_SMOLLM2)


@given(scores=st.lists(st.integers(0, 4), min_size=1, max_size=30), data=st.data())
def test_rank_auc_is_the_share_of_positive_negative_pairs_in_order(scores, data):
    labels = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    got = rank_auc([float(s) for s in scores], labels)
    if not pos or not neg:
        assert got is None
        return
    brute = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert got == pytest.approx(brute)


@pytest.mark.parametrize("auc", [0.55, 0.7, 0.9, 0.99])
def test_the_signal_noise_gives_the_asked_auc(auc):
    """A reading y + sigma * noise ranks y=1 above y=0 with the AUC asked for (large sample)."""
    sigma = signal_sigma(auc)
    rng = np.random.default_rng(0)
    y = rng.random(40_000) < 0.4
    assert rank_auc(y + sigma * rng.standard_normal(len(y)), y) == pytest.approx(auc, abs=0.01)
    assert signal_sigma(1.0) == 0.0 and signal_sigma(0.5) == float("inf")


@settings(max_examples=25, deadline=None)
@given(seq=st.lists(st.integers(0, 4), min_size=8, max_size=100), history=st.booleans())
def test_a_signal_of_no_use_changes_nothing_and_a_perfect_one_wastes_nothing(seq, history):
    """signal:0.5 is the drafter itself; signal:1 knows each node, so no draft token is rejected,
    and its first-token predictions rank perfectly."""
    spec = "adaptive:history=true" if history else "adaptive"
    case = case_of(seq, len(seq) // 3)
    own = replay_case(case, make(spec), CPU_SMOLLM2).stats.steps
    useless = Signal(make(spec), sequence_of(case), 0.5)
    steps = replay_case(case, useless, CPU_SMOLLM2).stats.steps
    assert [(s.context, s.drafted, s.committed) for s in steps] == [(s.context, s.drafted, s.committed) for s in own]
    perfect = Signal(make(spec), sequence_of(case), 1.0)
    steps = replay_case(case, perfect, CPU_SMOLLM2).stats.steps
    assert all(s.accepted == s.drafted for s in steps)
    predictions, outcomes = zip(*perfect.readings) if perfect.readings else ((), ())
    assert all((p > 0.5) == y for p, y in zip(predictions, outcomes))


def test_explain_reports_the_first_token_auc_of_a_signal_run():
    rng = np.random.default_rng(3)
    cases = []
    for i in range(3):
        seq = rng.integers(0, 6, 90).tolist()
        cases.append(case_of(seq, 30))
    sets = [TraceSet(Path("t.jsonl.gz"), "t", cases, CPU_SMOLLM2)]
    plain = explain(sets, "adaptive")["(all)"]
    assert plain.first_token_auc is None
    runs = [explain(sets, "adaptive", hindsight=f"signal:{a}")["(all)"] for a in (0.5, 1.0)]
    assert runs[1].first_token_auc == 1.0
    assert runs[0].run - runs[0].parts["drafter"] == pytest.approx(plain.run - plain.parts["drafter"])
    assert runs[1].run - runs[1].parts["drafter"] <= runs[0].run - runs[0].parts["drafter"]


def test_the_explain_command_sweeps_signals_into_a_table_and_a_curve(tmp_path, capsys):
    from experiments import traces
    from experiments.benchmarks.traces import append_case

    rng = np.random.default_rng(5)
    for i in range(3):
        seq = rng.integers(0, 6, 80).tolist()
        append_case(tmp_path / "toy-n3.jsonl.gz", TraceCase(f"toy/{i}", "toy", 1, seq[:30], seq[30:], [], "toy", 16,
                                                            [], 50))
    plot = tmp_path / "gap.png"
    args = ["explain", "--traces", str(tmp_path), "--plot", str(plot)]
    assert traces.main([*args, "--hindsight", "signal:0.5,signal:1"]) == 0
    out = capsys.readouterr().out
    assert "adaptive [hindsight: signal:1]" in out and "first-token AUC" in out
    assert plot.exists() and (tmp_path / "gap_signal.png").exists()
    assert traces.main([*args, "--hindsight", "signal:0.3"]) == 2  # a user mistake: one line, no traceback
    assert "signal:AUC" in capsys.readouterr().err


def test_the_explain_command_prices_by_another_profile(tmp_path, capsys):
    """``--profile FILE``: the drafters and the oracle as they fare under another machine's costs; a
    missing or malformed file is one line of error."""
    from experiments import traces
    from experiments.benchmarks.traces import append_case
    from pldcore.cost import CostProfile

    rng = np.random.default_rng(6)
    motif = rng.integers(0, 9, 10).tolist()
    for i in range(2):
        seq = [t if rng.random() > 0.1 else int(rng.integers(0, 9)) for _ in range(8) for t in motif]
        append_case(tmp_path / "toy-n2.jsonl.gz", TraceCase(f"toy/{i}", "toy", 1, seq[:30], seq[30:], [], "toy", 16,
                                                            [], 50))
    flat = tmp_path / "flat.json"
    CostProfile.flat(name="flat-test").save(flat)
    args = ["explain", "--traces", str(tmp_path), "--plot", "", "--drafters", "adaptive"]
    assert traces.main(args) == 0
    reference = capsys.readouterr().out
    assert traces.main([*args, "--profile", str(flat)]) == 0
    priced = capsys.readouterr().out
    assert f"flat-test, profile {flat}" in priced and "flat-test" not in reference

    def oracle(out):  # the (all) row's oracle column
        return next(line.split()[3] for line in out.splitlines() if line.startswith("(all)"))

    assert oracle(priced) != oracle(reference)  # a free forward makes every copy worth more
    assert traces.main([*args, "--profile", str(tmp_path / "none.json")]) == 2
    assert "no file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert traces.main([*args, "--profile", str(tmp_path / "bad.json")]) == 2
    assert "is not a cost profile" in capsys.readouterr().err
    assert traces.main([*args, "--profile", str(tmp_path)]) == 2  # a folder
    assert "is not a readable cost profile" in capsys.readouterr().err
