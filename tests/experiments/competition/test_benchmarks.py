"""More than one shipped benchmark (one per model): `--benchmark NAME` picks one everywhere, a board
holds each with its views in a folder of its own, and the figures show their rankings side by side."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from decoding import loading
from experiments import compare as compare_cli
from experiments import leaderboard as cli
from experiments import traces as traces_cli
from experiments.benchmarks import traces
from experiments.competition import figures, fresh_cases, scoring
from experiments.competition.board import Board
from pldcore.errors import PLDError
from toys_competition import make_trace_folder  # tests/experiments/competition is on sys.path

FIRST, SECOND = "a" * 16, "b" * 16
GROUPS = ("code-edit", "doc-qa")


# -- which benchmark -----------------------------------------------------------------------------------------
@pytest.fixture()
def shipped(tmp_path, monkeypatch) -> dict[str, Path]:
    """Two shipped benchmarks in a scratch data folder: the embedded model's (the default) and a second model's."""
    root = tmp_path / "data"
    folders = {}
    for seed, name in enumerate((loading.EMBEDDED_NAME, "Other-Model-1B")):
        folder = make_trace_folder(root / name, seed=seed)
        traces.write_benchmark(folder, traces.load_trace_sets(folder), model=name)
        folders[name] = folder
    monkeypatch.setattr(traces, "SHIPPED_ROOT", root)
    return folders


def test_a_benchmark_is_named_by_its_model_a_prefix_or_its_hash(shipped):
    assert list(traces.shipped_benchmarks()) == [loading.EMBEDDED_NAME, "Other-Model-1B"]  # the default first
    other = shipped["Other-Model-1B"]
    assert traces.benchmark_folder("Other-Model-1B") == other
    assert traces.benchmark_folder("other") == other  # a unique prefix, case aside
    assert traces.benchmark_folder("smollm2") == shipped[loading.EMBEDDED_NAME]
    assert traces.benchmark_folder(traces.read_benchmark(other)["hash"][:6]) == other


def test_an_unknown_benchmark_is_one_line_naming_the_shipped_ones(shipped):
    with pytest.raises(PLDError) as err:
        traces.benchmark_folder("gemma-9")
    message = str(err.value)
    assert "\n" not in message and "Other-Model-1B (" in message and loading.EMBEDDED_NAME in message


@pytest.mark.parametrize("main, argv", [(compare_cli.main, ["--benchmark", "nope"]),
                                        (traces_cli.main, ["replay", "--benchmark", "nope"]),
                                        (cli.main, ["show", "--benchmark", "nope"])])
def test_the_commands_refuse_an_unknown_benchmark_in_one_line(shipped, main, argv, capsys, tmp_path):
    if main is cli.main:
        argv = [*argv, "--board", str(tmp_path / "board")]
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage error
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and "no shipped benchmark nope" in err and len(err.strip().splitlines()) == 1


def test_traces_and_benchmark_are_one_or_the_other(shipped, capsys):
    with pytest.raises(SystemExit):
        traces_cli.build_parser().parse_args(["replay", "--traces", "x", "--benchmark", "other"])
    args = traces_cli.build_parser().parse_args(["replay", "--benchmark", "other"])
    assert args.traces == shipped["Other-Model-1B"]


def test_a_shipped_benchmark_is_public_and_only_the_embedded_models_is_the_default(shipped, tmp_path):
    for name, folder in shipped.items():
        info = scoring.benchmark_info(traces.load_trace_sets(folder), folder)
        assert info["public"] is True and info["name"] == name
        assert info["default"] is (name == loading.EMBEDDED_NAME)
    private = make_trace_folder(tmp_path / "mine", seed=5)
    info = scoring.benchmark_info(traces.load_trace_sets(private), private)
    assert info["public"] is False and info["name"] is None and info["default"] is False


def test_a_packaged_model_is_named_exactly_or_by_a_unique_prefix():
    assert loading.packaged_name("gemma") == loading.GEMMA_NAME
    assert loading.packaged_name("SMOLLM2-135M-instruct") == loading.EMBEDDED_NAME
    assert loading.packaged_name("") is None and loading.packaged_name("llama") is None
    with pytest.raises(PLDError, match="gemma-3-270m-q4_k_m"):  # the message lists the packaged models
        loading.load_model("not-a-model-name")


def test_the_fresh_cases_of_each_model_are_kept_apart():
    embedded = fresh_cases.fresh_folder(7, 8)
    assert embedded == fresh_cases.fresh_folder(7, 8, loading.EMBEDDED_NAME)  # the embedded model's as before
    assert fresh_cases.fresh_folder(7, 8, loading.GEMMA_NAME) != embedded
    assert loading.GEMMA_NAME in fresh_cases.fresh_folder(7, 8, loading.GEMMA_NAME).name


# -- a board of two benchmarks ----------------------------------------------------------------------------------
def _entry(name: str, kind: str, score: float, bench: str, when: str) -> dict:
    groups = {g: {"cases": 4, "tau": 2.0, "est_speedup": score * (1.2 if g == "code-edit" else 0.9)} for g in GROUPS}
    return {"name": name, "kind": kind, "benchmark": bench, "status": "ok", "reason": None, "score": score,
            "score_gpu": score, "tau": 2.0, "groups": groups, "time": when}


def _board(folder: Path, default_flag: bool = True) -> Board:
    first = [_entry("oracle", "oracle", 2.5, FIRST, "2026-12-01"), _entry("adaptive", "baseline", 1.8, FIRST, "2026-12-01"),
             _entry("peer:a", "peer", 1.7, FIRST, "2026-12-01")]
    # the second model's board is built later: newer entries, which must not make it the default view
    second = [_entry("oracle", "oracle", 3.0, SECOND, "2026-12-03"), _entry("adaptive", "baseline", 1.6, SECOND, "2026-12-03"),
              _entry("peer:a", "peer", 1.9, SECOND, "2026-12-03")]
    info = {FIRST: {"hash": FIRST, "public": True, "name": loading.EMBEDDED_NAME, "default": True,
                    "model": [loading.EMBEDDED_NAME], "cases": 16, "tasks": {g: 8 for g in GROUPS}},
            SECOND: {"hash": SECOND, "public": True, "name": "Other-Model-1B", "default": False,
                     "model": ["Other-Model-1B"], "cases": 16, "tasks": {g: 8 for g in GROUPS}}}
    if not default_flag:  # a board built before benchmarks had names: the embedded model's is still the default
        for value in info.values():
            del value["default"], value["name"]
    board = Board(folder)
    with board.editing() as data:
        data["entries"] = copy.deepcopy(first + second)
        data["benchmarks"] = info
    return board


@pytest.mark.parametrize("default_flag", [True, False])
def test_the_figures_show_the_default_benchmark_first_and_the_others_beside_it(tmp_path, default_flag):
    view = figures.load_view(_board(tmp_path / "board", default_flag))
    assert view.info["hash"] == FIRST and [v.info["hash"] for v in view.others] == [SECOND]
    table = figures.render_region("benchmarks", view)
    header = next(line for line in table.splitlines() if line.startswith("| entry"))
    assert header.index(loading.EMBEDDED_NAME[:10]) < header.index("Other-Model-1B" if default_flag else "Other-Model")
    adaptive = next(line for line in table.splitlines() if line.startswith("| adaptive"))
    cells = [c.strip() for c in adaptive.strip("|").split("|")]
    # first benchmark: #1, 1.800x, (0.8 / 1.5) of the oracle's gain; second: #2 behind the peer, 1.600x, 30%
    assert cells == ["adaptive", "1", "1.800x", "53%", "2", "1.600x", "30%"]
    groups = figures.render_region("benchmark-groups", view)
    assert groups.count("| code-edit") == 2 and "1.920x" in groups  # the second model's best (the peer) in code-edit


def test_a_second_benchmarks_views_go_to_a_folder_of_its_own(tmp_path, capsys):
    board = _board(tmp_path / "board")
    assert cli.views_folder(board, {"default": True, "name": loading.EMBEDDED_NAME}) == board.folder
    assert cli.views_folder(board, {"default": False, "name": "Other-Model-1B"}) == board.folder / "Other-Model-1B"
    assert cli.views_folder(board, {"public": False}) == board.folder  # a board of the user's own traces
    assert cli.main(["render", "--board", str(board.folder), "--benchmark", SECOND[:6]]) == 0
    page = (board.folder / "Other-Model-1B" / "LEADERBOARD.md").read_text()
    assert page.startswith("# pld-lab leaderboard: the best lookup function on Other-Model-1B")
    assert "(../../docs/competition.md)" in page
    assert json.loads((board.folder / "Other-Model-1B" / "leaderboard.json").read_text())
    assert not (board.folder / "LEADERBOARD.md").exists()  # the default benchmark's views were not touched
