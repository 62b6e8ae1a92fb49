"""Tracks: every entry replayed once per GPU track, its cost-aware drafter planning under the track's
profile (handed through the sandbox), each track with its own oracle, top-k bound and ranking."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from toys_competition import QUICK, make_trace_folder

import decoding
from decoding.generate import DRAFT_BUDGET
from experiments import leaderboard as cli
from experiments.benchmarks.traces import load_trace_sets
from experiments.competition import entries as lb
from experiments.competition import render
from experiments.competition.board import Board
from experiments.competition.ranking import track_ranking
from experiments.competition.sandbox import Submission, evaluate
from experiments.benchmarks.traces import benchmark_hash, regime_folder
from experiments.competition.scoring import BOARD_TRACKS, GPU_TRACKS, benchmark_info, oracle_track, sampled_sets
from experiments.running.oracle import ORACLE_CAP, oracle_runs
from experiments.running.topk_oracle import topk_oracle_runs
from experiments.running.tracks import CPU_TRACK, SAMPLED, SAMPLED_TRACKS, profile_arg, track_named
from pldcore.errors import PLDError
from pldcore.hardware import profile_named

#: an entry that plans for a flat profile only: it refuses to run in a setting on any other
FLAT_ONLY = '''
from lookup.base import Draft, Drafter, EMPTY_DRAFT


class FlatOnly(Drafter):
    uses_setting = True

    def __init__(self, setting):
        super().__init__()
        if setting.profile.cost(64) != setting.profile.cost(1) or not setting.regime.greedy:
            raise ValueError("planned for a flat profile only")

    def propose(self, budget):
        return EMPTY_DRAFT
'''


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return make_trace_folder(tmp_path_factory.mktemp("tracks") / "toy", seed=3, cases=1)


@pytest.fixture(scope="module")
def sets(traces):
    return load_trace_sets(traces)


def test_the_sandbox_hands_the_setting_to_an_entry_that_plans(tmp_path, sets):
    entry = tmp_path / "flat_only.py"
    entry.write_text(FLAT_ONLY)
    flat = evaluate(Submission.file(entry), sets, QUICK, profile=profile_named("flat"), draft_budget=63)
    assert flat.ok, flat.reason
    cpu = evaluate(Submission.file(entry), sets, QUICK)  # the benchmark's own profile: not flat
    assert not cpu.ok and "planned for a flat profile only" in cpu.reason


def test_an_entry_is_scored_on_every_track_and_the_board_shows_each(tmp_path, sets, traces, monkeypatch, capsys):
    monkeypatch.setattr(lb, "BUILD_TRACKS", GPU_TRACKS)
    board = Board(tmp_path)
    info = benchmark_info(sets, traces)
    oracle = lb.ensure_oracle(board, sets, info)
    assert set(oracle["tracks"]) == {t.name for t in GPU_TRACKS}
    # what a build scores: the batch tracks too, and no sampled track for a benchmark with no sampled traces
    assert set(info["tracks"]) == {t.name for t in BOARD_TRACKS if t.regime.greedy}
    for name in ("recycling", "suffix-automaton"):
        lb.run_submission(board, Submission.builtin(name), sets, info, "baseline", QUICK)
    shown = board.entries(info["hash"])
    recycling = next(e for e in shown if e.name == "recycling")
    assert set(recycling.tracks) == {"flat", "h100-8b"}
    flat = recycling.tracks["flat"]
    # the GPU column is the flat track's own run (planned under it), not the CPU run priced flat
    assert recycling.public.score_gpu == flat.score and flat.ok
    assert {g: v.est_speedup for g, v in flat.groups.items()} == {
        g: v.est_speedup_gpu for g, v in recycling.public.groups.items()}
    for track in GPU_TRACKS:
        bound = oracle["tracks"][track.name]
        assert bound["score_topk"] >= bound["score"] > 1.0
    md = render.markdown(shown, info)
    assert "## Tracks" in md and "### track h100-8b" in md and re.search(r"\| - \| oracle \+ top-k +\| bound", md)
    ranking = track_ranking(shown, "h100-8b")
    assert [e.name for e in ranking] == sorted(
        ["recycling", "suffix-automaton"], key=lambda n: -next(e for e in shown if e.name == n).tracks["h100-8b"].score)
    data = render.board_json(shown, info)
    assert [r["name"] for r in data["tracks"]["flat"]] == [e.name for e in track_ranking(shown, "flat")]
    assert cli.main(["show", "--profile", "h100-8b", "--board", str(tmp_path), "--traces", str(traces)]) == 0
    out = capsys.readouterr().out
    assert "track h100-8b" in out and "pick on this track:" in out and "track flat" not in out
    assert cli.main(["show", "--profile", "h100-9b", "--board", str(tmp_path), "--traces", str(traces)]) == 2
    assert "did you mean 'h100-8b'" in capsys.readouterr().err
    assert cli.main(["show", "--profile", "l4-1b", "--board", str(tmp_path), "--traces", str(traces)]) == 2
    assert "has no track l4-1b yet" in capsys.readouterr().err


def test_an_entry_scored_before_a_track_existed_is_scored_again(tmp_path, sets, traces, monkeypatch):
    board = Board(tmp_path)
    info = benchmark_info(sets, traces)
    assert [e["name"] for e in lb.run_baselines(board, sets, info, QUICK, names=["plain"], say=lambda *_: None)]
    assert lb.run_baselines(board, sets, info, QUICK, names=["plain"], say=lambda *_: None) == []
    monkeypatch.setattr(lb, "BUILD_TRACKS", GPU_TRACKS[:1])
    again = lb.run_baselines(board, sets, info, QUICK, names=["plain"], say=lambda *_: None)
    assert [set(e["tracks"]) for e in again] == [{"flat"}]


def test_an_entry_that_plans_nothing_is_run_once_for_the_tracks_of_one_budget(tmp_path, sets, traces, monkeypatch):
    """suffix-automaton drafts alike under every profile: the GPU and batch tracks (one draft budget, greedy)
    price one run; recycling plans under each track's profile: a run each."""
    assert {t.name for t in BOARD_TRACKS} >= {"h100-8b-b32", "h100-8b-b128"}
    monkeypatch.setattr(lb, "BUILD_TRACKS", BOARD_TRACKS)  # what a build scores (the suite narrows it)
    runs: list[tuple[str, str]] = []
    real = lb.evaluate

    def counted(submission, sets, limits, **kwargs):
        profile = kwargs.get("profile")
        runs.append((submission.name, "cpu" if profile is None else profile.model))
        return real(submission, sets, limits, **kwargs)

    monkeypatch.setattr(lb, "evaluate", counted)
    board = Board(tmp_path)
    info = benchmark_info(sets, traces)
    lb.ensure_oracle(board, sets, info)
    for name in ("suffix-automaton", "recycling"):
        lb.run_submission(board, Submission.builtin(name), sets, info, "baseline", QUICK)
    assert len([r for r in runs if r[0] == "suffix-automaton"]) == 2  # cpu, and one for every other track
    greedy = [t for t in BOARD_TRACKS if t.regime.greedy]  # no sampled traces here: no sampled track
    assert len([r for r in runs if r[0] == "recycling"]) == 1 + len(greedy)
    shown = {e.name: e for e in board.entries(info["hash"])}
    fixed = shown["suffix-automaton"].tracks
    assert all(fixed[t.name].ok for t in greedy)
    # one run, several prices: the same drafts, other forward costs (and, at a batch, drafting priced too)
    taus = {t.name: [g.tau for g in fixed[t.name].groups.values()] for t in greedy}
    assert len({tuple(v) for v in taus.values()}) == 1
    assert fixed["flat"].score != fixed["h100-8b"].score != fixed["h100-8b-b128"].score


