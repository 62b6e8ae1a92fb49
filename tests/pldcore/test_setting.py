"""Regimes by name: what a fit file and a trace folder record, read back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pldcore.errors import PLDError
from pldcore.setting import Regime


@given(st.sampled_from([0.0, 0.3, 0.7, 1.0, 1.5, 2.0]), st.sampled_from([0, 1, 50]), st.sampled_from([0.5, 0.9, 0.95, 1.0]))
def test_a_regime_is_read_back_from_its_name(temperature, top_k, top_p):
    regime = Regime(temperature, top_k if temperature else 0, top_p if temperature else 1.0)
    assert Regime.from_name(regime.name) == regime


@pytest.mark.parametrize("name", ["", "t", "t0", "tx", "t1-k", "t1-p2", "t1-k-1", "t1.0", "t1-p1", "greedy2"])
def test_a_name_that_names_no_regime_is_one_line(name):
    with pytest.raises(PLDError, match="names no regime"):
        Regime.from_name(name)
