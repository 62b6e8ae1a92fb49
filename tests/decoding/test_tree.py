"""Tree verification: layout and walk by hand, tree logits = chain logits, the cache keeps the
accepted path, greedy is lossless, sampled deterministic trees reproduce ``none``, a chain-shaped
tree is the chain, replay equals live, and models that cannot do trees say so.

The distributional proof for sampled trees is in test_tree_distribution.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sampling_toys import QTreeDrafter, RandomTreeDrafter
from toys import FixedDrafter, OracleDrafter, tiny_llama

import decoding
import lookup
from decoding.acceptance import accept_greedy_tree
from decoding.generate import DraftError
from decoding.reference import hf_generate
from decoding.trace_target import TraceTarget
from decoding.tree import TreeLayout, walk
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from pldcore.errors import PLDError

PROMPT = [3, 17, 5, 3, 17, 5, 9, 3, 17, 5, 3, 17, 8, 3, 17]  # "3 17" is followed by 5 (x3) and 8


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=64)


@pytest.fixture(scope="module")
def reference(tiny):
    return hf_generate(tiny, PROMPT, 60).tokens


class TreeOf(Drafter):
    """Proposes one fixed tree (cut to the budget)."""

    name = "tree-of-test"

    def __init__(self, tokens, parents) -> None:
        super().__init__()
        self.draft = Draft(tokens, parents)

    def propose(self, budget):
        return Draft(self.draft.tokens[:budget], self.draft.parents[:budget]) if budget > 0 else EMPTY_DRAFT


class DecoyOracle(Drafter):
    """The true continuation as the *last* branch of the root, behind decoy branches: every step
    accepts a deep path that is not a prefix of the inputs (the cache must gather it)."""

    name = "decoy-oracle-test"

    def __init__(self, full, vocab, depth=4, decoys=2) -> None:
        super().__init__()
        self.full, self.vocab, self.depth, self.decoys = [int(t) for t in full], vocab, depth, decoys

    def propose(self, budget):
        at = len(self.context)
        true = self.full[at : at + self.depth]
        tokens, parents = [], []
        for j in range(self.decoys):  # decoy chains of 2, first token different from the truth
            first = (true[0] + 1 + j) % self.vocab if true else j
            tokens += [first, (first * 7 + 1) % self.vocab]
            parents += [-1, len(tokens) - 2]
        for i, t in enumerate(true):
            parents.append(-1 if i == 0 else len(tokens) - 1)
            tokens.append(t)
        n = min(budget, len(tokens))
        return Draft(tokens[:n], parents[:n]) if n else EMPTY_DRAFT


# -- layout and walk -------------------------------------------------------------------------


def test_layout_by_hand():
    #        root
    #       /  |  \
    #      0   1   4
    #     / \      |
    #    2   3     5
    lay = TreeLayout.of(np.array([-1, -1, 0, 0, -1, 4]))
    assert lay.parents.tolist() == [-1, 0, 0, 1, 1, 0, 5]
    assert lay.depths.tolist() == [0, 1, 1, 2, 2, 1, 2]
    assert lay.children == ((1, 2, 5), (3, 4), (), (), (), (6,), ())
    vis = lay.visible()
    assert vis[3].tolist() == [True, True, False, True, False, False, False]  # root, node 0, itself
    assert vis[6].tolist() == [True, False, False, False, False, True, True]
    assert (vis.sum(1) == lay.depths + 1).all()


def test_walk_by_hand():
    lay = TreeLayout.of(np.array([-1, -1, 0, 0, -1, 4]))
    tokens = np.array([-1, 10, 11, 12, 13, 14, 15])
    # the target picks 10 at the root, 13 after node 0, 99 after node 3: path 0 -> 3, then 99
    picks = np.array([10, 13, 0, 0, 99, 0, 0])
    nodes, token = walk(lay, tokens, picks)
    assert nodes.tolist() == [0, 3] and token == 99
    nodes, token = walk(lay, tokens, np.array([14, 0, 0, 0, 0, 15, 7]))
    assert nodes.tolist() == [4, 5] and token == 7  # a deep path behind other branches
    nodes, token = walk(lay, tokens, np.array([42, 0, 0, 0, 0, 0, 0]))
    assert nodes.tolist() == [] and token == 42
    # duplicate siblings: the first one is followed
    nodes, _ = accept_greedy_tree(np.array([5, 5, 6]), np.array([-1, -1, 1]), np.array([5, 1, 6, 2]))
    assert nodes.tolist() == [0]


# -- the model: tree forward, mask, cache ------------------------------------------------------


@st.composite
def trees(draw, vocab=64, max_nodes=10):
    n = draw(st.integers(1, max_nodes))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    tokens = draw(st.lists(st.integers(0, vocab - 1), min_size=n, max_size=n))
    return np.asarray(tokens), np.asarray(parents)


def chain_logits(target, context, path):
    """Logits after ``context + path`` from the chain path (``path[0]`` is the last committed token)."""
    target.start([*context, path[0]])
    return target.score(np.asarray(path)).logits[-1]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees())
def test_tree_logits_equal_chain_logits(attn, tree):
    target = tiny_llama(vocab_size=64, layers=1)
    target.model.set_attn_implementation(attn)
    tokens, parents = tree
    context = PROMPT[:-1]
    target.start(PROMPT)
    scores = target.score_tree(np.concatenate([[PROMPT[-1]], tokens]), parents)
    lay = TreeLayout.of(parents)
    inputs = np.concatenate([[PROMPT[-1]], tokens])
    for i in range(len(inputs)):
        path, j = [], i
        while j >= 0:
            path.append(int(inputs[j]))
            j = lay.parents[j]
        ref = chain_logits(target, context, path[::-1])
        torch.testing.assert_close(scores.logits[i], ref, atol=1e-4, rtol=1e-4)


def test_keep_path_gathers_the_accepted_branch(tiny):
    # inputs: 17 (root) | 5, 8 children; 9 child of 8; 3 child of 9: keep 17 8 9 3 (not a prefix)
    tiny.start(PROMPT[:-1] + [17])
    tiny.score_tree(np.array([17, 5, 8, 9, 3]), np.array([-1, -1, 1, 2]))
    tiny.keep_path(np.array([0, 2, 3, 4]))
    after = tiny.score(np.array([11])).logits[-1]
    ref = chain_logits(tiny, PROMPT[:-1], [17, 8, 9, 3, 11])
    torch.testing.assert_close(after, ref, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError):
        tiny.keep_path(np.array([1]))  # must start at the root


def test_deep_branch_then_greedy_continues_exactly(tiny, reference):
    drafter = DecoyOracle(PROMPT + reference, 64, depth=4, decoys=2)
    out = decoding.generate(tiny, PROMPT, drafter, max_new_tokens=60, draft_budget=8)
    assert out.tokens == reference
    s = out.stats
    assert s.accepted == sum(min(4, r.committed - 1) for r in s.steps)  # the true branch, always
    assert s.tau > 3.5  # 5 tokens per forward but for the last, budget-cut steps


# -- greedy: lossless, chain-shaped trees, drafters --------------------------------------------


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), nodes=st.integers(1, 12), width=st.integers(1, 4))
def test_random_trees_are_lossless(tiny, reference, seed, nodes, width):
    drafter = RandomTreeDrafter(64, nodes=nodes, max_children=width, seed=seed, truth=PROMPT + reference, hit=0.6)
    out = decoding.generate(tiny, PROMPT, drafter, max_new_tokens=60)
    assert out.tokens == reference
    assert out.stats.accepted <= out.stats.drafted


@pytest.mark.parametrize("spec", [dict(tree=True), dict(tree=True, max_branches=1), dict(tree=True, decay=0.7)])
def test_voting_trees_are_lossless(tiny, reference, spec):
    out = decoding.generate(tiny, PROMPT, lookup.create("voting", **spec), max_new_tokens=60)
    assert out.tokens == reference


def test_adaptive_over_a_voting_tree_is_lossless(tiny, reference):
    drafter = lookup.create("adaptive", base="voting", base_params={"tree": True})
    out = decoding.generate(tiny, PROMPT, drafter, max_new_tokens=60)
    assert out.tokens == reference


class AsTree(Drafter):
    """Passes ``inner``'s chains on as trees whose parents make a single chain."""

    def __init__(self, inner: Drafter) -> None:
        self.inner, self.name = inner, inner.name

    def reset(self, prompt):
        self.inner.reset(prompt)

    def extend(self, tokens):
        self.inner.extend(tokens)

    def propose(self, budget):
        d = self.inner.propose(budget)
        return Draft(d.tokens, np.arange(-1, len(d) - 1), probs=d.probs)

    def observe(self, draft, accepted):
        self.inner.observe(draft, accepted)


