"""Fresh cases rank the board: an entry that carries the public answers wins the public cases,
loses the fresh ones, and is flagged in every view; the fresh cases can be made again from the
seed the board records.

The memoriser is built at test time from the shipped benchmark's traces (every case but a few per
task, which stand in for fresh cases it cannot know: recording real fresh cases needs the model,
minutes on this machine; ``leaderboard.py build`` does that, ``fresh_cases.record_fresh``)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import lzma
import re
from pathlib import Path

import pytest
from toys_competition import QUICK  # tests/experiments/competition is on sys.path

from experiments import leaderboard as cli
from experiments.benchmarks.fresh import FRESH_VERSION, fresh_prompts
from experiments.benchmarks.traces import load_trace_sets, shipped_folder
from experiments.competition import entries, render
from experiments.competition.board import Board
from experiments.competition.ranking import board_scores, ranked
from experiments.competition.flags import BEYOND_FLAG
from experiments.competition.sandbox import Submission
from experiments.competition.scoring import benchmark_info

ATTACKS = Path(__file__).resolve().parent / "attacks"

PUBLIC_PER_TASK, FRESH_PER_TASK = 3, 2


def _key(prompt) -> str:
    return hashlib.sha256(",".join(map(str, prompt)).encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """A board with `adaptive` (a baseline), a peer, and the memoriser: scored on a few public
    cases, then on stand-ins for fresh ones, linked as a build links them."""
    shipped = load_trace_sets(shipped_folder())
    public = [dataclasses.replace(s, cases=s.cases[:PUBLIC_PER_TASK]) for s in shipped]
    fresh = [dataclasses.replace(s, cases=s.cases[-FRESH_PER_TASK:]) for s in shipped]
    known = {_key(c.prompt): list(map(int, c.output)) for s in shipped for c in s.cases[:-FRESH_PER_TASK]}
    packed = base64.b85encode(lzma.compress(json.dumps(known).encode())).decode()
    folder = tmp_path_factory.mktemp("memoriser")
    attack = folder / "memoriser.py"
    attack.write_text((ATTACKS / "memoriser.py").read_text().replace('ANSWERS = ""', f'ANSWERS = "{packed}"'))
    assert attack.stat().st_size < 1 << 20  # all of the public answers fit in a submission
    board = Board(folder / "board")
    info = {**benchmark_info(public, shipped_folder()), "public": True}
    fresh_info = {**benchmark_info(fresh, folder / "fresh"), "folder": "fresh (seed 7)",
                  "fresh": {"seed": 7, "per_task": FRESH_PER_TASK, "version": FRESH_VERSION, "python": "3"}}
    # on the CPU track alone, as conftest.py's cpu_track_only has every test score: a module's fixture
    # is made before a test's, so that patch would come too late here (every track: 3x the sandboxed runs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(entries, "BUILD_TRACKS", ())
        entries.ensure_oracle(board, public, info)
        entries.run_baselines(board, public, info, QUICK, names=["adaptive"], say=lambda *_: None)
        entries.run_submission(board, Submission.builtin("peer:vllm-ngram"), public, info, "peer", QUICK)
        entries.run_submission(board, Submission.file(attack, "memoriser"), public, info, "submission", QUICK)
        entries.run_fresh(board, info, fresh, fresh_info, QUICK, say=lambda *_: None)
    return board, info, attack


def test_the_memoriser_wins_the_public_cases_and_loses_the_fresh_ones(arena):
    board, info, _ = arena
    public = {e.name: e.public for e in board.entries(info["hash"])}
    assert public["memoriser"].score > public["oracle"].score > public["adaptive"].score
    shown, _ = entries.shown_entries(board, info["hash"])
    names = [e.name for e in ranked(shown).ranked]
    assert names.index("adaptive") < names.index("memoriser"), names  # ranked by the fresh cases
    memo = next(e for e in shown if e.name == "memoriser")
    assert memo.public.score > memo.fresh.score == board_scores(memo).score
    assert public["memoriser"].beyond_share > BEYOND_FLAG >= public["adaptive"].beyond_share
    kinds = {flag.split(":")[0] for flag in memo.flags}
    assert kinds == {"beyond", "public-gap"}, memo.flags
    assert not next(e for e in shown if e.name == "adaptive").flags


def test_every_view_flags_the_memoriser(arena, capsys):
    board, info, _ = arena
    shown, shown_info = entries.shown_entries(board, info["hash"])
    render.write_outputs(shown, shown_info, board.folder)
    md = (board.folder / "LEADERBOARD.md").read_text()
    html = (board.folder / "index.html").read_text()
    data = json.loads((board.folder / "leaderboard.json").read_text())
    for text in (md, html):
        line = next(line for line in text.splitlines() if "memoriser" in line and "FLAG" in line)
        assert "beyond" in line and "public-gap" in line
    assert "ranked by fresh cases made at the build: seed 7" in md
    memo = next(e for e in data["ranking"] if e["name"] == "memoriser")
    assert {f.split(":")[0] for f in memo["flags"]} == {"beyond", "public-gap"}
    assert cli.main(["show", "--board", str(board.folder), "--benchmark", info["hash"]]) == 0
    out = capsys.readouterr().out
    assert "FLAG beyond" in out and "FLAG public-gap" in out and "fresh CPU (ranks)" in out
    assert cli.main(["show", "memoriser", "--board", str(board.folder), "--benchmark", info["hash"]]) == 0
    assert "FLAG beyond" in capsys.readouterr().out


def test_submit_prints_the_flag_and_says_the_score_is_public(arena, tmp_path, capsys, monkeypatch):
    board, info, attack = arena
    shipped = load_trace_sets(shipped_folder())
    few = [dataclasses.replace(s, cases=s.cases[:PUBLIC_PER_TASK]) for s in shipped]
    monkeypatch.setattr(cli, "_benchmark", lambda args, sampled=False: (few, info, {}) if sampled else (few, info))
    assert cli.main(["submit", str(attack), "--name", "memoriser-again", "--board", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "FLAG beyond" in out and "public benchmark" in out and "ranks by fresh cases" in out
    assert_no_public_rank(out)


def assert_no_public_rank(out: str) -> None:
    """Finding 4 of the third red team: `submit` said "rank 1 of 9" by public score. A public score
    is shown as a score, and the entry is ranked by the next build's fresh cases."""
    assert not re.search(r"rank \d+ of \d+|#\d+ of \d+", out), out
    assert re.search(r"public score \d+\.\d+x on the public benchmark \w+ \(\d+% of the oracle's gain there\): "
                     r"not a rank", out), out


