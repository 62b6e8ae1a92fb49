"""CostProfile.costs: the same floats as cost(), one array."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.hardware import profile_named


@given(n=st.integers(1, 300), context=st.one_of(st.none(), st.integers(0, 20_000)),
       name=st.sampled_from(["cpu", "flat", "h100-8b", "l4-1b"]))
def test_costs_are_cost_at_every_size(n, context, name):
    profile = profile_named(name)
    assert profile.costs(n, context).tolist() == [profile.cost(k, context) for k in range(1, n + 1)]


def test_costs_of_a_profile_without_contexts():
    profile = CostProfile((1, 8, 64), (1.0, 2.0, 5.0))
    assert profile.costs(70, 4096).tolist() == [profile.cost(k) for k in range(1, 71)]
    assert CPU_SMOLLM2.costs(3).tolist() == [CPU_SMOLLM2.cost(k) for k in (1, 2, 3)]
