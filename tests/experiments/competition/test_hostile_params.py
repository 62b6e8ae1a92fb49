"""Finding 2 of the third red team: one parameter bricked the board. ``submit --params`` with a
list 60 deep was scored and written, and from then on every command that reads the board failed.
Now parameters are bounded where they enter (``pldcore.params``), before anything is scored or
written; a hand-edited entry's payload reads as no parameters and is never run again."""

from __future__ import annotations

import json

import pytest
from test_hostile_files import BENCH, assert_inert, entry  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.competition import entries
from experiments.competition.board import Board
from pldcore.errors import PLDError

#: a drafter that takes any parameter: what the red team submitted the hostile one with
ANY_PARAMS = '''
from lookup import Draft, Drafter


class TakesAnything(Drafter):
    def __init__(self, x=None):
        super().__init__()

    def propose(self, budget):
        return Draft([])
'''


def deep(levels: int) -> str:
    return '{"x": ' + "[" * levels + "1" + "]" * levels + "}"


@pytest.mark.parametrize("params", [deep(60), deep(200_000), json.dumps({"x": list(range(300_000))}),
                                    '{"x": NaN}', "x=" + "[" * 60 + "1" + "]" * 60])
def test_a_hostile_parameter_is_refused_before_anything_is_written(tmp_path, capsys, params):
    board = Board(tmp_path / "board")
    board.record(entry("standing"))
    before = board.path.read_bytes()
    drafter = tmp_path / "takes_anything.py"
    drafter.write_text(ANY_PARAMS)
    assert cli.main(["submit", str(drafter), "--params", params, "--board", str(board.folder)]) == 2
    out, err = capsys.readouterr()
    assert_inert(out + err)
    assert err.startswith("error: --params") and err.count("\n") == 1, err
    assert board.path.read_bytes() == before  # nothing scored, nothing written
    assert not (board.folder / "submissions").exists()
    # the board reads back: every command that reads it still works
    assert cli.main(["show", "--board", str(board.folder), "--benchmark", BENCH]) == 0
    assert "standing" in capsys.readouterr().out


def test_a_hand_edited_payload_reads_as_no_parameters_and_is_never_run(tmp_path, capsys):
    board = Board(tmp_path)
    payload = {"x": json.loads("[" * 20 + "1" + "]" * 20), "blob": "z" * 100_000}  # under the file's own depth cap
    board.record(entry("payload", params=payload, source={"kind": "builtin", "name": "unfold"},
                       attempts=[{"time": "t", "status": "ok", "score": 1.2, "params": payload}]))
    (typed,) = board.entries(BENCH)
    assert typed.params == {} and typed.attempts[0].params == {}
    assert cli.main(["show", "--board", str(tmp_path), "--benchmark", BENCH]) == 0
    assert cli.main(["show", "payload", "--board", str(tmp_path), "--benchmark", BENCH]) == 0
    assert_inert(capsys.readouterr().out)
    with pytest.raises(PLDError, match="nested deeper"):
        entries.submission_of(typed, board)  # a build gives it no fresh score rather than run it on {}
