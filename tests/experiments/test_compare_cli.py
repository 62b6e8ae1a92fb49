"""compare.py: one-line errors for bad input, and a small end-to-end run that resumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
import compare  # noqa: E402


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--drafters", "unfodl"], "did you mean 'unfold'"),
        (["--max-new-tokens", "0"], "max-new-tokens"),
        (["--tasks", "sumarization"], "did you mean 'summarization'"),
        (["--model", "./no/such/model", "--drafters", "none"], "model not found"),
        (["--drafters", "unfold:max_ngram_size"], "key=value"),
        (["--drafters", "unfold:bogus=1"], "unknown parameter 'bogus'"),
        (["--drafters", "suffix-automaton:max_token=8"], "did you mean 'max_tokens'"),
        (["--drafters", "suffix-automaton:max_tokens=eight"], "max_tokens must be int, e.g. max_tokens=16"),
        (["--top-p", "0"], "top-p"),
        (["--drafters", "none,./no/such/drafter.py"], "no drafter file"),
        (["--device", "tpu9"], "not a torch device"),
        (["--drafters", "voting:tree=yes"], "tree must be True or False"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, match, capsys, tmp_path):
    code = compare.main([*argv, "--results", str(tmp_path)])
    # a busy machine is said first, in a line of its own (experiments.running.live): not the error's
    lines = capsys.readouterr().err.strip().splitlines()
    err = "\n".join(x for x in lines if not x.startswith("warning: machine busy"))
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert match in err


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["--max-tokens", "48"], "unrecognized argument --max-tokens; did you mean --max-new-tokens?"),
        (["--max-tokens=48"], "unrecognized argument --max-tokens; did you mean --max-new-tokens?"),
        (["--zzzz"], "unrecognized argument --zzzz (--help"),
        (["--replay", "extra"], "unexpected argument extra"),
        (["--wandb", "of"], "argument --wandb: unknown choice 'of'; did you mean 'off', 'offline'?"),
        (["--prompts", "x"], "argument --prompts: invalid int value: 'x'"),
    ],
)
def test_argparse_mistakes_are_one_line_with_close_matches(argv, expected, capsys):
    with pytest.raises(SystemExit) as info:
        compare.main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert err.splitlines() == [err] and err.startswith("error: ") and expected in err
    assert "usage:" not in err


def test_a_subcommands_options_are_suggested_for_a_wrong_flag_after_it(capsys):
    from experiments.cli import ArgumentParser

    parser = ArgumentParser(prog="tool.py")
    parser.add_argument("--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("submit").add_argument("--params")
    sub.add_parser("show")
    assert parser.parse_args(["submit", "--params", "k=1"]).params == "k=1"
    with pytest.raises(SystemExit):
        parser.parse_args(["submit", "--parms", "k=1"])
    assert capsys.readouterr().err.strip() == ("error: tool.py: unrecognized argument --parms; did you mean --params? "
                                               "(--help lists the options)")
    with pytest.raises(SystemExit):
        parser.parse_args(["sumbit"])
    assert "unknown choice 'sumbit'; did you mean 'submit'?" in capsys.readouterr().err


# The two live runs on the embedded model run in `make test-slow` (CI; `make test-readme` runs `make run ARGS=...`
# too): a live comparison's run and rows are test_live.py's on a tiny model, reusing rows is test_store.py's,
# a stream's replay test_replay.py's, and the embedded model's identity to greedy test_lossless_model.py's.
@pytest.mark.model
@pytest.mark.slow
def test_small_comparison_writes_rows_and_resumes(tmp_path, capsys, embedded, monkeypatch, live_profile):
    import decoding

    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: embedded)
    argv = ["--tasks", "code-edit,mt-bench", "--max-new-tokens", "12", "--drafters", "hf-greedy,none,unfold",
            "--results", str(tmp_path)]
    assert compare.main(argv) == 0
    out = capsys.readouterr().out
    assert "## code-edit" in out and "## mt-bench (turn 2)" in out and "identical" in out
    # how long, said first: every run to do, roughly how long on this machine now
    assert out.startswith("compare: 9 runs (3 methods x 3 cases, up to 12 new tokens each): about ")
    [path] = tmp_path.glob("compare-*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 3 * 3  # (code-edit + two mt-bench turns) x 3 methods
    assert all(r["identical"] for r in rows if r["method"] != "hf-greedy")
    assert {r["method"] for r in rows} == {"hf-greedy", "none", "unfold"}
    assert all(r["git_sha"] is None or len(r["git_sha"]) >= 40 for r in rows)
    # a rerun of the same configuration measures nothing new, and says so up front
    assert compare.main(argv) == 0
    assert len(path.read_text().splitlines()) == 9
    assert capsys.readouterr().out.startswith(f"compare: 0 runs (3 methods x 3 cases, up to 12 new tokens each; 9 "
                                              f"reused from {path}): about 0 s")


@pytest.mark.model
@pytest.mark.slow
def test_a_live_stream_serves_every_case_with_one_drafter_and_runs_them_all_again(tmp_path, embedded, monkeypatch,
                                                                                  live_profile):
    import decoding

    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: embedded)
    argv = ["--tasks", "code-edit,mt-bench", "--max-new-tokens", "12", "--drafters",
            "none,adaptive:history=true", "--stream", "--results", str(tmp_path), "--wandb", "off"]
    assert compare.main(argv) == 0
    [path] = tmp_path.glob("compare-*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 3 * 2 and all(r["identical"] for r in rows if r["method"] != "none")
    # a stream's drafter needs every earlier case, so a rerun runs them all again (none is a drafter too)
    assert compare.main(argv) == 0
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 2 * 3 * 2 and [r["method"] for r in rows[6:]] == [r["method"] for r in rows[:6]]


def test_a_drafter_file_with_parameters_replays_beside_the_built_ins(tmp_path, capsys):
    drafter = tmp_path / "repeat_last.py"
    drafter.write_text("from lookup import Draft, Drafter\n\n\nclass RepeatLast(Drafter):\n"
                       "    def __init__(self, max_tokens=1):\n        super().__init__()\n"
                       "        self.max_tokens = max_tokens\n\n    def propose(self, budget):\n"
                       "        return Draft(self.context[-1:] * min(budget, self.max_tokens))\n")
    spec = f"{drafter}:max_tokens=4"
    argv = ["--replay", "--traces", str(tiny_traces(tmp_path / "traces")), "--drafters", f"none,{spec}", "--results",
            str(tmp_path / "results"), "--wandb", "off"]
    assert compare.main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith(spec))
    assert float(line.split()[4]) > 1.5  # tau: the repeated 7s are drafted and accepted


def tiny_traces(folder: Path) -> Path:
    from experiments.benchmarks.traces import TraceCase, append_case, trace_file

    for i in range(2):
        out = [7] * 6 + [3, 4]
        append_case(trace_file(folder, "rep", 8), TraceCase(f"rep/{i}", "rep", 1, [1, 2 + i, 7], out, [0.01] * 8,
                                                            "toy", 16, [0], 8))
    return folder


def test_rows_export_to_csv_and_plots_of_other_drafters_keep_their_own_folder(tmp_path, capsys):
    import csv

    traces = tiny_traces(tmp_path / "traces")
    results = tmp_path / "results"
    base = ["--replay", "--full", "--traces", str(traces), "--results", str(results), "--wandb", "off"]
    assert compare.main([*base, "--drafters", "none,suffix-automaton", "--csv", str(tmp_path / "rows.csv")]) == 0
    out = capsys.readouterr().out
    assert f"rows (csv): {tmp_path / 'rows.csv'}" in out
    with (tmp_path / "rows.csv").open(newline="") as f:
        read = list(csv.DictReader(f))
    assert sorted((r["case"], r["method"]) for r in read) == sorted(
        (f"rep/{i}", m) for i in range(2) for m in ("none", "suffix-automaton"))
    assert all(r["speedup"] == "" and float(r["est_speedup"]) > 0 for r in read)  # a replay: estimated only
    assert compare.main([*base, "--drafters", "none,unfold"]) == 0
    folders = sorted(p.name for p in results.glob("plots-*"))
    assert len(folders) == 2 and all((results / f / "speedup_by_category.png").is_file() for f in folders)


def test_parquet_without_a_library_fails_in_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)
    argv = ["--replay", "--traces", str(tiny_traces(tmp_path / "traces")), "--drafters", "none",
            "--results", str(tmp_path / "results"), "--parquet", str(tmp_path / "rows.parquet")]
    assert compare.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "--parquet needs pyarrow" in err
    assert not (tmp_path / "results").exists()  # refused before anything ran


def test_the_default_methods_run_each_drafter_once():
    """``none`` is ``plain``'s alias: the default list runs it once (as ``none``), with every other drafter."""
    import lookup

    methods = compare.default_methods()
    assert "none" in methods and "plain" not in methods
    assert len({lookup.canonical(m) for m in methods}) == len(methods)
    assert set(lookup.available(peers=False)) <= {lookup.canonical(m) for m in methods}


