"""Sampled speculative decoding has exactly the target's distribution, for every drafter.

Setup. The target is :class:`sampling_toys.NgramTarget`: V = 8 ids, next-token logits a fixed
random function of the last two tokens, with a cycle 1 2 3 4 5 boosted so that a prompt
repeating the cycle makes lookup drafters propose and get accepted (and rejected). For each
drafter, N = 20,000 generations of 3 tokens run with seeds 0..N-1 (N_DET = 4,000 for a drafter
whose drafts carry no q: see below). The exact law of the 3-token continuation is enumerated
from the target's processed probabilities (V^3 = 512 cells):
P(x1 x2 x3) = p(x1 | prompt) p(x2 | .., x1) p(x3 | .., x1 x2).

Two tests per drafter, on the 512-cell histogram:

* Chi-square goodness of fit. Cells with expected count < 5 are pooled into one; a sample in
  a cell of probability 0 fails at once. Fails when p < 1e-3. The seeds are fixed, so the
  verdict is deterministic; a correct sampler fails a given case with probability 1e-3.
* Total variation TV = 0.5 sum |p_hat - p|. For an exact sampler each cell's |p_hat - p| is
  about normal with sd sqrt(p(1-p)/N), so E[TV] ~= 0.5 sum sqrt(p(1-p)/N) sqrt(2/pi) (about
  0.03 here for N = 20,000, computed per case from the exact law), and the sd of TV is about
  0.5 sqrt((1 - 2/pi) sum p(1-p) / N) <= 0.5 sqrt((1 - 2/pi) / N) ~= 0.002. We require
  TV < E[TV] + max(0.01, 5 sd): an exact sampler passes, a sampler whose law is off by ~0.02
  in TV or more fails. (A fixed "TV < 0.03" would sit at E[TV] itself for 512 cells and
  20k samples: a coin flip.)

Every registered drafter (``lookup.available()``, default parameters) is covered, plus a
random-token drafter, a drafter that always proposes the target's least likely token (p = 0
exactly under top-k and top-p), and a drafter that samples its chain from a stated q (under
top-k and top-p, with q putting mass on the tokens they cut). Deterministic drafters must moreover reproduce, token for token, the
output of the ``none`` drafter with the same seed (see :mod:`decoding.sampling`): that equality is
the stronger check (it implies the histogram of plain sampling, which is tested on all N seeds), so
those drafters run N_DET seeds, as in test_tree_distribution.py; a drafter whose drafts carry q has
only the statistics and runs all N. A last, smaller case runs a real one-layer Llama.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
import torch
from sampling_toys import (
    NgramTarget,
    QDrafter,
    WrongDrafter,
    chi_square,
    expected_total_variation,
    llama_sequence_distribution,
    small_llama,
    total_variation,
)
from toys import RandomDrafter

import decoding
import lookup
from decoding.generate import DraftError
from lookup.base import Drafter

V = 8
CYCLE = [1, 2, 3, 4, 5]
PROMPT = CYCLE * 3 + [1, 2]  # lookup drafters find "1 2" earlier and propose "3 4"
N = 20_000
N_DET = 4_000  # drafts without q: equality with `none` (same seeds) is the stronger check
P_MIN = 1e-3
TV_SLACK = 0.01  # at least; 5 sd of TV when n is small


def tv_slack(n: int) -> float:
    return max(TV_SLACK, 5 * 0.5 * np.sqrt((1 - 2 / np.pi) / n))


PLAIN = dict(temperature=0.9, top_k=0, top_p=1.0)
TRUNCATED = dict(temperature=1.3, top_k=5, top_p=0.9)

#: registered drafters that need constructor arguments get them here
FACTORIES: dict[str, Callable[[], Drafter]] = {}


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


@pytest.fixture(scope="module")
def target():
    return NgramTarget(V, seed=0, cycle=CYCLE)


def registered(name: str):
    if name in FACTORIES:
        return FACTORIES[name]()
    try:
        return lookup.create(name)
    except TypeError as exc:  # needs arguments nobody gave it here
        pytest.skip(f"drafter {name!r} needs constructor arguments: add it to FACTORIES ({exc})")


class Watch(Drafter):
    """Passes everything to ``inner`` and notes whether any draft carried q."""

    def __init__(self, inner: Drafter) -> None:
        self.inner, self.name, self.saw_q = inner, inner.name, False

    def reset(self, prompt):
        self.inner.reset(prompt)

    def extend(self, tokens):
        self.inner.extend(tokens)

    def propose(self, budget):
        draft = self.inner.propose(budget)
        self.saw_q |= draft.probs is not None
        return draft

    def observe(self, draft, accepted):
        self.inner.observe(draft, accepted)


def run(target, drafter, params, n=N, prompt=PROMPT):
    """Histogram [V, V, V] of the first 3 tokens over seeds 0..n-1, the outputs, and counters."""
    outputs = np.zeros((n, 3), dtype=np.int64)
    drafted = accepted = 0
    for seed in range(n):
        out = decoding.generate(target, prompt, drafter, 3, seed=seed, record_steps=False, **params)
        outputs[seed] = out.tokens
        drafted += out.stats.drafted
        accepted += out.stats.accepted
    return histogram(outputs), outputs, drafted, accepted


def histogram(outputs: np.ndarray) -> np.ndarray:
    counts = np.zeros((V, V, V), dtype=np.int64)
    np.add.at(counts, tuple(outputs.T), 1)
    return counts


def check(label, counts, exact, drafted, accepted):
    stat, df, p = chi_square(counts, exact)
    tv = total_variation(counts, exact)
    n = int(counts.sum())
    etv = expected_total_variation(exact, n)
    rate = accepted / drafted if drafted else float("nan")
    print(f"\n{label}: chi2={stat:.1f} df={df} p={p:.3g} TV={tv:.4f} (E[TV]={etv:.4f}) "
          f"drafted={drafted} accepted={accepted} ({rate:.2f})")
    assert p > P_MIN, f"{label}: chi-square p = {p:.2e} (stat {stat:.1f}, df {df})"
    assert tv < etv + tv_slack(n), f"{label}: TV {tv:.4f} >= E[TV] {etv:.4f} + {tv_slack(n):.4f}"


_none_outputs: dict[str, np.ndarray] = {}  # plain-sampling outputs per parameter set


def none_outputs(target, params, n: int = N) -> np.ndarray:
    """Plain sampling (drafter ``none``) with the same seeds 0..n-1, computed once per parameter set."""
    key = repr((sorted(params.items()), n))
    if key not in _none_outputs:
        _none_outputs[key] = run(target, lookup.create("none"), params, n)[1]
    return _none_outputs[key]


@pytest.mark.parametrize("name", lookup.available())
def test_registered_drafter_samples_the_target_distribution(target, name):
    exact = target.sequence_distribution(PROMPT, **PLAIN)
    if name == "plain":  # drafts nothing (alias none): shared with the identity checks below, run once
        check(name, histogram(none_outputs(target, PLAIN)), exact, 0, 0)
        return
    drafter = Watch(registered(name))
    try:
        counts, outputs, drafted, accepted = run(target, drafter, PLAIN, N_DET)
    except DraftError as exc:  # e.g. a tree: sampled verification takes chains only
        pytest.skip(f"{name}: {exc}")
    if drafter.saw_q:  # the statistics are the whole proof: every seed
        drafter = Watch(registered(name))
        counts, outputs, drafted, accepted = run(target, drafter, PLAIN)
    check(name, counts, exact, drafted, accepted)
    assert drafted > 0 and 0 < accepted < drafted, "the prompt should make it propose, and miss sometimes"
    if not drafter.saw_q:  # deterministic drafts: the committed tokens do not depend on the draft
        np.testing.assert_array_equal(outputs, none_outputs(target, PLAIN)[: len(outputs)])


def test_random_drafter(target):
    counts, outputs, drafted, accepted = run(target, RandomDrafter(V, length=2, seed=0), PLAIN, N_DET)
    check("random", counts, target.sequence_distribution(PROMPT, **PLAIN), drafted, accepted)
    assert 0 < accepted < drafted
    np.testing.assert_array_equal(outputs, none_outputs(target, PLAIN)[:N_DET])


def test_always_wrong_drafter_with_top_k_top_p(target):
    exact = target.sequence_distribution(PROMPT, **TRUNCATED)
    assert (exact == 0).any()  # the truncation removes tokens
    # its drafts carry no q: like every deterministic drafter it runs N_DET seeds and must give, token for
    # token, what `none` gives with the same seeds (the stronger check, see above)
    counts, outputs, drafted, accepted = run(target, WrongDrafter(target.table, length=2), TRUNCATED, N_DET)
    check("always-wrong, top-k/top-p", counts, exact, drafted, accepted)
    assert drafted > 0 and accepted == 0  # its tokens have probability exactly 0
    np.testing.assert_array_equal(outputs, none_outputs(target, TRUNCATED, N_DET))


def test_drafter_with_q_and_top_k_top_p(target):
    exact = target.sequence_distribution(PROMPT, **TRUNCATED)
    raw = torch.softmax(target.table, dim=-1).double().numpy()
    drafter = QDrafter(raw, length=2, mix=0.3, seed=1)  # q puts mass outside the top-k
    counts, _, drafted, accepted = run(target, drafter, TRUNCATED)
    check("q-drafter, top-k/top-p", counts, exact, drafted, accepted)
    assert 0 < accepted < drafted


def test_small_llama_random_drafter():
    """A real transformer with a KV cache (crop on rejection): a smoke run, 1,200 generations
    (a forward costs ~1 ms), same tests with the TV slack widened to 5 sd."""
    llama = small_llama(V, seed=0)
    prompt = [1, 2, 3, 1, 2, 3, 1, 2]
    params = dict(temperature=1.0, top_k=6, top_p=0.95)
    n = 1200
    counts = np.zeros((V, V, V), dtype=np.int64)
    drafter = RandomDrafter(V, length=2, seed=0)
    drafted = accepted = 0
    for seed in range(n):
        out = decoding.generate(llama, prompt, drafter, 3, seed=seed, record_steps=False, **params)
        counts[tuple(out.tokens)] += 1
        drafted += out.stats.drafted
        accepted += out.stats.accepted
    exact = llama_sequence_distribution(llama, prompt, **params)
    check("small-llama random", counts, exact, drafted, accepted)
