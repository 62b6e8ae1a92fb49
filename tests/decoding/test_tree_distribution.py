"""Sampled tree verification has exactly the target's distribution.

Same setup and statistics as test_sampling_distribution.py (NgramTarget, V = 8, the exact law of
the first 3 tokens over 512 cells, chi-square p > 1e-3 and TV < E[TV] + slack), with trees:

* ``voting`` in tree mode on a prompt whose match has two different continuations (it branches);
  a deterministic tree must moreover reproduce ``none`` token for token with the same seed;
* random duplicate-free trees (shape drawn by hypothesis, tokens at random: deep, wide, or both);
* trees that carry q (SpecInfer's multi-candidate rule): children drawn i.i.d. from q, under
  plain sampling and under top-k/top-p with q putting mass on the tokens they cut.

Each generation makes 6 tokens (so the first step can send a 5-node tree) and the histogram
takes the first 3. N is smaller than in the chain file (the TV slack grows to 5 sd accordingly)
to keep the whole file near 30 s on a busy CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sampling_toys import (
    NgramTarget,
    QTreeDrafter,
    RandomTreeDrafter,
    chi_square,
    expected_total_variation,
    total_variation,
)

import decoding
import lookup

V = 8
CYCLE = [1, 2, 3, 4, 5]
PROMPT = [1, 2, 3, 4, 5, 1, 2, 6, 7, 1, 2, 3, 4, 5, 1, 2, 6, 7, 1, 2]  # "1 2" -> "3 4 5" or "6 7"
N = 4000  # trees that carry q: the statistics are the whole proof
N_DET = 3000  # deterministic trees: equality with `none` (same seeds) is the stronger check
NEW = 6
P_MIN = 1e-3
PLAIN = dict(temperature=0.9, top_k=0, top_p=1.0)
TRUNCATED = dict(temperature=1.3, top_k=5, top_p=0.9)


def tv_slack(n: int) -> float:
    return max(0.01, 5 * 0.5 * np.sqrt((1 - 2 / np.pi) / n))


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


@pytest.fixture(scope="module")
def target():
    return NgramTarget(V, seed=0, cycle=CYCLE)


def run(target, drafter, params, n=N):
    """First 3 tokens of ``n`` generations (seeds 0..n-1) [n, 3], and (tree steps, drafted, accepted)."""
    outputs = np.zeros((n, 3), dtype=np.int64)
    trees = drafted = accepted = 0
    propose = drafter.propose

    def watch(budget):
        nonlocal trees
        d = propose(budget)
        trees += not d.is_chain
        return d

    drafter.propose = watch
    for seed in range(n):
        out = decoding.generate(target, PROMPT, drafter, NEW, seed=seed, record_steps=False, **params)
        outputs[seed] = out.tokens[:3]
        drafted += out.stats.drafted
        accepted += out.stats.accepted
    return outputs, (trees, drafted, accepted)


def check(label, outputs, exact, counters):
    counts = np.zeros((V, V, V), dtype=np.int64)
    np.add.at(counts, tuple(outputs.T), 1)
    stat, df, p = chi_square(counts, exact)
    tv = total_variation(counts, exact)
    n = len(outputs)
    etv = expected_total_variation(exact, n)
    trees, drafted, accepted = counters
    print(f"\n{label}: chi2={stat:.1f} df={df} p={p:.3g} TV={tv:.4f} (E[TV]={etv:.4f}) "
          f"tree steps={trees} drafted={drafted} accepted={accepted}")
    assert p > P_MIN, f"{label}: chi-square p = {p:.2e} (stat {stat:.1f}, df {df})"
    assert tv < etv + tv_slack(n), f"{label}: TV {tv:.4f} >= E[TV] {etv:.4f} + {tv_slack(n):.4f}"
    assert trees > 0 and 0 < accepted < drafted, "the case must send trees, and accept and reject nodes"


_none: dict[str, np.ndarray] = {}


def none_outputs(target, params, n=N):
    key = repr((sorted(params.items()), n))
    if key not in _none:
        _none[key] = run(target, lookup.create("none"), params, n)[0]
    return _none[key]


@pytest.mark.parametrize("params", [PLAIN, TRUNCATED], ids=["plain", "top-k/top-p"])
def test_voting_tree(target, params):
    outputs, counters = run(target, lookup.create("voting", tree=True, min_votes=1), params, N_DET)
    check("voting tree", outputs, target.sequence_distribution(PROMPT, **params), counters)
    np.testing.assert_array_equal(outputs, none_outputs(target, params, N_DET))


@settings(max_examples=2, deadline=None, derandomize=True, phases=[Phase.generate],  # no shrinking: each example is seconds
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1000), nodes=st.integers(3, 8), width=st.integers(2, 4))
def test_random_duplicate_free_trees(target, seed, nodes, width):
    drafter = RandomTreeDrafter(V, nodes=nodes, max_children=width, seed=seed)
    outputs, counters = run(target, drafter, TRUNCATED, N_DET)
    check(f"random trees nodes={nodes} width={width}", outputs, target.sequence_distribution(PROMPT, **TRUNCATED), counters)
    np.testing.assert_array_equal(outputs, none_outputs(target, TRUNCATED, N_DET))


@pytest.mark.parametrize("params,widths,mix", [(PLAIN, (2, 2), 0.5), (TRUNCATED, (3, 1), 0.3), (PLAIN, (1, 3), 0.0)],
                         ids=["plain-2x2", "truncated-3x1", "plain-1x3-own-q"])
def test_trees_that_carry_q(target, params, widths, mix):
    raw = torch.softmax(target.table, dim=-1).double().numpy()
    drafter = QTreeDrafter(raw, widths=widths, mix=mix, seed=1)
    outputs, counters = run(target, drafter, params)
    check(f"q-tree {widths} mix={mix}", outputs, target.sequence_distribution(PROMPT, **params), counters)
