"""One default drafter, and one rule for how many cases a command runs: a replay every case (the
shipped 400 replay in under a minute), ``--quick`` one prompt per task, in compare.py and traces.py
alike; a live run one prompt per task."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import lookup
from decoding.integrations import hf, vllm
from experiments import traces
from experiments.benchmarks.traces import TraceCase, append_case, first_prompts, load_trace_sets, trace_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
import compare  # noqa: E402


def two_prompts(folder: Path) -> Path:
    """Two tasks of two prompts each; the chat's prompts have two turns."""
    for t, (task, turns) in enumerate((("rep", (1,)), ("chat", (1, 2)))):
        for i in range(2):
            for turn in turns:
                case = f"{task}/{i}" + (f"#{turn}" if len(turns) > 1 else "")
                prompt = [1, 2 + i, 4 + t, 7, turn]  # every case's prompt its own
                append_case(trace_file(folder, task, 8), TraceCase(case, task, turn, prompt, [7] * 8, [0.01] * 8,
                                                                   "toy", 16, [0], 8))
    return folder


def replayed(results: Path) -> list[str]:
    [path] = results.glob("*.jsonl")
    return sorted(json.loads(line)["case"] for line in path.read_text().splitlines())


ALL = ["chat/0#1", "chat/0#2", "chat/1#1", "chat/1#2", "rep/0", "rep/1"]
QUICK = ["chat/0#1", "chat/0#2", "rep/0"]


def test_the_default_drafter_is_one_constant():
    assert hf.DEFAULT_DRAFTER == lookup.DEFAULT_DRAFTER == "adaptive"
    assert lookup.DEFAULT_DRAFTER in lookup.builtin_names()
    assert traces.build_parser().parse_args(["explain"]).drafters == lookup.DEFAULT_DRAFTER
    # vLLM's proposer differs, for reasons stated where it is defined and in the guide
    assert vllm.DEFAULT_DRAFTER == "suffix-automaton"
    assert "suffix-automaton" in (ROOT / "docs" / "choosing-a-drafter.md").read_text()


@pytest.mark.parametrize("flags, cases", [([], ALL), (["--quick"], QUICK), (["--prompts", "1"], QUICK),
                                          (["--full"], ALL)])
def test_compare_replays_every_case_unless_told_quick(tmp_path, flags, cases):
    argv = ["--replay", "--traces", str(two_prompts(tmp_path / "t")), "--drafters", "none",
            "--results", str(tmp_path / "r"), "--wandb", "off", *flags]
    assert compare.main(argv) == 0
    assert replayed(tmp_path / "r") == cases


@pytest.mark.parametrize("flags, cases", [([], ALL), (["--quick"], QUICK)])
def test_traces_replay_follows_the_same_rule(tmp_path, flags, cases):
    argv = ["replay", "--traces", str(two_prompts(tmp_path / "t")), "--drafters", "none", "--results",
            str(tmp_path / "r"), *flags]
    assert traces.main(argv) == 0
    assert replayed(tmp_path / "r") == cases


def test_a_live_run_is_one_prompt_per_task_unless_told_more():
    for argv, prompts, full in ([], 1, False), (["--quick"], 1, False), (["--prompts", "3"], 3, False), \
                               (["--full"], 1, True):
        args = compare.build_parser().parse_args(argv)
        compare.resolve_case_count(args)
        assert (args.prompts, args.full) == (prompts, full), argv


def test_quick_with_full_or_prompts_is_one_line(tmp_path, capsys):
    for extra in (["--full"], ["--prompts", "2"]):
        assert compare.main(["--replay", "--quick", *extra, "--results", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == [err] and "--quick is one prompt per task" in err


def test_the_quick_subset_keeps_a_prompt_s_turns_together(tmp_path):
    sets = load_trace_sets(two_prompts(tmp_path / "t"))
    assert sorted(c.case for s in first_prompts(sets, 1) for c in s.cases) == QUICK
    assert sorted(c.case for s in first_prompts(sets, 5) for c in s.cases) == ALL
