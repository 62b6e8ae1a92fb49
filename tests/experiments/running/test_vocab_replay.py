"""Replay hands a drafter that asks for the vocabulary's strings those of the trace folder, once per
drafter (per request, or once for a stream), as the live loop hands a target's."""

from __future__ import annotations

import sys
from pathlib import Path

import punctuation_drafter
from punctuation_drafter import StopAtPunctuation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "competition"))
from toys_competition import VOCAB, make_trace_folder  # noqa: E402

from experiments.benchmarks.traces import load_trace_sets, traces_setting, write_vocab  # noqa: E402
from experiments.running.replay import ReplayComparison, replay_case  # noqa: E402
from experiments.running.serving import serve_traces  # noqa: E402

#: every fifth id reads as a full stop
STRINGS = tuple("." if i % 5 == 0 else f" w{i}" for i in range(VOCAB))


def test_each_request_s_drafter_is_handed_the_folder_s_strings(tmp_path):
    folder = make_trace_folder(tmp_path / "toy")
    write_vocab(folder, STRINGS, "toy")
    sets = load_trace_sets(folder)
    served = list(serve_traces(sets, lambda _setting: StopAtPunctuation(), traces_setting(sets)))
    assert served and all(d.handed == 1 and d.stops == frozenset(range(0, VOCAB, 5)) for *_, d in served)
    stream = {id(d): d for *_, d in serve_traces(sets, lambda _setting: StopAtPunctuation(), traces_setting(sets), stream=True)}
    assert [d.handed for d in stream.values()] == [1]


def test_the_strings_change_what_the_toy_drafts_in_replay(tmp_path):
    folder = make_trace_folder(tmp_path / "toy")
    sets = load_trace_sets(folder)
    blind = [replay_case(c, d, st.profile).stats.drafted for _, c, st, d in serve_traces(sets, lambda _s: StopAtPunctuation(), traces_setting(sets))]
    write_vocab(folder, STRINGS, "toy")
    sets = load_trace_sets(folder)
    seeing = [replay_case(c, d, st.profile).stats.drafted for _, c, st, d in serve_traces(sets, lambda _s: StopAtPunctuation(), traces_setting(sets))]
    assert sum(seeing) < sum(blind)  # drafts end at the full stops


def test_a_drafter_file_that_asks_gets_them_in_a_replay_comparison(tmp_path):
    folder = make_trace_folder(tmp_path / "toy")
    write_vocab(folder, STRINGS, "toy")
    spec = punctuation_drafter.__file__
    comparison = ReplayComparison(load_trace_sets(folder), [spec], None)
    comparison.run(progress=False)
    blind = ReplayComparison(load_trace_sets(make_trace_folder(tmp_path / "blind")), [spec], None)
    blind.run(progress=False)
    drafted = sum(r.drafted for r in comparison.rows.values())
    assert 0 < drafted < sum(r.drafted for r in blind.rows.values())
