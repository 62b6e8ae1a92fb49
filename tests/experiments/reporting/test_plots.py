"""plots.py: each plot is written as a real PNG; empty and partial rows skip plots instead of crashing."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from experiments import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIG = {"model": "SmolLM2-135M-Instruct", "device": "cpu", "dtype": "torch.float32", "max_new_tokens": 128,
          "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0, "prompts": "c18995ca5815a29a",
          "reference": "hf-greedy"}
# (category, multi-turn, chance a step finds a long match): code edits copy a lot, chat copies little
CATEGORIES = [("code-edit", False, 0.6), ("summarization", False, 0.3), ("mt-bench", True, 0.15)]
DRAFTERS = {"unfold": 1.0, "suffix-automaton": 1.1, "voting": 1.05}


def fake_rows(prompts: int = 3, seed: int = 0, est: bool = True, methods=("hf-greedy", "hf-lookup", "none",
              *DRAFTERS)) -> list[dict]:
    """Rows shaped like ``Comparison._row`` builds, with plausible numbers (not measurements)."""
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
                    if method in ("hf-greedy", "hf-lookup"):
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
                    row = {
                        "experiment": "b0b68ef122b2", "case": case, "category": category, "turn": turn,
                        "method": method,
                        "params": {"drafter": method} if method in DRAFTERS or method == "none"
                        else ({"prompt_lookup_num_tokens": 10, "max_matching_ngram_size": 3}
                              if method == "hf-lookup" else {"prompt_lookup_num_tokens": None}),
                        "prompt_tokens": prompt_tokens, "new_tokens": new, "forwards": forwards,
                        "tau": new / forwards, "drafted": sum(drafted_l), "accepted": sum(acc), "wall_s": wall,
                        "tokens_per_s": new / wall, "forward_s": wall * 0.9,
                        "drafter_us_per_step": 0.0 if not acc else float(rng.uniform(5, 80)),
                        "speedup": ref_wall / wall, "identical": None if method == "hf-greedy" else True,
                        "mismatch": None, "accepted_lengths": acc, "drafted_lengths": drafted_l, "contexts": ctx,
                        "tokens": list(range(new)), "config": CONFIG, "git_sha": "0" * 40,
                        "versions": {"torch": "2.5"}, "time": 1.7e9,
                    }
                    if est:
                        row["est_speedup"] = new / (forwards * (1 + 0.02 * (sum(drafted_l) / max(forwards, 1))))
                    rows.append(row)
    return rows


def REPLAY(row: dict) -> dict:
    """A row as ``experiments.replay`` writes it: estimated speedup, no wall time, no config."""
    drop = ("wall_s", "speedup", "tokens_per_s", "forward_s", "identical", "mismatch", "config", "drafted_lengths",
            "tokens", "git_sha", "versions", "time", "experiment")
    return {**{k: v for k, v in row.items() if k not in drop}, "replay": True, "replay_s": 0.01}


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


@pytest.mark.parametrize(
    "rows,expected",
    [
        ([], []),
        ([{"not": "a row"}], []),
        (fake_rows(prompts=1, methods=("hf-greedy",)), ["speedup_by_category.png"]),  # no drafter
        (fake_rows(prompts=1, methods=("unfold",)), ["speedup_by_category.png", "accepted_lengths.png",
                                                     "tau_vs_context.png"]),
        ([{**r, "contexts": []} for r in fake_rows(prompts=1)], ["speedup_by_category.png", "accepted_lengths.png"]),
        ([{k: v for k, v in r.items() if k not in ("speedup", "accepted_lengths", "contexts")}
          for r in fake_rows(prompts=1, est=False)], []),
        ([REPLAY(r) for r in fake_rows(prompts=1, methods=("unfold", "voting"))],
         ["speedup_by_category.png", "accepted_lengths.png", "tau_vs_context.png"]),
    ],
    ids=["empty", "junk", "reference-only", "single-drafter", "no-contexts", "no-speedup-no-steps", "replay"],
)
def test_partial_inputs_skip_plots(tmp_path, rows, expected):
    paths = plots.write_plots(rows, tmp_path)
    assert [p.name for p in paths] == expected
    assert all(p.exists() for p in paths)


def test_aggregates_are_time_ratios():
    rows = [  # the reference took 2 s + 2 s; the method 1 s + 3 s -> 4 / 4 = 1.0, not mean(2, 0.67)
        {"method": "m", "category": "c", "case": "c/0", "turn": 1, "wall_s": 1.0, "speedup": 2.0, "new_tokens": 10,
         "forwards": 5, "est_speedup": 2.0},
        {"method": "m", "category": "c", "case": "c/1", "turn": 1, "wall_s": 3.0, "speedup": 2 / 3, "new_tokens": 30,
         "forwards": 30, "est_speedup": 1.0},
    ]
    s = plots.summarize(rows)
    assert s["speedup"] == pytest.approx(1.0)
    assert s["est_speedup"] == pytest.approx(40 / (10 / 2 + 30 / 1))
    assert s["tau"] == pytest.approx(40 / 35)
    assert s["tokens_per_s"] == pytest.approx(10.0)
    assert s["worst_speedup"] == pytest.approx(2 / 3)
    assert s["identical"] is None and s["acceptance"] is None
    assert plots.summarize([])["speedup"] is None


def test_context_bins_cover_every_step():
    for ctx in (np.array([300.0, 310, 320]), np.array([1.0, 5, 70_000]), np.array([0.0, 0, 0])):
        edges = plots.context_bins(ctx)
        assert edges[0] <= max(ctx.min(), 1) and edges[-1] > ctx.max()
        assert 2 <= len(edges) <= 13 and np.all(np.diff(edges) > 0)


def test_estimated_times_pool_when_every_row_has_them():
    rows = [  # plain decoding: 3 s + 1 s estimated; the run: 1 s + 1 s -> 2.0 (not the token-weighted 1.2)
        {"method": "m", "category": "c", "case": "c/0", "turn": 1, "new_tokens": 10, "est_speedup": 3.0,
         "est_plain_s": 3.0, "est_run_s": 1.0},
        {"method": "m", "category": "c", "case": "c/1", "turn": 1, "new_tokens": 40, "est_speedup": 1.0,
         "est_plain_s": 1.0, "est_run_s": 1.0},
    ]
    assert plots.est_speedup_of(rows) == pytest.approx(2.0)
    del rows[1]["est_run_s"]  # one older row: every row falls back to the token-weighted pool
    assert plots.est_speedup_of(rows) == pytest.approx(50 / (10 / 3 + 40 / 1))
