"""Every main Hugging Face decoder family, as a tiny random-weight model built from its config
(decoding/families.py::tiny_family, no download), through our verifier: chains (suffix-automaton, unfold,
random tokens) and trees (voting:tree=True, random branchy trees) are token-identical to the
model's own ``model.generate(do_sample=False)``, on prompts longer than the sliding windows.

Sliding-window families (Mistral, Gemma 2, Gemma 3; window 8, shorter than the prompts) run chains
and trees through rolling cache layers that record the past until the rejected tail is cropped,
trees with a sliding-window mask of their own (tests/decoding/test_sliding_trees.py checks them
node by node). docs/families.md is the table of what each family supports.
"""

from __future__ import annotations

import pytest
from sampling_toys import RandomTreeDrafter
from toys import OracleDrafter, RandomDrafter

import decoding
import lookup
from decoding.families import FAMILIES, PROMPTS, tiny_family
from decoding.reference import hf_generate
from lookup.base import Drafter

SLIDING = {"mistral", "gemma2", "gemma3"}  # window 8 in decoding/families.py::FAMILIES
MAX_NEW = 40
CHAINS = {
    "suffix-automaton": lambda target, truth: lookup.create("suffix-automaton"),
    "unfold": lambda target, truth: lookup.create("unfold"),
    "random": lambda target, truth: RandomDrafter(target.vocab_size, length=4, seed=1),
}
TREE_DRAFTERS = {
    "voting-tree": lambda target, truth: lookup.create("voting", tree=True, min_votes=1, min_match=1),
    "random-tree": lambda target, truth: RandomTreeDrafter(target.vocab_size, nodes=8, seed=0, truth=truth, hit=0.5),
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


_built: dict[str, tuple] = {}


def family(name: str):
    """(target, [greedy reference per prompt]), built once per family."""
    if name not in _built:
        target = tiny_family(name)
        _built[name] = target, [hf_generate(target, p, MAX_NEW).tokens for p in PROMPTS]
    return _built[name]


def run_all(name: str, drafters: dict) -> tuple[int, int]:
    """Generate every prompt with every drafter; assert each output is greedy's. Returns (drafted, accepted)."""
    target, references = family(name)
    drafted = accepted = 0
    for make in drafters.values():
        for prompt, reference in zip(PROMPTS, references):
            out = decoding.generate(target, prompt, make(target, prompt + reference), MAX_NEW)
            assert out.tokens == reference, f"{name} with {make(target, []).name!r} on {prompt[:6]}...: differs from greedy"
            drafted += out.stats.drafted
            accepted += out.stats.accepted
    return drafted, accepted


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_chains_are_identical_to_greedy_generate(name):
    drafted, accepted = run_all(name, CHAINS)
    assert 0 < accepted < drafted, f"{name}: drafts should be both accepted and rejected ({accepted}/{drafted})"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_trees_are_identical_to_greedy_generate(name):
    assert family(name)[0].tree_support()
    drafted, accepted = run_all(name, TREE_DRAFTERS)
    assert 0 < accepted < drafted, f"{name}: tree nodes should be both accepted and rejected ({accepted}/{drafted})"


@pytest.mark.parametrize("name", sorted(SLIDING))
def test_sliding_families_mix_chains_and_trees_in_one_generation(name):
    """A drafter that alternates chains and trees: both paths share the rolling cache, each step
    leaving it as the other expects (window - 1 entries after the crop)."""
    target, references = family(name)
    prompt, reference = PROMPTS[1], references[1]
    drafter = Alternating(OracleDrafter(prompt + reference), TREE_DRAFTERS["random-tree"](target, prompt + reference))
    out = decoding.generate(target, prompt, drafter, MAX_NEW, draft_budget=6)
    assert out.tokens == reference
    shapes = {kind for kind, step in zip(drafter.kinds, out.stats.steps) if step.accepted}
    assert shapes == {"chain", "tree"}, f"{name}: both kinds of draft should get accepted ({shapes})"


class Alternating(Drafter):
    """Proposes ``chains``' draft on even steps and ``trees``' on odd ones (both see every token);
    ``kinds`` records which one each step sent."""

    name = "alternating-test"

    def __init__(self, chains: Drafter, trees: Drafter) -> None:
        super().__init__()
        self.chains, self.trees, self.kinds = chains, trees, []

    def reset(self, prompt):
        super().reset(prompt)
        self.chains.reset(prompt)
        self.trees.reset(prompt)
        self.kinds = []

    def extend(self, tokens):
        super().extend(tokens)
        self.chains.extend(tokens)
        self.trees.extend(tokens)

    def propose(self, budget):
        tree = len(self.kinds) % 2 == 1
        self.kinds.append("tree" if tree else "chain")
        return (self.trees if tree else self.chains).propose(budget)


@pytest.mark.parametrize("name", sorted(SLIDING))
def test_the_sliding_window_matters_in_these_tests(name):
    """Same weights, window wider than everything: another greedy output. So the equality above
    proves the verifier honours the window (a full-attention bug would not pass unnoticed)."""
    wide = tiny_family(name, sliding_window=1024)
    target, references = family(name)
    assert any(hf_generate(wide, p, MAX_NEW).tokens != ref for p, ref in zip(PROMPTS[:2], references[:2]))
