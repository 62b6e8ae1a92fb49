"""Plots of result rows: PNG files, no display.

    folder = plot_folder(results, experiment, methods)   # plots-<experiment>-<methods>: one per comparison
    paths = write_plots(rows, folder, oracle=oracle)     # speedup_by_category.png, accepted_lengths.png, tau_vs_context.png
    path = write_loss_plot(losses, out_dir / "oracle_gap.png")   # where drafters lose time to the oracle
    png = grouped_bars_png([Bars("oracle", [[3.0, 3.0]], reference=True), ...], ["code", "geo-mean"], ["CPU"])

Every plot is optional: a plot whose data is missing (no drafter rows, no per-step records, a
single method...) is skipped rather than drawn empty, and only the files written are returned.
Aggregates come from ``experiments.reporting.summary`` and numbers are printed as the tables print
them (``tables.fmt``), so a legend and a table never disagree.

Readable at normal zoom: no figure is wider than ``MAX_WIDTH_IN`` at ``DPI`` (1,500 px); more
bars than fit wrap into further rows of panels. A method has one colour in every plot of every
run (``method_colors``), whatever else is compared beside it.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # files only: never needs (or opens) a display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from experiments.benchmarks.untrusted import clean  # noqa: E402
from experiments.reporting.summary import (ALL, MIN_CASES, by_method_and_group, est_speedup_of,  # noqa: E402
                                           group_order, is_drafter, method_order, speedup_of, summarize)
from experiments.reporting.tables import POOLED_LABEL, fmt  # noqa: E402
from experiments.running.explain import PARTS, Loss  # noqa: E402
from experiments.running.rows import CaseResult  # noqa: E402
from experiments.running.store import config_hash  # noqa: E402

DPI = 120
#: the widest figure, in inches (x DPI = 1,500 px): wider ones are unreadable at normal zoom
MAX_WIDTH_IN = 12.5
#: bars per row of panels before the groups wrap into another row
MAX_BARS_PER_ROW = 48
#: the cost-aware oracle's bars: no method's colour, hatched
ORACLE_LABEL = "cost-aware oracle (knows the answer)"
ORACLE_STYLE = dict(color="#d9d9d9", hatch="///", edgecolor="#7f7f7f", linewidth=0.5)

#: our own methods keep these colours (tab10) in every plot; they must never trade places
FIXED_COLORS = {
    "adaptive": "#1f77b4", "suffix-automaton": "#ff7f0e", "voting": "#2ca02c", "recycling": "#d62728",
    "unfold": "#9467bd", "none": "#8c564b", "hf-lookup": "#e377c2", "hf-greedy": "#7f7f7f",
}
#: every other method (a peer, a spec with parameters, your drafter file) hashes into these
HASHED_COLORS = ("#bcbd22", "#17becf", *(matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab20b").colors),
                 *(matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab20c").colors[:16]))


# -- plots -----------------------------------------------------------------------------------------
def plot_folder(results: str | Path, experiment: str, methods: Sequence[str]) -> Path:
    """The folder of one comparison's plots: keyed by everything that changes them, the experiment
    (model, settings, cases) and the methods drawn, so another ``--drafters`` list never
    overwrites earlier plots."""
    return Path(results) / f"plots-{experiment}-{config_hash({'methods': list(methods)})[:8]}"


def write_plots(rows: Sequence[CaseResult], out_dir: str | Path,
                oracle: Mapping[str, float] | None = None, busy: str | None = None) -> list[Path]:
    """Write every plot the rows support into ``out_dir``; return the paths written (maybe none).

    ``oracle``: the cost-aware oracle's estimated speedup per task group (and ``ALL``), drawn
    beside the estimates where given (``summary.oracle_speedups`` on a replay's traces). ``busy``:
    the machine was busy while the rows were timed (the warning ``decoding.devices.fit_threads_to_load``
    gave): every plot says so under its title, since its measured times are noisier."""
    out_dir = Path(out_dir)
    written = []
    for name, draw in PLOTS.items():
        fig = draw(rows, oracle=oracle) if name == "speedup_by_category" else draw(rows)
        if fig is None:
            continue
        if busy:
            _mark_busy(fig, busy)
        written.append(save_figure(fig, out_dir / f"{name}.png"))
    return written


def _mark_busy(fig, busy: str) -> None:
    """Red words in the figure's bottom right corner: its timings were taken on a busy machine."""
    load = busy.split(";")[0].removeprefix("machine busy: ").split(" (")[0]
    fig.text(0.995, 0.005, f"BUSY MACHINE\n({load}):\nmeasured times noisy", color="#b00000", fontsize=7,
             ha="right", va="bottom")


def method_colors(methods: Sequence[str]) -> dict[str, str]:
    """One colour per method, the same in every plot and run: ours from ``FIXED_COLORS``, any other
    by a hash of its name into ``HASHED_COLORS``. Two names that hash alike in one plot: the later
    (in sorted order) takes the next colour free there."""
    colors = {m: FIXED_COLORS[m] for m in methods if m in FIXED_COLORS}
    taken = set(colors.values())
    for m in sorted(set(methods) - set(colors)):
        i = int(hashlib.sha256(m.encode()).hexdigest(), 16) % len(HASHED_COLORS)
        for step in range(len(HASHED_COLORS)):
            color = HASHED_COLORS[(i + step) % len(HASHED_COLORS)]
            if color not in taken or step == len(HASHED_COLORS) - 1:
                break
        colors[m] = color
        taken.add(color)
    return colors


def _subtitle(rows: Sequence[CaseResult]) -> str:
    config = rows[0].config if rows else {}
    bits = [str(config[k]) for k in ("model", "device") if config.get(k)]
    if config.get("max_new_tokens"):
        bits.append(f"max_new_tokens {config['max_new_tokens']}")
    if config.get("temperature") not in (None, 0, 0.0):
        bits.append(f"T={config['temperature']}")
    return ", ".join(bits)


def _group_label(group: str, cases: Mapping[str, int] | None) -> str:
    """A group's tick: its name and how many cases it holds, marked when that is too few to describe
    the task (:data:`~experiments.reporting.summary.MIN_CASES`)."""
    name = POOLED_LABEL if group == ALL else group
    n = (cases or {}).get(group)
    if n is None:
        return name
    return f"{name}\n(n={n}{', few' if n < MIN_CASES and group != ALL else ''})"


def _bar_panel(ax, series: Sequence[str], groups: Sequence[str], values: Callable[[str, str], float | None],
               styles: Mapping[str, dict], ylabel: str, cases: Mapping[str, int] | None = None) -> list[float]:
    """Grouped bars: x = group (with its number of cases, ``cases``), one bar per series (a method, or
    the oracle); the values drawn."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    seen: list[float] = []
    label_bars = len(series) * len(groups) <= 48
    for i, m in enumerate(series):
        ys = [values(m, g) for g in groups]
        ok = [j for j, y in enumerate(ys) if y is not None]
        if not ok:
            continue
        seen += [ys[j] for j in ok]
        xs = x[ok] + (i - (len(series) - 1) / 2) * width
        bars = ax.bar(xs, [ys[j] for j in ok], width, label=m if m != ORACLE_LABEL else ORACLE_LABEL, **styles[m])
        if label_bars:
            ax.bar_label(bars, labels=[fmt(float(ys[j])) for j in ok], fontsize=6, rotation=90, padding=2)
    if seen:
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks(x, [_group_label(g, cases) for g in groups], rotation=20, ha="right")
        ax.set_ylabel(ylabel)
        ax.margins(y=0.18)  # room above the tallest bar for its label, below the title
        ax.grid(axis="y", alpha=0.3)
        if groups[-1] == ALL:  # set the pooled group apart
            ax.axvline(len(groups) - 1.5, color="grey", linewidth=0.8)
    return seen


def _log_if_wide(axes, seen: Sequence[float]) -> bool:
    """Ratios that span more than 8x go on a log axis, where 0.5x and 2x sit symmetric."""
    positive = [v for v in seen if v > 0]
    if not positive or max(positive) / min(positive) <= 8:
        return False
    for ax in axes:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    return True


def _rows_of(groups: Sequence[str], series: int) -> list[list[str]]:
    """``groups`` cut into rows of panels of at most ``MAX_BARS_PER_ROW`` bars each."""
    per_row = max(1, MAX_BARS_PER_ROW // max(series, 1))
    rows = math.ceil(len(groups) / per_row)
    per_row = math.ceil(len(groups) / rows)  # balanced rows
    return [list(groups[i:i + per_row]) for i in range(0, len(groups), per_row)]


def plot_speedup_by_category(rows: Sequence[CaseResult], oracle: Mapping[str, float] | None = None):
    """Grouped bars of speedup per task group (and of estimated speedup, when rows carry it, with the
    cost-aware oracle's beside it when ``oracle`` gives it per group); groups wrap into rows."""
    methods = method_order(rows)
    cells = by_method_and_group(rows)
    groups = group_order(rows)
    if not methods or not groups:
        return None
    groups = groups + ([ALL] if len(groups) > 1 else [])
    styles = {m: {"color": c} for m, c in method_colors(methods).items()} | {ORACLE_LABEL: ORACLE_STYLE}
    reference = rows[0].config.get("reference") or methods[0]
    subtitle = f" — {_subtitle(rows)}" if _subtitle(rows) else ""
    oracle = {g: v for g, v in (oracle or {}).items() if g in groups}
    # (aggregate, y label, title, the oracle's bars too); a panel is drawn only when some row has its
    # field (replay rows carry est_speedup but no wall time, live rows the reverse unless a cost profile
    # was applied); the oracle is an estimate under the cost profile, so it sits with the estimates
    measured_over = "transformers' greedy generate (hf-greedy)" if reference == "hf-greedy" else reference
    panels = [(speedup_of, f"measured speedup over\n{reference} (time ratio)", f"Measured speedup over {measured_over}",
               False),
              (est_speedup_of, "estimated speedup over\nplain decoding (cost profile)",
               "Estimated speedup over plain decoding (our `none`, priced by the cost profile, prefill incl.)",
               bool(oracle))]
    cases = {g: len({r.case for r in rows if r.group == g}) for g in groups if g != ALL}
    cases[ALL] = len({r.case for r in rows})
    panels = [p for p in panels if any(p[0](cells.get((m, g), [])) is not None for m in methods for g in groups)]
    if not panels:
        return None
    lines = _rows_of(groups, len(methods) + bool(oracle))
    bars = max(len(line) for line in lines) * (len(methods) + bool(oracle))
    width = min(MAX_WIDTH_IN, max(7.0, 3.0 + 0.22 * bars))
    fig, axes = plt.subplots(len(panels) * len(lines), 1, figsize=(width, 3.3 * len(panels) * len(lines) + 0.9),
                             squeeze=False)
    for p, (aggregate, ylabel, title, with_oracle) in enumerate(panels):
        series = methods + ([ORACLE_LABEL] if with_oracle else [])

        def value(m, g, a=aggregate):
            return oracle.get(g) if m == ORACLE_LABEL else a(cells.get((m, g), []))

        panel_axes = [axes[p * len(lines) + r, 0] for r in range(len(lines))]
        seen = []
        for r, (ax, line) in enumerate(zip(panel_axes, lines)):
            seen += _bar_panel(ax, series, line, value, styles, ylabel, cases)
            ax.set_title(title + (f" ({r + 1} of {len(lines)})" if len(lines) > 1 else ""), fontsize=10)
        if _log_if_wide(panel_axes, seen):
            for ax in panel_axes:
                ax.set_ylabel(ylabel + " (log scale)")
    axes[-1, 0].set_xlabel("task group")
    handles = {}
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.suptitle(f"Speedup by task{subtitle}", fontsize=11)
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="lower center", ncol=min(len(handles), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False)
    legend_in = (0.1 + 0.17 * math.ceil(len(handles) / 4)) / fig.get_figheight()
    fig.set_layout_engine("tight", rect=(0, legend_in, 1, 1 - 0.2 / fig.get_figheight()))
    return fig


def _steps(rows: Sequence[CaseResult]) -> tuple[np.ndarray, np.ndarray]:
    """(contexts, accepted) per step over rows; a row whose lists disagree in length is cut to the shorter."""
    ctx, acc = [], []
    for r in rows:
        n = min(len(r.accepted_lengths), len(r.contexts))
        acc.extend(r.accepted_lengths[:n])
        ctx.extend(r.contexts[:n])
    return np.asarray(ctx, dtype=float), np.asarray(acc, dtype=float)


def _drafters(rows: Sequence[CaseResult]) -> dict[str, list[CaseResult]]:
    per: dict[str, list[CaseResult]] = defaultdict(list)
    for r in rows:
        per[r.method].append(r)
    return {m: rs for m, rs in per.items() if is_drafter(rs)}


def plot_accepted_lengths(rows: Sequence[CaseResult]):
    """The share of steps that accepted at least k draft tokens, k = 1, 2, ...: one curve per drafter.

    A falling curve per drafter stays readable however many drafters and lengths there are, where
    side-by-side bars of each length would not, and it has no gaps where no step accepted exactly k.
    """
    drafters = _drafters(rows)
    if not drafters:
        return None
    colors = method_colors(method_order(rows))
    series = {}
    for m, rs in drafters.items():
        lengths = np.asarray([a for r in rs for a in r.accepted_lengths], dtype=int)
        lengths = lengths[lengths >= 0]
        if lengths.size:
            series[m] = (lengths, summarize(rs)["mean_accepted"])
    if not series:
        return None
    top = max(1, int(max(s.max() for s, _ in series.values())))
    ks = np.arange(1, top + 2)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    for m, (lengths, mean) in series.items():
        at_least = (lengths[None, :] >= ks[:, None]).mean(axis=1)  # [top + 1]
        ax.plot(ks, np.where(at_least > 0, at_least, np.nan), drawstyle="steps-post", linewidth=1.5, color=colors[m],
                label=f"{m} (mean {fmt(mean)} accepted a step, {lengths.size:,} steps)")
    ax.set_xlim(1, top + 1)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=16))
    ax.set_yscale("log")  # the long accepts that pay off are rare: keep them visible next to the short ones
    ax.set_ylim(bottom=0.5 / max(s.size for s, _ in series.values()), top=1.0)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.set_xlabel("draft tokens accepted in a step: at least k")
    ax.set_ylabel("share of steps (log scale)")
    ax.set_title("Steps that accepted at least k draft tokens" + (f" — {_subtitle(rows)}" if _subtitle(rows) else ""),
                 fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def context_bins(contexts: np.ndarray, max_bins: int = 12) -> np.ndarray:
    """Log-spaced bin edges over context length: the finest of 2^(k/4), 2^(k/2), 2^k that gives at
    most ``max_bins`` bins (round numbers on a log axis); geometric bins beyond 2^max_bins range."""
    lo, hi = float(contexts.min()), float(contexts.max())
    lo = max(lo, 1.0)
    hi = max(hi, lo)
    for step in (0.25, 0.5, 1.0):
        first = math.floor(math.log2(lo) / step) * step
        last = math.ceil(math.log2(hi + 1) / step) * step
        edges = 2.0 ** np.arange(first, last + step / 2, step)
        if len(edges) - 1 <= max_bins:
            return edges
    return np.geomspace(edges[0], edges[-1], max_bins + 1)


def plot_tau_vs_context(rows: Sequence[CaseResult], min_steps: int = 3):
    """Mean committed tokens per forward (accepted + 1) against context length, one panel per task
    group (pooled, the groups' mix would stand in for context: long contexts are code edits and
    second turns), one line per drafter in each.

    Steps are pooled over a group's prompts and binned by context length (log-spaced bins shared by
    all panels); a bin with fewer than ``min_steps`` steps is left out as noise.
    """
    drafters = _drafters(rows)
    groups = [g for g in group_order(rows) if any(r.group == g for rs in drafters.values() for r in rs)]
    steps = {(m, g): _steps([r for r in rs if r.group == g]) for m, rs in drafters.items() for g in groups}
    steps = {k: s for k, s in steps.items() if s[0].size}
    if not steps:
        return None
    edges = context_bins(np.concatenate([c for c, _ in steps.values()]))
    colors = method_colors(method_order(rows))
    cols = min(3, len(groups))
    lines = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(lines, cols, figsize=(min(MAX_WIDTH_IN, 4.0 * cols), 3.4 * lines + 0.9), squeeze=False,
                             sharey=True)
    drawn = False
    for i, g in enumerate(groups):
        ax = axes[i // cols, i % cols]
        for m in drafters:
            if (m, g) not in steps:
                continue
            ctx, acc = steps[m, g]
            idx = np.clip(np.searchsorted(edges, ctx, side="right") - 1, 0, len(edges) - 2)
            xs, ys = [], []
            for b in range(len(edges) - 1):
                sel = idx == b
                if sel.sum() >= min_steps:
                    xs.append(math.sqrt(edges[b] * edges[b + 1]))
                    ys.append(float(acc[sel].mean()) + 1.0)
            if xs:
                drawn = True
                # the legend's tau is the table's: tokens / forwards over every case, as the table prints it
                ax.plot(xs, ys, marker="o", color=colors[m], label=f"{m} (tau {fmt(summarize(drafters[m])['tau'])})")
        n = len({r.case for rs in drafters.values() for r in rs if r.group == g})
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="no drafting")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"{g} (n={n}{', few' if n < MIN_CASES else ''})", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        if i % cols == 0:
            ax.set_ylabel("tokens committed per forward")
        if i // cols == lines - 1:
            ax.set_xlabel("context length (tokens, log)")
    for j in range(len(groups), lines * cols):
        axes[j // cols, j % cols].set_visible(False)
    if not drawn:
        plt.close(fig)
        return None
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.suptitle("tau vs context length, per task group" + (f" — {_subtitle(rows)}" if _subtitle(rows) else ""),
                 fontsize=10)
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="lower center", ncol=min(len(handles), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False)
    legend_in = (0.1 + 0.17 * math.ceil(len(handles) / 4)) / fig.get_figheight()
    fig.set_layout_engine("tight", rect=(0, legend_in, 1, 1 - 0.2 / fig.get_figheight()))
    return fig


PLOTS: dict[str, Callable[..., "plt.Figure | None"]] = {
    "speedup_by_category": plot_speedup_by_category,
    "accepted_lengths": plot_accepted_lengths,
    "tau_vs_context": plot_tau_vs_context,
}


def write_loss_plot(losses: dict[str, dict[str, Loss]], path: str | Path) -> Path | None:
    """:func:`plot_losses` as a PNG at ``path``; None when there is nothing to draw."""
    fig = plot_losses(losses)
    return None if fig is None else save_figure(fig, path)


def plot_losses(losses: dict[str, dict[str, Loss]]):
    """Stacked horizontal bars: a panel per task group (at most 3 side by side), a bar per drafter,
    the gap to the oracle split into its parts, as a share of plain decoding's time (so groups
    compare). Drafter names are the bars' labels, level: no text is rotated. None when empty."""
    drafters = list(losses)
    if not drafters:
        return None
    groups = list(next(iter(losses.values())))
    colors = dict(zip(PARTS, plt.get_cmap("tab10").colors))
    cols = min(3, len(groups))
    nrows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(min(MAX_WIDTH_IN, 2.2 + 3.4 * cols),
                                                   nrows * (0.8 + 0.32 * len(drafters)) + 1.0),
                             squeeze=False, sharex=True, sharey=True)
    ys = np.arange(len(drafters))
    for k, group in enumerate(groups):
        ax = axes[k // cols, k % cols]
        left_pos, left_neg = np.zeros(len(drafters)), np.zeros(len(drafters))
        for part in PARTS:
            share = np.array([losses[d][group].parts[part] / losses[d][group].plain if losses[d][group].plain
                              else 0.0 for d in drafters])
            base = np.where(share >= 0, left_pos, left_neg)
            ax.barh(ys, share, 0.7, left=base, color=colors[part], label=part if k == 0 else None,
                    edgecolor="white", linewidth=0.4)
            left_pos += np.maximum(share, 0)
            left_neg += np.minimum(share, 0)
        ax.set_yticks(ys, drafters, fontsize=8)
        ax.set_title(POOLED_LABEL if group == ALL else group, fontsize=9)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.grid(alpha=0.3, axis="x")
    axes[0, 0].invert_yaxis()  # the first drafter on top, as in the table (the y axis is shared: once)
    for k in range(len(groups), nrows * cols):
        axes[k // cols, k % cols].set_visible(False)
    for ax in axes[-1, :]:
        ax.set_xlabel("time lost to the oracle / plain decoding's time", fontsize=8)
    fig.suptitle("Where drafters lose time against the cost-aware oracle", fontsize=11)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), fontsize=8, ncol=len(PARTS), loc="lower center",
               bbox_to_anchor=(0.5, 0.0), frameon=False)
    fig.set_layout_engine("tight", rect=(0, 0.4 / fig.get_figheight(), 1, 1 - 0.35 / fig.get_figheight()))
    return fig


def write_signal_plot(curves: dict[str, list[tuple[float, float]]], path: str | Path) -> Path | None:
    """Share of the oracle's gain against how well the drafter predicted its first draft tokens
    (rank AUC), one line per drafter: the ``signal:AUC`` hindsight runs of ``traces.py explain``.
    ``curves``: drafter -> [(first-token AUC, share of the oracle's gain)]. None when empty."""
    curves = {name: sorted(points) for name, points in curves.items() if points}
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(7.0, 4.8))
    for name, points in curves.items():
        xs, ys = zip(*points)
        ax.plot(xs, 100 * np.asarray(ys), marker="o", label=name)
    ax.set_xlabel("first draft token: AUC of the drafter's prediction of acceptance")
    ax.set_ylabel("share of the oracle's gain (%)")
    ax.set_title("what better prediction of acceptance would give (hindsight signal)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


@dataclass(frozen=True)
class Bars:
    """One series of :func:`grouped_bars_png`: its label and, per panel, one value per x label."""

    label: str
    values: Sequence[Sequence[float]]  # [panel][x label]
    reference: bool = False  # a reference (an oracle): grey and hatched, in no series' colour


def _label(text) -> str:
    """A label for matplotlib from text a file may hold: cleaned, and no ``$`` to start its math parser."""
    return clean(text, 48).replace("$", r"\$")


def grouped_bars_png(series: Sequence[Bars], labels: Sequence[str], titles: Sequence[str],
                     ylabel: str = "estimated speedup", dpi: int = 100) -> bytes | None:
    """Grouped bars as PNG bytes (for a page to embed): one panel per title, stacked, sharing the x
    axis (``labels``; the last one set apart, a pooled column); at each label one bar per series
    (coloured by its place in ``series``, tab10), a dashed line at 1x, a log axis where the bars
    span more than 8x. Labels may come from a file: they are cleaned here. None when empty."""
    if not series or not labels:
        return None
    cmap = plt.get_cmap("tab10")
    fig, axes = plt.subplots(len(titles), 1, figsize=(max(8.0, 1.6 * len(labels) + 3), 8.5), sharex=True,
                             squeeze=False)
    width = 0.8 / len(series)
    x = np.arange(len(labels))
    for p, (ax, title) in enumerate(zip(axes[:, 0], titles)):
        for i, bars in enumerate(series):
            style = {"color": "lightgrey", "edgecolor": "black", "hatch": "//"} if bars.reference \
                else {"color": cmap(i % 10)}
            ax.bar(x + (i - (len(series) - 1) / 2) * width, list(bars.values[p]), width, label=_label(bars.label),
                   **style)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        heights = [b.get_height() for b in ax.patches if b.get_height() > 0]
        if heights and max(heights) / min(heights) > 8:  # ratios: 0.5x and 2x sit symmetric on a log axis
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.axvline(len(labels) - 1.5, color="grey", linewidth=0.8)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[-1, 0].set_xticks(x, [_label(label) for label in labels], rotation=20, ha="right")
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buf.getvalue()


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (creating its folder) and close it, even on failure. A
    figure without a layout of its own (room kept for a figure legend) is laid out tight."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if fig.get_layout_engine() is None:
            fig.tight_layout()
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return path
