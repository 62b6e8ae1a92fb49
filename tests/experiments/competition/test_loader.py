"""The board file read into typed values, once (``competition.loader``): what each field becomes, what
is refused in one line, and that nothing a file holds gets past it as anything but those types."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments import leaderboard as cli
from experiments.benchmarks.paths import ROOT
from experiments.competition.board import Board
from experiments.competition.loader import entry_of, key_of, load_entries
from experiments.competition.records import Entry, GroupScores, Scores, Source
from experiments.running.explain import PARTS, Loss
from pldcore.errors import PLDError

BENCH = "b" * 16


def gap(**loss) -> dict:
    return {"plain": 2.0, "oracle": 1.0, "run": 1.6, "parts": dict.fromkeys(PARTS, 0.1), "cases": 3, **loss}


def record(**more) -> dict:
    return {"name": "mine", "kind": "submission", "benchmark": BENCH, "status": "ok", "reason": None, "score": 2,
            "score_gpu": 2.5, "tau": 2.0, "drafter_us_per_step": 10.0, "beyond_share": 0.01,
            "groups": {"copy": {"est_speedup": 2.0, "tau": 2.0, "est_speedup_gpu": 2.5}},
            "tracks": {"flat": {"status": "ok", "score": 2.5, "groups": {"copy": {"est_speedup": 2.5, "tau": 2.1}}}},
            "source": {"kind": "file", "sha256": "a" * 64, "display": "mine.py", "stored": "submissions/x.py"},
            "params": {"k": 2}, "refused": ["open /etc/passwd"], "refused_count": 1, "isolation": "bwrap",
            "full_isolation": True, "stream": False, "time": "t1", "oracle_gap": {"copy": gap()},
            "attempts": [{"time": "t0", "status": "ok", "score": 1.5, "params": {}, "source": {"kind": "file"}}],
            **more}


# -- typed values --------------------------------------------------------------------------------------------
def test_a_record_becomes_typed_values():
    e = entry_of(record())
    assert isinstance(e, Entry) and (e.name, e.kind, e.benchmark) == ("mine", "submission", BENCH)
    assert e.public == Scores(status="ok", score=2.0, score_gpu=2.5, tau=2.0, drafter_us_per_step=10.0,
                              beyond_share=0.01, groups={"copy": GroupScores(est_speedup=2.0, tau=2.0,
                                                                             est_speedup_gpu=2.5)})
    assert isinstance(e.public.score, float) and e.fresh is None and e.flags is None
    assert e.tracks["flat"].ok and e.tracks["flat"].groups["copy"].tau == 2.1
    assert e.source == Source(kind="file", sha256="a" * 64, display="mine.py") and e.params == {"k": 2}
    assert e.refused == ("open /etc/passwd",) and e.refused_count == 1 and e.full_isolation
    assert e.oracle_gap == {"copy": Loss(plain=2.0, oracle=1.0, run=1.6, parts=dict.fromkeys(PARTS, 0.1), cases=3)}
    assert [(a.time, a.score) for a in e.attempts] == [("t0", 1.5)]
    assert e.record["source"]["stored"] == "submissions/x.py"  # the file's own object, for what writes it back
    assert e.cross_fitted is None and e.verify is None


def test_every_entry_of_the_committed_board_loads():
    entries = Board(ROOT / "leaderboard").entries()
    assert entries and all(isinstance(e, Entry) for e in entries)
    assert {e.kind for e in entries} >= {"oracle", "baseline", "peer"}
    oracle = next(e for e in entries if e.is_oracle)
    assert oracle.public.score_cost_aware and all(t.score_topk for t in oracle.tracks.values())
    assert any(e.cross_fitted is not None for e in entries) and any(e.oracle_gap for e in entries)


def test_what_is_not_what_it_should_be_reads_as_missing():
    e = entry_of(record(score_gpu="fast", tau=float("nan"), drafter_us_per_step=True, groups=["x"], tracks="none",
                        refused="open x", refused_count="lots", verify={"speedup": "1.5", "identical": "yes"},
                        cross_fitted={"status": "disqualified"}, params=[1], source="builtin", benchmark=["a"],
                        name=7, kind=None, attempts=["x", {"time": 3}]))
    assert (e.public.score_gpu, e.public.tau, e.public.drafter_us_per_step) == (None, None, None)
    assert e.public.groups == {} and e.tracks == {} and e.refused == () and e.refused_count == 0
    assert e.verify.speedup is None and e.verify.identical is None
    assert e.cross_fitted is not None and not e.cross_fitted.ok  # there, and disqualified: shown as such
    assert e.params == {} and e.source == Source() and e.benchmark is None
    assert (e.name, e.kind) == ("7", "?") and [a.time for a in e.attempts] == ["3"]


def test_a_group_or_track_in_the_wrong_shape_keeps_its_place_without_numbers():
    e = entry_of(record(groups={"copy": "fast", "chat": {"est_speedup": "1.2", "tau": 2}},
                        tracks={"flat": [1], "h100-8b": {"score": 1.1}}))
    assert e.public.groups == {"copy": GroupScores(), "chat": GroupScores(tau=2.0)}
    assert not e.tracks["flat"].ok and e.tracks["h100-8b"].ok  # a track says when it is not scored
    assert e.public.status == "ok" and entry_of(record(status=None)).public.status == ""  # an entry must say it


@pytest.mark.parametrize("broken", [gap(cases="3"), gap(plain=float("inf")), gap(parts={"missed": 1.0}),
                                    gap(extra=1.0), {"plain": "NaN"}, "gap"])
def test_a_breakdown_that_is_not_whole_is_none(broken):
    assert entry_of(record(oracle_gap={"copy": gap(), "chat": broken})).oracle_gap is None
    assert entry_of(record(oracle_gap={})).oracle_gap is None


# -- refused in one line ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("score", ["2.1", True, float("nan"), [2.0], {"cpu": 2.0}])
def test_a_score_that_is_not_a_number_refuses_the_board_in_one_line(score):
    with pytest.raises(PLDError) as err:
        entry_of(record(score=score), where="leaderboard/board.json")
    message = str(err.value)
    assert message.startswith("leaderboard/board.json is not a board file: the score of entry 'mine'")
    assert message.endswith(f"of benchmark {BENCH} is not a number") and "\n" not in message


def test_an_entry_that_is_not_an_object_is_refused():
    with pytest.raises(PLDError, match="an entry is not a JSON object"):
        entry_of(["mine"])


def test_show_with_a_string_score_is_one_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "board.json").write_text(json.dumps({"benchmarks": {}, "entries": [record(score="2.1")]}))
    assert cli.main(["show", "--board", str(tmp_path), "--benchmark", BENCH]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "is not a number" in err


def test_load_entries_keeps_one_benchmark_and_key_of_reads_only_strings():
    records = [record(), record(benchmark="c" * 16, name="other"), record(benchmark=None)]
    assert [e.name for e in load_entries(records, benchmark=BENCH)] == ["mine"]
    assert len(load_entries(records)) == 3
    assert key_of(record()) == (BENCH, "mine") and key_of({"benchmark": 1, "name": ["x"]}) == (None, None)
    assert key_of("not an entry") == (None, None)


# -- nothing gets past it as anything else -----------------------------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)
FIELDS = ["name", "kind", "benchmark", "status", "reason", "score", "score_gpu", "tau", "groups", "tracks", "source",
          "params", "refused", "refused_count", "verify", "oracle_gap", "attempts", "cross_fitted", "stream", "time"]


def _numbers_are_finite(scores: Scores) -> bool:
    values = [scores.score, scores.score_gpu, scores.tau, scores.drafter_us_per_step, scores.beyond_share]
    values += [v for g in scores.groups.values() for v in (g.est_speedup, g.tau, g.est_speedup_gpu)]
    return all(v is None or (type(v) is float and math.isfinite(v)) for v in values)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=10))
def test_any_record_is_typed_or_refused_in_one_line(fields):
    try:
        e = entry_of(fields)
    except PLDError as exc:
        assert "\n" not in str(exc) and "score" in str(exc)
        return
    assert isinstance(e.name, str) and isinstance(e.kind, str) and isinstance(e.public.status, str)
    assert e.benchmark is None or isinstance(e.benchmark, str)
    assert _numbers_are_finite(e.public) and all(_numbers_are_finite(t) for t in e.tracks.values())
    assert all(isinstance(r, str) for r in e.refused) and isinstance(e.refused_count, int)
    assert e.oracle_gap is None or all(isinstance(loss, Loss) for loss in e.oracle_gap.values())
