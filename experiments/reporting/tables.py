"""Plain-text and Markdown tables: the one renderer and its cells, the per-category tables of a
comparison, the oracle-gap table of ``traces.py explain`` (and the board's ``show``), and the cost
profile as a table. Every figure carries the name ``experiments.reporting.summary`` defines it under."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from experiments.benchmarks.untrusted import clean
from experiments.reporting.repeats import Spread
from experiments.reporting.summary import (ALL, acceptance_by_position, board_score, is_drafter, oracle_gain,
                                          oracle_speedups, sample_notes, summarize)
from experiments.running.explain import PARTS, Loss
from experiments.running.rows import CaseResult
from pldcore.cost import CostProfile

#: (header, summarize() key); a column shows only when some method has a value for it
COLUMNS = [
    ("n", "n"),
    ("new tok", "new_tokens"),
    ("fwd", "forwards"),
    ("tau", "tau"),
    ("speedup", "speedup"),
    ("worst", "worst_speedup"),
    ("est speedup", "est_speedup"),
    ("decode speedup", "decode_speedup"),
    ("score", "score"),  # over several task groups only: on one it is the decode speedup
    ("tok/s", "tokens_per_s"),
    ("drafter µs/step", "drafter_us_per_step"),
    ("identical", "identical"),
]
#: what a column means, said under the tables that show it (summary.py defines each figure)
COLUMN_NOTES = {
    "est_speedup": "est speedup: estimated from the cost profile, each prompt's prefill included (as a wall clock "
                   "sees it), pooled over the cases as total times",
    "decode_speedup": "decode speedup: the same, decoding phase alone: the board's figure per task group",
    "score": "score: the geometric mean of decode speedup over the task groups, each weighing the same: what the "
             "board ranks by",
    "drafter_us_per_step": "drafter µs/step: wall time in the drafter per forward, reset included, in this process "
                           "(the board's counts the CPU time of its sandbox per request, its message handling "
                           "included: more)",
}
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


def spread_cell(spread: Spread | None, scale: float = 1.0) -> str:
    """A figure over repeats (:class:`~experiments.reporting.repeats.Spread`) as one cell, "median (lo-hi)",
    each number times ``scale`` (100: a percentage) as :func:`fmt` writes it; "-" for None."""
    if spread is None:
        return "-"
    return f"{fmt(scale * spread.median)} ({fmt(scale * spread.lo)}-{fmt(scale * spread.hi)})"


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


def _shown(stats: dict[str, dict], score: bool) -> list[tuple[str, str]]:
    return [(h, k) for h, k in COLUMNS
            if (score or k != "score") and any(s[k] is not None for s in stats.values())]


def _stats(rows: Sequence[CaseResult], order: Sequence[str]) -> dict[str, dict]:
    stats = {m: summarize([r for r in rows if r.method == m]) for m in order}
    return {m: s for m, s in stats.items() if s["n"]}


def method_table(rows: Sequence[CaseResult], order: Sequence[str], score: bool = False) -> str:
    """One line per method (in ``order``) over ``rows``; ``score``: with the score column (rows of
    several task groups)."""
    stats = _stats(rows, order)
    shown = _shown(stats, score)
    table = [[m, *(_cell(k, s[k]) for _, k in shown)] for m, s in stats.items()]
    return render(["method", *(h for h, _ in shown)], table)


def _groups(rows: Sequence[CaseResult]) -> dict[str, list[CaseResult]]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    return dict(sorted(groups.items()))


def category_tables(rows: Sequence[CaseResult], order: Sequence[str]) -> str:
    """A table per task group (multi-turn prompts split per turn), then one over everything, pooled,
    with the score over the groups when there are several."""
    groups = _groups(rows)
    parts = [f"## {g}\n{method_table(rs, order)}" for g, rs in groups.items()]
    several = len(groups) > 1
    parts.append(f"## {ALL}{': pooled over every case; score over the task groups' if several else ''}\n"
                 f"{method_table(rows, order, score=several)}")
    return "\n\n".join(parts)


def oracle_line(times: dict[str, tuple[float, float, float]]) -> str:
    """The cost-aware oracle of a replay's traces (``summary.oracle_times``) under the names and
    formats of the tables' figures: its est speedup and decode speedup over every case, its score."""
    with_prefill, decode = oracle_speedups(times), oracle_speedups(times, with_prefill=False)
    groups = [g for g in decode if g != ALL]
    score = f", score {fmt(board_score(decode))}" if len(groups) > 1 else ""
    return (f"the cost-aware oracle (knows the answer; the ceiling of lookup) on these traces: est speedup "
            f"{fmt(with_prefill.get(ALL))}, decode speedup {fmt(decode.get(ALL))}{score}")


