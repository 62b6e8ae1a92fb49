"""A fault of vLLM 0.32's CPU worker that breaks every sampled request with a draft, and its mend.

vLLM's rejection sampler spreads each request's temperature (and top-k, top-p) over its draft
tokens with ``expand_batch_to_tokens`` before it divides the target's logits by them. On a CPU the
Triton kernel behind it is replaced by a C++ one (``vllm.utils.cpu_triton_utils._expand_kernel_impl``)
that converts the output tensor to int64 and fills that copy: a float output -- the temperatures,
the top-p's -- is never written, and the logits are divided by whatever memory it held. Every
sampled request with a draft then samples from garbage: vLLM's own ``ngram`` and ``suffix`` as much
as our proposer (odd tokens from the first step with a draft on, almost no draft accepted). Greedy
requests never reach it.

:func:`mend_cpu_expand` replaces ``expand_batch_to_tokens`` with the same rule in plain torch, in the
process it runs in (vLLM's worker), where a probe finds the engine's own wrong: a vLLM that fixes
its kernel is left as it is. Our proposer calls it when vLLM builds it, and the worker extension
(:class:`~decoding.integrations.vllm_sampling.SamplingLink`) when it is linked, so that vLLM's own
proposers are measured with it too.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["expand_batch_to_tokens", "mend_cpu_expand"]


def expand_batch_to_tokens(x: torch.Tensor, cu_num_tokens: torch.Tensor, num_tokens: int, replace_from: Any = 0,
                           replace_to: Any = 0) -> torch.Tensor:
    """``x``'s value per request repeated over that request's tokens (``cu_num_tokens``: the running
    totals), each value equal to ``replace_from`` made ``replace_to``: vLLM's ``expand_batch_to_tokens``
    (``x = [a, b, c]``, ``cu_num_tokens = [2, 5, 6]`` -> ``[a, a, b, b, b, c]``).  # [num_tokens], x's dtype

    Positions past the last request's tokens are left unset, as vLLM's kernel leaves them."""
    counts = torch.diff(cu_num_tokens.to(torch.long), prepend=cu_num_tokens.new_zeros(1, dtype=torch.long))
    values = torch.where(x == replace_from, torch.full_like(x, replace_to), x)
    out = x.new_empty(num_tokens)
    spread = values.repeat_interleave(counts)
    out[: len(spread)] = spread[:num_tokens]
    return out


def _expand_is_right(expand) -> bool:
    """Whether ``expand`` spreads float values as it should (a probe of three tokens)."""
    try:
        got = expand(torch.tensor([0.5, 2.0]), torch.tensor([1, 3], dtype=torch.int32), 3, replace_from=-1,
                     replace_to=1)
        return got.dtype == torch.float32 and got.tolist() == [0.5, 2.0, 2.0]
    except Exception:  # noqa: BLE001 - a kernel that cannot run here is as wrong as one that writes nothing
        return False


def mend_cpu_expand() -> bool:
    """On a CPU, put :func:`expand_batch_to_tokens` in vLLM's rejection sampler where its own spreads
    floats wrong; True when this process's sampler uses ours (now or before). False without vLLM
    (a proposer built by hand, in tests)."""
    try:
        from vllm.platforms import current_platform
        from vllm.v1.sample import rejection_sampler
    except ImportError:
        return False

    if not current_platform.is_cpu():
        return False
    if rejection_sampler.expand_batch_to_tokens is expand_batch_to_tokens:
        return True
    if _expand_is_right(rejection_sampler.expand_batch_to_tokens):
        return False
    rejection_sampler.expand_batch_to_tokens = expand_batch_to_tokens
    return True
