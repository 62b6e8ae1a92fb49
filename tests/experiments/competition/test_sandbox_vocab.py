"""The sandbox hands an entry that asks for the vocabulary's strings the benchmark's, sent by the
parent with the hello: the entry reads no file for them (the trace folder stays denied to it), and
drafts in the sandbox what it drafts in-process with the same strings."""

from __future__ import annotations

import punctuation_drafter
from punctuation_drafter import StopAtPunctuation
from toys_competition import QUICK, VOCAB, make_trace_folder

from experiments.benchmarks.traces import load_trace_sets, write_vocab
from experiments.competition.sandbox import Submission, evaluate
from experiments.running.replay import replay_case
from lookup.base import hand_vocab

STRINGS = tuple("." if i % 5 == 0 else f" w{i}" for i in range(VOCAB))


def steps_of(result) -> list[tuple[int, int, int]]:
    return [(s.drafted, s.accepted, s.committed) for s in result.stats.steps]


def test_an_entry_that_asks_gets_the_benchmark_s_strings_in_the_sandbox(tmp_path):
    folder = make_trace_folder(tmp_path / "toy")
    write_vocab(folder, STRINGS, "toy")
    sets = load_trace_sets(folder)
    ev = evaluate(Submission.file(punctuation_drafter.__file__), sets, QUICK)
    assert ev.ok, ev.reason
    assert ev.refused == []  # it asked the parent, not the disk
    differs = 0
    for trace_set, case, out in ev.cases:
        seeing, blind = StopAtPunctuation(), StopAtPunctuation()
        hand_vocab(seeing, lambda: STRINGS)
        assert steps_of(out) == steps_of(replay_case(case, seeing, trace_set.profile))
        differs += steps_of(out) != steps_of(replay_case(case, blind, trace_set.profile))
    assert differs > 0  # the strings changed its drafts
