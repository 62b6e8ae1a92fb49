"""Tree verification on the embedded model: token-identical to transformers' greedy, and the
tree forward gives the chain's logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sampling_toys import RandomTreeDrafter
from test_lossless_model import MAX_NEW, greedy_reference, real_prompts

import decoding
import lookup
from decoding.lossless import compare_outputs
from decoding.tree import TreeLayout

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def cases(embedded):
    # three of the five: the chain file covers them all (and computes the same references)
    return [(ids, greedy_reference(embedded, ids)) for ids in map(embedded.chat_ids, real_prompts()[::2])]


DRAFTERS = {
    "voting-tree": lambda target, truth: lookup.create("voting", tree=True, min_votes=1, min_match=1),
    "adaptive-voting-tree": lambda target, truth: lookup.create(
        "adaptive", base="voting", base_params={"tree": True}),
    "random-tree": lambda target, truth: RandomTreeDrafter(target.vocab_size, nodes=10, seed=0, truth=truth, hit=0.5),
}


# the voting trees run in `make test-slow` (CI): test_families.py checks voting-tree against greedy on a tiny
# model of every family (llama, the embedded model's, among them), test_tree.py adaptive over it on a tiny
# model, and random-tree here checks the embedded model's tree verification, its nodes accepted and rejected
SLOW_HERE = {"voting-tree", "adaptive-voting-tree"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_HERE else n
                                  for n in sorted(DRAFTERS)])
def test_trees_are_identical_to_transformers_greedy(embedded, cases, name):
    trees = accepted = 0
    for ids, reference in cases:
        drafter = DRAFTERS[name](embedded, ids + reference)
        out = decoding.generate(embedded, ids, drafter, max_new_tokens=MAX_NEW)
        mismatch = compare_outputs(embedded, ids, out.tokens, reference)
        assert mismatch is None, str(mismatch)
        accepted += out.stats.accepted
    assert accepted > 10, "the trees should get accepted on input-grounded prompts"


def test_embedded_model_supports_trees_and_tree_logits_match_the_chain(embedded, cases):
    assert embedded.tree_support()
    ids, reference = cases[0]
    context = ids + reference[:10]
    tokens = np.asarray([context[-1], *reference[10:13], 42, reference[10], 7])
    parents = np.asarray([-1, 0, 1, -1, -1, 4])  # a chain of 3 true tokens, a decoy, a duplicate branch
    embedded.start(context)
    tree = embedded.score_tree(tokens, parents).logits
    lay = TreeLayout.of(parents)
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.append(int(tokens[j]))
            j = lay.parents[j]
        path = path[::-1]
        # every path starts at the root, context[-1]: each chain is scored on the same prefilled
        # context (score drops the previous unverified forward first, as the loop does), one prefill in all
        chain = embedded.score(np.asarray(path)).logits[-1]
        torch.testing.assert_close(tree[i], chain, atol=2e-3, rtol=1e-3)