def column_notes(rows: Sequence[CaseResult], order: Sequence[str]) -> str:
    """What the figures of :func:`category_tables` that need saying are (those shown), one per line."""
    shown = {k for _, k in _shown(_stats(rows, order), score=len(_groups(rows)) > 1)}
    return "\n".join(note for key, note in COLUMN_NOTES.items() if key in shown)


def position_table(rows: Sequence[CaseResult], order: Sequence[str], positions: int = 8) -> str:
    """Per drafter (every case pooled): the acceptance rate of each draft position
    (:func:`~experiments.reporting.summary.acceptance_by_position`), with the steps that reached
    the first; "" when no method drafted."""
    by_method = {m: [r for r in rows if r.method == m] for m in order}
    drafters = [m for m in order if is_drafter(by_method[m])]
    if not drafters:
        return ""
    table = []
    for m in drafters:
        rates = acceptance_by_position(by_method[m], positions)
        table.append([m, f"{rates[0][0]:,}", *("-" if rate is None else f"{100 * rate:.0f}%" for _, rate in rates)])
    return ("## acceptance by draft position (every case): of the drafts that reached position k (k tokens, the "
            "first k - 1 accepted), the share that accepted the k-th; for a tree, k counts nodes\n"
            + render(["method", "drafts", *[f"k={k}" for k in range(1, positions + 1)]], table))


def report(comparison, extra: Sequence[str] = ()) -> str:
    """A comparison (live or replay) as text: its heading, a table per group, what the figures are,
    the acceptance rate by draft position, warnings about small samples, the ``extra`` lines (the
    oracle's, say), its footer."""
    rows = list(comparison.rows.values())
    cases = {g: len({r.case for r in rs}) for g, rs in _groups(rows).items()}
    parts = [comparison.heading(), category_tables(rows, comparison.order), column_notes(rows, comparison.order),
             position_table(rows, comparison.order), "\n".join(sample_notes(cases)), "\n".join(extra),
             comparison.footer()]
    return "\n\n".join(p for p in parts if p)


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


#: the loss table's rows over every case: the pooled one, and the board's score over the groups
POOLED_LABEL = f"{ALL} pooled"
SCORE_LABEL = "score"
#: what the loss table's figures are, said under it
LOSS_NOTES = ("decode speedup: estimated from the cost profile, decoding phase, pooled over a group's cases (the "
              "board's figure per task group); cost-aware oracle: the same of the oracle that knows the answer "
              f"and the cost of a forward; {POOLED_LABEL}: over every case; {SCORE_LABEL}: the geometric mean over "
              "the task groups, what the board ranks by; of gain: (speedup - 1) / (oracle - 1); the parts: shares "
              "of the gap to the oracle (they add up to 100%)")


def loss_table(losses: dict[str, Loss]) -> str:
    """One drafter's gap to the cost-aware oracle per group: decode speedups, the share of the oracle's
    gain, and each part of the gap as a share of it (they add up to 100%); then the pooled row
    (``ALL``, labelled ``POOLED_LABEL``) and, over several groups, the board's score of both speedups
    (``SCORE_LABEL``: :func:`experiments.reporting.summary.board_score`; no parts: a geometric mean
    splits into none). A share of an oracle's gain of next to nothing is left blank (``oracle_gain``)."""
    with_auc = any(loss.first_token_auc is not None for loss in losses.values())
    rows = []
    for group, loss in losses.items():
        share = loss.share_of_oracle_gain
        auc = [] if not with_auc else ["" if loss.first_token_auc is None else f"{loss.first_token_auc:.3f}"]
        rows.append([POOLED_LABEL if group == ALL else group, loss.cases, _times(loss.speedup),
                     _times(loss.oracle_speedup), "" if share is None else _percent(share), *auc,
                     *(_percent(loss.parts[p] / loss.gap) if loss.gap else "" for p in PARTS)])
    groups = {g: loss for g, loss in losses.items() if g != ALL}
    if len(groups) > 1:
        score = board_score({g: loss.speedup for g, loss in groups.items()})
        oracle = board_score({g: loss.oracle_speedup for g, loss in groups.items()})
        share = oracle_gain(score, oracle)
        rows.append([SCORE_LABEL, sum(loss.cases for loss in groups.values()), _times(score), _times(oracle),
                     "" if share is None else _percent(share), *([""] if with_auc else []), *([""] * len(PARTS))])
    auc_header = ["first-token AUC"] if with_auc else []
    return render(["group", "cases", "decode speedup", "cost-aware oracle", "of gain", *auc_header, *PARTS], rows)


def loss_notes(losses: dict[str, Loss]) -> list[str]:
    """The small-sample warnings of one drafter's :func:`loss_table` (``summary.sample_notes``)."""
    return sample_notes({g: loss.cases for g, loss in losses.items()},
                        {g: loss.oracle_speedup for g, loss in losses.items() if g != ALL})


def _times(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}x"


def _percent(x: float) -> str:
    return f"{100 * x + 0.0:.0f}%".replace("-0%", "0%")
