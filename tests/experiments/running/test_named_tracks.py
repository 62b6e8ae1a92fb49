"""Tracks by setting: a sampled track replays its regime's traces, a batch track prices a server's step
(the drafting of its batch included), and neither can be handed traces of another regime."""

from __future__ import annotations

import argparse

import pytest

from decoding.cost import estimated_times
from decoding.generate import StepRecord
from experiments.benchmarks.traces import TraceCase, TraceSet
from experiments.compare import use_track_regime
from experiments.running.tracks import (BATCH_TRACKS, GPU_TRACKS, NAMED_TRACKS, SAMPLED_TRACKS, TRACKS, track_named,
                                        track_regime)
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError
from pldcore.hardware import DRAFT_THREADS, profile_named
from pldcore.setting import GREEDY, Regime


def trace_set(tmp_path, sampling: dict | None) -> TraceSet:
    case = TraceCase("t/0", "test", 1, [1, 2, 3], [4, 5], [], "SmolLM2-135M-Instruct", 10, [9], 2, sampling=sampling)
    return TraceSet(tmp_path / "t-n2.jsonl.gz", "t", [case], CPU_SMOLLM2)


def test_every_track_has_its_own_name_and_the_board_s_are_greedy_at_batch_one():
    names = [t.name for t in NAMED_TRACKS]
    assert len(names) == len(set(names))
    assert all(t.regime == GREEDY and t.batch == 1 for t in TRACKS)
    assert {t.name for t in SAMPLED_TRACKS} == {"cpu-t1", "h100-8b-t1"}
    assert {(t.name, t.batch) for t in BATCH_TRACKS} == {("h100-8b-b32", 32), ("h100-8b-b128", 128)}


def test_a_sampled_track_reads_its_regime_s_folder_and_refuses_greedy_traces(tmp_path):
    track = track_named("cpu-t1")
    assert track.traces(tmp_path) == tmp_path / "t1" and track_named("cpu").traces(tmp_path) == tmp_path
    sampled = trace_set(tmp_path, {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 3})
    assert track.setting_for([sampled]).regime == Regime(1.0)
    with pytest.raises(PLDError, match="track cpu-t1 replays traces decoded temperature 1"):
        track.setting_for([trace_set(tmp_path, None)])
    with pytest.raises(PLDError, match="track h100-8b replays traces decoded greedy"):
        track_named("h100-8b").setting_for([sampled])


def test_a_batch_track_s_setting_holds_its_batch_and_its_profile_prices_the_batch_s_drafting(tmp_path):
    track = track_named("h100-8b-b128")
    setting = track.setting_for([trace_set(tmp_path, None)])
    assert setting.batch == 128 and setting.profile == profile_named("h100-8b-b128")
    assert setting.profile.drafter_scale == 128 / DRAFT_THREADS
    steps = [StepRecord(100, 3, 2, 3, 1e-4, 0.0)]
    one = estimated_times(steps, profile_named("h100-8b"), with_prefill=False)[1]
    many = estimated_times(steps, setting.profile, with_prefill=False)[1]
    assert many - setting.profile.cost(4, 100) == pytest.approx(1e-4 * 128 / DRAFT_THREADS)
    assert one - profile_named("h100-8b").cost(4, 100) == pytest.approx(1e-4)


def test_a_profile_for_one_request_is_stored_as_before_and_a_batch_s_round_trips():
    assert "drafter_scale" not in CPU_SMOLLM2.to_json() and "drafter_scale" not in profile_named("h100-8b").to_json()
    batch = profile_named("h100-8b-b32")
    assert CostProfile.from_json(batch.to_json()) == batch and batch.drafter_scale == 32 / DRAFT_THREADS


def args(temperature=0.0, top_k=0, top_p=1.0, profile="cpu-t1") -> argparse.Namespace:
    return argparse.Namespace(temperature=temperature, top_k=top_k, top_p=top_p, profile=profile)


def test_a_sampled_track_named_by_profile_sets_the_regime_and_refuses_another():
    given = args()
    use_track_regime(given, track_regime("cpu-t1"))
    assert (given.temperature, given.top_k, given.top_p) == (1.0, 0, 1.0)
    same = args(temperature=1.0)
    use_track_regime(same, track_regime("h100-8b-t1"))
    assert same.temperature == 1.0
    with pytest.raises(PLDError, match="give one of them"):
        use_track_regime(args(temperature=0.7), track_regime("cpu-t1"))
    greedy = args(profile="h100-8b-b128")
    use_track_regime(greedy, track_regime("h100-8b-b128"))
    assert greedy.temperature == 0.0 and track_regime(None) == GREEDY and track_regime("x.json") == GREEDY


def test_a_build_scores_the_sampled_and_batch_tracks_too():
    from experiments.competition import entries
    from experiments.competition.scoring import BOARD_TRACKS

    assert entries.BUILD_TRACKS == BOARD_TRACKS == (*GPU_TRACKS, *SAMPLED_TRACKS, *BATCH_TRACKS)