#: an entry that plans for sampling at temperature 1.0 only: it refuses to run in a greedy setting
SAMPLED_ONLY = FLAT_ONLY.replace("class FlatOnly", "class SampledOnly").replace(
    "setting.profile.cost(64) != setting.profile.cost(1) or not setting.regime.greedy", "setting.regime.temperature != 1.0")


@pytest.fixture(scope="module")
def sampled_traces(traces) -> Path:
    """The toy benchmark's sampled traces at temperature 1.0, beside its greedy ones (as shipped: ``<folder>/t1``)."""
    return make_trace_folder(regime_folder(traces, SAMPLED), seed=5, cases=1, regime=SAMPLED)


def test_a_sampled_track_replays_the_benchmark_s_sampled_traces(tmp_path, sets, traces, sampled_traces, monkeypatch):
    sampled = sampled_sets(traces)
    assert list(sampled) == ["t1"] and sampled["t1"][0].cases[0].sampling is not None
    info = benchmark_info(sets, traces, sampled)
    assert info["regimes"]["t1"]["hash"] == benchmark_hash(sampled["t1"]) != info["hash"]
    assert info["tracks"]["cpu-t1"]["regime"] == SAMPLED.describe() and info["tracks"]["flat"]["regime"] == "greedy"
    monkeypatch.setattr(lb, "BUILD_TRACKS", (GPU_TRACKS[0], *SAMPLED_TRACKS))
    board = Board(tmp_path)
    oracle = lb.ensure_oracle(board, sets, info, sampled)
    cpu_t1 = oracle["tracks"]["cpu-t1"]
    # the oracle of the sampled cases, priced under their own (CPU) profile, not of the greedy ones
    assert cpu_t1["tau"] == oracle_track(sampled["t1"], sampled["t1"][0].profile)["tau"] != oracle["tau"]
    assert cpu_t1["benchmark"] == info["regimes"]["t1"]["hash"] and "benchmark" not in oracle["tracks"]["flat"]
    entry = lb.run_submission(board, Submission.builtin("suffix-automaton"), sets, info, "baseline", QUICK,
                              sampled=sampled)
    assert set(entry["tracks"]) == {"flat", "cpu-t1", "h100-8b-t1"}
    alone = evaluate(Submission.builtin("suffix-automaton"), sampled["t1"], QUICK)
    assert entry["tracks"]["cpu-t1"]["tau"] == lb.track_scores(alone.cases, "suffix-automaton", {},
                                                                 sampled["t1"][0].profile)["tau"]
    shown = {e.name: e for e in board.entries(info["hash"])}
    assert lb.scored_on_tracks(shown["suffix-automaton"], info)
    # sampled traces recorded again (another hash): the entry is scored again
    assert not lb.scored_on_tracks(shown["suffix-automaton"], {**info, "regimes": {"t1": {"hash": "0" * 16}}})
    # a benchmark without sampled traces: the sampled tracks are left out, not failed
    plain = lb.run_submission(board, Submission.builtin("suffix-automaton"), sets, info, "baseline", QUICK)
    assert set(plain["tracks"]) == {"flat"}
    assert "sampled at temperature 1" in render.markdown(list(shown.values()), info)


