"""The docs' figures are the board's and the code's: a speedup written with three decimals
(``2.271x``, the board's format) in README.md or docs/*.md is a value the shipped boards hold, and
the count of W&B runs comparing.md gives is what a default replay logs. Figures inside
``<!-- figures:NAME -->`` regions are rendered from the board (``leaderboard.py figures --check``
tests those); this catches the ones written by hand around them, which drift when a board is rebuilt."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # not docs/notes/: dated, as measured then
REGION = re.compile(r"<!--\s*figures:([^ >]*)\s*-->.*?<!--\s*/figures:\1\s*-->", re.S)
FIGURE = re.compile(r"(?<![\d.])(\d+\.\d{3})x")
#: lines (a substring of the line) or sections (a heading: to the next heading) whose three-decimal
#: figures are not the board's, each with why
NOT_THE_BOARD = {
    ("oracle-gap.md", "pooled cost-aware oracle"): "pooled over the 400 cases by `traces.py explain`, not a board score",
    ("oracle-gap.md", "## On prompts of other kinds"): "prompts of other kinds than the benchmark's, replayed apart",
    ("acceptance.md", "which occurrence's continuation"): "in-process replays by `traces.py explain`, not board scores",
}


def board_values() -> set[str]:
    """Every number the shipped boards hold, as the views write it (three decimals)."""
    values: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, float):
            values.add(f"{node:.3f}")

    for path in (ROOT / "leaderboard").rglob("board.json"):
        walk(json.loads(path.read_text()))
    return values


def test_the_docs_speedups_written_by_hand_are_the_boards():
    held, stale = board_values(), []
    for doc in DOCS:
        text = REGION.sub("", doc.read_text())
        skipping = False
        for line in text.splitlines():
            if line.startswith("#"):  # a heading: a section of other figures starts, or ends
                skipping = (doc.name, line.strip()) in NOT_THE_BOARD
            if skipping or any(doc.name == d and part in line for d, part in NOT_THE_BOARD):
                continue
            stale += [f"{doc.name}: {m.group(0)} in: {line.strip()[:120]}" for m in FIGURE.finditer(line)
                      if m.group(1) not in held]
    assert not stale, "figures no board holds (rebuilt since? copy them from leaderboard/board.json):\n" + "\n".join(stale)


def test_every_exception_is_still_needed():
    for (doc, part), why in NOT_THE_BOARD.items():
        assert why and part in (ROOT / "docs" / doc).read_text(), (doc, part)


def test_comparing_md_counts_the_wandb_runs_a_default_replay_logs():
    """One run per drafter and task group of the rows, and the summary (reporting.wandb_log._log_all)."""
    from experiments.benchmarks.traces import default_folder, first_prompts, load_trace_sets
    from experiments.reporting.summary import group_order, method_order
    from experiments.running.replay import replay_rows

    said = re.search(r"\((\d+) for `compare.py --replay`'s default", (ROOT / "docs" / "comparing.md").read_text())
    assert said, "comparing.md no longer says how many runs a default replay logs"
    rows = replay_rows(first_prompts(load_trace_sets(default_folder()), 1), progress=False)  # the default drafters
    assert int(said.group(1)) == len(method_order(rows)) * len(group_order(rows)) + 1
