"""plots.py: each plot is written as a real PNG; empty and partial rows skip plots instead of crashing."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import matplotlib.text
import numpy as np
import pytest
from matplotlib import pyplot as plt

from experiments.reporting import plots
from experiments.running.rows import CaseResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIG = {"model": "SmolLM2-135M-Instruct", "device": "cpu", "dtype": "torch.float32", "max_new_tokens": 128,
          "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0, "prompts": "c18995ca5815a29a",
          "reference": "hf-greedy"}
# (category, multi-turn, chance a step finds a long match): code edits copy a lot, chat copies little
CATEGORIES = [("code-edit", False, 0.6), ("summarization", False, 0.3), ("mt-bench", True, 0.15)]
DRAFTERS = {"unfold": 1.0, "suffix-automaton": 1.1, "voting": 1.05}
REFERENCES = ("hf-greedy", "hf-lookup")


def case_row(**fields) -> CaseResult:
    """A bare row (every optional field None or empty); ``fields`` set the rest."""
    base = dict(
        case="c/000", category="c", turn=1, method="m", params={}, prompt_tokens=100, new_tokens=0, forwards=0,
        drafted=0, accepted=0, drafter_us_per_step=None, wall_s=None, forward_s=None, speedup=None,
        est_plain_s=None, est_run_s=None, est_prefill_s=None, identical=None, mismatch=None, accepted_lengths=[],
        drafted_lengths=[],
        contexts=[], tokens=[], profile=None, experiment="b0b68ef122b2", code="0" * 16, git_sha=None, time=1.7e9,
        config={},
    )
    base.update(fields)
    return CaseResult(**base)


def fake_rows(prompts: int = 3, seed: int = 0, est: bool = True, methods=("hf-greedy", "hf-lookup", "none",
              *DRAFTERS)) -> list[CaseResult]:
    """Rows shaped like ``rows.case_result`` builds them live, with plausible numbers (not measurements).

    transformers' references have no drafter and no per-step records, so no drafter time and no
    estimate; ``est=False`` leaves the estimate out of every row (no cost profile).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for category, multi, p_match in CATEGORIES:
        for i in range(prompts):
            for turn in (1, 2) if multi else (1,):
                case = f"{category}/{i:03d}" + (f"#{turn}" if multi else "")
                prompt_tokens = int(rng.integers(150, 1500)) * turn
                new = 128
                ref_wall = new * 0.02
                for method in methods:
                    acc, ctx, drafted_l = [], [], []
                    if method in REFERENCES:
                        forwards = new if method == "hf-greedy" else int(new / (1 + 4 * p_match))
                    else:
                        done, c = 0, prompt_tokens
                        skill = DRAFTERS.get(method, 0.0)
                        while done < new:
                            d = 0 if method == "none" else int(rng.integers(0, 11))
                            # matches get likelier as the answer grows (it repeats itself)
                            p = min(0.95, p_match * skill * (1 + (c - prompt_tokens) / 256))
                            a = int(min(d, rng.geometric(1 - p) - 1)) if d else 0
                            a = min(a, new - done - 1)
                            acc.append(a), ctx.append(c), drafted_l.append(d)
                            done += a + 1
                            c += a + 1
                        forwards = len(acc)
                    wall = ref_wall * (forwards / new) * (1.15 if method != "hf-greedy" else 1.0)
                    drafter = method not in REFERENCES
                    priced = est and drafter  # an estimate needs per-step records and a profile
                    rows.append(CaseResult(
                        case=case, category=category, turn=turn, method=method,
                        params={"drafter": method} if drafter
                        else ({"prompt_lookup_num_tokens": 10, "max_matching_ngram_size": 3}
                              if method == "hf-lookup" else {"prompt_lookup_num_tokens": None}),
                        prompt_tokens=prompt_tokens, new_tokens=new, forwards=forwards, drafted=sum(drafted_l),
                        accepted=sum(acc), drafter_us_per_step=float(rng.uniform(5, 80)) if drafter else None,
                        wall_s=wall, forward_s=wall * 0.9 if drafter else None, speedup=ref_wall / wall,
                        # plain decoding: one 20 ms forward per token; the run: a forward per step, dearer
                        # the more it verifies
                        est_plain_s=new * 0.02 if priced else None,
                        est_run_s=forwards * 0.02 * (1 + 0.02 * sum(drafted_l) / max(forwards, 1)) if priced else None,
                        est_prefill_s=prompt_tokens * 1e-4 if priced else None,  # 0.1 ms a prompt token
                        identical=None if method == "hf-greedy" else True, mismatch=None,
                        accepted_lengths=acc, drafted_lengths=drafted_l, contexts=ctx, tokens=list(range(new)),
                        profile="SmolLM2-135M-Instruct" if priced else None, experiment="b0b68ef122b2",
                        code="0123456789abcdef", git_sha="0" * 40, time=1.7e9, config=CONFIG,
                    ))
    return rows


