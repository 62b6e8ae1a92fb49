"""Cross-fitted scores: the halves split a benchmark by prompt, each fold's fit never saw its cases,
each case is scored from the run whose fit did not see it, and the board shows the score beside
the in-sample one for exactly the entries fitted on the benchmark scored."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from toys_competition import QUICK, make_trace_folder  # tests/experiments/competition is on sys.path

import lookup
from experiments.benchmarks.traces import (TraceCase, TraceSet, benchmark_hash, halves, in_order, load_trace_sets,
                                          sampling_of, subset, traces_setting)
from pldcore.setting import Regime
from experiments.competition import cross_fit, render
from experiments.competition import entries as lb
from experiments.competition.board import Board
from experiments.competition.loader import entry_of
from experiments.competition.sandbox import Evaluation, Submission
from experiments.competition.scoring import benchmark_info
from experiments.running.acceptance_fit import collect, fits_of
from experiments.running.replay import replay_case
from experiments.running.serving import serve_traces
from pldcore.cost import CPU_SMOLLM2


def _sets(layout: list[tuple[str, list[int]]]) -> list[TraceSet]:
    """Trace sets by task, each prompt with its number of turns (cases are ids only here)."""
    out = []
    for task, turns in layout:
        cases = [TraceCase(f"{task}/{i}" + (f"#{t}" if n > 1 else ""), task, t, [1], [2], [], "toy", 8, [], 1)
                 for i, n in enumerate(turns) for t in range(1, n + 1)]
        out.append(TraceSet(Path(f"/x/{task}-n1.jsonl.gz"), task, cases, CPU_SMOLLM2))
    return out


layouts = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.lists(st.integers(1, 3), min_size=1, max_size=7)),
                   min_size=1, max_size=4, unique_by=lambda t: t[0])


@given(layouts, st.randoms())
def test_halves_split_prompts_alternately_in_the_benchmarks_order(layout, random):
    sets = _sets(layout)
    random.shuffle(sets)  # the order the sets come in does not matter: the benchmark's order does
    first, second = halves(sets)
    # brute force: prompts in the benchmark's order (tasks by name, cases in file order), alternately
    prompts = []
    for task, turns in sorted(layout):
        prompts += [f"{task}/{i}" for i in range(len(turns))]
    every = {c.case for s in sets for c in s.cases}
    assert first | second == every and not first & second
    for case in every:
        prompt = case.split("#")[0]
        assert (case in first) == (prompts.index(prompt) % 2 == 0)
    assert len({c.split("#")[0] for c in first}) - len({c.split("#")[0] for c in second}) in (0, 1)
    kept = subset(sets, first)
    assert {c.case for s in kept for c in s.cases} == first and all(s.cases for s in kept)
    assert [c.case for s in in_order(kept) for c in s.cases] == [c.case for s in in_order(sets) for c in s.cases
                                                                  if c.case in first]


def _toy(tmp_path_factory, seed: int = 3):
    folder = make_trace_folder(tmp_path_factory.mktemp("xfit") / "toy", seed=seed, cases=4)
    return load_trace_sets(folder)


def test_each_fold_is_fitted_on_the_other_half_only(tmp_path_factory):
    sets = _toy(tmp_path_factory)
    folds = cross_fit.folds(sets)
    first, second = halves(sets)
    assert [held for held, _ in folds] == [first, second]
    for (held, fits), other in zip(folds, (second, first)):
        assert fits.benchmark == benchmark_hash(subset(sets, other))  # fitted on the other half's cases alone
        assert fits.to_json() == fits_of(collect(subset(sets, other)), fits.model, fits.benchmark).to_json()


def _in_process(sets, stream: bool = False):
    """evaluate() without the sandbox: the drafter the submission names, replayed in this process."""
    calls = []

    def evaluate(submission):
        calls.append(submission.params)
        result = Evaluation(submission, stream=stream)
        make = lambda setting: lookup.create(submission.source["name"], setting=setting,  # noqa: E731
                                             **submission.params)
        for trace_set, case, setting, drafter in serve_traces(sets, make, traces_setting(sets), stream=stream):
            result.cases.append((trace_set, case, replay_case(case, drafter, setting.profile)))
        return result
    return evaluate, calls


def test_every_case_is_scored_from_the_run_whose_fit_did_not_see_it(tmp_path_factory):
    sets = _toy(tmp_path_factory)
    folds = cross_fit.folds(sets)
    evaluate, calls = _in_process(sets)
    scored = cross_fit.cross_fitted(Submission.builtin("adaptive"), folds, evaluate, "bench")
    assert scored["status"] == "ok" and scored["cases"] == sum(len(s.cases) for s in sets)
    assert [p["fits"]["benchmark"] for p in calls] == [fits.benchmark for _, fits in folds] == scored["fits"]
    # the same numbers as scoring each half alone, with its fold's fit
    for held, fits in folds:
        alone = cross_fit.cross_fitted(Submission.builtin("adaptive"), [(held, fits)], evaluate, "bench")
        assert alone["cases"] == len(held)
    # a run that fails leaves a disqualification, with its reason
    failing = lambda submission: dataclasses.replace(evaluate(submission), reason="slow: too slow")  # noqa: E731
    assert cross_fit.cross_fitted(Submission.builtin("adaptive"), folds, failing, "bench") == \
        {"status": "disqualified", "reason": "slow: too slow"}


def test_a_fit_that_saw_nothing_of_a_case_drafts_as_a_fit_handed_by_path(tmp_path_factory, tmp_path):
    """The fold's fit travels as the drafter's ``fits`` parameter, a dict: it drafts as the same fit read
    from a file does."""
    sets = _toy(tmp_path_factory)
    (_, fits), _ = cross_fit.folds(sets)
    path = fits.save(tmp_path / "fit.json")
    case, profile = sets[0].cases[0], sets[0].profile
    inline = replay_case(case, lookup.create("adaptive", fits=fits.to_dict()), profile)
    by_path = replay_case(case, lookup.create("adaptive", fits=str(path)), profile)
    assert [(s.drafted, s.accepted) for s in inline.stats.steps] == [(s.drafted, s.accepted) for s in by_path.stats.steps]
    assert lookup.create("adaptive", fits=fits.to_dict()).fitted_on() == fits.benchmark


def test_the_board_cross_fits_exactly_the_entries_fitted_on_the_benchmark_it_scores(tmp_path_factory):
    """Through the sandbox: ``adaptive`` handed a fit made on these very cases gets a cross-fitted score
    beside its own; the same drafter with the shipped fit (made on another benchmark) and a drafter
    that reads no fit get none; the views show the column."""
    sets = _toy(tmp_path_factory)
    folder = sets[0].path.parent
    info = benchmark_info(sets, folder)
    in_sample = fits_of(collect(sets), "toy", info["hash"]).to_dict()
    board = Board(tmp_path_factory.mktemp("board"))
    submission = dataclasses.replace(Submission.builtin("adaptive", {"fits": in_sample}), name="adaptive-fitted")
    fitted = lb.run_submission(board, submission, sets, info, "baseline", QUICK)
    shipped = lb.run_submission(board, Submission.builtin("adaptive"), sets, info, "baseline", QUICK)
    plain = lb.run_submission(board, Submission.builtin("suffix-automaton"), sets, info, "baseline", QUICK)
    assert fitted["status"] == "ok" and fitted["cross_fitted"]["status"] == "ok"
    assert fitted["cross_fitted"]["cases"] == info["cases"]
    assert fitted["cross_fitted"]["fits"] == [fits.benchmark for _, fits in cross_fit.folds(sets)]
    assert "cross_fitted" not in shipped and "cross_fitted" not in plain
    headers, rows, order = render.main_rows(board.entries(info["hash"]))
    column = headers.index("CPU cross-fitted")
    cells = {e.name: row[column] for e, row in zip(order, rows)}
    assert cells["adaptive-fitted"] == f"{fitted['cross_fitted']['score']:.3f}x"
    assert cells["adaptive"] == cells["suffix-automaton"] == "-"
    assert "cross-fitted" in render.markdown(board.entries(info["hash"]), info)
    details = render.entry_details(entry_of(fitted), [], info)
    assert "adaptive-fitted cross-fitted" in details and "in sample" in details
    assert "cross-fitted (each half" not in render.entry_details(entry_of(plain), [], info)


def test_a_second_models_adaptive_is_cross_fitted_on_its_own_models_benchmark():
    """The sandbox hands an entry that plans the benchmark's setting (its model), so on a second model's
    benchmark `adaptive` reads that model's fit: the board must see it as fitted on that benchmark (and
    cross-fit it), whatever the track's profile is called."""
    from types import SimpleNamespace

    from experiments.competition.entries import _fitted_on
    from pldcore import fits as fits_module

    for path in fits_module.shipped():
        fit = fits_module.Fits.load(path)
        regime = Regime.from_name(fit.regime)  # a sampled fit: cases sampled in its regime
        case = TraceCase("t/0", "t", 1, [1], [2], [], fit.model, 8, [], 1, sampling=sampling_of(regime, 0))
        sets = [TraceSet(Path("/x/t-n1.jsonl.gz"), "t", [case], CPU_SMOLLM2)]
        adaptive = SimpleNamespace(source={"kind": "builtin", "name": "adaptive"}, params={})
        assert _fitted_on(adaptive, sets) == fit.benchmark
        plain = SimpleNamespace(source={"kind": "builtin", "name": "plain"}, params={})
        assert _fitted_on(plain, sets) is None
