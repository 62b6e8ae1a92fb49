"""Small stand-ins shared by the tests: a tiny random-weight Llama and test-only drafters (the tiny
models of other families, and ``IdTokenizer``, are :mod:`decoding.families`'s, re-exported here)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from decoding.families import FAMILIES, IdTokenizer, tiny_family  # noqa: F401  (the tests' names for them)
from decoding.model_target import ModelTarget
from lookup.base import EMPTY_DRAFT, Draft, Drafter


def tiny_llama(
    vocab_size: int = 64,
    eos_token_id: int | None = None,
    seed: int = 0,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 4,
    max_positions: int = 512,
    sharpen: float = 8.0,
    name: str = "tiny-llama",
) -> ModelTarget:
    """A random-weight Llama small enough to run hundreds of forwards per second on a CPU.

    ``sharpen`` scales the LM head: a random init is close to uniform, and sharper logits make
    greedy paths distinct (no ties) and sampled distributions worth testing.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=max_positions,
        eos_token_id=eos_token_id,
        bos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(sharpen)
    model.generation_config.eos_token_id = eos_token_id
    return ModelTarget(model, IdTokenizer(eos_token_id), name=name)


class RandomDrafter(Drafter):
    """Proposes uniformly random ids: the worst drafter, and a good losslessness probe."""

    name = "random-test"

    def __init__(self, vocab_size: int, length: int = 5, seed: int = 0) -> None:
        super().__init__()
        self.vocab_size, self.length = vocab_size, length
        self._rng = np.random.default_rng(seed)
        self._next = self._rng.integers(0, vocab_size, length)

    def propose(self, budget: int) -> Draft:
        # Same answer until the next extend: propose must not change state.
        return Draft(self._next[: max(budget, 0)]) if budget > 0 else EMPTY_DRAFT

    def extend(self, tokens: Sequence[int]) -> None:
        super().extend(tokens)
        self._next = self._rng.integers(0, self.vocab_size, self.length)


class FixedDrafter(Drafter):
    """Always proposes the same tokens (cut to the budget): for hand-built edge cases."""

    name = "fixed-test"

    def __init__(self, tokens: Sequence[int]) -> None:
        super().__init__()
        self.tokens = np.asarray(tokens, dtype=np.int64)

    def propose(self, budget: int) -> Draft:
        return Draft(self.tokens[:budget]) if budget > 0 else EMPTY_DRAFT


class OracleDrafter(Drafter):
    """Knows the true continuation (e.g. a greedy run) and proposes it: every draft is accepted."""

    name = "oracle-test"

    def __init__(self, full: Sequence[int]) -> None:
        super().__init__()
        self.full = [int(t) for t in full]  # prompt + the whole expected output

    def propose(self, budget: int) -> Draft:
        at = len(self.context)
        return Draft(self.full[at : at + budget]) if budget > 0 else EMPTY_DRAFT


def published(seq: list[int], max_ngram_size: int = 3, num_pred_tokens: int = 10) -> list[int]:
    """A plain-Python transcription of the write-up's find_candidate_pred_tokens (`&&` read as `and`).

    n-gram sizes longer than the sequence are skipped (the original would raise in unfold).
    """
    input_length = len(seq)
    for ngram_size in range(max_ngram_size, 0, -1):
        if ngram_size > input_length:
            continue
        ngram = seq[-ngram_size:]
        for idx in range(input_length - ngram_size + 1):
            if seq[idx : idx + ngram_size] == ngram:
                start_idx = idx + ngram_size
                end_idx = start_idx + num_pred_tokens
                if end_idx <= input_length and start_idx < input_length - ngram_size:
                    return seq[start_idx:end_idx]
    return []


def random_sequence(rng, n: int, vocab: int) -> list[int]:
    """Random tokens with copied stretches and periodic runs (runs that overlap the future)."""
    seq = rng.integers(0, vocab, 8).tolist()
    while len(seq) < n:
        r = rng.random()
        if r < 0.4:
            start = int(rng.integers(0, len(seq)))
            seq += seq[start: start + int(rng.integers(1, 12))]
        elif r < 0.5:
            period = seq[-int(rng.integers(1, 4)):]
            seq += period * int(rng.integers(2, 6))
        else:
            seq += rng.integers(0, vocab, int(rng.integers(1, 4))).tolist()
    return seq[:n]
