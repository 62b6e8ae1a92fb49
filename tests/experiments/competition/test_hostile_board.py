"""Finding 5 of the third red team, for the board file: a board whose ``benchmarks`` is a string,
whose ``fresh`` is a list, or whose ``groups`` is a string made ``show``, ``render`` and ``figures``
traceback. Every field is typed where the file is read (``loader.board_of``, ``loader.entry_of``): a
field of the wrong type reads as missing. And a board full of hostile parameters, names and
scores still renders, ranks and accepts submissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_files import ESCAPES, assert_inert  # tests/experiments/competition is on sys.path
from toys_competition import make_trace_folder

from experiments import leaderboard as cli
from experiments.benchmarks.traces import load_trace_sets
from experiments.competition.board import Board
from experiments.competition.loader import board_of
from experiments.competition.scoring import benchmark_info
from experiments.benchmarks.paths import ROOT

EXAMPLE = ROOT / "experiments" / "competition" / "submissions" / "example_bigram.py"


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return make_trace_folder(tmp_path_factory.mktemp("hostile-board") / "toy", seed=5)


def hostile_entry(name: str, score: float, bench: str, **more) -> dict:
    return {"name": name, "kind": "submission", "benchmark": bench, "status": "ok", "score": score,
            "score_gpu": score, "tau": 2.0, "groups": "copy", "params": {"x": [[["deep"]]], "blob": "p" * 3000},
            "source": {"kind": "file", "sha256": "0" * 64, "display": ESCAPES}, "tracks": "flat",
            "attempts": "many", "refused": ESCAPES, "oracle_gap": [1, 2], "verify": "yes", **more}


def write_hostile(folder: Path, bench: str, **top) -> Board:
    board = Board(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries = [
        {"name": "oracle", "kind": "oracle", "benchmark": bench, "status": "ok", "score": 3.0, "groups": "all"},
        hostile_entry("huge", 1e308, bench), hostile_entry("negative", -1.0, bench), hostile_entry("zero", 0.0, bench),
        hostile_entry(("n" + ESCAPES) * 20, 1e-300, bench),
        hostile_entry("fine", 1.2, bench, groups={"copy": {"est_speedup": "1.2", "tau": None}, "chat": "x"}),
    ]
    data = {"version": "one", "entries": entries, "seeds": "12", "owners": [1],
            "benchmarks": {bench: {"hash": bench, "tasks": "copy", "cases": "many", "tokens": "lots", "model": "m",
                                   "cpu_profile": {"relative": {"2": "x"}, "forward_ms_1": "fast"},
                                   "gpu_profile": "flat", "tracks": "flat", "fresh": [1], "public": "yes"},
                           "other": "a string"},
            "fresh": [bench], **top}
    board.path.write_text(json.dumps(data))
    return board


@pytest.mark.parametrize("top", [{}, {"benchmarks": "a string"}, {"fresh": {"x": "y", "z": {"seed": "s"}}},
                                 {"fresh": ["a list"], "benchmarks": ["a list"]}])
def test_show_render_and_figures_read_a_hostile_board(tmp_path, traces, capsys, top):
    bench = benchmark_info(load_trace_sets(traces), traces)["hash"]
    board = write_hostile(tmp_path / "board", bench, **top)
    for argv in (["show"], ["show", "fine"], ["show", "huge"], ["render"]):
        assert cli.main([*argv, "--board", str(board.folder), "--benchmark", bench]) == 0, argv
        out, err = capsys.readouterr()
        assert_inert(out + err)
    assert cli.main(["figures", "--check", "--board", str(board.folder), "--root", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "figures regions agree" in shown


def test_a_hostile_board_ranks_and_takes_a_submission(tmp_path, traces, capsys):
    bench = benchmark_info(load_trace_sets(traces), traces)["hash"]
    board = write_hostile(tmp_path / "board", bench)
    assert cli.main(["submit", str(EXAMPLE), "--name", "mine", "--board", str(board.folder),
                     "--traces", str(traces)]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert "rank " in out  # a private benchmark (--traces): ranked by its score, among the hostile entries
    assert cli.main(["show", "--board", str(board.folder), "--traces", str(traces)]) == 0
    shown = capsys.readouterr().out
    assert "mine" in shown and "huge" in shown
    data = json.loads(board.path.read_text())
    assert isinstance(data["benchmarks"], dict) and isinstance(data.get("fresh", {}), dict)


def test_board_of_types_every_field():
    data = board_of({"entries": [], "benchmarks": {"h": {"tasks": {"a": 1, "b": "2", 3: 4}, "cases": True,
                                                          "cpu_profile": {"relative": {"2": 1.5, "4": "x"}}},
                                                    "g": "x"},
                     "fresh": {"h": {"hash": "f", "seed": "7", "cases": 40}, "i": {"seed": 1}}, "seeds": [1, "2"]})
    assert data["benchmarks"] == {"h": {"tasks": {"a": 1}, "cpu_profile": {"relative": {"2": 1.5}}}}
    assert data["fresh"] == {"h": {"hash": "f", "cases": 40}} and data["seeds"] == [1]


def test_check_fresh_of_a_link_without_its_seed_is_one_line(tmp_path, capsys):
    board = Board(tmp_path)
    entries = [{"name": "x", "kind": "baseline", "benchmark": "b" * 16, "status": "ok", "score": 1.0}]
    board.path.write_text(json.dumps({"entries": entries, "benchmarks": {}, "fresh": {"b" * 16: {"hash": "f", "seed": "7", "version": "1"}}}))
    assert cli.main(["check-fresh", "--board", str(tmp_path), "--benchmark", "b" * 16]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "without their seed and size" in err
