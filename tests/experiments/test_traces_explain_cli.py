"""traces.py explain: mistakes fail in one line before any work, small samples are said to be small,
and nothing but the report reaches a log that is not a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import traces
from experiments.benchmarks.traces import TraceCase, append_case, trace_file


def own_traces(folder: Path, cases: int = 3) -> Path:
    """A few cases of one category, as a user's own prompts give them."""
    for i in range(cases):
        out = [5, 6, 5, 6, 1, 2, 3, 4]
        append_case(trace_file(folder, "mine", 8), TraceCase(f"mine/{i}", "mine", 1, [1, 2 + i, 5, 6], out,
                                                             [0.01] * 8, "toy", 16, [0], 8))
    return folder


@pytest.mark.parametrize("argv,match", [
    (["--drafters", "adaptve"], "did you mean 'adaptive'"),
    (["--drafters", "suffix-automaton:max_token=8"], "did you mean 'max_tokens'"),
    (["--drafters", "hf-greedy"], "replay runs drafters only"),
    (["--drafters", "adaptive", "--hindsight", "gat"], "gate"),
])
def test_a_mistake_is_one_line_before_the_traces_load_or_a_bar_is_drawn(argv, match, capsys, monkeypatch):
    def never(*_a, **_k):
        raise AssertionError("the traces were loaded before the arguments were checked")

    monkeypatch.setattr(traces, "load_trace_sets", never)
    assert traces.main(["explain", *argv, "--plot", ""]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [captured.err.strip()]
    assert captured.err.startswith("error: ") and match in captured.err


def test_a_mistyped_subcommand_is_one_line_with_close_matches(capsys):
    with pytest.raises(SystemExit) as info:
        traces.main(["explian"])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and err.splitlines() == [err] and "did you mean 'explain'" in err


def test_a_small_sample_is_said_to_be_small_and_a_piped_log_holds_no_bar(tmp_path, capsys):
    folder = own_traces(tmp_path / "traces")
    assert traces.main(["explain", "--traces", str(folder), "--drafters", "suffix-automaton,none", "--plot", ""]) == 0
    captured = capsys.readouterr()
    assert "warning: fewer than 10 cases in mine (3)" in captured.out
    assert captured.out.count("warning: fewer than") == 1  # once, not once per drafter
    assert "(all) pooled" in captured.out and "cost-aware oracle" in captured.out
    assert captured.err == ""  # stderr is no terminal here: no progress bar, no \r updates


def test_the_plot_is_named_by_its_inputs_so_another_explain_does_not_overwrite_it(tmp_path, capsys, monkeypatch):
    folder = own_traces(tmp_path / "traces")
    monkeypatch.chdir(tmp_path)
    plots = []
    for drafters in ("suffix-automaton", "none", "suffix-automaton"):
        assert traces.main(["explain", "--traces", str(folder), "--drafters", drafters]) == 0
        plots += [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("plot: ")]
    assert len(plots) == 3 and plots[0] != plots[1] and plots[0] == plots[2]  # the same inputs, the same file
    assert all(Path(p).name.startswith("oracle_gap-") and (tmp_path / p).is_file() for p in plots)
    assert traces.main(["explain", "--traces", str(folder), "--drafters", "none", "--plot", "mine.png"]) == 0
    assert "plot: mine.png" in capsys.readouterr().out and (tmp_path / "mine.png").is_file()
