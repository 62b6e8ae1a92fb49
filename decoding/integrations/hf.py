"""Our speculative loop inside transformers' ``generate()``, through its ``custom_generate`` hook.

    from decoding.integrations import hf
    out = model.generate(input_ids, custom_generate=hf.generate, drafter="adaptive",
                         max_new_tokens=64)                  # planned for this model on its device
    out = model.generate(..., custom_generate=hf.generate, drafter="adaptive", profile="h100-8b")

The drafter is built for where it runs (:func:`decoding.setting.target_setting`): this model, on its
device, under ``profile`` (a named profile of ``docs/hardware.md`` or a profile file) if given, else
the cached or measured cost profile of the model on that device (said in one line), in the call's
decoding regime. A drafter instance was built for its own setting: :func:`drafter_for` builds one for
a model (to keep a history across calls, say).

``generate`` prepares the inputs and the generation config as usual, then hands them here. What
is honoured, and how:

- length: ``max_new_tokens`` / ``max_length`` (new tokens = ``max_length`` minus the padded input
  length, as transformers counts them); EOS ids from the generation config;
- decoding: greedy, or ``do_sample`` with ``temperature``, ``top_k`` and ``top_p``, sampled
  exactly (the output has the target's distribution; not transformers' random stream, so the same
  seed gives other tokens than plain sampling does; ``seed=`` fixes ours). transformers applies its
  default ``top_k=50`` whenever ``do_sample`` is on and no ``top_k`` is given; ``decoding.generate``'s
  ``top_k`` defaults to 0 (no truncation): with the same ``top_k`` (and seed) the two give the same tokens;
- stopping criteria: the config's (max length, EOS, stop strings) and your own; a criterion is
  checked at every generated token, as transformers does, and the output ends where it first fires;
- batches: row by row, left padding removed from each row's prompt (``attention_mask``); rows
  that finish early are padded with ``pad_token_id`` on the right, as transformers pads them.

A logits processor other than the three sampling warpers (a repetition penalty, a minimum
length, ...) would change the distribution the drafts are verified against, and scores or
logits outputs are not computed: both are refused with one line (``PLDError``).
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import torch

from decoding.generate import DRAFT_BUDGET, generate as speculative_generate
from decoding.integrations.drafters import drafter_spec, fresh_each_request
from decoding.model_target import ModelTarget
from decoding.setting import target_setting
from lookup import registry
from lookup.base import Drafter, hand_vocab
from pldcore.cost import CostProfile
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime

#: what drafts when the caller names no drafter: the project's one default (``lookup.DEFAULT_DRAFTER``)
DEFAULT_DRAFTER = registry.DEFAULT_DRAFTER
#: the logits processors a sampling config builds and our exact sampler applies itself
_SAMPLING_WARPERS = ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")
#: outputs of transformers' generate that this loop does not compute
_UNSUPPORTED_OUTPUTS = ("output_scores", "output_logits", "output_attentions", "output_hidden_states")


def generate(model, input_ids: torch.Tensor, logits_processor=None, stopping_criteria=None, generation_config=None,
             drafter: str | Drafter | None = None, draft_budget: int = DRAFT_BUDGET, seed: int | None = None,
             vocab: Sequence[str] | None = None, profile: str | CostProfile | None = None, **model_kwargs: Any):
    """``custom_generate`` for transformers' ``generate``: our loop with ``drafter`` on every row.

    ``input_ids`` is [B, L] (left-padded when B > 1, with ``attention_mask`` in ``model_kwargs``);
    returns [B, L + n] ids, or a ``GenerateDecoderOnlyOutput`` when ``return_dict_in_generate``.
    ``vocab`` is the vocabulary's strings for a drafter that asks for them
    (``decoding.vocab.vocab_strings(tokenizer)``): transformers keeps a ``tokenizer=`` argument to
    itself, so none reaches this function. ``profile`` (a named profile or a file) is the hardware a
    drafter given as a spec plans for; by default the model's own on its device (see the module docstring).
    """
    config = generation_config
    _refuse_what_we_cannot_honour(config, logits_processor)
    if input_ids.ndim != 2:
        raise PLDError(f"input_ids must be [batch, length], got shape {tuple(input_ids.shape)}")
    width = input_ids.shape[1]
    max_new = int(config.max_length) - width
    if max_new < 1:
        raise PLDError(f"max_length {config.max_length} leaves no room after {width} input tokens")
    mask = model_kwargs.get("attention_mask")
    target = ModelTarget(model, None, name=_model_name(model))
    eos = config.eos_token_id
    sampling = dict(temperature=float(config.temperature or 1.0), top_k=int(config.top_k or 0),
                    top_p=float(config.top_p if config.top_p is not None else 1.0)) if config.do_sample else {}
    wanted = DEFAULT_DRAFTER if drafter is None else drafter
    if isinstance(wanted, Drafter):
        if profile is not None:
            raise PLDError("profile= applies to a drafter given as a spec; an instance was built for its own "
                           "setting: build one for this model with decoding.integrations.hf.drafter_for(model, spec, "
                           "profile=...)")
        build = None
    else:
        spec = drafter_spec(wanted)
        fresh_each_request(spec, "generate()", "pass an instance built for this model, e.g. "
                           "drafter=hf.drafter_for(model, 'adaptive:history=true'), which keeps its history across "
                           "rows and calls")
        # a drafter that plans nothing needs no profile (none is measured for it)
        regime = Regime(**sampling) if sampling else GREEDY
        setting = target_setting(target, profile, regime) if spec.uses_setting else None
        build = functools.partial(spec.build, setting)
    rows = []
    for b in range(input_ids.shape[0]):
        prompt = _unpadded(input_ids[b], None if mask is None else mask[b])
        chosen = wanted if build is None else build()
        hand_vocab(chosen, lambda: vocab)
        out = speculative_generate(target, prompt, chosen, max_new, draft_budget=draft_budget,
                                   seed=seed, eos_token_ids=eos, **sampling)
        tokens = _stopped(input_ids[b], out.tokens, stopping_criteria)
        rows.append(torch.tensor(tokens, dtype=input_ids.dtype, device=input_ids.device))
    sequences = _pad_right(input_ids, rows, config)
    if config.return_dict_in_generate:
        from transformers.generation.utils import GenerateDecoderOnlyOutput

        return GenerateDecoderOnlyOutput(sequences=sequences)
    return sequences


def drafter_for(model, drafter: str, profile: str | CostProfile | None = None, regime: Regime = GREEDY) -> Drafter:
    """A drafter of spec ``drafter`` built for ``model`` on its device (:func:`generate`'s setting, under
    ``profile`` if given, in ``regime``): an instance to pass as ``drafter=`` to many calls, e.g. one
    that keeps a history across them (``"adaptive:history=true"``)."""
    target = ModelTarget(model, None, name=_model_name(model))
    spec = drafter_spec(drafter)
    return spec.build(target_setting(target, profile, regime) if spec.uses_setting else None)


def _model_name(model) -> str:
    return str(getattr(model, "name_or_path", "") or type(model).__name__)


def _refuse_what_we_cannot_honour(config, logits_processor) -> None:
    if config.num_beams not in (None, 1) or (config.num_return_sequences or 1) != 1:
        raise PLDError("beam search and num_return_sequences > 1 are not speculative decoding: use plain generate")
    asked = [name for name in _UNSUPPORTED_OUTPUTS if getattr(config, name, False)]
    if asked and config.return_dict_in_generate:
        raise PLDError(f"{', '.join(asked)}: not computed by pld-lab's loop (it returns sequences only)")
    others = [type(p).__name__ for p in (logits_processor or []) if type(p).__name__ not in _SAMPLING_WARPERS]
    if others:
        raise PLDError(f"logits processors {', '.join(others)} change the distribution drafts are verified against; "
                       "pld-lab's loop applies temperature, top_k and top_p only")


def _unpadded(row: torch.Tensor, mask: torch.Tensor | None) -> list[int]:
    """The row's prompt without its left padding; padding elsewhere is refused."""
    if mask is None:
        return row.tolist()
    keep = mask.bool()
    first = int(keep.int().argmax()) if bool(keep.any()) else len(keep)
    if not bool(keep[first:].all()):
        raise PLDError("attention_mask has padding after the first prompt token: pad on the left "
                       "(tokenizer.padding_side = 'left')")
    return row[first:].tolist()


