"""Token trees on sliding-window models (decoding/families.py's Mistral, Gemma 2 and Gemma 3: window 8),
with contexts and trees longer than the window:

* every node's tree logits are its chain's logits, for a tree deeper than the window (the window
  cuts into the tree itself) on a context longer than it (the rolling layers full);
* a non-prefix path longer than the window is kept (keep_path on rolling layers), and the model
  goes on exactly as after the chain: same logits, same cache (window - 1 entries per sliding layer);
* greedy with a deep decoy tree and sampled deterministic trees are token-identical to the reference;
* the probe checks the window rule (a mask without it, or one key wider, is refused), and models
  whose cache layers trees cannot use (chunked attention) are refused in one clear line;
* the prefill's top ids for a drafter that reads them (recycling, on a 262k vocabulary) come a
  block of rows at a time, the same as in one pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sampling_toys import RandomTreeDrafter
from test_tree import DecoyOracle

import decoding
import lookup
from decoding import model_target
from decoding.families import IdTokenizer, PROMPTS, tiny_family
from decoding.model_target import ModelTarget
from decoding.reference import hf_generate
from decoding.tree import TreeLayout
from pldcore.errors import PLDError

SLIDING = ["gemma2", "gemma3", "mistral"]  # window 8 in decoding/families.py::FAMILIES
WINDOW = 8
CONTEXT = PROMPTS[1]  # 31 tokens: past the window
# a tree of 15 inputs: a chain of 12 (depth 11, deeper than the window), and inputs 12, 13, 14
# branching off it at the root, input 3 and input 7 (parents index draft nodes: node k is input k + 1)
TREE_TOKENS = np.array([CONTEXT[-1], 5, 9, 17, 3, 22, 41, 7, 1, 2, 30, 31, 8, 50, 12])
TREE_PARENTS = np.array([-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, 2, 6])
ATOL = 1e-4  # float32 on the CPU: a tree forward differs from the chain's by rounding only


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


_targets: dict[str, ModelTarget] = {}


def target_of(name: str) -> ModelTarget:
    """The family's tiny model, built once (its tree probe then runs once)."""
    if name not in _targets:
        _targets[name] = tiny_family(name)
    return _targets[name]


def path_to(parents: np.ndarray, i: int) -> list[int]:
    """Inputs from the root to input ``i`` (``parents`` [n] of the draft nodes, inputs [n+1])."""
    up = TreeLayout.of(parents).parents
    path = [i]
    while up[path[-1]] >= 0:
        path.append(int(up[path[-1]]))
    return path[::-1]


def chain_logits(target: ModelTarget, context: list[int], inputs: list[int]) -> torch.Tensor:
    """[len(inputs), V] logits of the chain ``inputs`` (inputs[0] is context's next token) after ``context``."""
    target.start([*context, inputs[0]])
    return target.score(np.asarray(inputs)).logits


@pytest.mark.parametrize("name", SLIDING)
def test_tree_logits_equal_chain_logits_past_the_window(name):
    target = target_of(name)
    assert TreeLayout.of(TREE_PARENTS).depths.max() > WINDOW  # the window cuts into the tree
    target.start(CONTEXT)
    tree = target.score_tree(TREE_TOKENS, TREE_PARENTS).logits
    for i in range(len(TREE_TOKENS)):
        path = path_to(TREE_PARENTS, i)
        chain = chain_logits(target, CONTEXT[:-1], TREE_TOKENS[path].tolist())[-1]
        torch.testing.assert_close(tree[i], chain, atol=ATOL, rtol=ATOL, msg=f"{name}: node {i} (depth {len(path) - 1})")


def rolling_layers(target: ModelTarget) -> list:
    return [layer for layer in target._cache.layers if hasattr(layer, "sliding_window")]


