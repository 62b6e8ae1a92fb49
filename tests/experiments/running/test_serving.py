"""serving.py: every loop over a benchmark gets its drafters from one iterator. Per request, a fresh
drafter per case made for the setting; as a stream, one drafter, made once, that sees every
case in the benchmark's order (``in_order``)."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from experiments.benchmarks.traces import (TraceCase, TraceSet, append_case, in_order, load_trace_sets, trace_file,
                                          traces_setting)
from experiments.running.serving import Served, serve, serve_traces
from pldcore.cost import CostProfile
from pldcore.setting import reference_setting

PROFILES = [CostProfile.flat(64, seconds=s, name=f"flat-{s}") for s in (1.0, 2.0, 3.0)]
SETTINGS = [reference_setting(p) for p in PROFILES]


class Made:
    """What ``make`` returns in these tests: which call it was and the setting it was made for."""

    calls = itertools.count()

    def __init__(self, setting) -> None:
        self.setting, self.number = setting, next(Made.calls)


def case(name: str) -> TraceCase:
    return TraceCase(name, name.split("/")[0], 1, [1, 2], [3], [], "toy", 8, [], 1)


def trace_set(task: str, cases: int, profile: CostProfile = PROFILES[0]) -> TraceSet:
    return TraceSet(Path(f"{task}.jsonl.gz"), task, [case(f"{task}/{i}") for i in range(cases)], profile)


def names(served) -> list[str]:
    return [s.case.case for s in served]


def test_per_request_each_case_gets_a_fresh_drafter_made_for_the_setting():
    sets = [trace_set("b", 2), trace_set("a", 1)]
    served = list(serve_traces(sets, Made, SETTINGS[1]))
    assert names(served) == ["b/0", "b/1", "a/0"]  # the order given: per request, order changes nothing
    assert len({id(s.drafter) for s in served}) == 3
    assert {s.drafter.setting for s in served} == {s.setting for s in served} == {SETTINGS[1]}
    assert [s.trace_set.task for s in served] == ["b", "b", "a"]


def test_a_stream_is_one_drafter_in_the_benchmarks_order():
    sets = [trace_set("b", 2), trace_set("a", 1), trace_set("c", 1)]
    made = []
    served = list(serve_traces(sets, lambda setting: made.append(Made(setting)) or made[-1], SETTINGS[2], stream=True))
    assert names(served) == ["a/0", "b/0", "b/1", "c/0"]
    assert len(made) == 1 and all(s.drafter is made[0] for s in served)
    assert made[0].setting == SETTINGS[2] and {s.setting for s in served} == {SETTINGS[2]}


def test_needed_skips_cases_per_request_but_a_stream_serves_them_all():
    sets = [trace_set("a", 3)]
    needed = lambda c: c.case != "a/1"  # noqa: E731
    assert names(serve_traces(sets, Made, SETTINGS[0], needed=needed)) == ["a/0", "a/2"]
    assert names(serve_traces(sets, Made, SETTINGS[0], needed=needed, stream=True)) == ["a/0", "a/1", "a/2"]


def test_nothing_is_made_before_it_is_needed():
    made = []
    requests = serve(range(3), lambda r: made.append(r) or r, stream=True)
    assert made == [] and list(requests) == [(0, 0), (1, 0), (2, 0)] and made == [0]
    assert list(serve([], lambda r: made.append(r))) == [] and made == [0]
    assert list(serve_traces([], Made, SETTINGS[0], stream=True)) == []


def test_the_yielded_tuple_unpacks():
    [(s, c, setting, drafter)] = serve_traces([trace_set("a", 1)], Made, SETTINGS[0])
    assert (s.task, c.case, setting, drafter.setting) == ("a", "a/0", SETTINGS[0], SETTINGS[0])
    assert Served._fields == ("trace_set", "case", "setting", "drafter")


def test_the_traces_setting_is_their_model_greedy_under_their_own_profile_or_the_one_given():
    sets = [trace_set("a", 1, PROFILES[1])]
    own = traces_setting(sets)
    assert own.model == "toy" and own.profile == PROFILES[1] and own.regime.greedy and own.batch == 1
    assert own.profile_source == "the traces' own"
    assert traces_setting(sets, PROFILES[2]).profile == PROFILES[2]


layouts = st.lists(st.integers(0, 4), max_size=5)


@given(layout=layouts, order=st.randoms(use_true_random=False), stream=st.booleans(),
       setting=st.sampled_from(SETTINGS), skip=st.sets(st.integers(0, 20)))
def test_serving_matches_a_brute_force_reference(layout, order, stream, setting, skip):
    """Over random layouts of sets (empty ones included, names in any order)."""
    tasks = [f"task{i}" for i in range(len(layout))]
    order.shuffle(tasks)
    sets = [trace_set(task, n) for task, n in zip(tasks, layout)]
    every = [c.case for s in sets for c in s.cases]
    needed = lambda c: every.index(c.case) not in skip  # noqa: E731
    served = list(serve_traces(sets, Made, setting, stream=stream, needed=needed))

    # the reference, by brute force: a stream is every case sorted by task (file order within one),
    # one drafter; per request, the needed cases as given, a drafter each
    if stream:
        by_task = sorted(sets, key=lambda s: s.task)
        expected = [(s, c) for s in by_task for c in s.cases]
        assert len({id(x.drafter) for x in served}) == (1 if expected else 0)
    else:
        expected = [(s, c) for s in sets for c in s.cases if needed(c)]
        assert len({id(x.drafter) for x in served}) == len(expected)
    assert [(x.trace_set, x.case) for x in served] == expected
    assert all(x.setting == setting and x.drafter.setting == setting for x in served)
    if stream:
        assert [s.task for s in in_order(sets)] == sorted(s.task for s in sets)


# -- the callers: the same drafters as before ------------------------------------------------------
def toy_traces(folder: Path) -> list[TraceSet]:
    answer = [20, 21, 22, 23, 24, 25, 26, 27]
    for task, n in (("b", 2), ("a", 2)):
        for i in range(n):
            append_case(trace_file(folder, task, 8),
                        TraceCase(f"{task}/{i}", task, 1, [1, 2, 3 + i, ord(task)], answer, [], "toy", 200, [], 8))
    return load_trace_sets(folder)


def spy_on(method, made: list) -> None:
    """Record every drafter ``method`` makes, and the prompts each is reset with."""
    real = method.make

    def make(setting):
        drafter = real(setting)
        prompts = []
        reset = drafter.reset
        drafter.reset = lambda prompt: prompts.append(list(prompt)) or reset(prompt)
        made.append((setting.profile, prompts))
        return drafter

    method.make = make


def test_a_replay_stream_serves_every_case_again_though_its_rows_are_kept(tmp_path):
    from experiments.running.replay import ReplayComparison

    sets = toy_traces(tmp_path / "traces")
    prompts = [c.prompt for s in in_order(sets) for c in s.cases]
    for stream in (False, True):
        for attempt in range(2):
            comparison = ReplayComparison(sets, ["suffix-automaton"], results_dir=tmp_path / "results", stream=stream)
            made: list = []
            spy_on(comparison.methods[0], made)
            comparison.run(progress=False)
            assert sorted(comparison.rows) == sorted((c, "suffix-automaton") for c in ("a/0", "a/1", "b/0", "b/1"))
            if stream:  # one drafter, every case in order, on the rerun too
                assert [p for _, p in made] == [prompts]
            elif attempt == 0:  # a fresh drafter per case, the benchmark's order
                assert [p for _, p in made] == [[p] for p in prompts]
            else:  # every row is kept: nothing to replay
                assert made == []
            assert all(profile == sets[0].profile for profile, _ in made)
        assert len(comparison.store.path.read_text().splitlines()) == 4  # a rerun appends nothing


def test_explain_serves_as_replay_does(tmp_path, monkeypatch):
    from experiments.running import explain as explain_module
    from experiments.running.methods import parse_method

    sets = toy_traces(tmp_path / "traces")
    for stream, order in ((False, sets), (True, in_order(sets))):
        made: list = []
        method = parse_method("suffix-automaton")
        spy_on(method, made)
        monkeypatch.setattr(explain_module, "parse_method", lambda spec: method)
        explain_module.explain(sets, "suffix-automaton", stream=stream)
        prompts = [c.prompt for s in order for c in s.cases]
        assert [p for _, p in made] == ([prompts] if stream else [[p] for p in prompts])
