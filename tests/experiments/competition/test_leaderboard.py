"""The leaderboard: the oracle is a true ceiling, benchmarks never mix, the board survives failures,
the views are built, and the CLI's usage errors are one line with exit code 2."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from toys import random_sequence
from toys_competition import QUICK, make_trace_folder, top_rows  # tests/experiments/competition is on sys.path

import lookup
import lookup.peers
from experiments import leaderboard as cli
from experiments.benchmarks.traces import TraceCase, benchmark_hash, load_trace_sets
from experiments.competition import board as board_file
from experiments.competition import entries as lb
from experiments.competition import render
from experiments.competition.board import Board
from experiments.competition.loader import entry_of
from experiments.competition.sandbox import Evaluation, Submission
from experiments.competition.scoring import benchmark_info, board_rows, cost_aware_oracle_speedup, oracle_rows
from experiments.running.replay import replay_case
from pldcore.cost import CPU_SMOLLM2, CostProfile

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "competition.md"
EXAMPLE = ROOT / "experiments" / "competition" / "submissions" / "example_bigram.py"


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return make_trace_folder(tmp_path_factory.mktemp("lb") / "toy", seed=1)


@pytest.fixture(scope="module")
def sets(traces):
    return load_trace_sets(traces)


def test_oracle_is_a_ceiling_for_every_drafter(sets):
    rng = np.random.default_rng(7)
    cases = [c for s in sets for c in s.cases]
    cases += [TraceCase(f"r/{i}", "r", 1, seq[:60], seq[60:], [], "toy", 48, [], 120, top=top_rows(rng, seq, vocab=48))
              for i, seq in enumerate(random_sequence(rng, 180, 48) for _ in range(4))]
    profile = CPU_SMOLLM2
    drafters = {name: (lambda n=name: lookup.create(n)) for name in lookup.available()}
    namespace: dict = {}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), namespace)
    drafters["example-bigram"] = namespace["ExampleBigram"]
    for case in cases:
        oracle, oracle_gpu, cost_aware = oracle_rows(case, profile)
        best = cost_aware_oracle_speedup(case, profile)
        assert cost_aware.est_speedup == pytest.approx(best)
        assert oracle.new_tokens == len(case.output)
        assert best >= oracle.est_speedup - 1e-12
        for name, make in drafters.items():
            out = replay_case(case, make(), profile)
            for s in out.stats.steps:
                s.drafter_s = 0.0  # the oracle's ceiling is about drafts, not about drafter time
            row, row_gpu = board_rows(case, name, {}, out, profile)
            assert oracle.forwards <= row.forwards, (name, case.case)
            assert best >= row.est_speedup - 1e-9, (name, case.case)
            assert oracle_gpu.est_speedup >= row_gpu.est_speedup - 1e-9, (name, case.case)


def test_oracle_entry_is_fast_and_scores_per_group(sets):
    entry = lb.oracle_entry(sets, benchmark_hash(sets))
    assert entry["eval_s"] < 5
    assert set(entry["groups"]) == {"copy", "chat (turn 1)", "chat (turn 2)"}
    assert entry["score_cost_aware"] >= entry["score"] > 1
    assert entry["tau"] > 1


# -- benchmarks -------------------------------------------------------------------------------------------------
def test_benchmark_hash_separates_trace_sets_and_ignores_recompression(tmp_path, traces):
    a = load_trace_sets(traces)
    other = load_trace_sets(make_trace_folder(tmp_path / "other", seed=2))
    assert benchmark_hash(a) != benchmark_hash(other)
    # the same cases recompressed (gzip headers hold a time stamp): same benchmark
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in traces.iterdir():
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        (copy / path.name).write_bytes(gzip.compress(data, mtime=12345) if path.suffix == ".gz" else data)
    assert benchmark_hash(load_trace_sets(copy)) == benchmark_hash(a)
    # another cost profile: another benchmark
    CostProfile((1, 2), (0.05, 0.06)).save(copy / "profile.json")
    assert benchmark_hash(load_trace_sets(copy)) != benchmark_hash(a)


def test_board_entries_of_different_benchmarks_never_mix(tmp_path, traces, capsys):
    board = Board(tmp_path / "board")
    other_folder = make_trace_folder(tmp_path / "other", seed=2)
    a, b = load_trace_sets(traces), load_trace_sets(other_folder)
    ia, ib = benchmark_info(a, traces), benchmark_info(b, other_folder)
    lb.ensure_oracle(board, a, ia)
    lb.ensure_oracle(board, b, ib)
    board.record({**fake_entry("only-a", 1.3), "benchmark": ia["hash"]}, ia)
    assert {e.name for e in board.entries(ia["hash"])} == {"oracle", "only-a"}
    assert {e.name for e in board.entries(ib["hash"])} == {"oracle"}
    assert cli.main(["show", "--board", str(board.folder), "--traces", str(other_folder)]) == 0
    assert "only-a" not in capsys.readouterr().out
    assert cli.main(["show", "--board", str(board.folder), "--benchmark", ia["hash"][:6]]) == 0
    assert "only-a" in capsys.readouterr().out


# -- the board file --------------------------------------------------------------------------------------------
def fake_entry(name: str, score: float, kind: str = "submission", status: str = "ok") -> dict:
    groups = {"copy": {"tau": 2.0, "est_speedup": score, "est_speedup_gpu": score + 0.5}}
    return {"name": name, "kind": kind, "benchmark": "b" * 16, "status": status, "score": score,
            "score_gpu": score + 0.5, "tau": 2.0, "drafter_us_per_step": 10.0, "groups": groups,
            "reason": None if status == "ok" else "crash: test", "refused_count": 0}


def test_atomic_writes_keep_the_old_board_when_a_write_fails(tmp_path, monkeypatch):
    board = Board(tmp_path)
    board.record(fake_entry("first", 1.2))
    before = board.path.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(board_file.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        board.record(fake_entry("second", 1.3))
    assert board.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".board.lock", "board.json"]  # no temp file left


def test_an_exception_mid_run_leaves_a_valid_board(tmp_path, sets, monkeypatch):
    board = Board(tmp_path)
    info = benchmark_info(sets, "toy")
    calls = []

    def flaky_evaluate(submission, *args, **kwargs):
        calls.append(submission.name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the second baseline
        return Evaluation(submission, reason="crash: the process killed by SIGSEGV during propose")

    monkeypatch.setattr(lb, "evaluate", flaky_evaluate)
    with pytest.raises(KeyboardInterrupt):
        lb.run_baselines(board, sets, info, QUICK, names=["none", "unfold", "voting"], say=lambda *_: None)
    entries = json.loads(board.path.read_text())["entries"]
    assert [(e["name"], e["status"], e["reason"]) for e in entries] == [
        ("plain", "disqualified", "crash: the process killed by SIGSEGV during propose")]


# -- the CLI ----------------------------------------------------------------------------------------------------
def one_line_error(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_cli_usage_errors_are_one_line_exit_2(tmp_path, traces, capsys):
    common = ["--board", str(tmp_path / "board"), "--traces", str(traces)]
    assert "no submission file" in one_line_error(capsys, ["submit", str(tmp_path / "missing.py"), *common])
    assert "unknown entry point 'nope'" in one_line_error(capsys, ["submit", "--entry-point", "nope", *common])
    assert "one of them" in one_line_error(capsys, ["submit", *common])
    good = tmp_path / "good.py"
    good.write_text("from lookup import Draft, Drafter\nclass G(Drafter):\n    def propose(self, b):\n        return Draft([])\n")
    assert "taken by a baseline" in one_line_error(capsys, ["submit", str(good), "--name", "unfold", *common])
    assert "--params" in one_line_error(capsys, ["submit", str(good), "--params", "[1]", *common])
    assert "no trace files" in one_line_error(capsys, ["submit", str(good), "--board", str(tmp_path),
                                                       "--traces", str(tmp_path)])
    big = tmp_path / "big.py"
    big.write_text(good.read_text() + "#" * (1 << 20))
    assert "is over 1 MiB" in one_line_error(capsys, ["submit", str(big), *common])
    assert not (tmp_path / "board" / "board.json").exists()  # usage errors record nothing


def test_a_file_with_no_class_to_be_a_drafter_is_refused_at_once_and_records_nothing(tmp_path, traces, capsys):
    """Parsed in the parent (nothing of it runs): no class statement with a base, no type(...) call:
    one line, in compare.py's words, before any sandbox starts; no board, no stored file."""
    board = tmp_path / "board"
    common = ["--board", str(board), "--traces", str(traces)]
    for i, source in enumerate(["import lookup\nX = lookup.Drafter\n",
                                "class NotADrafter:\n    def propose(self, budget):\n        return None\n"]):
        none = tmp_path / f"empty{i}.py"
        none.write_text(source)
        err = one_line_error(capsys, ["submit", str(none), *common])
        assert err == f"error: empty{i}.py defines no Drafter subclass (class X(lookup.Drafter) with a propose method)"
        assert not board.exists()