def REPLAY(row: CaseResult) -> CaseResult:
    """A row as a replay writes it: an estimate, but no wall time, speedup, forward time, tokens or check."""
    return dataclasses.replace(row, wall_s=None, speedup=None, forward_s=None, tokens=[], identical=None,
                               mismatch=None, config={})


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_every_plot_is_a_png_of_sensible_size(tmp_path):
    paths = plots.write_plots(fake_rows(), tmp_path)
    assert [p.name for p in paths] == ["speedup_by_category.png", "accepted_lengths.png", "tau_vs_context.png"]
    for p in paths:
        w, h = png_size(p)
        assert 500 <= w <= 3000 and 300 <= h <= 2000, (p.name, w, h)
        assert p.stat().st_size > 10_000  # drawn, not blank


def test_estimated_panel_only_when_rows_carry_it(tmp_path):
    [with_est] = [p for p in plots.write_plots(fake_rows(est=True), tmp_path / "a") if "speedup" in p.name]
    [without] = [p for p in plots.write_plots(fake_rows(est=False), tmp_path / "b") if "speedup" in p.name]
    assert png_size(with_est)[1] > 1.5 * png_size(without)[1]  # two panels stacked


def bare(row: CaseResult) -> CaseResult:
    """``row`` with every optional field None or empty and nothing drafted: a row that supports no plot."""
    return case_row(case=row.case, category=row.category, turn=row.turn, method=row.method,
                    new_tokens=row.new_tokens, forwards=row.forwards)


@pytest.mark.parametrize(
    "rows,expected",
    [
        ([], []),
        ([bare(r) for r in fake_rows(prompts=1)], []),
        (fake_rows(prompts=1, methods=("hf-greedy",)), ["speedup_by_category.png"]),  # no drafter
        (fake_rows(prompts=1, methods=("unfold",)), ["speedup_by_category.png", "accepted_lengths.png",
                                                     "tau_vs_context.png"]),
        ([dataclasses.replace(r, contexts=[]) for r in fake_rows(prompts=1)],
         ["speedup_by_category.png", "accepted_lengths.png"]),
        ([dataclasses.replace(r, speedup=None, accepted_lengths=[], contexts=[])
          for r in fake_rows(prompts=1, est=False)], []),
        ([REPLAY(r) for r in fake_rows(prompts=1, methods=("unfold", "voting"))],
         ["speedup_by_category.png", "accepted_lengths.png", "tau_vs_context.png"]),
        ([REPLAY(r) for r in fake_rows(prompts=1, methods=("unfold", "voting"), est=False)],
         ["accepted_lengths.png", "tau_vs_context.png"]),  # no profile: steps, but nothing to show as speedup
    ],
    ids=["empty", "bare", "reference-only", "single-drafter", "no-contexts", "no-speedup-no-steps", "replay",
         "replay-unpriced"],
)
def test_partial_inputs_skip_plots(tmp_path, rows, expected):
    paths = plots.write_plots(rows, tmp_path)
    assert [p.name for p in paths] == expected
    assert all(p.exists() for p in paths)


def test_each_plot_skips_rows_it_cannot_draw():
    assert plots.plot_speedup_by_category([]) is None
    assert plots.plot_accepted_lengths(fake_rows(prompts=1, methods=("hf-greedy", "hf-lookup", "none"))) is None
    # steps whose contexts all fall in bins of fewer than min_steps steps draw no line
    [one] = fake_rows(prompts=1, methods=("unfold",))[:1]
    assert plots.plot_tau_vs_context([one], min_steps=10_000) is None


