"""transformers' own generate, as the reference our loop is checked and timed against."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch

from decoding.devices import synchronize

if TYPE_CHECKING:
    from decoding.model_target import ModelTarget


@dataclass
class ReferenceResult:
    tokens: list[int]  # generated ids, EOS included when it stopped there
    wall_s: float
    logits: torch.Tensor | None = None  # [n, V] float32 on the CPU: the logits each token was chosen from (asked for)

    @property
    def tokens_per_s(self) -> float:
        return len(self.tokens) / self.wall_s if self.wall_s else 0.0


@torch.inference_mode()
def hf_generate(
    target: ModelTarget,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    prompt_lookup_num_tokens: int | None = None,
    max_matching_ngram_size: int | None = None,
    with_logits: bool = False,
    **sampling,
) -> ReferenceResult:
    """``model.generate`` greedy (default), or with transformers' prompt lookup when asked.

    ``sampling`` (do_sample, temperature, top_k, top_p) is passed through. ``with_logits`` keeps
    the raw logits of every generated token (``ReferenceResult.logits``).
    """
    ids = torch.tensor([list(prompt_ids)], device=target.device)  # [1, L]
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=sorted(target.eos_token_ids) or None,
        pad_token_id=next(iter(target.eos_token_ids), 0),
    )
    kwargs.update(sampling)
    if prompt_lookup_num_tokens is not None:
        kwargs.update(prompt_lookup_num_tokens=prompt_lookup_num_tokens)
        if max_matching_ngram_size is not None:
            kwargs.update(max_matching_ngram_size=max_matching_ngram_size)
    if with_logits:
        kwargs.update(output_logits=True, return_dict_in_generate=True)
    synchronize(target.device)
    t0 = time.perf_counter()
    out = target.model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
    synchronize(target.device)
    wall = time.perf_counter() - t0
    if not with_logits:
        return ReferenceResult(tokens=out[0, ids.shape[1] :].tolist(), wall_s=wall)
    logits = torch.cat([step[:1].float().cpu() for step in out.logits]) if out.logits else None  # [n, V]
    return ReferenceResult(tokens=out.sequences[0, ids.shape[1] :].tolist(), wall_s=wall, logits=logits)
