"""Finding 6 of the third red team: any name that was not a built-in's could be taken over by a
better-scoring file from anyone (``submit other.py --name example-bigram`` replaced the entry).
Now a name belongs to the key of its first submission (owners.py): its owner's resubmissions
replace the entry as before; anyone else's is one line naming the choice, and nothing is run or
written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toys_competition import make_trace_folder  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.benchmarks.paths import ROOT
from experiments.competition import owners
from experiments.competition.board import Board
from pldcore.errors import PLDError

EXAMPLE = ROOT / "experiments" / "competition" / "submissions" / "example_bigram.py"
#: a file that drafts nothing: the owner's first entry, which anything better would replace
NOTHING = "from lookup import Draft, Drafter\nclass Nothing(Drafter):\n    def propose(self, b):\n        return Draft([])\n"


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return make_trace_folder(tmp_path_factory.mktemp("owned") / "toy", seed=3)


def submit(argv, capsys) -> tuple[int, str, str]:
    code = cli.main(["submit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_name_is_replaced_only_by_its_owner(tmp_path, traces, capsys, monkeypatch):
    board = tmp_path / "board"
    common = ["--board", str(board), "--traces", str(traces), "--name", "mine"]
    nothing = tmp_path / "nothing.py"
    nothing.write_text(NOTHING)
    code, out, _ = submit([str(nothing), *common], capsys)
    assert code == 0 and "the name mine is yours now" in out
    owner_key = (tmp_path / "submitter.key").read_text().strip()
    proof = json.loads((board / "board.json").read_text())["owners"]["mine"]
    assert proof == owners.owner_proof("mine", owner_key) and owner_key not in (board / "board.json").read_text()

    # someone else, with a better file: refused in one line, before anything runs or is written
    monkeypatch.setenv(owners.KEY_ENV, str(tmp_path / "someone-else.key"))
    before = (board / "board.json").read_bytes()
    code, out, err = submit([str(EXAMPLE), *common], capsys)
    assert code == 2 and not out and err.count("\n") == 1
    assert "the name 'mine' belongs to another submitter" in err and "choose another --name" in err
    assert (board / "board.json").read_bytes() == before
    # under a name of their own they are welcome
    code, out, _ = submit([str(EXAMPLE), *common[:-1], "theirs"], capsys)
    assert code == 0 and "the name theirs is yours now" in out

    # the owner's key, from another account (--key): replaces the entry, as a resubmission does
    code, out, _ = submit([str(EXAMPLE), *common, "--key", owner_key], capsys)
    assert code == 0 and "yours now" not in out
    (mine,) = [e for e in Board(board).entries() if e.name == "mine"]
    assert mine.source.display == "example_bigram.py" and len(mine.attempts) == 2


def test_names_nobody_can_prove_to_own_are_refused(tmp_path, traces, capsys):
    board = Board(tmp_path / "board")
    board.record({"name": "legacy", "kind": "submission", "benchmark": "b" * 16, "status": "ok", "score": 1.1})
    common = ["--board", str(board.folder), "--traces", str(traces)]
    code, _, err = submit([str(EXAMPLE), *common, "--name", "legacy"], capsys)
    assert code == 2 and "held by an entry nobody can prove to own" in err
    code, _, err = submit([str(EXAMPLE), *common], capsys)  # the example's own name: the build's
    assert code == 2 and "taken by an example the build submits" in err
    code, _, err = submit([str(EXAMPLE), *common, "--name", "other", "--key", "short"], capsys)
    assert code == 2 and "--key must be" in err


def test_a_key_file_is_made_once_private_and_checked(tmp_path, monkeypatch):
    path = tmp_path / "keys" / "submitter.key"
    monkeypatch.setenv(owners.KEY_ENV, str(path))
    key = owners.submitter_key()
    assert owners.KEY_RE.fullmatch(key) and owners.submitter_key() == key
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("not a key\n")
    with pytest.raises(PLDError, match="is not a key file"):
        owners.submitter_key()
    path.unlink()
    path.symlink_to("/dev/zero")
    with pytest.raises(PLDError, match="not a regular file"):
        owners.submitter_key()


def test_a_hostile_owners_table_reads_as_no_owners():
    proof = owners.owner_proof("a", "k" * 30)
    for table in ([1, 2], "x", {"a": 3, "b": "sha256:zz", 4: proof}):
        assert owners.owners_of({"owners": table}) == {}
    assert owners.owners_of({"owners": {"a": proof}}) == {"a": proof}
