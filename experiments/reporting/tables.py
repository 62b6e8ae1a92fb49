"""Plain-text and Markdown tables: the one renderer, the per-category tables of a comparison, and
the cost profile as a table."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from experiments.benchmarks.untrusted import clean
from experiments.reporting.summary import ALL, summarize
from experiments.running.explain import PARTS, Loss
from experiments.running.rows import CaseResult
from lookup.cost import CostProfile

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
#: the longest cell: a Markdown-escaped reason of 500 characters may double in length
CELL_CHARS = 2000


def fmt(value: Any) -> str:
    """A cell: floats to 3 significant digits (thousands separated above 1000), None as "-", text
    cleaned to one line (a cell may hold a name read from a file: no escape sequence reaches a terminal)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        # 3 significant digits would print 999.7 as 1e+03: from there on, whole numbers
        return f"{value:.3g}" if abs(value) < 999.5 else f"{value:,.0f}"
    return clean(value, CELL_CHARS)


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> str:
    """Aligned columns; numbers right-aligned. ``markdown=True`` gives a GitHub table. Every cell
    and header is one cleaned line (:func:`fmt`)."""
    headers = [fmt(h) for h in headers]
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) if rows else False
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "| " + " | ".join(parts) + " |" if markdown else "  ".join(parts).rstrip()

    out = [line(headers)]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|" if markdown else "  ".join("-" * w for w in widths))
    out += [line(r) for r in cells]
    return "\n".join(out)


def _cell(key: str, value):
    if key == "identical" and value is not None:
        return "yes" if value else "NO"
    return value


def method_table(rows: Sequence[CaseResult], order: Sequence[str]) -> str:
    """One line per method (in ``order``) over ``rows``."""
    stats = {m: summarize([r for r in rows if r.method == m]) for m in order}
    stats = {m: s for m, s in stats.items() if s["n"]}
    shown = [(h, k) for h, k in COLUMNS if any(s[k] is not None for s in stats.values())]
    table = [[m, *(_cell(k, s[k]) for _, k in shown)] for m, s in stats.items()]
    return render(["method", *(h for h, _ in shown)], table)


def category_tables(rows: Sequence[CaseResult], order: Sequence[str]) -> str:
    """A table per task group (multi-turn prompts split per turn), then one over everything."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    parts = [f"## {g}\n{method_table(groups[g], order)}" for g in sorted(groups)]
    parts.append(f"## {ALL}\n{method_table(rows, order)}")
    return "\n\n".join(parts)


def report(comparison) -> str:
    """A comparison (live or replay) as text: its heading, a table per group, its footer."""
    parts = [comparison.heading(), category_tables(list(comparison.rows.values()), comparison.order)]
    return "\n\n".join(p for p in [*parts, comparison.footer()] if p)


def format_profile(profile: CostProfile) -> str:
    """Forward ms by size (rows) and context (columns), each with its multiple of one token."""
    contexts = profile.contexts or (None,)
    head = "tokens " + "".join(f"{'ctx ' + str(c) if c else 'forward':>20}" for c in contexts)
    lines = [head]
    for n in profile.sizes:
        cells = (f"{1e3 * profile.cost(n, c):8.1f} ms ({profile.relative(n, c):.2f}x)" for c in contexts)
        lines.append(f"{n:>6} " + "".join(f"{cell:>20}" for cell in cells))
    if profile.prefill:
        lines.append("prefill" + "".join(f"{1e3 * p:17.1f} ms" for p in profile.prefill))
    return "\n".join(lines)


def describe_profile(profile: CostProfile) -> str:
    """One line: what a profile is of, when and where it was measured, and how noisy it was."""
    spread = "" if profile.spread is None else f", repeats spread {100 * profile.spread:.1f}%"
    load = "" if profile.load_per_core is None else f", load {profile.load_per_core:.2f} per core at the start"
    when = profile.measured_at or "an unknown date"
    return f"{profile.model} on {profile.device}: measured {when} on {profile.host or 'an unknown machine'}{spread}{load}"


def loss_table(losses: dict[str, Loss]) -> str:
    """One drafter's gap to the oracle per group: speedups, the share of the oracle's gain, and
    each part of the gap as a share of it (they add up to 100%)."""
    with_auc = any(loss.first_token_auc is not None for loss in losses.values())
    rows = []
    for group, loss in losses.items():
        share = loss.share_of_oracle_gain
        auc = [] if not with_auc else ["" if loss.first_token_auc is None else f"{loss.first_token_auc:.3f}"]
        rows.append([group, loss.cases, f"{loss.speedup:.3f}x", f"{loss.oracle_speedup:.3f}x",
                     "" if share is None else _percent(share), *auc,
                     *(_percent(loss.parts[p] / loss.gap) if loss.gap else "" for p in PARTS)])
    auc_header = ["first-token AUC"] if with_auc else []
    return render(["group", "cases", "speedup", "oracle", "of gain", *auc_header, *PARTS], rows)


def _percent(x: float) -> str:
    return f"{100 * x + 0.0:.0f}%".replace("-0%", "0%")
