"""Finding 5 of the third red team, for trace folders: a folder whose cases were all dropped (every
line cut short or not a case) made ``compare.py --replay`` print "0 replays" and exit 0, and
``traces.py explain`` die with ZeroDivisionError. A folder (or a selection of it) that leaves no
case is one line and exit 2, in every command that reads traces."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from experiments import compare, leaderboard, traces
from experiments.benchmarks.traces import load_trace_sets
from pldcore.errors import PLDError


def caseless(folder: Path) -> Path:
    """Trace files whose every line is dropped: a line that is not a case, one cut short."""
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "copy-n8.jsonl.gz", "wt") as f:
        f.write('{"case": "copy/0", "category": "copy"}\n[1, 2, 3]\n{"case": "copy/1", "prompt": [1, 2\n')
    return folder


@pytest.mark.parametrize("argv", [
    lambda d: (compare.main, ["--replay", "--traces", str(d), "--drafters", "suffix-automaton", "--results", ""]),
    lambda d: (traces.main, ["explain", "--traces", str(d), "--drafters", "suffix-automaton", "--plot", ""]),
    lambda d: (traces.main, ["replay", "--traces", str(d), "--drafters", "suffix-automaton", "--results", ""]),
    lambda d: (leaderboard.main, ["show", "--traces", str(d), "--board", str(d / "board")]),
])
def test_a_folder_that_leaves_no_case_is_one_line_in_every_command(tmp_path, capsys, argv):
    main, args = argv(caseless(tmp_path / "traces"))
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and err.count("\n") == 1, (out, err)
    assert "leave no case" in err or "no complete case" in err, err
    assert "replays" not in out


def test_the_reader_refuses_it_where_it_is_read(tmp_path):
    with pytest.raises(PLDError, match="leave no case to replay"):
        load_trace_sets(caseless(tmp_path / "traces"))
