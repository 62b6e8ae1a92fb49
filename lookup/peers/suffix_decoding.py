"""``peer:suffix-decoding``: SuffixDecoding as vLLM's ``suffix`` method runs it, ported.

SuffixDecoding (Snowflake's ArcticInference) keeps suffix trees of token sequences: a tree of
the request's own prompt and output, and a global tree of earlier responses. Each step it
matches the last tokens of the context in a tree (every match length from 1 up), follows the
most frequent continuation while its estimated probability (the product of child/parent counts)
stays >= ``min_token_prob``, for at most ``max_spec_factor * match_length + max_spec_offset``
tokens, and keeps the draft with the highest score (sum of probabilities) of both trees.

Follows arctic-inference 0.3.0 (``arctic_inference/suffix_decoding/cache.py``, the C++ tree in
:mod:`lookup.peers.suffix_tree`) and vLLM 0.32.0's ``vllm/v1/spec_decode/suffix_decoding.py``
(which calls it with the last ``max_tree_depth`` tokens each step) with vLLM's defaults:
``max_tree_depth=24``, ``num_speculative_tokens = max_tree_depth``, ``max_spec_factor=1.0``,
``min_token_prob=0.1``, a path (chain) rather than a tree, and 10000 cached requests.

arctic-inference 0.3.0 ships as source only and ``pip install arctic-inference`` does not build
here (CMake finds no Python development module in pip's isolated build), so the tree is a port;
``tests/lookup/peers/test_suffix_decoding.py`` compiles the original C++ tree and compares, and
runs the original ``cache.py`` on top of it.

Cross-request history: without it (the default) only the request's own tree is used, which is
vLLM with ``suffix_decoding_max_cached_requests=0`` (the global tree disabled). With
``history=True`` the global tree of responses (each request's committed tokens after its prompt)
lives as long as the drafter: ``reset`` ends the previous request (its response stays cached,
oldest evicted beyond ``max_cached_requests``) and starts a new one, as vLLM does across requests.
"""

from __future__ import annotations

from typing import Sequence

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.params import require_bool
from lookup.peers.suffix_tree import SuffixDraft, SuffixTree
from lookup.registry import register

PROMPT_SEQ = 0  # a request's own tree holds one sequence: prompt + response


class ResponseCache:
    """The global tree of ``SuffixDecodingCache``: responses of up to ``max_cached`` requests,
    evicted first in, first out (``_generate_seq_id`` / ``_maybe_evict_requests``)."""

    def __init__(self, max_depth: int, max_cached: int):
        self.tree = SuffixTree(max_depth)
        self.max_cached = max_cached
        self._cached: dict[int, None] = {}  # sequence ids, oldest first
        self._next_id = 0

    def start(self) -> int:
        """A sequence id for a new request's response, evicting the oldest beyond the limit."""
        seq_id = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        self._cached[seq_id] = None
        while len(self._cached) > self.max_cached:
            self.evict(next(iter(self._cached)))
        return seq_id

    def extend(self, seq_id: int, tokens: list[int]) -> None:
        """Append to a response, unless it was evicted meanwhile (``add_active_response``)."""
        if seq_id in self._cached:
            self.tree.extend(seq_id, tokens)

    def evict(self, seq_id: int) -> None:
        del self._cached[seq_id]
        if seq_id in self.tree._seqs:  # a response with no token yet was never added
            self.tree.remove(seq_id)


@register("peer:suffix-decoding")
class SuffixDecoding(Drafter):
    """SuffixDecoding (vLLM ``method="suffix"``): the best-scoring suffix-tree continuation.

    Args:
        num_speculative_tokens: most tokens per draft (vLLM: defaults to ``max_tree_depth``).
        max_tree_depth: depth of the trees, which bounds match + draft length (vLLM: 24).
        max_spec_factor, max_spec_offset: draft at most ``factor * match + offset`` tokens (1.0, 0.0).
        min_token_prob: stop when the estimated probability falls below this (0.1).
        use_tree_spec: draft a tree of the likeliest continuations instead of a path (off in vLLM).
        history: keep the global tree of earlier responses across ``reset`` (default off).
        max_cached_requests: responses the global tree keeps (vLLM: 10000), with ``history``.
    """

    def __init__(self, num_speculative_tokens: int | None = None, max_tree_depth: int = 24,
                 max_spec_factor: float = 1.0, max_spec_offset: float = 0.0, min_token_prob: float = 0.1,
                 use_tree_spec: bool = False, history: bool = False, max_cached_requests: int = 10000):
        super().__init__()
        if max_tree_depth < 1:
            raise ValueError("max_tree_depth must be >= 1")
        if max_spec_factor < 0 or not 0 <= min_token_prob <= 1 or max_cached_requests < 1:
            raise ValueError("need max_spec_factor >= 0, 0 <= min_token_prob <= 1, max_cached_requests >= 1")
        self.num_speculative_tokens = max_tree_depth if num_speculative_tokens is None else num_speculative_tokens
        self.max_tree_depth = max_tree_depth
        self.max_spec_factor = float(max_spec_factor)
        self.max_spec_offset = float(max_spec_offset)
        self.min_token_prob = float(min_token_prob)
        self.use_tree_spec = require_bool("use_tree_spec", use_tree_spec)
        self.history = require_bool("history", history)
        self.max_cached_requests = max_cached_requests
        self.local = SuffixTree(max_tree_depth)
        self.responses = ResponseCache(max_tree_depth, max_cached_requests) if self.history else None
        self._response_id: int | None = None

    def reset(self, prompt: Sequence[int]) -> None:
        # stop_request (the response stays in the global tree) and start_request
        self.context = [int(t) for t in prompt]
        self.local = SuffixTree(self.max_tree_depth)
        self.local.extend(PROMPT_SEQ, self.context)
        if self.responses is not None:
            self._response_id = self.responses.start()

    def extend(self, tokens: Sequence[int]) -> None:
        # add_active_response: the request's tree and its response in the global tree
        new = [int(t) for t in tokens]
        self.context.extend(new)
        self.local.extend(PROMPT_SEQ, new)
        if self.responses is not None:
            self.responses.extend(self._response_id, new)

    def propose(self, budget: int) -> Draft:
        max_spec_tokens = min(self.num_speculative_tokens, budget)
        if max_spec_tokens <= 0 or not self.context:
            return EMPTY_DRAFT
        pattern = self.context[-self.max_tree_depth :]
        draft = self._speculate(self.local, pattern, max_spec_tokens)
        if self.responses is not None:
            other = self._speculate(self.responses.tree, pattern, max_spec_tokens)
            draft = draft if draft.score >= other.score else other
        if not draft.token_ids:
            return EMPTY_DRAFT
        return Draft(draft.token_ids, parents=draft.parents if self.use_tree_spec else None)

    def _speculate(self, tree: SuffixTree, pattern: list[int], max_spec_tokens: int) -> SuffixDraft:
        return tree.speculate(pattern, max_spec_tokens, self.max_spec_factor, self.max_spec_offset,
                              self.min_token_prob, self.use_tree_spec)

    def keeps_history(self) -> bool:
        return self.history

    def params(self) -> dict:
        return {"num_speculative_tokens": self.num_speculative_tokens, "max_tree_depth": self.max_tree_depth,
                "max_spec_factor": self.max_spec_factor, "max_spec_offset": self.max_spec_offset,
                "min_token_prob": self.min_token_prob, "use_tree_spec": self.use_tree_spec,
                "history": self.history, "max_cached_requests": self.max_cached_requests}
