"""Plain decoding (no drafts) of several prompts at once, for recording traces.

A recording decodes every prompt of a benchmark with the plain loop; one prompt at a time, each step
reads all the model's weights for one token, and on a CPU that read is most of the step (Gemma 3's
262k-row LM head alone is 0.7 GB). Here the prompts decode side by side, one forward per step for
every unfinished one:

1. each distinct prompt is prefilled alone (:meth:`ModelTarget.start`), so its top-k rows are the ones
   a single run hands a drafter; a prompt asked for in several regimes (greedy and sampled) is
   prefilled once;
2. their caches are left-padded into one batch, as transformers' batched ``generate`` holds them
   (a rolling sliding-window layer keeps its last ``window - 1`` entries of the padded sequence), with
   a 2D attention mask that hides the padding and each row's own positions;
3. each step, every row picks its token with its own rule (greedy, or sampled with its own seed:
   :func:`decoding.sampling.sampling_rule`, one uniform stream per row, as :func:`decoding.generate`
   draws it) and the row of the target's top-k after its input; a row that reaches EOS or its length
   leaves the batch.

A row's logits differ from a one-prompt run's by float noise only (another matrix shape, padding
masked out), so its tokens are that run's but where two tokens tie within that noise (greedy) or the
uniform falls within it of a CDF edge (sampled): the same kind of difference as between a one-token
forward and a wider one. A recording is plain decoding either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from transformers.cache_utils import DynamicSlidingWindowLayer

from decoding.generate import acceptance_rule
from decoding.inputs import check_request
from decoding.model_target import ModelTarget
from decoding.target import Scores, TopRows, top_rows
from lookup.base import EMPTY_DRAFT, MAX_TOP, Draft, Drafter
from pldcore.errors import PLDError

#: rows decoded side by side by default: on a CPU a forward of 8 rows costs about twice one of a single
#: row (measured on both shipped models), and more rows pad more
DEFAULT_BATCH = 8


@dataclass(frozen=True)
class BatchJob:
    """One prompt to decode: ``prompt`` [P] ids; ``temperature`` 0 is greedy, else sampled with ``seed``."""

    prompt: Sequence[int]
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None


@dataclass
class BatchOutput:
    """A job's decoded tokens, how it stopped (``eos`` or ``length``) and, when asked for, the target's
    top-k rows after every token read: the prompt's but the last from the prefill, then one a step
    (after the prompt's last token, then after each generated one but the newest): [P - 1 + len(tokens), k]."""

    tokens: list[int]
    stop_reason: str
    rows: TopRows | None = None


class _Plain(Drafter):
    """Drafts nothing: what the request checks see (decoding imports no concrete drafter, so not
    ``lookup.drafters.plain``; a recording's rows are asked for by ``rows_k``, not by it)."""

    name = "none"

    def reset(self, prompt) -> None:
        pass

    def extend(self, tokens) -> None:
        pass

    def propose(self, budget: int) -> Draft:
        return EMPTY_DRAFT


@torch.inference_mode()
def decode_batch(target: ModelTarget, jobs: Sequence[BatchJob], max_new_tokens: int, rows_k: int = 0,
                 batch: int = DEFAULT_BATCH) -> list[BatchOutput]:
    """Decode every job up to ``max_new_tokens`` (each stops at EOS), ``batch`` rows at a time (jobs
    with the same prompt in the same batch share one prefill); with ``rows_k``, keep the top-``rows_k``
    rows after every read token. Returns one output per job, in order. Bad input is refused as
    :func:`decoding.generate` refuses it."""
    if not isinstance(target, ModelTarget):
        raise PLDError(f"batched decoding needs a model target (decoding.load_model()), got {type(target).__name__}")
    if not isinstance(batch, int) or batch < 1:
        raise PLDError(f"batch must be an integer >= 1, got {batch!r}")
    if not isinstance(rows_k, int) or not 0 <= rows_k <= MAX_TOP:
        raise PLDError(f"rows_k must be an integer in [0, {MAX_TOP}], got {rows_k!r}")
    requests = [check_request(target, job.prompt, _Plain(), max_new_tokens, 0, job.temperature, job.top_k, job.top_p,
                              (), None) for job in jobs]
    outputs: list[BatchOutput | None] = [None] * len(jobs)
    for first in range(0, len(jobs), batch):
        part = range(first, min(first + batch, len(jobs)))
        for i, out in zip(part, _decode_rows(target, [jobs[i] for i in part], [requests[i] for i in part], rows_k)):
            outputs[i] = out
    return outputs  # type: ignore[return-value]


def _decode_rows(target: ModelTarget, jobs: Sequence[BatchJob], requests, rows_k: int) -> list[BatchOutput]:
    """One batch: prefill each distinct prompt, pad the caches together, decode until every row stops."""
    prefilled: dict[tuple[int, ...], tuple[TopRows | None, object]] = {}
    for request in requests:
        key = tuple(request.prompt)
        if key not in prefilled:
            rows = target.start(request.prompt, top_k=rows_k) if rows_k else target.start(request.prompt)
            prefilled[key] = (rows, target.detach_cache())
    heads = [len(r.prompt) - 1 for r in requests]
    width = max(heads)
    cache = _padded_cache([prefilled[tuple(r.prompt)][1] for r in requests], heads, width)
    rules = [acceptance_rule(target, r, job.seed) for r, job in zip(requests, jobs)]
    tokens: list[list[int]] = [[] for _ in requests]
    rows: list[list[TopRows]] = [[prefilled[tuple(r.prompt)][0]] if rows_k else [] for r in requests]
    stops = ["length"] * len(requests)
    device = target.device
    # the mask over [padding | prompt head | generated]: row i's first width - heads[i] keys are padding
    mask = torch.ones(len(requests), width + max(r.max_new_tokens for r in requests), dtype=torch.long, device=device)
    for i, head in enumerate(heads):
        mask[i, : width - head] = 0
    live = list(range(len(requests)))  # the rows still decoding, in the cache's batch order
    last = torch.as_tensor([r.prompt[-1] for r in requests], dtype=torch.long, device=device)
    step = 0
    while live:
        positions = torch.as_tensor([heads[i] + step for i in live], device=device)
        out = target.model(input_ids=last[live].unsqueeze(1), **{target.cache_kwarg: cache},
                           attention_mask=mask[live, : width + step + 1], position_ids=positions.unsqueeze(1),
                           cache_position=torch.as_tensor([width + step], device=device), use_cache=True)
        logits = out.logits[:, -1].float()  # [len(live), V]
        argmax = logits.argmax(dim=-1).cpu().numpy()
        top = top_rows(logits, rows_k) if rows_k else None
        keep = []
        for j, i in enumerate(live):
            _, token = rules[i](EMPTY_DRAFT, Scores(argmax=argmax[j : j + 1], logits=logits[j : j + 1]))
            tokens[i].append(token)
            last[i] = token
            if top is not None:  # the target's row after this step's input (the new token is not read yet)
                rows[i].append(TopRows(top.ids[j : j + 1], top.probs[j : j + 1]))
            if token in requests[i].eos:
                stops[i] = "eos"
            elif len(tokens[i]) < requests[i].max_new_tokens:
                keep.append(j)
        if len(keep) < len(live):
            cache.batch_select_indices(torch.as_tensor(keep, dtype=torch.long, device=device))
            live = [live[j] for j in keep]
        step += 1
    return [BatchOutput(tokens[i], stops[i], TopRows.joined(rows[i]) if rows_k else None) for i in range(len(requests))]


def _padded_cache(caches: Sequence, heads: Sequence[int], width: int):
    """One batch's cache from each row's own (``caches[i]`` after a prefill of ``heads[i]`` tokens; rows
    may share one), each layer's entries left-padded with zeros to what a batch padded to ``width``
    tokens holds: ``width`` in a plain layer, ``min(width, window - 1)`` in a rolling one (its last entries
    of the padded sequence). The padding is masked out by the attention mask."""
    merged = caches[int(np.argmax(heads))]  # the longest row's: every layer that stores anything is set up
    base = [(layer.keys, layer.values) if layer.is_initialized else None for layer in merged.layers]
    for index, layer in enumerate(merged.layers):
        if base[index] is None:  # a layer that stores nothing (KV sharing)
            continue
        rolling = isinstance(layer, DynamicSlidingWindowLayer)
        held = min(width, layer.sliding_window - 1) if rolling else width
        keys, values = [], []
        for cache in caches:
            own = cache.layers[index]
            if own is layer:
                k, v = base[index]
            elif own.is_initialized:
                k, v = own.keys, own.values
            else:  # a one-token prompt: nothing prefilled
                k, v = base[index][0][:, :, :0], base[index][1][:, :, :0]
            pad = held - k.shape[-2]
            if pad < 0:
                raise PLDError(f"a cache layer holds {k.shape[-2]} entries where {held} were expected")
            keys.append(torch.nn.functional.pad(k, (0, 0, pad, 0)))
            values.append(torch.nn.functional.pad(v, (0, 0, pad, 0)))
        layer.keys, layer.values = torch.cat(keys), torch.cat(values)
        if rolling:
            layer.cumulative_length = width
            layer.record_past = False  # plain decoding never rolls back: keep only the window
    return merged

