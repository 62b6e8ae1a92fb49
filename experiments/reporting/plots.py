"""Plots of comparison rows (the JSONL written by ``experiments.runner``): PNG files, no display.

    paths = write_plots(rows, out_dir)   # speedup_by_category.png, accepted_lengths.png, tau_vs_context.png

Every plot is optional: a plot whose data is missing (no drafter rows, no per-step fields, a
single method...) is skipped rather than drawn empty, and only the files written are returned.
``summarize`` is the one place rows are aggregated; the W&B logger uses it too, so the numbers
in the plots, the W&B summaries and the text tables agree.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")  # files only: never needs (or opens) a display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

DPI = 120
ALL = "all"  # the extra group that pools every row


# -- aggregation ---------------------------------------------------------------------------------
def _num(value) -> float | None:
    """A finite float, or None (missing fields, None, NaN and inf all read as missing)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def group_key(row: dict) -> str:
    """The row's task group: its category, split per turn for multi-turn prompts (see runner.group_of)."""
    from experiments.runner import group_of  # lazy: the runner imports this module, and torch

    try:
        return group_of(row)
    except (KeyError, AttributeError, TypeError):
        return str(row.get("category") or "?")


def method_order(rows: Iterable[dict]) -> list[str]:
    """Methods in order of first appearance: the runner writes the reference first."""
    seen: dict[str, None] = {}
    for row in rows:
        if row.get("method") is not None:
            seen.setdefault(str(row["method"]), None)
    return list(seen)


def group_order(rows: Iterable[dict]) -> list[str]:
    return sorted({group_key(r) for r in rows})


def is_drafter(rows: Sequence[dict]) -> bool:
    """Rows of a method that drafted something: has per-step accepted lengths and drafted > 0.

    hf-greedy and hf-lookup record no steps; the ``none`` drafter records steps but never drafts.
    """
    steps = any(r.get("accepted_lengths") for r in rows)
    drafted = sum(_num(r.get("drafted")) or 0 for r in rows)
    return steps and drafted > 0


def speedup_of(rows: Sequence[dict]) -> float | None:
    """Reference time / method time over the same cases: sum(wall_s * speedup) / sum(wall_s).

    A row's speedup is ref_wall / wall_s, so the reference's time on that case is wall_s * speedup.
    A ratio of total times, not a mean of ratios: long prompts weigh as much as they cost.
    """
    ref = wall = 0.0
    for r in rows:
        w, s = _num(r.get("wall_s")), _num(r.get("speedup"))
        if w is None or not s or w <= 0 or s <= 0:
            continue
        ref += w * s
        wall += w
    return ref / wall if wall > 0 else None


def est_speedup_of(rows: Sequence[dict]) -> float | None:
    """Estimated speedup pooled the same way as ``speedup_of``: estimated total times, in ratio.

    Rows carry the estimated times of plain decoding and of the run (``est_plain_s``,
    ``est_run_s``), so the pool is sum(plain) / sum(run). Older rows carry est_speedup alone;
    for them plain time is taken as proportional to the tokens generated (no prefill, one
    cost per token), which makes the pool the token-weighted harmonic mean of est_speedup (used
    for all rows unless every row has the times).
    Rows without an estimate are left out; None when none has one.
    """
    rows = [r for r in rows if (_num(r.get("est_speedup")) or 0) > 0 and (_num(r.get("new_tokens")) or 0) > 0]
    if rows and all(_num(r.get("est_run_s")) for r in rows):
        plain, spent = sum(_num(r.get("est_plain_s")) or 0.0 for r in rows), sum(_num(r["est_run_s"]) for r in rows)
    else:  # mixed or older rows: one unit for all of them
        plain = sum(_num(r["new_tokens"]) for r in rows)
        spent = sum(_num(r["new_tokens"]) / _num(r["est_speedup"]) for r in rows)
    return plain / spent if spent > 0 else None


