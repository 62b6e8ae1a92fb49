"""The first-token model: its features, its probability and the logistic fit behind it."""

from __future__ import annotations

import numpy as np
import pytest

from lookup.acceptance import WITH_HISTORY, first_token
from pldcore.fits import default_fits

#: the shipped fits of the embedded model, per fit name
FITS = default_fits().first
COEFFICIENTS, INTERCEPT = FITS["context"]


def test_features_and_probability_are_what_they_say():
    x = first_token.features(3, 0.4, 5, 0.6)
    assert x.tolist() == pytest.approx([np.log(4), 0.4, 5, 0.6, 0, 0, 0, 0])  # nothing from the context
    # a draft from the history: the context's match of 6 tokens has 4 occurrences, none followed by it
    assert first_token.features(3, 0.4, 5, 0.6, (6, 4, 0))[4:] == pytest.approx([4, 0, 1, np.log(7)])
    assert first_token.features(3, 0.4, 5, 0.6, (6, 4, 3))[4:] == pytest.approx([4, 0.75, 0, np.log(7)])
    z = INTERCEPT + x @ COEFFICIENTS
    assert first_token.probability(x, COEFFICIENTS, INTERCEPT) == pytest.approx(1 / (1 + np.exp(-z)))
    batch = np.stack([x, first_token.features(1, 0.2, 1, 1.0)])
    assert first_token.probability(batch, COEFFICIENTS, INTERCEPT).shape == (2,)
    assert len(COEFFICIENTS) == len(first_token.FEATURES)


def test_agreeing_occurrences_make_the_first_token_likelier():
    """The shipped fit reads evidence the right way round: more agreement, a longer match, a higher
    estimate of its own, each raise the probability."""
    base = first_token.probability(first_token.features(2, 0.3, 4, 0.5), COEFFICIENTS, INTERCEPT)
    assert first_token.probability(first_token.features(2, 0.3, 4, 1.0), COEFFICIENTS, INTERCEPT) > base
    assert first_token.probability(first_token.features(6, 0.3, 4, 0.5), COEFFICIENTS, INTERCEPT) > base
    assert first_token.probability(first_token.features(2, 0.6, 4, 0.5), COEFFICIENTS, INTERCEPT) > base


def test_the_fit_recovers_known_coefficients_and_is_a_stationary_point():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40_000, 3))
    true, intercept = np.array([1.5, -0.7, 0.2]), -0.4
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(x @ true + intercept)))).astype(float)
    coef, icpt = first_token.fit_logistic(x, y, l2=0.0)
    assert coef == pytest.approx(true, abs=0.06) and icpt == pytest.approx(intercept, abs=0.06)
    # the gradient of the log-likelihood vanishes at the answer
    p = first_token.probability(x, coef, icpt)
    assert np.abs(np.column_stack([x, np.ones(len(x))]).T @ (y - p)).max() < 1e-6 * len(x)


def test_a_separable_set_still_gives_finite_coefficients():
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    coef, icpt = first_token.fit_logistic(x, y)
    assert np.all(np.isfinite(coef)) and np.isfinite(icpt)
    assert first_token.probability(np.array([3.0]), coef, icpt) > 0.9 > 0.1 > first_token.probability(np.array([0.0]), coef, icpt)


def test_the_drafters_scalar_path_is_the_model():
    for args in [(0, 0.2, 1, 0.0), (3, 0.4, 5, 0.6), (40, 0.9, 8, 1.0), (3, 0.4, 5, 0.6, (2, 8, 1))]:
        for fit, (coefficients, intercept) in FITS.items():
            want = first_token.probability(first_token.features(*args), coefficients, intercept)
            assert first_token.first_probability(*args, coefficients=coefficients, intercept=intercept) == pytest.approx(float(want))


@pytest.mark.parametrize("fit", ["history", WITH_HISTORY])
def test_a_draft_is_likelier_where_the_other_index_agrees(fit):
    """The fits that read the other index (the context of a draft from the history, the history of one
    from the context) read it the right way round; the context's own fit does not read it at all."""
    fitted = FITS[fit]
    split = first_token.probability(first_token.features(2, 0.3, 4, 0.5, (2, 4, 1)), *fitted)
    assert first_token.probability(first_token.features(2, 0.3, 4, 0.5, (2, 4, 4)), *fitted) > split
    assert first_token.probability(first_token.features(2, 0.3, 4, 0.5, (2, 4, 0)), *fitted) < split
    assert not FITS["context"][0][4:].any()