def test_a_row_whose_step_lists_disagree_is_cut_to_the_shorter(tmp_path):
    rows = [dataclasses.replace(r, contexts=r.contexts[: len(r.contexts) // 2])
            for r in fake_rows(prompts=1, methods=("unfold",))]
    ctx, acc = plots._steps(rows)
    assert len(ctx) == len(acc) == sum(len(r.contexts) for r in rows)
    assert [p.name for p in plots.write_plots(rows, tmp_path)][-1] == "tau_vs_context.png"


def test_context_bins_cover_every_step():
    for ctx in (np.array([300.0, 310, 320]), np.array([1.0, 5, 70_000]), np.array([0.0, 0, 0])):
        edges = plots.context_bins(ctx)
        assert edges[0] <= max(ctx.min(), 1) and edges[-1] > ctx.max()
        assert 2 <= len(edges) <= 13 and np.all(np.diff(edges) > 0)


def test_the_signal_plot_draws_a_curve_per_drafter_and_skips_nothing_to_draw(tmp_path):
    curves = {"adaptive": [(0.9, 0.55), (0.75, 0.48), (1.0, 0.74)], "other": [(0.7, 0.3), (0.8, 0.35)]}
    path = plots.write_signal_plot(curves, tmp_path / "signal.png")
    w, h = png_size(path)
    assert 500 <= w <= 3000 and 300 <= h <= 2000 and path.stat().st_size > 10_000
    assert plots.write_signal_plot({}, tmp_path / "none.png") is None
    assert plots.write_signal_plot({"adaptive": []}, tmp_path / "none.png") is None


# -- readable at normal zoom, stable colours, folders, oracle, legends -------------------------------
MANY = ("hf-greedy", "none", "unfold", "suffix-automaton", "voting", "adaptive", "recycling", "peer:vllm-ngram",
        "peer:sglang-ngram", "peer:suffix-decoding", "peer:llamacpp-lookup", "peer:sam-decoding",
        "adaptive:history=true")


def long_accepts(rows: list[CaseResult], longest: int = 64) -> list[CaseResult]:
    """``rows`` with one step of each drafter row accepting ``longest`` tokens (a --full run's tail)."""
    return [dataclasses.replace(r, accepted_lengths=[longest, *r.accepted_lengths[1:]]) if r.accepted_lengths else r
            for r in rows]


def test_no_plot_is_wider_than_normal_zoom_with_many_drafters_and_long_accepts(tmp_path):
    rows = long_accepts(fake_rows(prompts=2, methods=MANY))
    paths = plots.write_plots(rows, tmp_path, oracle={g: 3.0 for g in ("code-edit", "summarization",
                                                                       "mt-bench (turn 1)", "(all)")})
    assert len(paths) == 3
    for p in paths:
        w, h = png_size(p)
        assert 500 <= w <= 1500 and 300 <= h <= 2000, (p.name, w, h)
    losses = {d: {g: loss(i, j) for j, g in enumerate(GROUPS)} for i, d in enumerate(MANY[1:])}
    w, h = png_size(plots.write_loss_plot(losses, tmp_path / "oracle_gap.png"))
    assert w <= 1500 and h <= 2000


def test_bars_wrap_into_rows_of_panels_instead_of_widening():
    fig = plots.plot_speedup_by_category(fake_rows(prompts=1, methods=MANY, est=False))
    try:  # 5 groups x 13 methods: more bars than fit one row
        assert len(fig.axes) == 2 and fig.get_figwidth() <= plots.MAX_WIDTH_IN
    finally:
        plt.close(fig)


def test_a_method_keeps_its_colour_whatever_is_compared_beside_it():
    one = plots.method_colors(["hf-greedy", "adaptive", "my_drafter.py"])
    two = plots.method_colors(["my_drafter.py", "voting", "peer:vllm-ngram", "adaptive"])
    assert one["adaptive"] == two["adaptive"] == plots.FIXED_COLORS["adaptive"]
    assert one["my_drafter.py"] == two["my_drafter.py"]
    everything = plots.method_colors([*MANY, *(f"suffix-automaton:max_tokens={k}" for k in range(12))])
    assert len(set(everything.values())) == len(everything)  # distinct within a plot, collisions included


def test_plot_folders_are_keyed_by_the_methods_too(tmp_path):
    a = plots.plot_folder(tmp_path, "b0b68ef122b2", ["none", "adaptive"])
    assert a == plots.plot_folder(tmp_path, "b0b68ef122b2", ["none", "adaptive"])
    assert a.name.startswith("plots-b0b68ef122b2-") and a.parent == tmp_path
    assert a != plots.plot_folder(tmp_path, "b0b68ef122b2", ["none", "voting"])
    assert a != plots.plot_folder(tmp_path, "0000000000aa", ["none", "adaptive"])


def bars_by_label(fig) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for ax in fig.axes:
        for container in ax.containers:
            out.setdefault(container.get_label(), []).extend(b.get_height() for b in container)
    return out


def test_the_oracle_sits_beside_the_estimates_where_it_is_known():
    rows = [REPLAY(r) for r in fake_rows(prompts=1, methods=("unfold", "voting"))]
    oracle = {"code-edit": 4.0, "summarization": 2.5, "mt-bench (turn 1)": 1.5, "mt-bench (turn 2)": 2.0, "(all)": 2.2}
    fig = plots.plot_speedup_by_category(rows, oracle=oracle)
    try:
        bars = bars_by_label(fig)
        assert bars[plots.ORACLE_LABEL] == [oracle[g] for g in ("code-edit", "mt-bench (turn 1)", "mt-bench (turn 2)",
                                                                "summarization", "(all)")]
        assert set(bars) == {"unfold", "voting", plots.ORACLE_LABEL}
    finally:
        plt.close(fig)
    fig = plots.plot_speedup_by_category(rows)  # a live run: no traces, no oracle
    try:
        assert plots.ORACLE_LABEL not in bars_by_label(fig)
    finally:
        plt.close(fig)
    live = fake_rows(prompts=1, methods=("hf-greedy", "unfold"), est=False)  # no estimate panel: nowhere to draw it
    fig = plots.plot_speedup_by_category(live, oracle=oracle)
    try:
        assert plots.ORACLE_LABEL not in bars_by_label(fig)
    finally:
        plt.close(fig)


def test_legends_print_tau_and_means_as_the_table_does():
    from experiments.reporting.summary import summarize
    from experiments.reporting.tables import fmt

    rows = fake_rows(prompts=1, methods=("unfold", "voting"))
    # voting accepts exactly one token a step: tau 2, which the table prints as "2" (not "2.00")
    rows = [dataclasses.replace(r, accepted_lengths=[1] * 64, drafted_lengths=[2] * 64, forwards=64, accepted=64,
                                contexts=[r.prompt_tokens + 2 * i for i in range(64)]) if r.method == "voting" else r
            for r in rows]
    for draw, key, word in ((plots.plot_tau_vs_context, "tau", "tau"),
                            (plots.plot_accepted_lengths, "mean_accepted", "mean")):
        fig = draw(rows)
        try:
            legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()  # tau's: one for its panels
            labels = [t.get_text() for t in legend.get_texts()]
        finally:
            plt.close(fig)
        for m in ("unfold", "voting"):
            value = fmt(summarize([r for r in rows if r.method == m])[key])
            assert any(label.startswith(f"{m} ({word} {value}") for label in labels), (labels, value)


GROUPS = ("code-edit", "doc-qa", "mt-bench (turn 1)", "mt-bench (turn 2)", "summarization", "(all)")


def loss(i: int, j: int):
    from experiments.running.explain import PARTS, Loss

    parts = {p: 0.01 * (1 + (i + j + k) % 5) for k, p in enumerate(PARTS)}
    parts["beyond"] = -0.01 * (i % 2)
    return Loss(plain=1.0, oracle=0.5, run=0.5 + sum(parts.values()), parts=parts, cases=3)


def test_the_oracle_gap_plot_has_no_rotated_text_and_nothing_over_its_title():
    drafters = ["adaptive", "voting", "suffix-automaton", "unfold", "recycling", "none", "peer:vllm-ngram"]
    fig = plots.plot_losses({d: {g: loss(i, j) for j, g in enumerate(GROUPS)} for i, d in enumerate(drafters)})
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]
        assert texts and all(t.get_rotation() == 0 for t in texts)
        title = fig._suptitle.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible():
                assert not title.overlaps(ax.get_tightbbox(renderer))
        # drafter names are the level y labels, first drafter on top
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert labels == drafters and fig.axes[0].yaxis_inverted()
        assert fig.get_figwidth() <= plots.MAX_WIDTH_IN
    finally:
        plt.close(fig)
    assert plots.plot_losses({}) is None


def test_the_speedup_plots_labels_never_run_into_a_title_and_the_pooled_group_says_so():
    """Bar labels are rotated: each must stay inside its panel, under the panel's title and the figure's."""
    from experiments.reporting.tables import POOLED_LABEL

    rows = long_accepts(fake_rows(prompts=2, methods=MANY[:8]))
    oracle = {g: 6.0 for g in ("code-edit", "summarization", "mt-bench (turn 1)", "mt-bench (turn 2)", "(all)")}
    fig = plots.plot_speedup_by_category(rows, oracle=oracle)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        suptitle = fig._suptitle.get_window_extent(renderer)
        labelled = 0
        for ax in fig.axes:
            title = ax.title.get_window_extent(renderer)
            labels = [t for t in ax.texts if t.get_text()]  # the bar labels, rotated 90 degrees
            labelled += len(labels)
            for text in labels:
                box = text.get_window_extent(renderer)
                assert not box.overlaps(title) and not box.overlaps(suptitle), text.get_text()
            assert [t.get_text() for t in ax.get_xticklabels()][-1].startswith(POOLED_LABEL + "\n(n=")
        assert labelled > 0
        assert fig.get_figwidth() * plots.DPI <= 1500
    finally:
        plt.close(fig)


def test_the_oracle_gap_plot_names_the_pooled_panel():
    from experiments.reporting.tables import POOLED_LABEL

    fig = plots.plot_losses({"adaptive": {g: loss(0, j) for j, g in enumerate(GROUPS)}})
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        assert titles[-1] == POOLED_LABEL and "(all)" not in titles
    finally:
        plt.close(fig)


def test_grouped_bars_png_draws_each_series_and_cleans_its_labels(monkeypatch):
    drawn = []
    bar = plt.Axes.bar
    monkeypatch.setattr(plt.Axes, "bar", lambda self, *a, **k: drawn.append(k) or bar(self, *a, **k))
    series = [plots.Bars("oracle", [[3.0, 3.0], [4.0, 4.0]], reference=True),
              plots.Bars("a$b\x1b[2J\nc", [[1.5, 1.5], [2.0, 2.0]])]
    png = plots.grouped_bars_png(series, ["copy", "geo-mean"], ["CPU", "GPU"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert [k["label"] for k in drawn] == ["oracle", r"a\$b [2J c"] * 2  # no math parser, no control character
    assert drawn[0]["hatch"] == "//" and "hatch" not in drawn[1]
    assert plots.grouped_bars_png([], ["copy"], ["CPU"]) is None and plots.grouped_bars_png(series, [], ["CPU"]) is None


def test_small_groups_say_n_the_two_baselines_are_named_tau_is_per_group_and_a_busy_machine_is_marked(tmp_path):
    rows = fake_rows(prompts=1, methods=("hf-greedy", "none", "unfold", "voting"))
    fig = plots.plot_speedup_by_category(rows)
    try:
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert "code-edit\n(n=1, few)" in ticks  # one prompt: said, and said to be few
        labels = {ax.get_ylabel() for ax in fig.axes}
        titles = [ax.get_title() for ax in fig.axes]
        assert len(labels) == 2  # measured over transformers' greedy, estimated over plain decoding: not one word
        assert any("over transformers' greedy generate (hf-greedy)" in t for t in titles)
        assert any("over plain decoding (our `none`" in t for t in titles)
    finally:
        plt.close(fig)
    fig = plots.plot_tau_vs_context(rows)
    try:
        shown = [ax for ax in fig.axes if ax.get_visible()]
        assert sorted(ax.get_title().split(" (n=")[0] for ax in shown) == sorted(
            {r.group for r in rows if r.method == "unfold"})  # a panel per task group, not one pooled
    finally:
        plt.close(fig)
    fig = plots.plot_accepted_lengths(rows)
    try:
        assert all("accepted a step" in t.get_text() for t in fig.axes[0].get_legend().get_texts())  # "mean" of what
    finally:
        plt.close(fig)
    busy = "machine busy: load 5.10 on 2 cores (1-minute average); timings will be slower"
    paths = plots.write_plots(rows, tmp_path / "busy", busy=busy)
    quiet = plots.write_plots(rows, tmp_path / "quiet")
    assert [p.name for p in paths] == [p.name for p in quiet]
    assert all(b.read_bytes() != q.read_bytes() for b, q in zip(paths, quiet))  # the mark is drawn on each
