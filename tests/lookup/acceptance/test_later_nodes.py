"""The later-node model of acceptance: its inputs, and the direction of the shipped fit."""

from __future__ import annotations

import numpy as np
import pytest

from lookup.acceptance import first_token, later_nodes
from pldcore.fits import default_fits

#: the shipped fits of the embedded model, per fit name
FITS = default_fits().later
COEFFICIENTS, INTERCEPT = FITS["context"]


def test_features_per_depth_from_the_chain_agreement():
    support, agree = np.array([8, 4, 2, 1]), np.array([4, 2, 1, 1])
    x = later_nodes.features(3, support, agree)
    assert x.shape == (3, len(later_nodes.FEATURES)) == (3, len(COEFFICIENTS))
    depth = np.array([1.0, 2.0, 3.0])
    assert x[:, 0] == pytest.approx(np.log1p(3 + depth)) and x[:, 1] == pytest.approx(np.log1p(depth))
    assert x[:, 2].tolist() == [4.0, 2.0, 1.0] and x[:, 3].tolist() == [0.5, 0.5, 1.0]
    assert x[:, 4].tolist() == [2.0, 1.0, 1.0] and x[:, 5].tolist() == [0.0, 0.0, 1.0]
    assert not x[:, 6:].any()  # nothing from the context: a chain from the context
    # a chain from the history: the context's match of 2 tokens, 3 occurrences still following at
    # depth 1 (2 go on with the chain), none past it
    seen = later_nodes.features(3, support, agree, (2, np.array([5, 3, 0, 0]), np.array([3, 2, 0, 0])))[:, 6:]
    assert seen == pytest.approx(np.array([[3, 2 / 3, 0, np.log(4)], [0, 0, 0, np.log(5)], [0, 0, 0, np.log(6)]]))
    assert later_nodes.features(3, np.array([1]), np.array([1])).shape == (0, len(later_nodes.FEATURES))
    # no occurrence left at a depth (a draft from elsewhere): share 0, not a division by zero
    assert later_nodes.features(1, np.array([1, 0]), np.array([0, 0]))[0, 3] == 0.0


def test_probabilities_are_the_logistic_of_the_shipped_fit():
    support, agree = np.array([8, 6, 6, 5]), np.array([6, 6, 5, 5])
    p = later_nodes.probabilities(4, support, agree, coefficients=COEFFICIENTS, intercept=INTERCEPT)
    z = later_nodes.features(4, support, agree) @ COEFFICIENTS + INTERCEPT
    assert p == pytest.approx(1 / (1 + np.exp(-z)))
    assert p == pytest.approx(first_token.probability(later_nodes.features(4, support, agree), COEFFICIENTS,
                                                      INTERCEPT))


def test_agreeing_occurrences_and_longer_matches_make_a_node_likelier():
    """What the fit learnt, in the directions one expects: a node is safer when the occurrences still
    following the chain go on with it, and after a longer match."""
    def at_depth_one(match, support, agree):
        return float(later_nodes.probabilities(match, np.array([8, support]), np.array([8, agree]), coefficients=COEFFICIENTS, intercept=INTERCEPT)[0])

    assert at_depth_one(3, 6, 6) > at_depth_one(3, 6, 3) > at_depth_one(3, 6, 1)
    assert at_depth_one(12, 4, 2) > at_depth_one(2, 4, 2)
    assert at_depth_one(3, 8, 8) > at_depth_one(3, 1, 1)  # many agree, against the draft's own alone


def test_a_history_node_is_likelier_where_the_context_agrees():
    def at_depth_one(seen, agreeing):
        context = (2, np.array([4, seen]), np.array([seen, agreeing]))
        coefficients, intercept = FITS["history"]
        return float(later_nodes.probabilities(3, np.array([4, 4]), np.array([4, 2]), context,
                                               coefficients=coefficients, intercept=intercept)[0])

    assert at_depth_one(3, 3) > at_depth_one(3, 1) > at_depth_one(3, 0)


def test_inputs_shorter_than_the_chain_are_refused_not_read_past():
    support, agree = np.array([4, 3, 2]), np.array([4, 2, 1])
    with pytest.raises(ValueError, match="an entry per node"):
        later_nodes.features(3, support, agree[:2])
    with pytest.raises(ValueError, match="an entry per node"):
        later_nodes.probabilities(3, support, agree, (2, np.array([1, 1]), np.array([1, 1, 1])),
                                  coefficients=COEFFICIENTS, intercept=INTERCEPT)