def step_stats(out):
    return [(r.context, r.drafted, r.accepted, r.committed) for r in out.stats.steps]


@pytest.mark.parametrize("params", [dict(), dict(temperature=1.0, seed=3), dict(temperature=2.0, top_k=8, top_p=0.9, seed=4)])
def test_a_chain_shaped_tree_is_the_chain(tiny, params):
    chain = decoding.generate(tiny, PROMPT, lookup.create("unfold"), 40, **params)
    tree = decoding.generate(tiny, PROMPT, AsTree(lookup.create("unfold")), 40, **params)
    assert tree.tokens == chain.tokens
    assert step_stats(tree) == step_stats(chain)


def test_chain_shaped_tree_through_the_tree_path_matches_the_chain(tiny):
    """The tree machinery itself (mask, depth positions, gather) on a chain: same argmax as the chain path."""
    tiny.start(PROMPT)
    tokens = np.array([PROMPT[-1], 5, 3, 17, 9])
    a = tiny.score(tokens).logits
    tiny.start(PROMPT)
    b = tiny.score_tree(tokens, np.arange(-1, 3)).logits
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


# -- sampling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [dict(temperature=1.0), dict(temperature=1.5, top_k=6, top_p=0.9)])
def test_deterministic_trees_reproduce_none_with_the_same_seed(tiny, params):
    for seed in range(3):
        reference = decoding.generate(tiny, PROMPT, lookup.create("none"), 30, seed=seed, **params).tokens
        drafters = [lookup.create("voting", tree=True), RandomTreeDrafter(64, nodes=10, seed=seed, truth=PROMPT + reference)]
        for drafter in drafters:
            out = decoding.generate(tiny, PROMPT, drafter, 30, seed=seed, **params)
            assert out.tokens == reference, drafter.name
    assert out.stats.accepted > 0