def _stopped(row: torch.Tensor, tokens: list[int], criteria) -> list[int]:
    """``tokens`` cut after the first one at which a stopping criterion fires (checked per token,
    on the padded row, as transformers checks them)."""
    if not criteria:
        return tokens
    ids = torch.cat([row, torch.tensor(tokens, dtype=row.dtype, device=row.device)]).unsqueeze(0)
    width = row.shape[0]
    for i in range(len(tokens) - 1):  # the last token ends the row anyway
        if bool(criteria(ids[:, : width + i + 1], None).any()):
            return tokens[: i + 1]
    return tokens


def _pad_right(input_ids: torch.Tensor, rows: list[torch.Tensor], config) -> torch.Tensor:
    """[B, L + longest] ids: each row's prompt (as given, padding included), its tokens, then pad ids."""
    pad = config.pad_token_id
    if pad is None:
        eos = config.eos_token_id
        pad = (eos if isinstance(eos, int) else eos[0]) if eos is not None else 0
    longest = max(len(r) for r in rows)
    out = torch.full((input_ids.shape[0], input_ids.shape[1] + longest), int(pad), dtype=input_ids.dtype,
                     device=input_ids.device)
    out[:, : input_ids.shape[1]] = input_ids
    for b, r in enumerate(rows):
        out[b, input_ids.shape[1]: input_ids.shape[1] + len(r)] = r
    return out
