"""The rules `submit` and the views share, without a sandbox: a resubmission keeps the best entry
of its name and lists the attempt; the rank `submit` says is the '#' `show` lists; a fresh score
belongs to the code it scored; refused operations name no machine's folders; `render` writes the
views from the board file alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from experiments import leaderboard as cli
from experiments.benchmarks.paths import ROOT
from experiments.competition import board as board_file
from experiments.competition import entries, render
from experiments.competition.board import Board, attempt_of
from experiments.competition.flags import with_fresh
from experiments.competition.loader import entry_of
from experiments.competition.ranking import better, board_scores, public_standing, standing
from pldcore.errors import PLDError
from experiments.competition.sandbox import Evaluation, Submission
from experiments.competition.text import portable_refusal
from decoding.loading import cache_dir

EXAMPLE = ROOT / "experiments" / "competition" / "submissions" / "example_bigram.py"
BENCH = "b" * 16


def entry(name: str, score: float | None, kind: str = "submission", time: str = "2026-01-01T00:00:00+00:00",
          **more) -> dict:
    ok = score is not None
    groups = {"copy": {"tau": 2.0, "est_speedup": score or 0.0, "est_speedup_gpu": (score or 0.0) + 0.5}}
    return {"name": name, "kind": kind, "benchmark": BENCH, "status": "ok" if ok else "disqualified",
            "score": score, "score_gpu": (score or 0.0) + 0.5, "tau": 2.0, "drafter_us_per_step": 10.0,
            "groups": groups if ok else {}, "reason": None if ok else "exception: boom", "refused_count": 0,
            "time": time, "params": {}, "source": {"kind": "file", "sha256": name[0] * 64, "display": f"{name}.py"},
            **more}


# -- keep the best -----------------------------------------------------------------------------------------------
def typed(name: str, score: float | None, **more):
    return entry_of(entry(name, score, **more))


def test_better_follows_the_ranking_rule():
    assert better(typed("a", 1.2), typed("a", 1.1)) and better(typed("a", 1.1), typed("a", 1.1))
    assert not better(typed("a", 1.0), typed("a", 1.1)) and not better(typed("a", None), typed("a", 1.1))
    assert better(typed("a", None), typed("a", None)) and better(typed("a", 0.5), typed("a", None))
    with pytest.raises(PLDError, match="the score of entry 'a' of benchmark b+ is not a number"):
        entry_of({**entry("a", 1.1), "score": "lots"})  # a hand-edited board: refused where it is read


def test_a_resubmission_over_a_hand_edited_score_is_one_line(tmp_path):
    board = Board(tmp_path)
    board.record({**entry("mine", 1.3), "score": "lots"})
    with pytest.raises(PLDError, match="is not a number"):
        board.record_best(entry("mine", 1.2))


def test_a_worse_or_disqualified_resubmission_keeps_the_entry_and_lists_the_attempt(tmp_path):
    board = Board(tmp_path)
    first, recorded = board.record_best(entry("mine", 1.3, time="t1"))
    assert recorded and [a["score"] for a in first["attempts"]] == [1.3]
    for attempt, time in ((entry("mine", 1.2), "t2"), (entry("mine", None), "t3")):
        standing, recorded = board.record_best({**attempt, "time": time})
        assert not recorded and standing["score"] == 1.3 and standing["time"] == "t1"
    (held,) = board.entries(BENCH)
    assert [(a.time, a.status, a.score) for a in held.attempts] == [
        ("t1", "ok", 1.3), ("t2", "ok", 1.2), ("t3", "disqualified", None)]
    assert held.attempts[2].reason == "exception: boom"
    # a better one replaces it, and carries the list on
    standing, recorded = board.record_best({**entry("mine", 1.4), "time": "t4", "params": {"k": 2}})
    assert recorded and standing["score"] == 1.4
    (held,) = board.entries(BENCH)
    assert held.public.score == 1.4 and [a.time for a in held.attempts] == ["t1", "t2", "t3", "t4"]
    assert held.attempts[-1].params == {"k": 2}


def test_attempts_are_capped_and_an_old_entry_counts_as_its_own_first(tmp_path):
    board = Board(tmp_path)
    board.record(entry("old", 2.0, time="t0"))  # recorded before attempts were listed
    board.record_best({**entry("old", 1.0), "time": "t1"})
    assert [a.time for a in board.entries(BENCH)[0].attempts] == ["t0", "t1"]
    for i in range(board_file.MAX_ATTEMPTS + 5):
        board.record_best({**entry("old", 1.0), "time": f"x{i}"})
    attempts = board.entries(BENCH)[0].attempts
    assert len(attempts) == board_file.MAX_ATTEMPTS and attempts[-1].time == f"x{board_file.MAX_ATTEMPTS + 4}"
    # whatever a board file holds there is no list of attempts to trust
    board.record({**entry("odd", 1.0, time="t0"), "attempts": "nonsense"})
    standing, _ = board.record_best({**entry("odd", 0.5), "time": "t1"})
    assert [a["time"] for a in standing["attempts"]] == ["t0", "t1"]


def test_attempt_of_keeps_when_what_and_which_file():
    a = attempt_of(typed("mine", None, params={"max_tokens": 3}))
    assert a == {"time": "2026-01-01T00:00:00+00:00", "status": "disqualified", "params": {"max_tokens": 3},
                 "reason": "exception: boom", "source": {"kind": "file", "sha256": "m" * 64, "display": "mine.py"}}


# -- one rank ------------------------------------------------------------------------------------------------
def _board(pending: bool = False) -> list[dict]:
    listed = [{"name": "oracle", "kind": "oracle", "status": "ok", "score": 3.0, "score_gpu": 4.0, "tau": 3.0,
               "benchmark": BENCH, "groups": {}}]
    listed += [entry("base-a", 2.0, kind="baseline"), entry("base-b", 1.1, kind="baseline"),
               entry("peer:a", 2.5, kind="peer"), entry("peer:b", 1.5, kind="peer"), entry("mine", 1.6),
               entry("gone", None)]
    return listed


def _hash_column(text: str) -> dict[str, int]:
    """Entry name -> the '#' the main table of `show` lists (the first table only: the peers' is another)."""
    table = text.split("\n\n")[1]
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^(\d+)\s+(\S+)\s", table, re.M)}


def test_standing_is_the_rank_show_lists_with_the_peers_ranked_apart():
    shown = [entry_of(e) for e in _board()]
    text = render.text_board(shown, {"hash": BENCH})
    listed = _hash_column(text)
    assert listed == {"base-a": 1, "mine": 2, "base-b": 3}
    for name, rank in listed.items():
        assert standing(shown, name) == (rank, 3)
    assert standing(shown, "peer:a") is None and standing(shown, "gone") is None


def test_a_pending_entry_is_not_ranked_and_its_public_standing_is_what_show_lists():
    public = _board()
    fresh = [{**e, "score": e["score"] * 0.9 if e["score"] else None} for e in public if e["name"] != "mine"]
    shown = with_fresh([entry_of(e) for e in public], [entry_of(e) for e in fresh])
    assert standing(shown, "mine") is None
    assert public_standing(shown, "mine") == (2, 3)
    text = render.text_board(shown, {"hash": BENCH})
    assert "  mine: public 1.600x (#2 of 3 by public score)" in text
    assert "mine" not in _hash_column(text)


def test_a_fresh_score_belongs_to_the_code_and_parameters_it_scored():
    public = [entry("mine", 1.6), entry("base", 1.2, kind="baseline", code="k1")]
    same = with_fresh([entry_of(e) for e in public], [typed("mine", 1.5), typed("base", 1.1, kind="baseline", code="k1")])
    assert [(board_scores(e).status, board_scores(e).score) for e in same] == [("ok", 1.5), ("ok", 1.1)]
    assert [e.public.score for e in same] == [1.6, 1.2]  # the public scores stay beside the fresh ones
    # resubmitted since the build: another file, other parameters, or (ours) other code
    for changed in ({"source": {"kind": "file", "sha256": "z" * 64, "display": "mine.py"}}, {"params": {"k": 1}}):
        (shown,) = with_fresh([entry_of({**public[0], **changed})], [typed("mine", 1.5)])
        assert board_scores(shown).status == "pending" and board_scores(shown).score is None
        assert shown.public.score == 1.6
    (shown,) = with_fresh([entry_of(public[1])], [typed("base", 1.1, kind="baseline", code="k0")])
    assert board_scores(shown).status == "pending"
    # the same file under another display name is the same code
    renamed = {**public[0], "source": {**public[0]["source"], "display": "renamed.py"}}
    assert board_scores(with_fresh([entry_of(renamed)], [typed("mine", 1.5)])[0]).score == 1.5


# -- refusals name no machine's folders -------------------------------------------------------------------------
def test_refused_paths_are_named_as_the_board_names_paths(monkeypatch, tmp_path):
    home = tmp_path / "home" / "alice"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr("experiments.competition.text._homes", lambda: [str(home)])
    cache = cache_dir().resolve()
    assert portable_refusal(f"os.scandir {cache}/traces") == "os.scandir $PLD_LAB_CACHE/traces"
    assert portable_refusal(f"open {ROOT}/leaderboard/board.json") == "open leaderboard/board.json"
    assert portable_refusal(f"os.scandir {home}/traces") == "os.scandir ~/traces"
    assert portable_refusal(f"os.listdir {home}") == "os.listdir ~"
    for same in ("open /proc/1/cmdline", "ctypes.dlopen /usr/lib/libc.so.6", "os.listdir /", "subprocess.Popen",
                 "socket.getaddrinfo", "os.kill 1", "os.scandir $PLD_LAB_CACHE/traces", "os.scandir ~/traces"):
        assert portable_refusal(same) == same  # no path, a path every machine has, or portable already
    assert portable_refusal("open /elsewhere/secret/answers.json") == "open answers.json"
    assert "\x1b" not in portable_refusal("open /a\x1b[2Jb\nc") and "\n" not in portable_refusal("open /a\nb")
    assert portable_refusal(None) == ""


def test_an_entry_records_its_refusals_portably(monkeypatch, tmp_path):
    home = str(Path.home())
    evaluation = Evaluation(Submission.file(EXAMPLE), reason="crash: the process exited during propose",
                            refused=[f"os.scandir {cache_dir().resolve()}/traces", f"os.scandir {home}/traces",
                                     "open /proc/1/environ"])
    recorded = entries.make_entry(evaluation, "submission", BENCH, public=True)
    assert recorded["refused"][0] == "os.scandir $PLD_LAB_CACHE/traces"
    assert recorded["refused"][2] == "open /proc/1/environ"
    assert not any(home in r for r in recorded["refused"] if home != "/")
    # not public: the operations only, as before
    hidden = entries.make_entry(evaluation, "submission", BENCH, public=False)
    assert hidden["refused"] == ["os.scandir", "os.scandir", "open"]


def test_render_writes_the_views_from_the_board_file_alone_and_names_no_home(tmp_path, capsys):
    board = Board(tmp_path)
    info = {"hash": BENCH, "cases": 2}
    home = str(Path.home())
    refused = [f"os.scandir {cache_dir().resolve()}/traces", f"os.scandir {home}/traces", "open /proc/1/cmdline"]
    for e in _board():
        board.record(e, info)
    board.record({**entry("future-reader", 1.2), "refused": refused, "refused_count": 3}, info)  # an old board's words
    assert cli.main(["render", "--board", str(tmp_path), "--benchmark", BENCH[:6]]) == 0
    assert "rendered from" in capsys.readouterr().out
    md = (tmp_path / "LEADERBOARD.md").read_text()
    views = md + (tmp_path / "leaderboard.json").read_text()
    assert "future-reader" in md and r"os.scandir \$PLD\_LAB\_CACHE/traces" in md
    assert "open /proc/1/cmdline" in md
    assert home == "/" or f"{home}/" not in views
    ranking = json.loads((tmp_path / "leaderboard.json").read_text())["ranking"]
    assert next(r for r in ranking if r["name"] == "future-reader")["refused"][0] == "os.scandir $PLD_LAB_CACHE/traces"
    assert (tmp_path / "index.html").exists() and Board(tmp_path).entries(BENCH)  # the board file as it was


def test_render_of_an_empty_board_is_one_line(tmp_path, capsys):
    assert cli.main(["render", "--board", str(tmp_path), "--benchmark", "abc"]) == 2
    assert capsys.readouterr().err.startswith("error: benchmark 'abc' is not on the board")