def test_q_tree_is_reproducible_and_speculates(tiny):
    weights = np.ones((64, 64, 64))
    runs = [decoding.generate(tiny, PROMPT, QTreeDrafter(weights, widths=(3, 2), seed=5), 30, temperature=1.5, seed=11)
            for _ in range(2)]
    assert runs[0].tokens == runs[1].tokens and len(runs[0].tokens) == 30
    assert runs[0].stats.drafted > 0


def test_multi_candidate_rule_by_hand():
    """Root with two children (tokens 1 and 2, both drawn from q); p = (0.1, 0.3, 0.6), q = (0.1, 0.8, 0.1)."""
    from decoding.sampling import accept_tree_stochastic

    lay = TreeLayout.of(np.array([-1, -1]))
    tokens = np.array([-1, 1, 2])
    p = torch.tensor([[0.1, 0.3, 0.6], [0.2, 0.2, 0.6], [0.0, 0.0, 1.0]], dtype=torch.float64)
    q = torch.tensor([[0.1, 0.8, 0.1], [0.1, 0.8, 0.1]])
    u_sample = torch.tensor([0.5, 0.5], dtype=torch.float64)
    # child 1: 0.5 * 0.8 >= 0.3, rejected; p <- norm(max(0, p - q)) = (0, 0, 1); child 2: 0.5 * 0.1 < 1: accepted
    # then node 2 has no children: the bonus is drawn from its row (token 2)
    nodes, token = accept_tree_stochastic(p, lay, tokens, q, lambda d, m: [0.5] * m, u_sample)
    assert nodes.tolist() == [1] and token == 2
    # child 1 accepted when u * 0.8 < 0.3; the bonus then comes from row 1: u 0.5 -> cdf (0.2, 0.4, 1) -> token 2
    nodes, token = accept_tree_stochastic(p, lay, tokens, q, lambda d, m: [0.3] * m, u_sample)
    assert nodes.tolist() == [0] and token == 2
    # second child carrying 0 instead: p'(0) = 0 rejects it too; the correction comes from the
    # residual after both, norm(max(0, (0, 0, 1) - q)) = (0, 0, 1)
    nodes, token = accept_tree_stochastic(p, lay, np.array([-1, 1, 0]), q, lambda d, m: [0.5] * m, u_sample)
    assert nodes.tolist() == [] and token == 2


