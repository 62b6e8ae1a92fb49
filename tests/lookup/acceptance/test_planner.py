"""The planner and the decayed rates against brute-force references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pldcore.cost import CPU_SMOLLM2, CostProfile
from lookup.acceptance.planner import best_cut, chain_path_probs, forward_costs, plan_chain
from lookup.acceptance.rates import DecayedRate, smoothed_rate

probabilities = st.floats(0.0, 1.0)
positive_costs = st.floats(0.01, 100.0)


def brute_rate(path_probs: list[float], costs: list[float], k: int) -> float:
    return (1.0 + sum(path_probs[:k])) / costs[k]


@st.composite
def cut_cases(draw):
    n = draw(st.integers(0, 20))
    path_probs = draw(st.lists(probabilities, min_size=n, max_size=n))
    costs = draw(st.lists(positive_costs, min_size=n + 1, max_size=n + 6))  # extra entries are unused
    return path_probs, costs


@settings(max_examples=300, deadline=None)
@given(cut_cases())
def test_best_cut_maximises_expected_tokens_per_second(case):
    path_probs, costs = case
    k = best_cut(np.asarray(path_probs), np.asarray(costs))
    n = len(path_probs)
    assert 0 <= k <= n
    rates = [brute_rate(path_probs, costs, j) for j in range(n + 1)]
    assert rates[k] == pytest.approx(max(rates), rel=1e-12)
    # ties go to the shortest draft: every shorter one is worse, beyond rounding
    assert all(rates[j] < rates[k] * (1 + 1e-12) for j in range(k))


def test_best_cut_by_hand():
    flat = np.ones(6)
    assert best_cut(np.array([0.5, 0.4, 0.1]), flat) == 3  # free nodes: send everything
    assert best_cut(np.zeros(3), flat) == 0  # worthless nodes, equal rates: the shortest draft
    assert best_cut(np.array([0.9, 0.9]), np.array([1.0, 3.0, 3.0])) == 0  # 1.9 / 3 < 1
    assert best_cut(np.array([0.9, 0.9]), np.array([1.0, 1.5, 1.6])) == 2  # 2.8 / 1.6 > 1.9 / 1.5 > 1
    assert best_cut(np.zeros(0), np.array([2.0])) == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(probabilities, max_size=20))
def test_chain_path_probs_is_the_probability_that_every_node_so_far_is_accepted(acceptance):
    got = chain_path_probs(np.asarray(acceptance, dtype=np.float64))
    assert got.shape == (len(acceptance),)
    assert got.tolist() == pytest.approx([float(np.prod(acceptance[: i + 1])) for i in range(len(acceptance))])


@pytest.mark.parametrize("profile", [CPU_SMOLLM2, CostProfile.flat(64)])
@pytest.mark.parametrize("context", [None, 10, 700, 5000])
def test_forward_costs_prices_k_nodes_as_k_plus_one_tokens(profile, context):
    got = forward_costs(profile, 40, context)
    assert got.shape == (41,)
    assert got.tolist() == [profile.cost(k + 1, context) for k in range(41)]


# ---------------------------------------------------------------- decayed rates


@st.composite
def rate_histories(draw):
    """A prior over a few cells and steps of (cell, hit) observations."""
    cells = draw(st.integers(1, 5))
    prior = draw(st.lists(probabilities, min_size=cells, max_size=cells))
    strength = draw(st.floats(0.1, 10.0))
    decay = draw(st.sampled_from([1.0, 0.98, 0.9, 0.5]) | st.floats(0.01, 1.0))
    steps = draw(st.lists(st.lists(st.tuples(st.integers(0, cells - 1), st.booleans()), max_size=6), max_size=15))
    return np.asarray(prior), strength, decay, steps


@settings(max_examples=200, deadline=None)
@given(rate_histories())
def test_decayed_rate_equals_weighted_counts(history):
    prior, strength, decay, steps = history
    rate = DecayedRate(prior, strength, decay)
    for step in steps:
        rate.age()
        for cell, hit in step:
            rate.trials[cell] += 1
            rate.hits[cell] += hit
    # brute force: an observation made t steps before the last one weighs decay**t
    last = len(steps) - 1
    trials = np.zeros(len(prior))
    hits = np.zeros(len(prior))
    for t, step in enumerate(steps):
        for cell, hit in step:
            trials[cell] += decay ** (last - t)
            hits[cell] += hit * decay ** (last - t)
    want = (hits + strength * prior) / (trials + strength)
    assert rate.estimate().tolist() == pytest.approx(want.tolist(), rel=1e-9, abs=1e-12)
    for cell in range(len(prior)):
        assert rate.estimate(cell) == pytest.approx(want[cell], rel=1e-9, abs=1e-12)
    assert np.all((rate.estimate() >= 0) & (rate.estimate() <= 1))  # a mix of rates is a rate
    rate.clear()
    assert rate.estimate().tolist() == pytest.approx(prior.tolist())


def test_decayed_rate_over_a_grid_indexes_rows():
    prior = np.array([[0.2, 0.4], [0.6, 0.8]])
    rate = DecayedRate(prior, 2.0, 0.5)
    rate.trials[1, :] += 2
    rate.hits[1, 0] += 2
    assert rate.estimate(1).tolist() == pytest.approx([(2 + 1.2) / 4, 1.6 / 4])
    assert rate.estimate(0).tolist() == pytest.approx([0.2, 0.4])
    assert rate.estimate().shape == (2, 2)


def test_smoothed_rate_counts_the_prior_as_observations():
    assert smoothed_rate(np.float64(3), np.float64(4), np.float64(0.5), 2.0) == pytest.approx(4 / 6)


@pytest.mark.parametrize("strength, decay", [(0.0, 0.5), (-1.0, 0.5), (1.0, 0.0), (1.0, 1.5)])
def test_decayed_rate_refuses_bad_parameters(strength, decay):
    with pytest.raises(ValueError):
        DecayedRate([0.5], strength, decay)


def brute_plan_value(acceptance: list[float], costs: list[float], plan: tuple[int, ...]) -> float:
    """Expected committed tokens less forwards (in one-token forwards) of following the chain with
    ``plan`` (nodes sent at each depth), by enumerating where the chain breaks: the first node the
    target rejects (``len(acceptance)``: none)."""
    n = len(acceptance)
    value = 0.0
    for broken in range(n + 1):
        p = float(np.prod(acceptance[:broken])) * (1.0 - acceptance[broken] if broken < n else 1.0)
        if p == 0.0:
            continue
        total, depth = 0.0, 0
        while True:
            k = plan[depth]
            total += min(k, broken - depth) + 1 - costs[k] / costs[0]  # accepted nodes, and the target's own token
            if depth + k >= broken or depth + k >= n:
                break  # a rejection, the target's token off the chain, or the chain's end
            depth += k + 1  # the target's own token was the next node: the next step drafts on
        value += p * total
    return value


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=5), st.integers(0, 2**32 - 1))
def test_plan_chain_takes_the_first_step_of_the_best_plan(acceptance, seed):
    """Against every plan (how many nodes to send at each depth) scored by enumeration."""
    n = len(acceptance)
    rng = np.random.default_rng(seed)
    costs = np.concatenate([[1.0], 1.0 + np.cumsum(rng.uniform(0.0, 0.6, n))]) * rng.uniform(0.5, 2.0)
    plans = itertools.product(*[range(n - d + 1) for d in range(n + 1)])
    values = {plan: brute_plan_value(acceptance, costs.tolist(), plan) for plan in plans}
    best = max(values.values())
    k = plan_chain(np.array(acceptance), costs)
    assert max(v for plan, v in values.items() if plan[0] == k) == pytest.approx(best, abs=1e-9)


def test_plan_chain_by_hand():
    costs = forward_costs(CPU_SMOLLM2, 16, 500)
    assert plan_chain(np.zeros(0), costs) == 0
    assert plan_chain(np.zeros(8), costs) == 0  # nothing will be accepted
    assert plan_chain(np.ones(16), costs) == 16  # everything will: one forward for all of it
    # a doubtful first node before a sure run: send a little now, draft on once it holds,
    # where judging this forward alone sends the lot
    doubtful = np.array([0.4] + [0.85] * 15)
    assert plan_chain(doubtful, costs) == 2 < best_cut(chain_path_probs(doubtful), costs) == 16
    with pytest.raises(ValueError, match="cost for 0..3 nodes"):
        plan_chain(np.full(3, 0.5), costs[:3])


@settings(max_examples=100, deadline=None)
@given(acc=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_the_planner_judged_by_one_forward_maximises_expected_tokens_per_second(acc):
    from lookup.acceptance import COST_REFRESH, Planner
    from pldcore.cost import CPU_SMOLLM2

    k = Planner(CPU_SMOLLM2, 12, planned=False).chain(np.asarray(acc), 0)

    def rate(n):
        # at no context yet, forwards are priced in the first context bucket
        return (1 + sum(np.prod(acc[: i + 1]) for i in range(n))) / CPU_SMOLLM2.cost(n + 1, COST_REFRESH // 2)

    assert rate(k) == pytest.approx(max(rate(n) for n in range(len(acc) + 1)))


@settings(max_examples=50, deadline=None)
@given(acc=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), context=st.integers(0, 3000))
def test_the_planned_chain_is_plan_chain_at_the_context_bucket(acc, context):
    from lookup.acceptance import COST_REFRESH, Planner
    from pldcore.cost import CPU_SMOLLM2

    planner = Planner(CPU_SMOLLM2, 12)
    bucket = context // COST_REFRESH * COST_REFRESH + COST_REFRESH // 2
    assert planner.chain(np.asarray(acc), context) == plan_chain(np.asarray(acc), forward_costs(CPU_SMOLLM2, 12, bucket))
    # a profile without a context axis has one table
    flat = Planner(CostProfile.flat(64), 12)
    assert np.array_equal(flat.costs(context), flat.costs(0))


def test_a_batch_profile_shortens_the_planned_draft_down_to_nothing():
    # at a batch every request's draft makes the shared step dearer (pldcore.hardware's -b<n> profiles):
    # the planner reads that from the profile's relative costs, and an empty draft is one of its choices
    from lookup.acceptance import Planner
    from pldcore.hardware import profile_named

    one, b32, b128 = (Planner(profile_named(name), 32) for name in ("h100-8b", "h100-8b-b32", "h100-8b-b128"))
    likely = np.full(32, 0.9)
    assert one.chain(likely, 1024) == 32 > b32.chain(likely, 1024) > b128.chain(likely, 1024) > 0
    unlikely = np.full(32, 0.0005)  # worth less than the 0.07% a one-node draft adds to a step of 128 requests
    assert b128.chain(unlikely, 512) == 0 < one.chain(unlikely, 512)
    assert b128.tree(np.full(8, 0.0005), 512) == 0