@pytest.mark.parametrize("name", SLIDING)
def test_keep_path_keeps_a_non_prefix_path_longer_than_the_window(name):
    target = target_of(name)
    target.start(CONTEXT)
    target.score_tree(TREE_TOKENS, TREE_PARENTS)
    kept = path_to(TREE_PARENTS, 14)  # inputs 0..7, then 14: 9 inputs, not a prefix
    assert len(kept) > WINDOW and kept != list(range(len(kept)))
    target.keep_path(np.asarray(kept))
    after = target.score(np.asarray([4, 6])).logits
    # the same sequence through chains
    chain = chain_logits(target, CONTEXT[:-1], [*TREE_TOKENS[kept].tolist(), 4, 6])[-2:]
    torch.testing.assert_close(after, chain, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("name", SLIDING)
def test_a_kept_path_deeper_than_the_window_leaves_the_chains_cache(name):
    """After keep_path of 11 inputs (more than the window), every layer holds what the chain's
    forward leaves: the same length (window - 1 in a sliding layer) and the same keys and values."""
    target = target_of(name)
    # input 1 a decoy off the root, inputs 2..11 a chain from the root, input 12 off input 3:
    # the chain (depth 10) is not a prefix of the inputs
    tokens = np.array([CONTEXT[-1], 44, *TREE_TOKENS[1:11], 60])
    parents = np.array([-1, -1, *range(1, 10), 2])
    target.start(CONTEXT)
    target.score_tree(tokens, parents)
    kept = path_to(parents, 11)
    assert len(kept) > WINDOW and kept[1] == 2
    target.keep_path(np.asarray(kept))
    tree_cache = [(layer.keys.clone(), layer.values.clone()) for layer in target._cache.layers]
    assert {layer.keys.shape[-2] for layer in rolling_layers(target)} == {WINDOW - 1}
    chain = ModelTarget(target.model, target.tokenizer)
    chain.start([*CONTEXT[:-1], *tokens[kept].tolist(), 4])
    for (keys, values), layer in zip(tree_cache, chain._cache.layers):
        assert keys.shape == layer.keys.shape
        torch.testing.assert_close(keys, layer.keys, atol=ATOL, rtol=ATOL)
        torch.testing.assert_close(values, layer.values, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("name", SLIDING)
def test_deep_non_prefix_paths_are_identical_to_greedy(name):
    target = target_of(name)
    prompt = PROMPTS[0]
    reference = hf_generate(target, prompt, 40).tokens
    depth = WINDOW + 2  # every accepted path is longer than the window, behind two decoy branches
    out = decoding.generate(target, prompt, DecoyOracle(prompt + reference, 64, depth=depth, decoys=2), 40,
                            draft_budget=4 + depth)
    assert out.tokens == reference
    assert out.stats.accepted == sum(min(depth, r.committed - 1) for r in out.stats.steps)


@pytest.mark.parametrize("name", SLIDING)
def test_sampled_deterministic_trees_reproduce_none_with_the_same_seed(name):
    """Sampling through the tree path: a deterministic tree changes nothing drawn (same seed)."""
    target = target_of(name)
    prompt = PROMPTS[1]
    accepted = 0
    for seed in range(2):
        reference = decoding.generate(target, prompt, lookup.create("none"), 30, temperature=1.0, seed=seed).tokens
        for drafter in (lookup.create("voting", tree=True, min_votes=1, min_match=1),
                        RandomTreeDrafter(64, nodes=10, seed=seed, truth=prompt + reference, hit=0.6)):
            out = decoding.generate(target, prompt, drafter, 30, temperature=1.0, seed=seed)
            assert out.tokens == reference, f"{name} {drafter.name} seed {seed}"
            accepted += out.stats.accepted
    assert accepted > 0


def _wrong_window(widen: int | None):
    """tree_mask with the sliding rule dropped (None) or ``widen`` keys wider than transformers'."""
    right = model_target.tree_mask

    def wrong(tree, cached, dtype, device, held=None, window=None):
        return right(tree, cached, dtype, device, held, None if window is None or widen is None else window + widen)

    return wrong


@pytest.mark.parametrize("widen", [None, 1], ids=["no-window", "window+1"])
@pytest.mark.parametrize("name", SLIDING)
def test_the_probe_checks_the_window_rule(monkeypatch, name, widen):
    assert target_of(name).tree_support()  # with transformers' rule
    monkeypatch.setattr(model_target, "tree_mask", _wrong_window(widen))
    wrong = tiny_family(name)  # a fresh target: the probe runs once per target
    assert not wrong.tree_support()
    with pytest.raises(PLDError, match=rf"tiny-{name} .*cannot verify token trees.*sliding window of {WINDOW}"):
        wrong.tree_support(raise_error=True)


def test_chunked_attention_is_refused_in_one_clear_line():
    """Llama 4's chunked layers cache in rolling layers too, but attend by chunk, not by window:
    trees are refused there, and chains still run."""
    from transformers import Llama4ForCausalLM, Llama4TextConfig

    torch.manual_seed(0)
    config = Llama4TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, intermediate_size_mlp=64,
                              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                              num_local_experts=2, attention_chunk_size=8, max_position_embeddings=128,
                              bos_token_id=None, eos_token_id=None, pad_token_id=None)
    target = ModelTarget(Llama4ForCausalLM(config).eval(), IdTokenizer(), name="tiny-llama4")
    with pytest.raises(PLDError, match=r"tiny-llama4 .*cannot verify token trees: its 'chunked_attention' layers "
                                       r"cache in DynamicSlidingWindowLayer.*use a drafter that proposes chains"):
        decoding.generate(target, PROMPTS[0], RandomTreeDrafter(64, nodes=4, seed=0), 10)
    assert len(decoding.generate(target, PROMPTS[0], lookup.create("suffix-automaton"), 10).tokens) == 10


def test_prefill_top_rows_in_blocks_are_the_whole_softmaxs(monkeypatch):
    """A drafter that reads the target's top ids (recycling) gets them for every prompt token; with a
    262k vocabulary they are made a block of rows at a time, with the same ids and probabilities."""
    target = target_of("gemma3")
    prompt = PROMPTS[1]
    whole = target.start(prompt, top_k=5)  # 30 rows: one block
    monkeypatch.setattr(model_target, "TOP_ROWS_BLOCK", 7)  # 5 blocks, the last one short
    blocks = target.start(prompt, top_k=5)
    assert len(blocks) == len(prompt) - 1
    np.testing.assert_array_equal(blocks.ids, whole.ids)
    np.testing.assert_array_equal(blocks.probs, whole.probs)