def test_voting_tree_honours_max_nodes_and_the_budget():
    d = lookup.create("voting", tree=True, min_votes=1, max_nodes=5)
    d.reset(PROMPT + [5, 3, 17, 9, 9, 3, 17])
    assert 0 < len(d.propose(32)) <= 5 and len(d.propose(3)) <= 3
    assert d.params()["max_nodes"] == 5
    with pytest.raises(ValueError):
        lookup.create("voting", tree=True, max_nodes=0)


# -- replay ------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: lookup.create("voting", tree=True),
                                  lambda: lookup.create("voting", tree=True, max_branches=2, min_votes=1),
                                  lambda: lookup.create("adaptive", base="voting", base_params={"tree": True})])
def test_replay_equals_live(tiny, reference, make):
    live = decoding.generate(tiny, PROMPT, make(), 60)
    trace = TraceTarget(PROMPT, reference, 64)
    replay = decoding.generate(trace, PROMPT, make(), 60)
    assert replay.tokens == live.tokens == reference
    assert [(r.drafted, r.accepted) for r in replay.stats.steps] == [(r.drafted, r.accepted) for r in live.stats.steps]
    assert replay.stats.forward_s == pytest.approx(sum(trace.profile.cost(r.drafted + 1, r.context) for r in replay.stats.steps))


def test_replay_of_random_trees(tiny, reference):
    trace = TraceTarget(PROMPT, reference, 64)
    out = decoding.generate(trace, PROMPT, RandomTreeDrafter(64, nodes=12, seed=1, truth=PROMPT + reference), 60)
    live = decoding.generate(tiny, PROMPT, RandomTreeDrafter(64, nodes=12, seed=1, truth=PROMPT + reference), 60)
    assert out.tokens == reference
    assert step_stats(out) == step_stats(live)


# -- errors ------------------------------------------------------------------------------------


def test_malformed_trees_are_refused_naming_the_drafter(tiny):
    with pytest.raises(DraftError, match="tree-of-test.*malformed tree.*node 1"):
        decoding.generate(tiny, PROMPT, TreeOf([1, 2], [-1, 1]), max_new_tokens=10)


def test_a_target_without_trees_says_so(tiny):
    class ChainsOnly(decoding.Target):
        vocab_size, eos_token_ids, device = 64, frozenset(), torch.device("cpu")

        def start(self, prompt_ids, top_k=0):
            pass

        def score(self, tokens):
            raise AssertionError("not reached")

        def keep(self, n):
            pass

    with pytest.raises(PLDError, match="ChainsOnly cannot verify token trees"):
        decoding.generate(ChainsOnly(), PROMPT, TreeOf([1, 2], [-1, -1]), max_new_tokens=10)


def _ignore_mask_attention(module, query, key, value, attention_mask, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, None, is_causal=query.shape[2] > 1, **kwargs)


def test_a_model_that_ignores_4d_masks_gets_a_clear_error():
    from transformers import AttentionInterface

    AttentionInterface.register("ignore-mask-test", _ignore_mask_attention)
    target = tiny_llama(vocab_size=64, layers=1)
    target.model.set_attn_implementation("ignore-mask-test")
    assert decoding.generate(target, PROMPT, FixedDrafter([5, 3]), 5).tokens  # chains still work
    with pytest.raises(PLDError, match="cannot verify token trees.*4D"):
        decoding.generate(target, PROMPT, TreeOf([5, 8], [-1, -1]), max_new_tokens=10)
    assert not target.tree_support()


# sliding-window models verify trees, and chunked attention is refused: tests/decoding/test_sliding_trees.py


def test_oracle_chain_still_counts_the_same(tiny, reference):
    # the chain path is untouched by tree support: one forward per 8 tokens
    out = decoding.generate(tiny, PROMPT, OracleDrafter(PROMPT + reference), 24, draft_budget=7)
    assert out.tokens == reference[:24] and out.stats.forwards == 3
