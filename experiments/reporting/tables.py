"""Per-category tables of a comparison: one view of the result rows, shared by live runs and replays."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from experiments.plots import summarize
from experiments.runner import group_of
from experiments.table import render

#: (header, summarize() key); a column shows only when some method has a value for it
COLUMNS = [
    ("n", "n"),
    ("new tok", "new_tokens"),
    ("fwd", "forwards"),
    ("tau", "tau"),
    ("speedup", "speedup"),
    ("worst", "worst_speedup"),
    ("est speedup", "est_speedup"),
    ("tok/s", "tokens_per_s"),
    ("drafter µs/step", "drafter_us_per_step"),
    ("identical", "identical"),
]


def _cell(key: str, value):
    if value is None:
        return "-"
    if key == "identical":
        return "yes" if value else "NO"
    return value


def method_table(rows: Sequence[dict], order: Sequence[str]) -> str:
    """One line per method (in ``order``) over ``rows``."""
    stats = {m: summarize([r for r in rows if r["method"] == m]) for m in order}
    stats = {m: s for m, s in stats.items() if s["n"]}
    shown = [(h, k) for h, k in COLUMNS if any(s[k] is not None for s in stats.values())]
    table = [[m, *(_cell(k, s[k]) for _, k in shown)] for m, s in stats.items()]
    return render(["method", *(h for h, _ in shown)], table)


def category_tables(rows: Sequence[dict], order: Sequence[str]) -> str:
    """A table per category (multi-turn prompts split per turn), then one over everything."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[group_of(r)].append(r)
    parts = [f"## {g}\n{method_table(groups[g], order)}" for g in sorted(groups)]
    parts.append(f"## all\n{method_table(rows, order)}")
    return "\n\n".join(parts)
