"""``peer:hf-prompt-lookup``: transformers' prompt lookup, run through its own code.

transformers is a dependency of pld-lab, so this peer calls
``transformers.generation.candidate_generator.PromptLookupCandidateGenerator.get_candidates``
itself (what ``generate(prompt_lookup_num_tokens=...)`` uses) on the committed context: for n-gram
sizes ``max_matching_ngram_size`` (2 by default, as ``generate`` passes it) down to 1, the first
match from the left that has at least one token after it; up to ``num_output_tokens`` tokens of
that continuation, cut at the first EOS when ``eos_token_id`` is given.

What ``generate`` adds around it and we leave to our loop: ``max_length`` (the generator stops
drafting one token short of it; our loop's budget plays that part), and the logits-processor
check (drafts containing tokens a processor forbids are cut; greedy decoding with no processor
forbids none). transformers and torch are imported when the first drafter is built, never by
``import lookup``; without them, building one raises a one-line :class:`PLDError`.
"""

from __future__ import annotations

import sys

import numpy as np

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.indexes.buffer import TensorContext
from pldcore.errors import PLDError
from lookup.registry import register

INSTALL = "pip install 'transformers>=4.46' torch"
NO_LENGTH_LIMIT = sys.maxsize  # max_length: never reached, the loop's budget cuts drafts


def candidate_generator_class() -> type:
    """transformers' ``PromptLookupCandidateGenerator``, or a :class:`PLDError` naming the install."""
    try:
        from transformers.generation.candidate_generator import PromptLookupCandidateGenerator
    except ImportError as exc:
        raise PLDError(f"peer:hf-prompt-lookup needs transformers and torch ({exc}); {INSTALL}") from None
    return PromptLookupCandidateGenerator


@register("peer:hf-prompt-lookup")
class HfPromptLookup(TensorContext, Drafter):
    """transformers' ``PromptLookupCandidateGenerator`` as a drafter (its own code, its defaults).

    Args:
        num_output_tokens: most tokens per draft (``prompt_lookup_num_tokens``; the class default 10).
        max_matching_ngram_size: longest n-gram to match (``generate``'s default 2).
        eos_token_id: drafts are cut at the first of these ids (``generate`` passes the model's EOS).
    """

    def __init__(self, num_output_tokens: int = 10, max_matching_ngram_size: int = 2,
                 eos_token_id: int | list[int] | None = None):
        generator_class = candidate_generator_class()  # first: a missing transformers is one clear line
        import torch

        super().__init__()
        eos = None if eos_token_id is None else torch.tensor(np.atleast_1d(eos_token_id).tolist(), dtype=torch.long)
        self.generator = generator_class(eos_token_id=eos, num_output_tokens=num_output_tokens,
                                         max_matching_ngram_size=max_matching_ngram_size,
                                         max_length=NO_LENGTH_LIMIT)
        self.num_output_tokens = num_output_tokens
        self.max_matching_ngram_size = max_matching_ngram_size
        self.eos_token_id = eos_token_id
        self._init_context()  # the committed context, [1, capacity]

    def propose(self, budget: int) -> Draft:
        if budget <= 0 or self._buf.length == 0:
            return EMPTY_DRAFT
        candidates, _ = self.generator.get_candidates(self.input_ids)  # [1, L + n]: the context, then the draft
        draft = candidates[0, self._buf.length :][:budget]
        return Draft(draft.numpy()) if len(draft) else EMPTY_DRAFT

    def params(self) -> dict:
        return {"num_output_tokens": self.num_output_tokens, "max_matching_ngram_size": self.max_matching_ngram_size,
                "eos_token_id": self.eos_token_id}