def test_a_file_the_sandbox_cannot_load_is_recorded_as_disqualified(tmp_path, traces, capsys):
    """Whether a file that has classes defines one drafter is known only by running it, in the
    sandbox: the answer comes from a process that ran submitted code, so it is recorded like any
    disqualification (a forged one must not keep an entry off the board)."""
    common = ["--board", str(tmp_path / "board"), "--traces", str(traces)]
    none = tmp_path / "empty.py"
    none.write_text("import lookup\nclass X(object):\n    pass\n")
    assert cli.main(["submit", str(none), *common]) == 1
    assert "disqualified -- load: empty.py defines no Drafter subclass" in capsys.readouterr().out
    two = tmp_path / "two.py"
    two.write_text("from lookup import Draft, Drafter\n" + "".join(
        f"class {c}(Drafter):\n    def propose(self, b):\n        return Draft([])\n" for c in "GH"))
    assert cli.main(["submit", str(two), *common]) == 1
    assert "defines 2 Drafter subclasses (G, H)" in capsys.readouterr().out
    entries = json.loads((tmp_path / "board" / "board.json").read_text())["entries"]
    assert sorted((e["name"], e["status"], e["reason"][:5]) for e in entries if e["kind"] == "submission") == [
        ("empty", "disqualified", "load:"), ("two", "disqualified", "load:")]


