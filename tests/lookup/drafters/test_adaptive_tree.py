"""The adaptive drafter over a tree: its node model by hand, its size against brute force, its learning."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.acceptance import COST_REFRESH, PRIORS, Row
from pldcore.setting import reference_setting
from lookup.drafters.adaptive import AdaptiveDrafter
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from pldcore.cost import CPU_SMOLLM2, CostProfile

#        root
#       /    \
#      0(5)   1(6)
#      |      |
#      2(7)   3(8)
#      |
#      4(9)
TOKENS = [5, 6, 7, 8, 9]
PARENTS = [-1, -1, 0, 1, 2]


class ScriptedTree(Drafter):
    name = "scripted-tree-test"

    def __init__(self, tokens=TOKENS, parents=PARENTS, match=5, probs=None):
        super().__init__()
        self.draft = Draft(tokens, parents, probs)
        self.match = match

    def propose(self, budget):
        d = self.draft
        return Draft(d.tokens[:budget], d.parents[:budget], None if d.probs is None else d.probs[:budget])

    def match_length(self):
        return self.match


MAX_RANK, PRIOR_RANK = PRIORS.max_rank, PRIORS.rank
ROW = Row(0, 0)  # the first source's first match-length bucket


def fixed(d: AdaptiveDrafter, a, c=None):
    """Make ``d``'s acceptance model answer ``a`` per depth and ``c`` per sibling rank, whatever it learnt."""
    d.model.rates = lambda row: np.asarray(list(a) + [0.0] * (d.max_tokens - len(a)))
    if c is not None:
        d.model.rank_rates = lambda: np.asarray([0.0, *c, *[0.0] * (MAX_RANK - 1 - len(c))])


def test_node_probabilities_by_hand():
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(CPU_SMOLLM2), max_tokens=8)
    fixed(d, [0.6, 0.8, 0.5], c=[0.25])
    p = d.model.tree(ROW, np.asarray(PARENTS))
    first, second = 0.6, 0.4 * 0.25
    np.testing.assert_allclose(p, [first, second, first * 0.8, second * 0.8, first * 0.8 * 0.5])


def test_younger_siblings_share_what_the_elder_ones_leave():
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(CPU_SMOLLM2), max_tokens=8)
    fixed(d, [0.5], c=[0.5, 0.5, 0.5])
    p = d.model.tree(ROW, np.asarray([-1, -1, -1, -1]))
    np.testing.assert_allclose(p, [0.5, 0.25, 0.125, 0.0625])
    assert p.sum() < 1


@st.composite
def tree_parents(draw):
    n = draw(st.integers(1, 12))
    return np.asarray([draw(st.integers(-1, i - 1)) for i in range(n)])


@settings(max_examples=60, deadline=None)
@given(parents=tree_parents(), a=st.lists(st.floats(0, 1), min_size=12, max_size=12),
       c=st.lists(st.floats(0, 1), min_size=MAX_RANK - 1, max_size=MAX_RANK - 1))
def test_best_size_maximises_expected_tokens_per_second(parents, a, c):
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(CPU_SMOLLM2), max_tokens=12)
    fixed(d, a, c)
    p = d.model.tree(ROW, parents)
    m = d.planner.tree(p, 0)

    def rate(k):
        return (1 + p[:k].sum()) / CPU_SMOLLM2.cost(k + 1, COST_REFRESH // 2)  # a fresh drafter: first bucket

    assert rate(m) == pytest.approx(max(rate(k) for k in range(len(parents) + 1)))


def test_sends_a_prefix_tree_and_everything_on_a_flat_profile():
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(CostProfile.flat(64)), max_tokens=8)
    d.reset([1])
    draft = d.propose(32)
    assert draft.tokens.tolist() == TOKENS and draft.parents.tolist() == PARENTS
    expensive = CostProfile((1, 2, 64), (1.0, 10.0, 100.0))  # a node costs 9x a plain step: never worth it
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(expensive), max_tokens=8)
    d.reset([1])
    assert d.propose(32) is EMPTY_DRAFT


def test_a_prefix_of_a_q_tree_keeps_its_q():
    q = np.full((5, 10), 0.1, dtype=np.float32)
    d = AdaptiveDrafter(base=ScriptedTree(probs=q), setting=reference_setting(CostProfile.flat(64)), max_tokens=8)
    d.reset([1])
    draft = d.propose(3)
    assert draft.probs.shape == (3, 10) and draft.parents.tolist() == PARENTS[:3]


def test_learns_depth_and_rank_statistics_from_the_committed_path():
    d = AdaptiveDrafter(base=ScriptedTree(), setting=reference_setting(CostProfile.flat(64)), max_tokens=8, decay=1.0)
    d.reset([1])
    b = d.candidate(8).row
    draft = d.propose(8)
    d.extend([6, 8, 0])  # the second root child, its child, then the target's own token (no child of 3)
    d.observe(draft, 2)
    trials, hits = d.model.counts(b)
    assert trials[:3].tolist() == [1, 1, 0] and hits[:3].tolist() == [0, 1, 0]
    assert [c[1] for c in d.model.rank_counts()] == [1, 1]
    draft = d.propose(8)
    d.extend([4])  # nobody at the root: both children tried and missed
    d.observe(draft, 0)
    trials, hits = d.model.counts(b)
    assert trials[0] == 2 and hits[0] == 0
    assert [c[1] for c in d.model.rank_counts()] == [2, 1]


def test_learns_unsent_siblings_too():
    # a costly profile sends only the first node; the committed token still scores the second
    profile = CostProfile((1, 2, 3, 64), (1.0, 1.2, 1.9, 60.0))
    d = AdaptiveDrafter(base=ScriptedTree(tokens=[5, 6], parents=[-1, -1]), setting=reference_setting(profile), max_tokens=8, decay=1.0)
    d.reset([1])
    sent = []
    for _ in range(30):  # the target always says 6: the second child
        draft = d.propose(8)
        sent.append(len(draft))
        d.extend([6, 0] if 6 in draft.tokens.tolist() else [6])
        d.observe(draft, int(6 in draft.tokens.tolist()))
    assert d.model.rank_rates()[1] > 0.9 and d.model.rates(d.candidate(8).row)[0] < 0.1
    assert sent[-1] == 2  # learnt that the second child pays


def test_propose_has_no_side_effects_on_proposals():
    d = AdaptiveDrafter(setting=reference_setting(), base=ScriptedTree())
    d.reset([1, 2])
    drafts = [d.propose(8) for _ in range(3)]
    assert all(a.tokens.tolist() == b.tokens.tolist() and a.parents.tolist() == b.parents.tolist()
               for a, b in itertools.pairwise(drafts))


def test_rank_prior():
    d = AdaptiveDrafter(setting=reference_setting(), base=ScriptedTree())
    assert d.model.rank_rates()[1:] == pytest.approx([PRIOR_RANK] * (MAX_RANK - 1))
