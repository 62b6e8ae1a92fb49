"""The one acceptance-rate learner and its one bucketing, against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.acceptance import BUCKET_EDGES, BUCKETS, UNKNOWN_MATCH, AcceptanceRates, match_bucket

DECAYS = st.sampled_from([1.0, 0.98, 0.9, 0.5]) | st.floats(0.01, 1.0)


# ---------------------------------------------------------------- the bucketing


@given(st.integers(0, 10_000))
def test_a_bucket_counts_the_edges_at_or_below_the_match(length):
    bucket = match_bucket(length)
    assert bucket == sum(edge <= length for edge in BUCKET_EDGES)
    assert 0 <= bucket < BUCKETS
    assert match_bucket(length + 1) >= bucket  # a longer match, never a lower bucket


def test_the_buckets_by_hand():
    # adaptive's buckets, which its priors are per: [0-1], 2, 3, [4-5], [6-9], [10+]
    assert [match_bucket(n) for n in range(12)] == [0, 0, 1, 2, 3, 3, 4, 4, 4, 4, 5, 5]
    assert match_bucket(None) == match_bucket(UNKNOWN_MATCH) == 2  # none reported: a middling match


# ---------------------------------------------------------------- the learner


@st.composite
def histories(draw, depths_max: int = 6):
    """A prior ``[G, BUCKETS, L]`` and steps of observations, each a prefix or a single node."""
    groups, depths = draw(st.integers(1, 3)), draw(st.integers(1, depths_max))
    prior = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=groups * BUCKETS * depths,
                                     max_size=groups * BUCKETS * depths))).reshape(groups, BUCKETS, depths)
    key = st.tuples(st.integers(0, groups - 1), st.integers(0, BUCKETS - 1))
    prefix = st.tuples(st.just("prefix"), key, st.integers(0, depths + 2), st.integers(0, depths + 2)).map(
        lambda o: (o[0], o[1], max(o[2], o[3]), min(o[2], o[3])))  # hits <= tried; past L too
    node = st.tuples(st.just("node"), key, st.integers(0, depths + 2), st.booleans())
    walk = st.tuples(st.just("walk"), key, st.lists(st.booleans(), max_size=depths + 2), st.none())
    steps = draw(st.lists(st.lists(prefix | node | walk, max_size=4), max_size=12))
    return prior, draw(st.floats(0.1, 10.0)), draw(DECAYS), steps


def feed(rates: AcceptanceRates, steps) -> None:
    """Each step: age, then the step's observations."""
    for step in steps:
        rates.age()
        for kind, key, a, b in step:
            if kind == "prefix":
                rates.learn_prefix(key, a, b)
            elif kind == "walk":
                rates.learn_walk(key, a)
            else:
                rates.learn_node(key, a, b)


def brute_counts(shape: tuple[int, ...], decay: float, steps) -> tuple[np.ndarray, np.ndarray]:
    """(trials, hits) per cell, from every single node observation weighed ``decay**t``, ``t`` steps
    before the last; nodes deeper than the last depth are not counted."""
    trials, hits = np.zeros(shape), np.zeros(shape)
    last = len(steps) - 1
    for t, step in enumerate(steps):
        weight = decay ** (last - t)
        for kind, (group, bucket), a, b in step:
            # a prefix is nodes 0..tried-1 tried, 0..hits-1 of them right; a walk, node d tried and
            # right or not as its list says; a node is one of them
            nodes = ([(d, d < b) for d in range(a)] if kind == "prefix" else list(enumerate(a)) if kind == "walk"
                     else [(a, b)])
            for depth, hit in nodes:
                if depth < shape[-1]:
                    trials[group, bucket, depth] += weight
                    hits[group, bucket, depth] += weight * hit
    return trials, hits


@settings(max_examples=200, deadline=None)
@given(histories())
def test_the_learner_is_the_smoothed_decayed_counts(history):
    prior, strength, decay, steps = history
    rates = AcceptanceRates(prior, strength, decay)
    feed(rates, steps)
    trials, hits = brute_counts(prior.shape, decay, steps)
    want = (hits + strength * prior) / (trials + strength)
    np.testing.assert_allclose(rates.estimate(), want, rtol=1e-9, atol=1e-12)
    for group, bucket in np.ndindex(*prior.shape[:2]):
        key = (group, bucket)
        assert rates.estimate(key).tolist() == pytest.approx(want[key].tolist(), rel=1e-9, abs=1e-12)
        got_trials, got_hits = rates.counts(key)
        assert got_trials.tolist() == pytest.approx(trials[key].tolist(), rel=1e-9, abs=1e-12)
        assert got_hits.tolist() == pytest.approx(hits[key].tolist(), rel=1e-9, abs=1e-12)
    assert np.all((rates.estimate() >= 0) & (rates.estimate() <= 1))  # a mix of rates is a rate
    rates.clear()
    np.testing.assert_allclose(rates.estimate(), prior, rtol=1e-12, atol=1e-15)


@settings(max_examples=150, deadline=None)
@given(histories(), histories(), DECAYS, st.floats(0.1, 10.0))
def test_a_learner_over_another_is_smoothed_towards_its_estimate(shared_history, own_history, decay, strength):
    # as the vLLM proposer's requests: each learns into its own counts and into the shared learner's
    prior, shared_strength, shared_decay, shared_steps = shared_history
    _, _, _, own_steps = own_history
    groups = prior.shape[0]  # the own steps' keys, within the shared prior's groups
    own_steps = [[(kind, (min(g, groups - 1), b), x, y) for kind, (g, b), x, y in step] for step in own_steps]
    shared = AcceptanceRates(prior, shared_strength, shared_decay)
    own = AcceptanceRates(shared, strength, decay)
    assert own.parent is shared
    np.testing.assert_allclose(own.estimate(), prior, rtol=1e-12, atol=1e-15)
    feed(shared, shared_steps)
    feed(own, own_steps)
    s_trials, s_hits = brute_counts(prior.shape, shared_decay, shared_steps)
    shared_estimate = (s_hits + shared_strength * prior) / (s_trials + shared_strength)
    trials, hits = brute_counts(prior.shape, decay, own_steps)
    want = (hits + strength * shared_estimate) / (trials + strength)
    np.testing.assert_allclose(own.estimate(), want, rtol=1e-9, atol=1e-12)
    key = (0, BUCKETS - 1)
    assert own.estimate(key).tolist() == pytest.approx(want[key].tolist(), rel=1e-9, abs=1e-12)


def test_a_row_without_groups_is_keyed_by_its_bucket_alone():
    rates = AcceptanceRates(np.full((BUCKETS, 3), 0.5), 2.0, 1.0)
    rates.learn_prefix((match_bucket(8),), 2, 1)
    assert rates.estimate((match_bucket(8),)).tolist() == pytest.approx([2 / 3, 1 / 3, 0.5])  # (hits + 2 * 0.5) / (trials + 2)
    assert rates.estimate((match_bucket(1),)).tolist() == [0.5] * 3
    assert rates.depths == 3


@pytest.mark.parametrize("shape", [(3,), (BUCKETS - 1, 4), (2, BUCKETS + 1, 4)])
def test_a_prior_must_have_one_axis_of_the_buckets(shape):
    with pytest.raises(ValueError, match="buckets"):
        AcceptanceRates(np.full(shape, 0.5), 2.0, 1.0)


@pytest.mark.parametrize("strength, decay", [(0.0, 0.5), (1.0, 0.0), (1.0, 1.5)])
def test_bad_parameters_are_refused(strength, decay):
    with pytest.raises(ValueError):
        AcceptanceRates(np.full((BUCKETS, 2), 0.5), strength, decay)