def two_group_traces(folder: Path) -> Path:
    """Four toy cases in two task groups ("rep": repeats, easy to draft; "mix": less so)."""
    from experiments.benchmarks.traces import TraceCase, append_case, trace_file

    for k, (task, outputs) in enumerate((("rep", ([7] * 6 + [3, 4], [7] * 8)),
                                         ("mix", ([5, 6, 5, 6, 1, 2, 3, 4], [9] * 8)))):
        for i, out in enumerate(outputs):
            append_case(trace_file(folder, task, 8), TraceCase(f"{task}/{i}", task, 1, [1, 2 + i + 2 * k, 7, 5, 6],
                                                               out, [0.01] * 8, "toy", 16, [0], 8))
    return folder


def table_cell(out: str, section: str, method: str, header: str) -> str:
    """The cell of ``method`` under ``header`` in the table of ``## section...`` of a report."""
    block = out.split(f"## {section}", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    import re

    names = re.split(r"\s{2,}", block[0].strip())
    line = next(x for x in block[2:] if x.startswith(method + " "))
    return dict(zip(names, re.split(r"\s{2,}", line.strip())))[header]


def test_replay_and_explain_show_the_boards_score_under_one_name(tmp_path, capsys):
    """compare.py --replay's score is the board's figure (geo-mean over groups of decode speedup), and
    traces.py explain's score row is the same figure of the same replays; the pooled figures are named apart."""
    from experiments import traces

    folder = two_group_traces(tmp_path / "traces")
    argv = ["--replay", "--full", "--traces", str(folder), "--drafters", "none,suffix-automaton",
            "--results", str(tmp_path / "results"), "--wandb", "off"]
    assert compare.main(argv) == 0
    out = capsys.readouterr().out
    assert "## (all): pooled over every case; score over the task groups" in out
    score = float(table_cell(out, "(all)", "suffix-automaton", "score"))
    pooled = float(table_cell(out, "(all)", "suffix-automaton", "decode speedup"))
    assert "score: the geometric mean of decode speedup over the task groups" in out
    assert "est speedup: estimated from the cost profile, each prompt's prefill included" in out
    assert "the cost-aware oracle (knows the answer; the ceiling of lookup) on these traces" in out
    assert "warning: fewer than 10 cases in mix (2), rep (2)" in out

    assert traces.main(["explain", "--traces", str(folder), "--drafters", "suffix-automaton", "--plot", ""]) == 0
    explained = capsys.readouterr().out.splitlines()
    row = next(x.split() for x in explained if x.startswith("score "))
    assert float(row[2].rstrip("x")) == pytest.approx(score, abs=0.006)  # 3 digits in the table, 3 decimals here
    pooled_row = next(x.split() for x in explained if x.startswith("(all) pooled"))
    assert float(pooled_row[3].rstrip("x")) == pytest.approx(pooled, abs=0.006)


def test_a_mistyped_drafter_fails_before_the_traces_load(tmp_path, capsys, monkeypatch):
    from experiments.running import replay

    def never(*_a, **_k):
        raise AssertionError("the traces were loaded before the specs were checked")

    monkeypatch.setattr(replay, "load_trace_sets", never)
    assert compare.main(["--replay", "--drafters", "none,adaptve", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()] and "did you mean 'adaptive'" in err


RAISING = """from lookup import Draft, Drafter


class Raising(Drafter):
    def reset(self, prompt):
        self.seq, self.steps = list(prompt), 0

    def extend(self, tokens):
        self.seq.extend(tokens)
        self.steps += 1

    def propose(self, budget):
        if self.steps == 5:
            return Draft([self.seq[-100000]])
        return Draft([])
"""


def test_an_exception_in_a_drafter_is_one_line_naming_the_case_and_the_step(tmp_path, capsys, monkeypatch):
    """The drafter, the call, the step, the case and its own line, in one line; the traceback only
    when asked for (PLD_LAB_TRACEBACK=1), above that line."""
    (tmp_path / "raising.py").write_text(RAISING)
    argv = ["--replay", "--quick", "--drafters", str(tmp_path / "raising.py"), "--results", str(tmp_path / "r")]
    assert compare.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert err.startswith("error: case ") and ": drafter 'raising' (Raising) raised IndexError in propose at step 6 (" in err
    assert "tokens of context) at raising.py:14: list index out of range" in err
    monkeypatch.setenv("PLD_LAB_TRACEBACK", "1")
    assert compare.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raising.py", line 14, in propose' in err
    assert err.strip().splitlines()[-1].startswith("error: case ")