def test_submit_to_a_board_ranked_by_fresh_cases_shows_no_public_rank(arena, tmp_path, capsys, monkeypatch):
    board, info, attack = arena
    copy = board.copy_to(tmp_path / "board")
    shipped = load_trace_sets(shipped_folder())
    few = [dataclasses.replace(s, cases=s.cases[:PUBLIC_PER_TASK]) for s in shipped]
    monkeypatch.setattr(cli, "_benchmark", lambda args, sampled=False: (few, info, {}) if sampled else (few, info))
    assert cli.main(["submit", str(attack), "--name", "memoriser-late", "--board", str(copy.folder)]) == 0
    out = capsys.readouterr().out
    assert_no_public_rank(out)
    assert "which ranks memoriser-late by them" in out


def test_an_entry_submitted_after_the_build_waits_for_fresh_cases(arena):
    board, info, _ = arena
    late = {**next(e for e in board.entries(info["hash"]) if e.name == "adaptive").record, "name": "late"}
    board.record(late, None)
    shown, _ = entries.shown_entries(board, info["hash"])
    entry = next(e for e in shown if e.name == "late")
    assert board_scores(entry).status == "pending" and board_scores(entry).score is None
    assert entry.public.score == late["score"]
    assert "late" not in [e.name for e in ranked(shown).ranked]
    assert "not scored on fresh cases yet" in render.text_board(shown, info)
    with board.editing() as data:
        data["entries"] = [e for e in data["entries"] if e.get("name") != "late"]


def test_fresh_prompts_are_made_again_from_the_seed():
    """What `check-fresh` relies on: the seed and the generator's version make the same prompts."""
    assert fresh_prompts(7, 2) == fresh_prompts(7, 2) != fresh_prompts(8, 2)
