"""Each vLLM request's sampling regime, for our proposer (:class:`decoding.integrations.vllm.DrafterProposer`).

vLLM 0.32 calls a custom proposer (``method: custom_class``) with the batch's token ids only
(``propose(sampled_token_ids, num_tokens_no_spec, token_ids_cpu, slot_mappings=...)``): no sampling
parameters, and the proposer is given no reference to the model runner (vLLM's own ``suffix``
proposer is handed the runner's input batch; ``ngram`` and ``custom_class`` are not). The runner's
input batch (``vllm.v1.worker.gpu_input_batch.InputBatch``, the CPU runner's too) holds them in the
same rows as ``token_ids_cpu``: ``temperature_cpu`` (0 for a greedy request), ``top_k_cpu`` (the
vocabulary's size where top-k is off) and ``top_p_cpu`` (float32). :class:`SamplingLink`, mixed into
vLLM's worker, hands our proposer that input batch::

    llm = LLM(..., worker_extension_cls="decoding.integrations.vllm_sampling.SamplingLink")
    link_sampling(llm)  # then each request's drafter is built for the request's own regime

Without the link, every request's drafter is built for greedy decoding (:data:`UNLINKED`).

This module imports neither vLLM nor a drafter: a worker extension of one's own (the benchmark's
clock) may subclass :class:`SamplingLink` in a process that must not load numba.
"""

from __future__ import annotations

import abc
from typing import Any, Callable

from decoding.integrations.vllm_cpu import mend_cpu_expand
from pldcore.setting import GREEDY, Regime

#: what the proposer calls for vLLM's current input batch
SamplingSource = Callable[[], Any]

#: why a proposer without the link builds every drafter for greedy decoding
UNLINKED = ("greedy for every request: vLLM 0.32 gives a custom proposer no sampling parameters "
            "(link them with decoding.integrations.vllm_sampling.SamplingLink)")
LINKED = "each request's own, from vLLM's input batch"
#: digits kept of vLLM's float32 temperature and top-p (0.9 is stored as 0.899999976): a regime's
#: name, and so its fit, is read from them
DIGITS = 6


def _decimal(x: float) -> float:
    """``x`` at :data:`DIGITS` significant digits (a float32 read back as the decimal it was set from)."""
    return float(f"{float(x):.{DIGITS}g}")


def row_regime(temperature: float, top_k: int, top_p: float, vocab_size: int) -> Regime:
    """The :class:`Regime` of one row of vLLM's input batch.

    Args:
        temperature: ``temperature_cpu[row]``; 0 for a greedy request (vLLM stores 0 there).
        top_k: ``top_k_cpu[row]``; ``vocab_size`` (or anything outside 1..vocab_size-1) when off.
        top_p: ``top_p_cpu[row]``; 1 when off.
        vocab_size: the input batch's ``vocab_size``.

    Returns:
        :data:`GREEDY` for a greedy row (top-k and top-p do not change a greedy pick), else the
        sampling regime, top-k 0 where it is off.
    """
    temperature = _decimal(temperature)
    if temperature == 0:
        return GREEDY
    k = int(top_k)
    return Regime(temperature, k if 0 < k < vocab_size else 0, min(_decimal(top_p), 1.0))


def batch_row_regime(input_batch: Any, row: int) -> Regime:
    """The regime of row ``row`` of vLLM's ``InputBatch`` (the row of ``token_ids_cpu`` the proposer sees)."""
    return row_regime(input_batch.temperature_cpu[row], input_batch.top_k_cpu[row], input_batch.top_p_cpu[row],
                      input_batch.vocab_size)


class ReadsSampling(abc.ABC):
    """A proposer that builds each request's drafter for the request's regime once it can read vLLM's
    input batch (:class:`decoding.integrations.vllm.DrafterProposer`): what :class:`SamplingLink` links."""

    #: drafters built for requests, by the name of the regime each was built for
    built: dict[str, int]

    @abc.abstractmethod
    def read_sampling_from(self, input_batch: SamplingSource) -> None:
        """From now on, read each new request's regime from ``input_batch()`` (vLLM's ``InputBatch``)."""


class SamplingLink:
    """Mixed into vLLM's worker (``worker_extension_cls``): :meth:`pld_link_sampling` hands the
    worker's proposer, if it is ours, the model runner's input batch (read at every use, so an input
    batch the runner rebuilds is followed)."""

    def pld_link_sampling(self) -> bool:
        """Link our proposer to the runner's input batch; False where the worker runs another
        proposer or none. On a CPU worker, first mend vLLM's own fault there (every sampled request
        with a draft, whichever proposer drafts it: :mod:`~decoding.integrations.vllm_cpu`)."""
        mend_cpu_expand()
        runner = getattr(self, "model_runner", None)
        proposer = getattr(runner, "drafter", None)
        if not isinstance(proposer, ReadsSampling):
            return False
        proposer.read_sampling_from(lambda: runner.input_batch)
        return True

    def pld_regimes_built(self) -> dict[str, int] | None:
        """The drafters the worker's proposer has built since the engine started, by regime name (a
        check that the link works); None where the worker runs another proposer or none."""
        proposer = getattr(getattr(self, "model_runner", None), "drafter", None)
        return dict(proposer.built) if isinstance(proposer, ReadsSampling) else None


def link_sampling(llm: Any) -> bool:
    """Link every worker's proposer of ``llm`` (a ``vllm.LLM`` built with ``worker_extension_cls``
    :class:`SamplingLink` or a subclass) to its input batch; whether every worker had ours."""
    return all(llm.collective_rpc("pld_link_sampling"))