# -- the example in the docs -------------------------------------------------------------------------------------
def test_the_docs_example_is_the_example_file_and_at_most_40_lines():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    assert blocks[0].strip() == EXAMPLE.read_text().strip()
    assert len(blocks[0].strip().splitlines()) <= 40
    namespace: dict = {}
    exec(compile(blocks[0], "competition.md", "exec"), namespace)
    d = namespace["ExampleBigram"]()
    d.reset([5, 6, 7, 5, 6])
    assert d.propose(8).tokens.tolist() == [7, 5, 6, 7, 5, 6, 7, 5]
    assert d.propose(2).tokens.tolist() == [7, 5]  # no side effects
    d.extend([9])
    assert d.propose(3).tokens.tolist() == []


BROKEN = """from lookup import Draft, Drafter


class Broken(Drafter)
    def propose(self, budget):
        return Draft([])
"""
#: a drafter that raises at its first propose: disqualified (``exception``) before any case is scored
RAISES = """from lookup import Drafter


class Raises(Drafter):
    def propose(self, budget):
        raise ZeroDivisionError("boom")
"""
#: a constructor that tries a socket (refused, recorded) and then refuses its parameters
SNEAKY = """import socket

from lookup import Draft, Drafter


class Sneaky(Drafter):
    def __init__(self, **params):
        super().__init__()
        try:
            socket.socket()
        except OSError:
            pass
        raise TypeError(f"unexpected keyword arguments {sorted(params)}")

    def propose(self, budget):
        return Draft([])
"""


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} \
        if folder.exists() else {}


