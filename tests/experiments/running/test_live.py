"""A live comparison: the machine's load checked before the model loads, the cost profile's notices as one
warning line each, its progress bar on a terminal only, identity to plain sampling checked where it holds."""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import pytest
from toys import tiny_llama

import decoding
from decoding.cost import NoisyProfileWarning
from experiments.benchmarks.tasks import Prompt
from experiments.running import live
from experiments.running.methods import Sampling, parse_method
from pldcore.cost import CPU_SMOLLM2

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "experiments"))
import compare  # noqa: E402

BUSY = ("machine busy: load 3.50 on 2 cores (1-minute average); timings will be slower and noisier than on a quiet "
        "machine")


def test_a_busy_machine_is_checked_before_the_model_loads_and_said_in_one_line(tmp_path, monkeypatch, capsys,
                                                                                live_profile):
    order = []
    target = tiny_llama()
    monkeypatch.setattr(live, "fit_threads_to_load", lambda: order.append("load checked") or BUSY)
    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: order.append("model loaded") or target)
    args = compare.build_parser().parse_args(["--tasks", "code-edit", "--prompts", "1", "--results", str(tmp_path)])
    comparison = live.Comparison.from_args(args, ["none"])
    assert order == ["load checked", "model loaded"] and comparison.profile is live_profile
    assert capsys.readouterr().err == f"warning: {BUSY}\n"
    monkeypatch.setattr(live, "fit_threads_to_load", lambda: None)  # a quiet machine: nothing said
    live.Comparison.from_args(args, ["none"])
    assert capsys.readouterr().err == ""


def test_the_profiles_notices_are_one_warning_line_each_and_other_warnings_pass(monkeypatch, capsys):
    def busy_profile(target, **kwargs):
        warnings.warn("cost profile not cached: the machine was busy", NoisyProfileWarning, stacklevel=2)
        warnings.warn("something else", RuntimeWarning, stacklevel=2)
        return CPU_SMOLLM2

    monkeypatch.setattr(live, "cost_profile", busy_profile)
    with pytest.warns(RuntimeWarning, match="something else"):
        assert live.machine_profile(tiny_llama()) is CPU_SMOLLM2
    assert capsys.readouterr().err == "warning: cost profile not cached: the machine was busy\n"


@pytest.mark.parametrize("tty", [False, True])
def test_a_comparison_draws_its_bar_on_a_terminal_only(tmp_path, monkeypatch, tty):
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    target = tiny_llama()
    # the tiny model has no tokenizer: a turn's ids are a few of its own characters
    monkeypatch.setattr(target, "chat_ids", lambda messages, system=None: [
        2 + ord(c) % 60 for m in ([{"content": messages}] if isinstance(messages, str) else messages)
        for c in m["content"][:8]])
    prompts = [Prompt(f"toy/{i}", "toy", (f"question {i}", "and again")) for i in range(2)]
    comparison = live.Comparison(target, [parse_method("none"), parse_method("unfold")], prompts, 4,
                                 Sampling(0.0, 0, 1.0, None), tmp_path, profile=CPU_SMOLLM2)
    stream = Stream()
    monkeypatch.setattr(sys, "stderr", stream)  # tqdm draws on sys.stderr
    comparison.run()
    assert len(comparison.rows) == 2 * 2 * 2
    assert ("compare" in stream.getvalue()) == tty
    assert ("\r" in stream.getvalue()) == tty


def test_the_estimate_scales_the_profile_by_the_forward_timed_now_and_a_drafter_runs_faster():
    """Twice as slow a forward now, twice the time; a drafter's run ESTIMATED_SPEEDUP times less decoding."""
    quiet = CPU_SMOLLM2.cost(1, 256)
    plain = live.estimate_seconds([300], [False], 128, quiet, CPU_SMOLLM2)
    decode = plain - CPU_SMOLLM2.prefill_cost(300)
    assert decode == pytest.approx(128 * CPU_SMOLLM2.cost(1, 364), rel=0.05)  # ~ 128 forwards mid-answer
    assert live.estimate_seconds([300], [False], 128, 2 * quiet, CPU_SMOLLM2) == pytest.approx(2 * plain)
    drafted = live.estimate_seconds([300], [True], 128, quiet, CPU_SMOLLM2)
    assert drafted == pytest.approx(CPU_SMOLLM2.prefill_cost(300) + decode / live.ESTIMATED_SPEEDUP)
    assert live.estimate_seconds([300, 300], [False, True], 128, quiet, CPU_SMOLLM2) == pytest.approx(plain + drafted)


STOCHASTIC = '''
import numpy as np
from lookup.base import Draft, Drafter


class CoinDrafter(Drafter):
    """Drafts one node drawn from a fixed two-token distribution, and says so (Draft.probs); the draw's
    generator is seeded by the context's length, so that a repeated propose returns the same draft."""

    def propose(self, budget):
        if budget < 1:
            return Draft()
        q = np.zeros((1, {vocab}), dtype=np.float32)
        q[0, 3] = q[0, 4] = 0.5
        return Draft([np.random.default_rng(len(self.context)).choice(2) + 3], probs=q)
'''


def test_sampled_runs_check_identity_for_deterministic_drafts_only(tmp_path, monkeypatch):
    target = tiny_llama()
    monkeypatch.setattr(target, "chat_ids", lambda messages, system=None: [5, 9, 14, 22, 9, 14])
    coin = tmp_path / "coin.py"
    coin.write_text(STOCHASTIC.format(vocab=target.vocab_size))
    prompts = [Prompt("toy/0", "toy", ("question",))]
    comparison = live.Comparison(target, [parse_method(m) for m in ("none", "unfold", str(coin))], prompts, 6,
                                 Sampling(1.0, 0, 1.0, 7), tmp_path, profile=CPU_SMOLLM2)
    comparison.run()
    rows = {spec: row for (_, spec), row in comparison.rows.items()}
    # a deterministic drafter commits plain sampling's tokens with the seed: checked (a bool, not None)
    assert isinstance(rows["unfold"].identical, bool)
    # drafts drawn from their own distribution are plain sampling in distribution only: not checked
    assert rows[str(coin)].identical is None and rows[str(coin)].mismatch is None
