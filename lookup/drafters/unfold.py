"""``unfold``: the original prompt-lookup function, kept faithful as the reference baseline.

This is ``find_candidate_pred_tokens`` from the prompt-lookup-decoding write-up: for n-gram
sizes ``max_ngram_size`` down to 1, slide ``unfold`` windows over the whole context, and take
the *first match from the left* whose full ``num_pred_tokens`` continuation exists and does
not start inside the suffix itself. Its cost grows with the context length, by design.

The only liberties: the inner Python loop over match indices is vectorised (same first
index, same result), and n-gram sizes longer than the context are skipped (the published
code would raise in ``unfold``).

torch is imported when a drafter is built, not with this module: ``import lookup`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.indexes.buffer import TensorContext
from lookup.registry import register

if TYPE_CHECKING:
    import torch


def find_candidate_pred_tokens(
    input_ids: torch.Tensor, max_ngram_size: int = 3, num_pred_tokens: int = 10
) -> torch.Tensor:
    """The published lookup function. ``input_ids``: [1, L] -> continuation [num_pred_tokens] or [0]."""
    import torch

    input_length = input_ids.size(1)
    for ngram_size in range(max_ngram_size, 0, -1):
        if ngram_size > input_length:
            continue
        ngram = input_ids[0, -ngram_size:]
        windows = input_ids.unfold(dimension=1, size=ngram_size, step=1)  # [1, L-n+1, n]
        matches = (windows == ngram.unsqueeze(0)).all(dim=2)  # [1, L-n+1]
        match_indices = matches.nonzero(as_tuple=True)[1]  # [m], ascending
        start = match_indices + ngram_size
        # the two conditions of the published loop: a full continuation, and no self-match
        valid = (start + num_pred_tokens <= input_length) & (start < input_length - ngram_size)
        hits = match_indices[valid]
        if len(hits):
            first = int(hits[0]) + ngram_size
            return input_ids[0, first : first + num_pred_tokens]
    return torch.zeros(0, dtype=torch.long, device=input_ids.device)


@register("unfold")
class UnfoldDrafter(TensorContext, Drafter):
    """The original prompt lookup (n-gram 3 -> 1, 10 tokens), on torch tensors on ``device``."""

    def __init__(self, max_ngram_size: int = 3, num_pred_tokens: int = 10, device: str | torch.device = "cpu"):
        import torch

        super().__init__()
        if max_ngram_size < 1 or num_pred_tokens < 1:
            raise ValueError("max_ngram_size and num_pred_tokens must be >= 1")
        self.max_ngram_size = max_ngram_size
        self.num_pred_tokens = num_pred_tokens
        self.device = torch.device(device)
        self._init_context(self.device)  # grown by doubling (not a torch.cat per step)

    def propose(self, budget: int) -> Draft:
        if budget <= 0 or self._buf.length == 0:
            return EMPTY_DRAFT
        found = find_candidate_pred_tokens(self.input_ids, self.max_ngram_size, self.num_pred_tokens)
        if len(found) == 0:
            return EMPTY_DRAFT
        return Draft(found[:budget].cpu().numpy())

    def params(self) -> dict:
        return {"max_ngram_size": self.max_ngram_size, "num_pred_tokens": self.num_pred_tokens}
