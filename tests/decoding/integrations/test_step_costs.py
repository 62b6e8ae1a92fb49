"""decoding.integrations.step_costs: the engine's step time fitted from its steps, starting from a hand fit."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.integrations.step_costs import BOUND, CLIP, MIN_STEPS, StepCosts


def steps(costs: StepCosts, rng: np.random.Generator, n: int, rows, truth=(0.020, 0.006, 0.004), noise=0.0) -> None:
    """``n`` steps of ``rows`` rows (a fixed count, or drawn from a range) with random draft nodes."""
    for _ in range(n):
        r = rows if isinstance(rows, int) else int(rng.integers(*rows))
        nodes = int(rng.integers(0, 5 * r + 1))
        seconds = truth[0] + truth[1] * r + truth[2] * nodes
        costs.add(r, nodes, seconds * float(rng.lognormal(0, noise)) if noise else seconds)


def test_nothing_is_learnt_before_a_few_steps():
    costs = StepCosts(22.0, 5.0)
    for _ in range(MIN_STEPS - 1):
        costs.add(4, 8, 0.1)
    assert costs.tokens() is None
    costs.add(4, 8, 0.1)
    assert costs.tokens() is not None


def test_the_steps_prices_replace_the_hand_fits():
    # the engine's truth: a step 20 ms, a row 6 ms, a node 4 ms (5 and 1.5 nodes); the hand fit says 22 and 5
    costs = StepCosts(22.0, 5.0)
    steps(costs, np.random.default_rng(0), 400, rows=(1, 33))
    fixed, row = costs.tokens()
    assert fixed == pytest.approx(5.0, rel=0.15) and row == pytest.approx(1.5, rel=0.15)


def test_noisy_steps_still_tell_a_dear_node_from_a_cheap_one():
    dear, cheap = StepCosts(22.0, 5.0), StepCosts(22.0, 5.0)
    steps(dear, np.random.default_rng(1), 300, rows=(1, 17), noise=0.2)
    steps(cheap, np.random.default_rng(1), 300, rows=(1, 17), truth=(0.022, 0.005, 0.001), noise=0.2)
    assert dear.tokens()[0] < 10 < cheap.tokens()[0]


def test_a_steady_batch_learns_what_its_steps_tell():
    # every step has 16 rows: the steps tell fixed + 16 * row, not how it splits (the hand fit's pull does)
    costs = StepCosts(22.0, 5.0)
    steps(costs, np.random.default_rng(2), 400, rows=16)
    fixed, row = costs.tokens()
    assert fixed + 16 * row == pytest.approx((0.020 + 16 * 0.006) / 0.004, rel=0.05)
    assert fixed > 0 and row > 0


def test_a_slow_step_counts_as_only_a_few_times_the_expected():
    costs, clipped = StepCosts(22.0, 5.0), StepCosts(22.0, 5.0)
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    steps(costs, rng_a, 200, rows=(1, 17))
    steps(clipped, rng_b, 200, rows=(1, 17))
    clipped.add(8, 20, 100.0)  # the machine was busy elsewhere for 100 s
    assert clipped.tokens()[0] == pytest.approx(costs.tokens()[0], rel=0.5)
    assert CLIP > 1


def test_a_nodes_price_stays_within_bounds_of_the_hand_fits():
    # steps whose time does not grow with the nodes at all: the node is not priced as free
    costs = StepCosts(22.0, 5.0)
    for i in range(100):
        costs.add(4, i % 20, 0.042)
    fixed, row = costs.tokens()
    assert fixed + 4 * row == pytest.approx(BOUND * 42, rel=0.15)  # a node at 1/BOUND of the hand fit's 1 ms


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        StepCosts(22.0, 5.0, strength=0)
    with pytest.raises(ValueError):
        StepCosts(22.0, 5.0, decay=1.5)
