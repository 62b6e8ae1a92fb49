"""Plots of result rows: PNG files, no display.

    paths = write_plots(rows, out_dir)   # speedup_by_category.png, accepted_lengths.png, tau_vs_context.png
    path = write_loss_plot(losses, out_dir / "oracle_gap.png")   # where drafters lose time to the oracle

Every plot is optional: a plot whose data is missing (no drafter rows, no per-step records, a
single method...) is skipped rather than drawn empty, and only the files written are returned.
Aggregates come from ``experiments.reporting.summary``, as the tables' and W&B's do.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Sequence

import matplotlib

matplotlib.use("Agg")  # files only: never needs (or opens) a display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from experiments.reporting.summary import (ALL, by_method_and_group, est_speedup_of, group_order,  # noqa: E402
                                           is_drafter, method_order, speedup_of)
from experiments.running.explain import PARTS, Loss  # noqa: E402
from experiments.running.rows import CaseResult  # noqa: E402

DPI = 120


# -- plots -----------------------------------------------------------------------------------------
def write_plots(rows: Sequence[CaseResult], out_dir: str | Path) -> list[Path]:
    """Write every plot the rows support into ``out_dir``; return the paths written (maybe none)."""
    out_dir = Path(out_dir)
    written = []
    for name, draw in PLOTS.items():
        fig = draw(rows)
        if fig is None:
            continue
        written.append(save_figure(fig, out_dir / f"{name}.png"))
    return written


def _colors(methods: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per method across all plots (same method, same colour)."""
    cmap = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(methods)}


def _subtitle(rows: Sequence[CaseResult]) -> str:
    config = rows[0].config if rows else {}
    bits = [str(config[k]) for k in ("model", "device") if config.get(k)]
    if config.get("max_new_tokens"):
        bits.append(f"max_new_tokens {config['max_new_tokens']}")
    if config.get("temperature") not in (None, 0, 0.0):
        bits.append(f"T={config['temperature']}")
    return ", ".join(bits)


def _bar_panel(ax, methods, groups, values: Callable[[str, str], float | None], colors, ylabel: str) -> bool:
    """Grouped bars: x = group, one bar per method; False when nothing had a value."""
    width = 0.8 / max(len(methods), 1)
    x = np.arange(len(groups))
    seen: list[float] = []
    label_bars = len(methods) * len(groups) <= 48
    for i, m in enumerate(methods):
        ys = [values(m, g) for g in groups]
        ok = [j for j, y in enumerate(ys) if y is not None]
        if not ok:
            continue
        seen += [ys[j] for j in ok]
        xs = x[ok] + (i - (len(methods) - 1) / 2) * width
        bars = ax.bar(xs, [ys[j] for j in ok], width, label=m, color=colors[m])
        if label_bars:
            ax.bar_label(bars, fmt="%.2f", fontsize=6, rotation=90, padding=2)
    if not seen:
        return False
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    positive = [v for v in seen if v > 0]
    if positive and max(positive) / min(positive) > 8:  # ratios: 0.5x and 2x sit symmetric on a log axis
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ylabel += " (log scale)"
    ax.set_xticks(x, groups, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.margins(y=0.12)
    ax.grid(axis="y", alpha=0.3)
    return True


def plot_speedup_by_category(rows: Sequence[CaseResult]):
    """Grouped bars of speedup per task group (and of estimated speedup, when rows carry it)."""
    methods = method_order(rows)
    cells = by_method_and_group(rows)
    groups = group_order(rows)
    if not methods or not groups:
        return None
    groups = groups + ([ALL] if len(groups) > 1 else [])
    colors = _colors(methods)
    reference = rows[0].config.get("reference") or methods[0]
    subtitle = f" — {_subtitle(rows)}" if _subtitle(rows) else ""
    # (aggregate, y label, title); a panel is drawn only when some row has its field (replay rows
    # carry est_speedup but no wall time, live rows the reverse unless a cost profile was applied)
    panels = [(speedup_of, f"speedup over {reference}\n(total time ratio)", "Speedup by task" + subtitle),
              (est_speedup_of, "estimated speedup\n(cost profile)",
               "Estimated speedup by task (from the cost profile)")]
    panels = [p for p in panels if any(p[0](cells.get((m, g), [])) is not None for m in methods for g in groups)]
    if not panels:
        return None
    if len(panels) == 1 and panels[0][0] is est_speedup_of:
        panels = [(est_speedup_of, panels[0][1], "Estimated speedup by task (from the cost profile)" + subtitle)]
    width = max(7.0, 2.5 + 0.28 * len(groups) * max(len(methods), 2))  # + room for the legend
    fig, axes = plt.subplots(len(panels), 1, figsize=(min(width, 22.0), 4.2 * len(panels)), squeeze=False,
                             sharex=True)
    for ax, (aggregate, ylabel, title) in zip(axes[:, 0], panels):
        _bar_panel(ax, methods, groups, lambda m, g, a=aggregate: a(cells.get((m, g), [])), colors, ylabel)
        ax.set_title(title)
    axes[-1, 0].set_xlabel("task group")
    if groups[-1] == ALL:  # set the pooled group apart
        for ax in axes[:, 0]:
            ax.axvline(len(groups) - 1.5, color="grey", linewidth=0.8)
    axes[0, 0].legend(title="method", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
    """Fraction of steps that accepted k draft tokens, k = 0, 1, ...; one bar series per drafter."""
    drafters = _drafters(rows)
    if not drafters:
        return None
    colors = _colors(method_order(rows))
    series = {}
    for m, rs in drafters.items():
        lengths = np.asarray([a for r in rs for a in r.accepted_lengths], dtype=int)
        lengths = lengths[lengths >= 0]
        if lengths.size:
            series[m] = lengths
    if not series:
        return None
    top = int(max(s.max() for s in series.values()))
    ks = np.arange(top + 1)
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.45 * (top + 1) * max(len(series), 2) / 1.5), 4.5))
    for i, (m, lengths) in enumerate(series.items()):
        frac = np.bincount(lengths, minlength=top + 1) / lengths.size
        ax.bar(ks + (i - (len(series) - 1) / 2) * width, frac, width, color=colors[m],
               label=f"{m} (mean {lengths.mean():.2f}, {lengths.size} steps)")
    ax.set_xticks(ks)
    ax.set_yscale("log")  # the long accepts that pay off are rare: keep them visible next to the zeros
    ax.set_ylim(bottom=0.5 / max(s.size for s in series.values()))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.set_xlabel("draft tokens accepted in a step")
    ax.set_ylabel("fraction of steps (log scale)")
    ax.set_title("Accepted draft length per step" + (f" — {_subtitle(rows)}" if _subtitle(rows) else ""))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
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
    """Mean committed tokens per forward (accepted + 1) against context length, one line per drafter.

    Steps are pooled over prompts and binned by context length (log-spaced bins shared by all
    methods); a bin with fewer than ``min_steps`` steps is left out as noise.
    """
    drafters = _drafters(rows)
    steps = {m: _steps(rs) for m, rs in drafters.items()}
    steps = {m: s for m, s in steps.items() if s[0].size}
    if not steps:
        return None
    pooled = np.concatenate([c for c, _ in steps.values()])
    edges = context_bins(pooled)
    colors = _colors(method_order(rows))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for m, (ctx, acc) in steps.items():
        idx = np.clip(np.searchsorted(edges, ctx, side="right") - 1, 0, len(edges) - 2)
        xs, ys = [], []
        for b in range(len(edges) - 1):
            sel = idx == b
            if sel.sum() >= min_steps:
                xs.append(math.sqrt(edges[b] * edges[b + 1]))
                ys.append(float(acc[sel].mean()) + 1.0)
        if xs:
            drawn = True
            ax.plot(xs, ys, marker="o", color=colors[m], label=f"{m} (tau {float(acc.mean()) + 1:.2f})")
    if not drawn:
        plt.close(fig)
        return None
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="no drafting")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("context length (tokens, log scale; bins pooled over prompts)")
    ax.set_ylabel("tokens committed per forward")
    ax.set_title("tau vs context length" + (f" — {_subtitle(rows)}" if _subtitle(rows) else ""))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