def test_submit_refuses_a_syntax_error_or_refused_params_in_one_line_and_records_nothing(tmp_path, traces, capsys):
    """The board is not touched: a syntax error is found in the parent by parsing (nothing runs),
    named in the user's file as compare.py names it; parameters the class refuses are found where it
    is built, in the sandbox, by lookup.create's checks, with the close names."""
    board = tmp_path / "board"
    common = ["--board", str(board), "--traces", str(traces), "--name", "mine"]
    broken = tmp_path / "my_entry.py"
    broken.write_text(BROKEN)
    assert cli.main(["submit", str(broken), *common]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {broken}: line 4: expected ':'"  # lookup.files.compile_source's words, one line
    assert not board.exists()
    # a first submission with a typo: one line with the close name; no board, no stored file
    assert cli.main(["submit", str(EXAMPLE), "--params", "max_tokns=3", *common]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: drafter 'example_bigram.py': unknown parameter 'max_tokns'; did you mean "
                          "'max_tokens'?") and "nothing recorded" in err and "\n" not in err
    assert not board.exists()
    assert cli.main(["submit", str(EXAMPLE), *common]) == 0
    assert "holds no other scored entry to rank against" in capsys.readouterr().out  # a new board folder
    before = _snapshot(board)
    # a value of the wrong type, in JSON: one line; the scored entry and its folder stay exactly as they were
    assert cli.main(["submit", str(EXAMPLE), "--params", '{"max_tokens": "eight"}', *common]) == 2
    assert "max_tokens must be int, e.g. max_tokens=8 (the default); got 'eight'" in capsys.readouterr().err
    assert _snapshot(board) == before


def test_a_slip_that_had_an_operation_refused_is_recorded(tmp_path, traces, capsys):
    """No entry hides a misdeed behind a parameter error: one that had an operation refused on the
    way is recorded, disqualified, with what was refused."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text(SNEAKY)
    assert cli.main(["submit", str(sneaky), "--params", "x=1", "--board", str(tmp_path / "board"),
                     "--traces", str(traces)]) == 1
    entry = {e["name"]: e for e in Board(tmp_path / "board").load()["entries"]}["sneaky"]
    assert entry["status"] == "disqualified" and entry["reason"].startswith("params: ")
    assert entry["refused_count"] >= 1


def test_a_resubmission_never_replaces_a_better_entry_and_lists_the_attempt(tmp_path, traces, capsys):
    common = ["--board", str(tmp_path), "--traces", str(traces), "--name", "mine"]
    assert cli.main(["submit", str(EXAMPLE), *common]) == 0
    scored = {e["name"]: e for e in Board(tmp_path).load()["entries"]}["mine"]
    capsys.readouterr()
    raises = tmp_path / "raises.py"
    raises.write_text(RAISES)
    assert cli.main(["submit", str(raises), *common]) == 1
    out = capsys.readouterr().out
    assert "mine: disqualified -- exception" in out
    assert f"not recorded: the board keeps mine's better entry ({scored['score']:.3f}x" in out
    assert re.search(r"rank 1 of 1 by score on the benchmark \w+, as `leaderboard.py show` lists it", out)
    kept = {e["name"]: e for e in Board(tmp_path).load()["entries"]}["mine"]
    assert kept["status"] == "ok" and kept["score"] == scored["score"] and kept["time"] == scored["time"]
    assert [a["status"] for a in kept["attempts"]] == ["ok", "disqualified"]
    assert kept["attempts"][0]["score"] == scored["score"] and kept["attempts"][1]["source"]["display"] == "raises.py"
    assert cli.main(["show", "mine", "--board", str(tmp_path), "--traces", str(traces)]) == 0
    listed = capsys.readouterr().out.split("submissions of mine, oldest first")[1].splitlines()[1:3]
    assert listed[0].endswith("example_bigram.py (" + scored["source"]["sha256"][:12] + ")  (on the board)")
    assert "disqualified -- exception" in listed[1] and "raises.py" in listed[1]


def test_a_scratch_board_ranks_against_the_committed_baselines_and_submit_says_shows_rank(
        tmp_path, traces, sets, capsys, monkeypatch):
    """`submit --board DIR` on a new folder copies the committed board's baselines and peers of the
    benchmark; the rank it prints is the '#' `show` lists (the peers ranked apart, in their table)."""
    info = benchmark_info(sets, traces.resolve())
    committed = Board(tmp_path / "committed")
    for name, score, kind in (("base-hi", 9.0, "baseline"), ("base-lo", 1.001, "baseline"),
                              ("peer:hi", 8.0, "peer"), ("peer:lo", 1.0005, "peer")):
        committed.record({**fake_entry(name, score, kind=kind), "benchmark": info["hash"]}, info)
    committed.record({**fake_entry("other-benchmark", 5.0, kind="baseline")}, info)
    monkeypatch.setattr(cli, "DEFAULT_BOARD", committed.folder)
    scratch = tmp_path / "scratch"
    assert cli.main(["submit", str(EXAMPLE), "--name", "mine", "--board", str(scratch), "--traces", str(traces)]) == 0
    out = capsys.readouterr().out
    assert f"copied the committed board's 4 baselines and peers" in out
    rank = re.search(r"rank (\d+) of (\d+) by score on the benchmark", out)
    assert rank and rank.group(2) == "3"  # mine and the two baselines: the peers are ranked apart
    names = {e.name for e in Board(scratch).entries(info["hash"])}
    assert {"base-hi", "base-lo", "peer:hi", "peer:lo", "mine", "oracle"} == names
    assert cli.main(["show", "--board", str(scratch), "--traces", str(traces)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if re.match(r"\d+\s+mine\s", line))
    assert row.split()[0] == rank.group(1)
    # a second submission finds the baselines there: nothing copied again
    assert cli.main(["submit", str(EXAMPLE), "--name", "mine2", "--board", str(scratch), "--traces", str(traces)]) == 0
    assert "copied" not in capsys.readouterr().out


def test_the_example_scores_in_the_sandbox_and_the_board_is_built(tmp_path, sets, capsys):
    board = Board(tmp_path)
    info = benchmark_info(sets, "toy")
    entry = lb.run_submission(board, Submission.file(EXAMPLE), sets, info, "submission", QUICK)
    assert entry["status"] == "ok" and entry["name"] == "example-bigram"
    assert entry["tau"] > 1.2 and entry["score"] > 0 and entry["refused_count"] == 0
    assert entry["source"]["display"] == "example_bigram.py"  # kept in the board's store, by content
    assert (tmp_path / entry["source"]["stored"]).read_bytes() == EXAMPLE.read_bytes()
    oracle = lb.ensure_oracle(board, sets, info)
    assert oracle["tau"] >= entry["tau"]
    board.record({**fake_entry("crashing", 0), "benchmark": info["hash"], "status": "disqualified",
                  "reason": "crash: the process killed by SIGSEGV during propose"})
    board.record({**fake_entry("baseline-x", 1.01, kind="baseline"), "benchmark": info["hash"],
                  "refused_count": 2, "refused": ["open /proc/1/environ", "os.scandir /secret/traces"]})
    paths = render.write_outputs(board.entries(info["hash"]), info, tmp_path)
    assert [p.name for p in paths] == ["LEADERBOARD.md", "leaderboard.json", "index.html"]
    md = (tmp_path / "LEADERBOARD.md").read_text()
    assert "| - | oracle" in md and "example-bigram" in md and "killed by SIGSEGV" in md
    assert "- **baseline-x** (2): open /proc/1/environ; os.scandir traces" in md  # no machine's folders
    data = json.loads((tmp_path / "leaderboard.json").read_text())
    assert data["benchmark"]["hash"] == info["hash"]
    assert [r["name"] for r in data["ranking"]] == sorted(
        ["example-bigram", "baseline-x"], key=lambda n: -{"example-bigram": entry["score"], "baseline-x": 1.01}[n])
    assert data["disqualified"][0]["name"] == "crashing"
    page = (tmp_path / "index.html").read_text()
    assert "<script>" in page and "data:image/png;base64,iVBORw0KGgo" in page and 'class="sortable"' in page
    assert cli.main(["show", "--board", str(tmp_path), "--traces", str(sets[0].path.parent)]) == 0
    shown = capsys.readouterr().out
    assert "example-bigram" in shown and "disqualified:" in shown and "oracle" in shown


def test_wandb_table_is_logged_in_a_guarded_way(tmp_path, monkeypatch):
    import sys
    import types

    logged = {}

    class Run:
        dir = str(tmp_path / "wandb" / "run-x" / "files")
        summary: dict = {}

        def log(self, data):
            logged.update(data)

        def finish(self):
            pass

    fake = types.SimpleNamespace(
        Settings=lambda **k: k, init=lambda **k: logged.update(init=k) or Run(),
        Table=lambda columns, data: ("table", columns, data), Image=lambda path, **k: ("image", path))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    entries = [entry_of(fake_entry("a", 1.2)), entry_of({**fake_entry("oracle", 2.0), "kind": "oracle"})]
    assert render.log_wandb(entries, {"hash": "h"}, "off", tmp_path) == []
    dirs = render.log_wandb(entries, {"hash": "h"}, "offline", tmp_path, png=b"\x89PNG")
    assert dirs and logged["init"]["mode"] == "offline" and logged["init"]["group"] == "leaderboard-h"
    _, columns, data = logged["leaderboard"]
    assert columns[:3] == ["rank", "entry", "kind"] and [row[1] for row in data] == ["oracle", "a"]
    fake.init = lambda **k: (_ for _ in ()).throw(RuntimeError("no network"))
    assert render.log_wandb(entries, {"hash": "h"}, "offline", tmp_path) == []  # warns, never raises


def test_verify_on_a_tiny_model_is_lossless():
    from toys import tiny_llama

    target = tiny_llama(vocab_size=48, seed=3)
    prompts = [[5, 9, 11, 5, 9, 11, 30, 5, 9, 11, 30, 2, 5, 9], [7, 8, 7, 8, 7, 8, 1]]
    entry = entry_of({"name": "suffix-automaton", "source": {"kind": "builtin", "name": "suffix-automaton"}})
    result = lb.verify_entries([entry], target, prompts, 24, QUICK)["suffix-automaton"]
    assert result["identical"] is True and result["speedup"] > 0 and result["tau"] >= 1


def test_show_needs_no_traces_the_board_file_is_enough(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "default_folder", lambda: tmp_path / "no-traces")  # no traces anywhere
    board = Board(tmp_path / "board")
    assert cli.main(["show", "--board", str(board.folder)]) == 2  # an empty board: one line
    assert "is empty" in capsys.readouterr().err
    old, new = fake_entry("old-one", 1.2), fake_entry("new-one", 1.4)
    old.update(benchmark="a" * 16, time="2026-01-01T00:00:00+00:00")
    new.update(benchmark="c" * 16, time="2026-02-01T00:00:00+00:00")
    board.record(old)
    board.record(new)
    assert cli.main(["show", "--board", str(board.folder)]) == 0
    out = capsys.readouterr().out
    assert "new-one" in out and "old-one" not in out  # the newest benchmark's board
    assert cli.main(["show", "--board", str(board.folder), "--benchmark", "aaaa"]) == 0
    assert "old-one" in capsys.readouterr().out


def test_a_baseline_is_scored_again_only_when_its_code_changed(tmp_path, sets, monkeypatch):
    board = Board(tmp_path)
    info = benchmark_info(sets, "toy")
    first = lb.run_baselines(board, sets, info, QUICK, names=["none"], say=lambda *_: None)
    assert [e["name"] for e in first] == ["plain"] and first[0]["code"]  # none is plain's alias
    assert lb.run_baselines(board, sets, info, QUICK, names=["none"], say=lambda *_: None) == []
    monkeypatch.setattr(lb, "code_key", lambda *a, **k: "edited")
    again = lb.run_baselines(board, sets, info, QUICK, names=["none"], say=lambda *_: None)
    assert [e["code"] for e in again] == ["edited"]
    assert [e.name for e in board.entries(info["hash"])] == ["plain"]  # replaced, not added
    # a built-in disqualified by a stall of the machine is tried again at the next build
    with board.editing() as data:
        data["entries"][0].update(status="disqualified", reason="slow: extend took 60 ms (limit 50 ms)")
    retried = lb.run_baselines(board, sets, info, QUICK, names=["none"], say=lambda *_: None)
    assert [e["status"] for e in retried] == ["ok"]
    assert [e.public.status for e in board.entries(info["hash"])] == ["ok"]


def test_peers_get_a_section_and_an_entry_shows_where_it_loses_time(tmp_path, sets, traces, capsys):
    """The peers run beside the baselines as kind 'peer' and are shown apart; `show NAME` adds the
    entry's gap to the oracle in parts; the board names its traces without this machine's folders."""
    board = Board(tmp_path)
    info = benchmark_info(sets, traces)
    assert str(tmp_path) not in info["folder"] and info["folder"] == traces.name
    lb.ensure_oracle(board, sets, info)
    lb.run_baselines(board, sets, info, QUICK, names=["suffix-automaton"], say=lambda _: None)
    peers = lb.run_peers(board, sets, info, QUICK, say=lambda _: None)
    history = {"peer:llamacpp-lookup:history=true", "peer:sglang-ngram:history=true",
               "peer:suffix-decoding:history=true"}
    assert {e["name"] for e in peers} == set(lookup.peers.names()) | history and all(e["kind"] == "peer" for e in peers)
    assert all(e["stream"] == (e["name"] in history) for e in peers)
    assert all(e["full_isolation"] or "(not full)" in render._notes(entry_of(e)) for e in peers)  # every one sandboxed
    assert all(e["status"] == "ok" for e in peers), [e["reason"] for e in peers if e["status"] != "ok"]
    shown = render.text_board(board.entries(info["hash"]), info)
    main, _, section = shown.partition("the peers (other systems' lookup functions")
    assert "peer:" not in main and "peer:vllm-ngram" in section and "our best against the best peer" in section
    md = render.markdown(board.entries(info["hash"]), info)
    assert "## The peers" in md and "| suffix-automaton " in md
    assert cli.main(["show", "suffix-automaton", "--board", str(tmp_path), "--traces", str(traces)]) == 0
    out = capsys.readouterr().out
    assert "where suffix-automaton loses time against the cost-aware oracle" in out and "(all)" in out
    assert cli.main(["show", "nobody", "--board", str(tmp_path), "--traces", str(traces)]) == 2
