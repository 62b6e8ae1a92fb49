"""Finding 3 of the third red team: public and fresh cases could be told apart inside the sandbox
(public cases handed a drafter that asks the vocabulary's strings, fresh ones none: the fresh
recording wrote no ``vocab.json.gz``), and an honest drafter that reads the vocabulary was scored
without it on the fresh cases, silently. Now the fresh recording carries the shipped benchmark's
vocabulary and profile, the trace folders an entry is denied are named alike for both, and a
drafter that asks for what a benchmark cannot give is refused in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import punctuation_drafter
import pytest
from toys_competition import QUICK, make_trace_folder  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.benchmarks.traces import (VOCAB_FILE, append_case, load_trace_sets, read_cases, shipped_folder,
                                           trace_file)
from experiments.competition import fresh_cases
from experiments.competition.sandbox import NO_VOCAB, Submission, evaluate

ATTACKS = Path(__file__).resolve().parent / "attacks"


@pytest.fixture
def two_benchmarks(tmp_path, monkeypatch):
    """The public benchmark (a case per task of the shipped one) and fresh cases recorded by
    ``record_fresh`` itself, whose recorder here writes other shipped cases (no model needed)."""
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    shipped = load_trace_sets(shipped_folder())
    public = [dataclasses.replace(s, cases=s.cases[:1]) for s in shipped]
    spare = {s.task: s.cases[-1:] for s in shipped}

    def record(target, task, prompts, new_tokens, folders, progress=None, **_):
        for folder in folders.values():
            for case in spare[task]:
                append_case(Path(folder) / f"{task}-n{new_tokens}.jsonl.gz", case)

    monkeypatch.setattr(fresh_cases, "record_regimes", record)
    fresh, folder = fresh_cases.record_fresh(7, 1, target=object(), say=lambda *_: None)
    return public, fresh, folder


def test_an_entry_sees_no_difference_but_the_prompts(two_benchmarks):
    public, fresh, folder = two_benchmarks
    assert (folder / VOCAB_FILE).read_bytes() == (shipped_folder() / VOCAB_FILE).read_bytes()
    assert fresh[0].vocab == public[0].vocab is not None
    probe = Submission.file(ATTACKS / "probe.py")
    seen = []
    for sets in (public, fresh):
        ev = evaluate(probe, sets, QUICK, public=True)  # public: the entry's message is kept, to compare
        assert ev.reason and ev.reason.startswith("exception: RuntimeError: seen "), ev.reason
        seen.append(json.loads(ev.reason.split("seen ", 1)[1].split("}", 1)[0] + "}"))
    assert seen[0] == seen[1], {k: (seen[0][k], seen[1].get(k)) for k in seen[0] if seen[0][k] != seen[1].get(k)}
    assert "no-home" not in seen[0].values()


def test_a_folder_recorded_before_gets_the_benchmark_s_own_profile_and_vocabulary(tmp_path, monkeypatch):
    """A fresh folder cached by an older build (the committed board's Gemma fresh cases were priced
    with the embedded model's profile, and had no vocabulary) is given the shipped benchmark's own."""
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    gemma = shipped_folder("gemma-3-270m-q4_k_m")
    folder = fresh_cases.fresh_folder(9, 1, "gemma-3-270m-q4_k_m")
    folder.mkdir(parents=True)
    (folder / "profile.json").write_bytes((shipped_folder() / "profile.json").read_bytes())  # the wrong one
    spare = load_trace_sets(gemma)

    def record(target, task, prompts, new_tokens, folders, progress=None, **_):
        for s in spare:
            if s.task == task:
                for folder in folders.values():
                    append_case(Path(folder) / f"{task}-n{new_tokens}.jsonl.gz", s.cases[0])

    monkeypatch.setattr(fresh_cases, "record_regimes", record)
    sets, _ = fresh_cases.record_fresh(9, 1, target=object(), say=lambda *_: None, model="gemma-3-270m-q4_k_m")
    for name in ("profile.json", VOCAB_FILE):
        assert (folder / name).read_bytes() == (gemma / name).read_bytes(), name
    assert sets[0].profile == load_trace_sets(gemma)[0].profile


def test_a_drafter_that_asks_for_the_vocabulary_is_refused_where_there_is_none(tmp_path, capsys):
    folder = make_trace_folder(tmp_path / "toy")  # no vocab.json.gz
    ev = evaluate(Submission.file(punctuation_drafter.__file__), load_trace_sets(folder), QUICK)
    assert ev.reason == f"unscorable: {NO_VOCAB}" and not ev.cases
    # submit: one line, exit 2, nothing recorded
    assert cli.main(["submit", punctuation_drafter.__file__, "--name", "needs-vocab", "--board",
                     str(tmp_path / "board"), "--traces", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "asks for the vocabulary's strings" in err and "nothing recorded" in err
    assert not (tmp_path / "board" / "board.json").exists()


def test_fresh_cases_are_sampled_too_for_the_sampled_tracks(tmp_path, monkeypatch):
    """A build whose benchmark has sampled tracks records the same fresh prompts sampled, with the
    build's seed, into the regime's subfolder: profile and vocabulary as the shipped sampled benchmark's,
    finished (a BENCHMARK.json), and read back as the sampled tracks' cases."""
    from experiments.benchmarks.traces import regime_folder
    from experiments.competition.scoring import sampled_sets
    from experiments.running.tracks import SAMPLED

    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    shipped_t1 = regime_folder(shipped_folder(), SAMPLED)
    spare = {s.task: s.cases[:1] for s in load_trace_sets(shipped_t1)}
    calls = []

    def record(target, task, prompts, new_tokens, folders, progress=None, seed=None):
        for regime, folder in folders.items():
            calls.append((task, regime.name, seed))
            source = spare if not regime.greedy else {s.task: s.cases[:1] for s in load_trace_sets(shipped_folder())}
            for case in source[task]:
                append_case(Path(folder) / f"{task}-n{new_tokens}.jsonl.gz", case)

    monkeypatch.setattr(fresh_cases, "record_regimes", record)
    sets, folder = fresh_cases.record_fresh(11, 1, target=object(), say=lambda *_: None, regimes=[SAMPLED])
    assert {(regime, seed) for _, regime, seed in calls} == {("greedy", 11), ("t1", 11)}
    assert all(c.sampling is None for s in sets for c in s.cases)  # the greedy folder holds the greedy cases only
    sampled = sampled_sets(folder)
    assert list(sampled) == ["t1"] and all(c.sampling is not None for s in sampled["t1"] for c in s.cases)
    for name in ("profile.json", VOCAB_FILE):
        assert (regime_folder(folder, SAMPLED) / name).read_bytes() == (shipped_t1 / name).read_bytes(), name
