"""Finding 1 of the third red team: the fresh cases were memorisable, because the seed was reused.
The board printed its seed, ``check-fresh`` made its cases again, and the board was rebuilt with
that seed: an entry carrying those cases' answers ranked by them. Now a build draws a seed the
board never published; ``build --seed S`` of a published seed is an audit on a copy of the board;
the board keeps every seed it published.

Here on tiny fixtures (recording real fresh cases needs the model): build, memorise the build's
fresh cases, build again. The memoriser ranks by what it drafts honestly."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import lzma
from pathlib import Path

import pytest
from toys_competition import make_trace_folder  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.benchmarks.traces import load_trace_sets
from experiments.competition import entries, fresh_cases
from experiments.competition.board import Board
from experiments.competition.fresh_cases import published_seeds

ATTACKS = Path(__file__).resolve().parent / "attacks"
FIRST, SECOND = 11, 12


def _key(prompt) -> str:
    return hashlib.sha256(",".join(map(str, prompt)).encode()).hexdigest()[:16]


def fresh_folder(root: Path, seed: int) -> Path:
    """The stand-in for the fresh cases of ``seed``: the same toy tasks, other prompts."""
    folder = root / f"fresh-{seed}"
    return folder if folder.exists() else make_trace_folder(folder, seed=1000 + seed)


@pytest.fixture
def build(tmp_path, monkeypatch, capsys):
    """``leaderboard.py build`` on a toy public benchmark, with ``unfold`` as the only baseline and
    fresh cases made from the seed without a model; the OS draws ``FIRST``, ``FIRST`` again, then ``SECOND``."""
    public = make_trace_folder(tmp_path / "public", seed=1)

    def record(seed, per_task, model=None, **_):
        folder = fresh_folder(tmp_path, seed)
        return [s for s in load_trace_sets(folder) if s.cases], folder

    draws = iter([FIRST, FIRST, SECOND])
    monkeypatch.setattr(fresh_cases.secrets, "randbelow", lambda _: next(draws))
    monkeypatch.setattr(cli, "record_fresh", record)
    monkeypatch.setattr(cli, "traces_model", lambda sets: "toy")
    monkeypatch.setattr(cli, "run_baselines", functools.partial(entries.run_baselines, names=["unfold"]))
    board = tmp_path / "board"

    def run(*more: str) -> str:
        assert cli.main(["build", "--board", str(board), "--traces", str(public), "--no-peers", "--fresh", "1",
                         *more]) == 0
        return capsys.readouterr().out

    return run, board, public


def memoriser(tmp_path: Path, seed: int | None) -> Path:
    """The red-team memoriser carrying the answers of the fresh cases of ``seed`` (None: none)."""
    known = {}
    if seed is not None:
        known = {_key(c.prompt): list(map(int, c.output)) for s in load_trace_sets(fresh_folder(tmp_path, seed))
                 for c in s.cases}
    packed = base64.b85encode(lzma.compress(json.dumps(known).encode())).decode() if known else ""
    path = tmp_path / ("memo.py" if seed is not None else "honest.py")
    path.write_text((ATTACKS / "memoriser.py").read_text().replace('ANSWERS = ""', f'ANSWERS = "{packed}"'))
    return path


def fresh_scores(board: Path) -> dict:
    data = Board(board).load()
    (link,) = data["fresh"].values()
    return link["seed"], {e.name: e.public for e in Board(board).entries(link["hash"])}


def test_a_memoriser_of_a_published_seed_gains_nothing_at_the_next_build(tmp_path, build, capsys):
    run, board, public = build
    run()
    seed, _ = fresh_scores(board)
    assert seed == FIRST and published_seeds(Board(board).load()) == {FIRST}
    # the red team: the board printed the seed; its cases are made again and memorised
    for path, name in ((memoriser(tmp_path, FIRST), "memo"), (memoriser(tmp_path, None), "honest")):
        assert cli.main(["submit", str(path), "--name", name, "--board", str(board), "--traces", str(public)]) == 0
    capsys.readouterr()

    run()  # the OS draws FIRST again: published, so drawn again
    seed, scores = fresh_scores(board)
    assert seed == SECOND and published_seeds(Board(board).load()) == {FIRST, SECOND}
    assert Board(board).load()["seeds"] == [FIRST, SECOND]
    memo, honest = scores["memo"], scores["honest"]
    assert memo.ok and honest.ok
    assert memo.tau == honest.tau  # it drafts what the honest twin drafts: it knows none of these cases
    assert {g: s.tau for g, s in memo.groups.items()} == {g: s.tau for g, s in honest.groups.items()}

    # build --seed of a published seed: an audit, on a copy; this board and its ranks stay as they were
    before = (board / "board.json").read_bytes()
    out = run("--seed", str(FIRST))
    assert f"audit: seed {FIRST} was published" in out
    assert (board / "board.json").read_bytes() == before
    audit = Path(out.split("scoring on a copy of the board (")[1].split(")")[0])
    seed, audited = fresh_scores(audit)
    assert seed == FIRST and audited["memo"].tau > audited["honest"].tau  # what the reuse gave it


def test_published_seeds_read_every_place_a_board_names_one():
    data = {"seeds": [1, "2", True, None], "fresh": {"a": {"seed": 3}, "b": [4], "c": {"seed": 2.5}},
            "benchmarks": {"h": {"fresh": {"seed": 5}}, "i": "x", "j": {"fresh": [6]}}}
    assert published_seeds(data) == {1, 3, 5}
    assert published_seeds({"seeds": "12", "fresh": [1], "benchmarks": "x"}) == set()
    assert fresh_cases.new_seed({1, 2}, iter([1, 2, 2, 7]).__next__) == 7
