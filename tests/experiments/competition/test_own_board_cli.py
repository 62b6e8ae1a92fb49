"""leaderboard.py build --model: a model's own board in one command (record, profile, fit, board),
said up front with a time estimate, each step timed, resumable, never into the committed board."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import leaderboard as cli
from experiments.competition import own_board
from experiments.benchmarks.traces import FITS_FILE, load_trace_sets, traces_setting
from pldcore.cost import CPU_SMOLLM2
from pldcore.fits import default_fits


@pytest.mark.model
@pytest.mark.slow  # a board build of a slice of the embedded model: a minute and more (make test-slow)
def test_a_models_board_in_one_command_on_a_tiny_slice_and_again_resumed(tmp_path, capsys, embedded, monkeypatch):
    import decoding

    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: embedded)
    monkeypatch.setattr(own_board, "cost_profile", lambda target, **kwargs: CPU_SMOLLM2)  # no profile is timed here
    board = tmp_path / "board"
    argv = ["build", "--model", "SmolLM2-135M-Instruct", "--prompts", "1", "--max-new-tokens", "8", "--no-peers",
            "--board", str(board)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("build --model SmolLM2-135M-Instruct: 5 of 5 cases to record (up to 8 new tokens "
                              "each), about ") and "In all about " in out[0]
    assert [line.split(":")[0] for line in out if line[:2] in ("1/", "2/", "3/", "4/")] == [
        "1/4 record", "2/4 cost profile", "3/4 acceptance fit", "4/4 board"]
    sets = load_trace_sets(board / "traces")
    assert sum(len(s.cases) for s in sets) == 5 and all(len(c.output) <= 8 for s in sets for c in s.cases)
    ranking = json.loads((board / "leaderboard.json").read_text())["ranking"]
    assert {"adaptive", "suffix-automaton", "plain"} <= {e["name"] for e in ranking}
    assert (board / "index.html").is_file() and (board / "traces" / "profile.json").is_file()
    # again: everything is there, nothing is done twice (no case recorded, no entry replayed)
    files = {p: p.read_bytes() for p in (board / "traces").glob("*.jsonl*")}
    assert cli.main(argv) == 0
    again = capsys.readouterr().out.splitlines()
    assert again[0].startswith("build --model SmolLM2-135M-Instruct: 0 of 5 cases to record")
    assert "the acceptance fit and the board: about 0 s" in again[0]
    assert {p: p.read_bytes() for p in (board / "traces").glob("*.jsonl*")} == files


def test_a_model_board_never_goes_into_the_committed_board(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    seen = {}

    def build(args, board):
        seen["board"] = board.folder
        return 0

    monkeypatch.setitem(cli.COMMANDS, "build", build)
    assert cli.main(["build", "--model", "my-org/my-model"]) == 0
    assert Path(seen["board"]) == Path("results/boards") / "my-org_my-model"


def test_a_fit_made_on_a_folders_traces_is_what_drafters_replayed_on_them_read(tmp_path):
    """The fit file beside the traces (step 3) goes into the setting every replay of them builds."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent / "competition"))
    from toys_competition import make_trace_folder

    folder = make_trace_folder(tmp_path / "traces", seed=3)
    sets = load_trace_sets(folder)
    assert traces_setting(sets).fits.describe() == default_fits().describe()  # none yet: the shipped fit
    fitted = default_fits()
    own = type(fitted).from_dict({**fitted.to_dict(), "benchmark": "0123456789abcdef"})
    own.save(folder / FITS_FILE)
    assert traces_setting(load_trace_sets(folder)).fits.benchmark == "0123456789abcdef"
