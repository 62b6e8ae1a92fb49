"""The draft type (lookup/base.py): what makes a tree malformed, against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lookup.base import Draft


@given(st.lists(st.integers(-3, 12), max_size=12))
def test_a_tree_is_malformed_at_its_first_node_whose_parent_is_not_earlier(parents):
    draft = Draft(np.zeros(len(parents), dtype=np.int64), np.array(parents, dtype=np.int32))
    first = next((i for i, p in enumerate(parents) if p < -1 or p >= i), None)
    if first is None:
        assert draft.problem() is None
    else:
        assert draft.problem() == f"node {first} has parent {parents[first]}; parents must be -1 or an earlier node"
    assert Draft(np.zeros(3, dtype=np.int64)).problem() is None  # a chain
