"""The board's figures in README.md and docs/*.md: the committed regions agree with the committed
board.json, and `leaderboard.py figures` renders, checks and refuses as it says (on a small board)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from experiments import leaderboard as cli
from experiments.competition import figures
from experiments.competition.board import Board

ROOT = Path(__file__).resolve().parents[3]
PUBLIC, FRESH = "p" * 16, "f" * 16
GROUPS = ("code-edit", "doc-qa")


# -- the checkout -------------------------------------------------------------------------------------------
def test_the_committed_figures_agree_with_the_committed_board():
    """The test that fails when README.md or docs/*.md quote the board otherwise than board.json says:
    `python experiments/leaderboard.py figures` renders them again."""
    differ = figures.update_files(Board(ROOT / "leaderboard"), ROOT, check=True)
    assert differ == [], f"run `python experiments/leaderboard.py figures`: {differ}"


def test_every_region_is_used_in_the_docs():
    used = {r.name for path in figures.documents(ROOT)
            for r in figures.find_regions(path.read_text(), path.name)}
    assert used == set(figures.REGIONS)


def test_dated_notes_are_not_rendered():
    assert figures.documents(ROOT) and all(p.parent.name != "notes" for p in figures.documents(ROOT))


# -- a small board ------------------------------------------------------------------------------------------
def _entry(name: str, kind: str, score: float, bench: str = PUBLIC, **extra) -> dict:
    groups = {g: {"cases": 4, "tau": 2.0, "est_speedup": score * (1.2 if g == "code-edit" else 0.9),
                  "est_speedup_gpu": score} for g in GROUPS}
    gap = {g: {"plain": 10.0, "oracle": 4.0, "run": 10.0 / score, "cases": 4, "first_token_auc": None,
               "parts": {"missed": 1.0, "wrong": 1.0, "short": 0.5, "long": 0.5, "beyond": 0.0,
                         "drafter": 10.0 / score - 7.0}} for g in GROUPS}
    return {"name": name, "kind": kind, "benchmark": bench, "status": "ok", "reason": None, "score": score,
            "score_gpu": score + 0.5, "tau": 2.0, "groups": groups, "oracle_gap": gap, "beyond_share": 0.001,
            "time": "2026-12-02T08:00:00+00:00", **extra}


def _board_data(fresh: bool = True) -> dict:
    public = [_entry("oracle", "oracle", 2.5), _entry("adaptive", "baseline", 1.8),
              _entry("adaptive:history=true", "baseline", 1.9, stream=True),
              _entry("suffix-automaton", "baseline", 1.5, beyond_share=0.08),
              _entry("peer:a", "peer", 1.7), _entry("peer:b:history=true", "peer", 1.6),
              {"name": "crashing", "kind": "submission", "benchmark": PUBLIC, "status": "disqualified",
               "reason": "crash: SIGSEGV", "time": "2026-12-02T08:00:00+00:00"}]
    data = {"version": 1, "entries": public,
            "benchmarks": {PUBLIC: {"hash": PUBLIC, "public": True, "cases": 16, "tasks": {"code-edit": 8, "doc-qa": 8}}}}
    if fresh:
        data["entries"] = public + [{**copy.deepcopy(e), "benchmark": FRESH, "score": e["score"] + 0.3,
                                     "time": "2026-12-02T09:00:00+00:00"} for e in public if e["status"] == "ok"]
        data["benchmarks"][FRESH] = {"hash": FRESH, "public": False, "cases": 8}
        data["fresh"] = {PUBLIC: {"hash": FRESH, "cases": 8, "seed": 1234, "per_task": 4, "version": "1",
                                  "time": "2026-12-02T09:00:00+00:00", "python": "3.11"}}
    return data


README = """# A project

Prose with a figure someone typed: 9.999x.

<!-- figures:board -->
<!-- /figures:board -->

More prose.

<!-- figures:peers-by-group -->
stale text
<!-- /figures:peers-by-group -->
"""

DOC = """# A page

<!-- figures:adaptive-groups -->
<!-- /figures:adaptive-groups -->

<!-- figures:oracle-gap -->
<!-- /figures:oracle-gap -->

<!-- figures:fresh-vs-public -->
<!-- /figures:fresh-vs-public -->

<!-- figures:beyond -->
<!-- /figures:beyond -->
"""


@pytest.fixture
def site(tmp_path):
    """(board folder, docs root): a small board and a README and one docs page with every region."""
    board = tmp_path / "board"
    board.mkdir()
    (board / "board.json").write_text(json.dumps(_board_data()))
    root = tmp_path / "root"
    (root / "docs" / "notes").mkdir(parents=True)
    (root / "README.md").write_text(README)
    (root / "docs" / "page.md").write_text(DOC)
    (root / "docs" / "notes" / "old.md").write_text("<!-- figures:gone -->\nas measured then\n<!-- /figures:gone -->\n")
    return board, root


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["figures", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_figures_renders_checks_and_names_what_changed(site, capsys):
    board, root = site
    before = (root / "README.md").read_text()
    code, out, _ = run(capsys, "--check", "--board", str(board), "--root", str(root))
    assert code == 1 and (root / "README.md").read_text() == before  # --check writes nothing
    assert out.splitlines() == [f"{f}: figures:{n} differs from board.json (`leaderboard.py figures` renders it)"
                                for f, n in [("README.md", "board"), ("README.md", "peers-by-group"),
                                             ("docs/page.md", "adaptive-groups"), ("docs/page.md", "oracle-gap"),
                                             ("docs/page.md", "fresh-vs-public"), ("docs/page.md", "beyond")]]

    code, out, _ = run(capsys, "--board", str(board), "--root", str(root))
    assert code == 0 and len(out.splitlines()) == 6 and all("rewritten from" in line for line in out.splitlines())
    readme = (root / "README.md").read_text()
    assert "Prose with a figure someone typed: 9.999x." in readme and "stale text" not in readme  # prose kept
    assert "| 1 | adaptive:history=true" in readme
    assert "2.200x" in readme  # adaptive:history=true's fresh score ranks
    assert "1.900x" in readme  # its public score beside it
    assert (root / "docs" / "notes" / "old.md").read_text().count("as measured then") == 1  # notes untouched

    code, out, _ = run(capsys, "--check", "--board", str(board), "--root", str(root))
    assert code == 0 and out.strip() == "6 figures regions agree with board.json"  # a path outside the checkout: its name


def test_a_changed_score_fails_the_check_until_rendered(site, capsys):
    board, root = site
    assert run(capsys, "--board", str(board), "--root", str(root))[0] == 0
    data = json.loads((board / "board.json").read_text())
    next(e for e in data["entries"] if e["name"] == "peer:a" and e["benchmark"] == PUBLIC)["score"] = 1.75
    (board / "board.json").write_text(json.dumps(data))
    code, out, _ = run(capsys, "--check", "--board", str(board), "--root", str(root))
    assert code == 1
    assert {line.split(" differs")[0] for line in out.splitlines()} == {
        "README.md: figures:board", "README.md: figures:peers-by-group", "docs/page.md: figures:adaptive-groups",
        "docs/page.md: figures:fresh-vs-public"}
    assert run(capsys, "--board", str(board), "--root", str(root))[0] == 0
    assert "1.750x" in (root / "README.md").read_text()
    assert run(capsys, "--check", "--board", str(board), "--root", str(root))[0] == 0


def test_a_missing_board_is_one_line(site, capsys):
    _, root = site
    code, out, err = run(capsys, "--check", "--board", str(root / "nothing"), "--root", str(root))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: no board file at ")


def test_an_unknown_region_is_one_line_with_the_close_names(site, capsys):
    board, root = site
    (root / "docs" / "page.md").write_text("text\n<!-- figures:bord -->\n<!-- /figures:bord -->\n")
    code, _, err = run(capsys, "--board", str(board), "--root", str(root))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: docs/page.md:2: unknown figures region 'bord'; did you mean 'board'")
    assert (root / "README.md").read_text() == README  # no file is written while any is refused


@pytest.mark.parametrize("text, message", [
    ("<!-- figures:board -->\n", "docs/page.md:1: figures:board is never closed"),
    ("<!-- /figures:board -->\n", "docs/page.md:1: /figures:board closes no open region"),
    ("<!-- figures:board -->\n<!-- figures:beyond -->\n", "docs/page.md:2: figures:beyond opens inside figures:board"),
    ("<!-- figures:board -->\n<!-- /figures:beyond -->\n", "docs/page.md:2: /figures:beyond closes no open region"),
])
def test_malformed_markers_are_one_line(site, capsys, text, message):
    board, root = site
    (root / "docs" / "page.md").write_text(text)
    code, _, err = run(capsys, "--check", "--board", str(board), "--root", str(root))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {message}")


def test_cross_fitted_scores_get_a_column_beside_the_public_score(site, capsys):
    board, root = site
    view = figures.load_view(Board(board))
    assert "cross-fitted" not in figures.render_region("board", view)
    data = json.loads((board / "board.json").read_text())
    for e in data["entries"]:
        if e["name"] == "adaptive" and e["benchmark"] == PUBLIC:
            e["cross_fitted"] = {"score": 1.777, "score_gpu": 2.2, "tau": 2.0,
                                 "groups": {g: {**s, "est_speedup": s["est_speedup"] - 0.01} for g, s in e["groups"].items()}}
    (board / "board.json").write_text(json.dumps(data))
    view = figures.load_view(Board(board))
    table = figures.render_region("board", view).splitlines()
    header = [c.strip() for c in table[2].strip("|").split("|")]
    assert header[3:7] == ["fresh CPU (ranks)", "public CPU", "public CPU, cross-fitted", "of oracle gain (fresh)"]
    rows = {r.split("|")[2].strip(): [c.strip() for c in r.strip("|").split("|")] for r in table[4:]}
    assert rows["adaptive"][4:6] == ["1.800x", "1.777x"]
    assert rows["peer:a"][5] == "-" and rows["oracle"][5] == "-"
    groups = figures.render_region("adaptive-groups", view)
    assert "`adaptive`, cross-fitted" in groups and "2.150x" in groups  # 1.8 * 1.2 - 0.01 in code-edit


def test_a_board_without_fresh_cases_shows_one_score(tmp_path):
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "board.json").write_text(json.dumps(_board_data(fresh=False)))
    view = figures.load_view(Board(folder))
    table = figures.render_region("board", view)
    assert "| CPU " in table and "fresh" not in table and "public CPU" not in table
    assert "links no fresh cases" in figures.render_region("fresh-vs-public", view)


def test_texts_from_the_board_are_escaped_and_non_numbers_shown_as_dashes(tmp_path):
    data = _board_data(fresh=False)
    data["entries"][4]["name"] = "peer:x|<b>\n`y`"
    data["entries"][4]["groups"]["doc-qa"]["est_speedup"] = "fast"
    data["entries"][4]["oracle_gap"] = {"doc-qa": {"plain": "NaN"}}
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "board.json").write_text(json.dumps(data))
    view = figures.load_view(Board(folder))
    for name in figures.REGIONS:
        text = figures.render_region(name, view)
        assert "<b>" not in text and "\n`y`" not in text
        for line in text.splitlines():
            if line.startswith("|"):  # every row of a table has as many cells as its header
                assert line.replace("\\|", "").count("|") == text.splitlines()[
                    next(i for i, t in enumerate(text.splitlines()) if t.startswith("|"))].count("|")


def test_an_empty_board_is_one_line(tmp_path):
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "board.json").write_text(json.dumps({"version": 1, "benchmarks": {}, "entries": []}))
    with pytest.raises(figures.PLDError, match="holds no entries"):
        figures.load_view(Board(folder))


def test_a_score_that_is_not_a_number_is_one_line(site, capsys):
    board, root = site
    data = json.loads((board / "board.json").read_text())
    next(e for e in data["entries"] if e["benchmark"] == FRESH and e["name"] == "adaptive")["score"] = "2.1"
    (board / "board.json").write_text(json.dumps(data))
    code, _, err = run(capsys, "--check", "--board", str(board), "--root", str(root))
    assert code == 2 and err.count("\n") == 1 and "is not a number" in err


def test_the_setting_tracks_table_picks_per_group_the_best_of_ours_and_of_the_peers(tmp_path):
    """figures:setting-tracks: per sampled or batch track and group, the track's oracle, our best entry and
    the best peer there (each chosen per group, on the track's own scores: not the CPU ones)."""
    data = _board_data(fresh=False)

    def track(score: float, first: float) -> dict:  # first: code-edit's speedup, doc-qa's is 1.0
        return {"status": "ok", "score": score, "tau": 1.5,
                "groups": {"code-edit": {"est_speedup": first, "tau": 1.5}, "doc-qa": {"est_speedup": 1.0, "tau": 1.1}}}

    on_track = {"oracle": (1.3, 1.6), "adaptive": (1.1, 1.2), "suffix-automaton": (1.15, 1.4),
                "peer:a": (1.05, 1.1), "peer:b:history=true": (1.12, 1.3)}
    for e in data["entries"]:
        if e["name"] in on_track:
            e["tracks"] = {"cpu-t1": track(*on_track[e["name"]])}
    data["benchmarks"][PUBLIC]["tracks"] = {"cpu-t1": {"regime": "temperature 1, top-k 0, top-p 1", "batch": 1}}
    (tmp_path / "board.json").write_text(json.dumps(data))
    text = figures.render_region("setting-tracks", figures.load_view(Board(tmp_path)))
    assert "track cpu-t1** (temperature 1, top-k 0, top-p 1, public cases)" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| group")}
    # CPU scores would pick adaptive (1.8) and peer:a (1.7): on the track suffix-automaton and peer:b lead
    assert rows["code-edit"] == ["1.600x", "suffix-automaton 1.400x (67%)", "peer:b:history=true 1.300x (50%)", "1.08"]
    assert rows["all (geo mean)"][1].startswith("suffix-automaton 1.150x")
    assert rows["all (geo mean)"][2].startswith("peer:b:history=true 1.120x")