def test_the_sandbox_hands_a_sampled_track_s_regime_to_an_entry_that_plans(tmp_path, sets, traces, sampled_traces):
    entry = tmp_path / "sampled_only.py"
    entry.write_text(SAMPLED_ONLY)
    sampled = evaluate(Submission.file(entry), sampled_sets(traces)["t1"], QUICK)
    assert sampled.ok, sampled.reason
    greedy = evaluate(Submission.file(entry), sets, QUICK)
    assert not greedy.ok and "planned for a flat profile only" in greedy.reason


# -- the top-k bound ---------------------------------------------------------------------------------------
def brute_topk_runs(seq, start, top, cap):
    """The bound by its definition: the lookup run, then on while the next token is in the row that
    followed the previous token's latest occurrence among the rows committed before the step."""
    out = []
    lookup = oracle_runs(seq, start, cap)
    for pos in range(start, len(seq)):
        limit = min(cap, len(seq) - pos - 1)
        run = int(lookup[pos - start])
        while run < limit:
            prev = seq[pos + run - 1]
            rows = [q for q in range(0, pos - 1) if seq[q] == prev]  # rows 0..pos-2 are committed
            if not rows or seq[pos + run] not in list(top[max(rows)]):
                break
            run += 1
        out.append(run)
    return out


@given(seq=st.lists(st.integers(0, 5), min_size=2, max_size=40), data=st.data(), cap=st.integers(1, 8))
def test_the_topk_bound_is_its_definition_and_above_the_lookup_oracle(seq, data, cap):
    start = data.draw(st.integers(1, len(seq) - 1))
    top = np.array(data.draw(st.lists(st.lists(st.integers(0, 5), min_size=2, max_size=2),
                                      min_size=len(seq) - 1, max_size=len(seq) - 1)), dtype=np.int64)
    runs = topk_oracle_runs(seq, start, top, cap)
    assert runs.tolist() == brute_topk_runs(seq, start, top, cap)
    assert (runs >= oracle_runs(seq, start, cap)).all()


def test_a_track_s_oracle_prices_the_same_runs_under_its_profile(sets):
    flat, h100 = (oracle_track(sets, profile_named(n)) for n in ("flat", "h100-8b"))
    assert flat["tau"] == h100["tau"] and flat["score"] != h100["score"]


def test_every_track_allows_the_draft_the_oracle_s_longest_run_goes_with():
    """Entries and oracle play by one budget: the CPU tracks once let a draft have 32 nodes while their
    oracle copied runs of 64 tokens."""
    assert {t.draft_budget for t in (CPU_TRACK, *BOARD_TRACKS)} == {DRAFT_BUDGET} == {ORACLE_CAP - 1}
    assert inspect.signature(decoding.generate).parameters["draft_budget"].default == DRAFT_BUDGET


# -- naming a profile --------------------------------------------------------------------------------------
def test_profile_arguments_name_a_track_a_profile_or_a_file(tmp_path):
    assert profile_arg(None) == (None, 63)
    assert profile_arg("cpu") == (None, 63)  # the benchmark's own
    assert profile_arg("flat") == (profile_named("flat"), 63)
    assert profile_arg("l4-1b") == (profile_named("l4-1b"), 63) and track_named("L4-1B").name == "l4-1b"
    path = tmp_path / "mine.json"
    profile_named("h100-8b").save(path)
    assert profile_arg(str(path)) == (profile_named("h100-8b"), 63)
    with pytest.raises(PLDError, match="did you mean 'h100-8b'"):
        profile_arg("h100-9b")
    with pytest.raises(PLDError, match="no file"):
        profile_arg(str(tmp_path / "missing.json"))
    assert json.loads(path.read_text())["model"].startswith("Llama-3.1-8B")