def summarize(rows: Sequence[dict]) -> dict:
    """Aggregate metrics of one method's rows (on one group or all): what tables, plots and W&B show.

    Keys: n, new_tokens, forwards, tau (tokens / forwards), tokens_per_s (tokens / wall time),
    speedup and est_speedup (see their functions), worst_speedup, drafter_us_per_step (per forward),
    drafted, accepted, acceptance (accepted / drafted), mean_accepted (per step), identical
    (True / False / None when never checked). Missing values are None.
    """
    def total(key: str) -> float:
        return sum(_num(r.get(key)) or 0 for r in rows)

    tokens, forwards, wall = total("new_tokens"), total("forwards"), total("wall_s")
    drafted, accepted = total("drafted"), total("accepted")
    speedups = [s for s in (_num(r.get("speedup")) for r in rows) if s is not None]
    us = [(_num(r.get("drafter_us_per_step")), _num(r.get("forwards")) or 0) for r in rows]
    us_weight = sum(f for u, f in us if u is not None)
    steps = [a for r in rows for a in (r.get("accepted_lengths") or [])]
    checks = [r["identical"] for r in rows if isinstance(r.get("identical"), bool)]
    return {
        "n": len(rows),
        "new_tokens": int(tokens),
        "forwards": int(forwards),
        "tau": tokens / forwards if forwards > 0 else None,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "speedup": speedup_of(rows),
        "est_speedup": est_speedup_of(rows),
        "worst_speedup": min(speedups) if speedups else None,
        "drafter_us_per_step": (sum(u * f for u, f in us if u is not None) / us_weight) if us_weight > 0 else None,
        "drafted": int(drafted),
        "accepted": int(accepted),
        "acceptance": accepted / drafted if drafted > 0 else None,
        "mean_accepted": float(np.mean(steps)) if steps else None,
        "identical": (all(checks) if checks else None),
    }


def by_method_and_group(rows: Sequence[dict]) -> dict[tuple[str, str], list[dict]]:
    """{(method, group): rows}, plus (method, "all") pooling every group."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("method") is None:
            continue
        out[(str(r["method"]), group_key(r))].append(r)
        out[(str(r["method"]), ALL)].append(r)
    return dict(out)


# -- plots -----------------------------------------------------------------------------------------
def write_plots(rows: Sequence[dict], out_dir: str | Path) -> list[Path]:
    """Write every plot the rows support into ``out_dir``; return the paths written (maybe none)."""
    rows = [r for r in rows if isinstance(r, dict) and r.get("method") is not None]
    out_dir = Path(out_dir)
    written = []
    for name, draw in PLOTS.items():
        fig = draw(rows)
        if fig is None:
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{name}.png"
        try:
            fig.tight_layout()
            fig.savefig(path, dpi=DPI)
        finally:
            plt.close(fig)
        written.append(path)
    return written


def _colors(methods: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per method across all plots (same method, same colour)."""
    cmap = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(methods)}


def _subtitle(rows: Sequence[dict]) -> str:
    config = next((r.get("config") for r in rows if isinstance(r.get("config"), dict)), {}) or {}
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


def plot_speedup_by_category(rows: Sequence[dict]):
    """Grouped bars of speedup per task group (and of estimated speedup, when rows carry it)."""
    methods = method_order(rows)
    cells = by_method_and_group(rows)
    groups = group_order(rows)
    if not methods or not groups:
        return None
    groups = groups + ([ALL] if len(groups) > 1 else [])
    colors = _colors(methods)
    reference = next((r["config"].get("reference") for r in rows if isinstance(r.get("config"), dict)
                      and r["config"].get("reference")), methods[0])
    subtitle = f" — {_subtitle(rows)}" if _subtitle(rows) else ""
    # (aggregate, y label, title); a panel is drawn only when some row has its field (replay rows
    # carry est_speedup but no wall time, live rows the reverse unless a cost profile was applied)
    panels = [(speedup_of, f"speedup over {reference}\n(total time ratio)", "Speedup by task" + subtitle),
              (est_speedup_of, "estimated speedup\n(cost profile)",
               "Estimated speedup by task (token-weighted, from the cost profile)")]
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


def _steps(rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(contexts, accepted) per step over rows; a row whose lists disagree in length is cut to the shorter."""
    ctx, acc = [], []
    for r in rows:
        a = r.get("accepted_lengths") or []
        c = r.get("contexts") or []
        n = min(len(a), len(c))
        acc.extend(a[:n])
        ctx.extend(c[:n])
    return np.asarray(ctx, dtype=float), np.asarray(acc, dtype=float)


def _drafters(rows: Sequence[dict]) -> dict[str, list[dict]]:
    per: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        per[str(r["method"])].append(r)
    return {m: rs for m, rs in per.items() if is_drafter(rs)}


def plot_accepted_lengths(rows: Sequence[dict]):
    """Fraction of steps that accepted k draft tokens, k = 0, 1, ...; one bar series per drafter."""
    drafters = _drafters(rows)
    if not drafters:
        return None
    colors = _colors(method_order(rows))
    series = {}
    for m, rs in drafters.items():
        lengths = np.asarray([a for r in rs for a in (r.get("accepted_lengths") or [])], dtype=int)
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


def plot_tau_vs_context(rows: Sequence[dict], min_steps: int = 3):
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


PLOTS: dict[str, Callable[[Sequence[dict]], "plt.Figure | None"]] = {
    "speedup_by_category": plot_speedup_by_category,
    "accepted_lengths": plot_accepted_lengths,
    "tau_vs_context": plot_tau_vs_context,
}