PLOTS: dict[str, Callable[[Sequence[CaseResult]], "plt.Figure | None"]] = {
    "speedup_by_category": plot_speedup_by_category,
    "accepted_lengths": plot_accepted_lengths,
    "tau_vs_context": plot_tau_vs_context,
}


def write_loss_plot(losses: dict[str, dict[str, Loss]], path: str | Path) -> Path | None:
    """Stacked bars: per task group (columns of panels) and drafter (bars), the gap to the oracle
    split into its parts, as a share of plain decoding's time (so groups compare). None when empty."""
    drafters = list(losses)
    if not drafters:
        return None
    groups = list(next(iter(losses.values())))
    colors = dict(zip(PARTS, plt.get_cmap("tab10").colors))
    fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(groups) * max(len(drafters), 1) + 2), 4.8))
    width = 0.8 / len(drafters)
    for d, drafter in enumerate(drafters):
        xs = np.arange(len(groups)) + (d - (len(drafters) - 1) / 2) * width
        bottom_pos, bottom_neg = np.zeros(len(groups)), np.zeros(len(groups))
        for part in PARTS:
            share = np.array([losses[drafter][g].parts[part] / losses[drafter][g].plain
                              if losses[drafter][g].plain else 0.0 for g in groups])
            base = np.where(share >= 0, bottom_pos, bottom_neg)
            ax.bar(xs, share, width * 0.95, bottom=base, color=colors[part], label=part if d == 0 else None,
                   edgecolor="white", linewidth=0.4)
            bottom_pos += np.maximum(share, 0)
            bottom_neg += np.minimum(share, 0)
        for x, top in zip(xs, bottom_pos):
            ax.text(x, top, drafter, rotation=90, fontsize=7, ha="center", va="bottom")
    ax.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
    ax.set_ylabel("time lost to the oracle / plain decoding's time")
    ax.set_title("where drafters lose time against the cost-aware oracle")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, ncol=len(PARTS))
    return save_figure(fig, path)


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


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (creating its folder) and close it, even on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return path
