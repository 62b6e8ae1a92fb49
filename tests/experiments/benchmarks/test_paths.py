"""Generated files name paths without the machine's own folders."""

from __future__ import annotations

from experiments.benchmarks.paths import ROOT, local_path, portable_path


def test_paths_in_the_checkout_or_the_cache_are_relative(tmp_path, monkeypatch):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    board = ROOT / "leaderboard" / "board.json"
    assert portable_path(board) == "leaderboard/board.json" and local_path("leaderboard/board.json") == board
    traces = tmp_path / "cache" / "traces" / "m"
    assert portable_path(traces) == "$PLD_LAB_CACHE/traces/m" and local_path("$PLD_LAB_CACHE/traces/m") == traces


def test_anything_else_is_named_by_its_file_name_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("PLD_LAB_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "home" / "alice" / "my_drafter.py"
    assert portable_path(mine) == "my_drafter.py"
    assert str(tmp_path) not in portable_path(mine)
