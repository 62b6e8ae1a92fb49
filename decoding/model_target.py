"""A transformers causal LM as a :class:`~decoding.target.Target`: forward with a KV cache, crop on rejection."""

from __future__ import annotations

import inspect
import time
from typing import Sequence

import numpy as np
import torch
from transformers import DynamicCache

from decoding.target import Scores, Target


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so that wall-clock timings are real (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class ModelTarget(Target):
    """Wraps a transformers model and tokenizer; holds the KV cache of the current sequence.

    The cache lives here, never on the model object, so one model can serve many targets.
    """

    def __init__(self, model, tokenizer, name: str = "model") -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = next(model.parameters()).device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.eos_token_ids = frozenset(_eos_ids(model, tokenizer))
        self.max_length = getattr(model.config, "max_position_embeddings", None)
        self._cache: DynamicCache | None = None
        self._cached = 0  # tokens in the cache
        self._pending = 0  # tokens appended by the last score(), not yet kept or dropped
        # transformers 5.x renamed `past_key_values` to `cache`; use whichever this model takes
        params = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"

    # -- the Target interface -------------------------------------------------------------
    @torch.inference_mode()
    def start(self, prompt_ids: Sequence[int]) -> None:
        self._cache = DynamicCache(config=self.model.config)
        self._cached = self._pending = 0
        head = list(prompt_ids)[:-1]
        if head:  # a one-token prompt has nothing to prefill
            self._forward(np.asarray(head, dtype=np.int64))
            self._cached, self._pending = len(head), 0

    @torch.inference_mode()
    def score(self, tokens: np.ndarray) -> Scores:
        if self._cache is None:
            raise RuntimeError("call start() before score()")
        if self._pending:  # the previous step's keep() was skipped: drop the unverified tail
            self.keep(0)
        synchronize(self.device)
        t0 = time.perf_counter()
        logits = self._forward(tokens)  # [n, V]
        argmax = logits.argmax(dim=-1).cpu().numpy()  # .cpu() synchronises too
        seconds = time.perf_counter() - t0
        self._pending = len(tokens)
        return Scores(argmax=argmax, logits=logits, seconds=seconds)

    def keep(self, n: int) -> None:
        if not 0 <= n <= self._pending:
            raise ValueError(f"keep({n}) but only {self._pending} tokens were scored")
        self._cached += n
        self._pending = 0
        dropped = self._cache.get_seq_length() - self._cached
        if dropped:  # a negative crop removes tokens, in every transformers version we support
            self._cache.crop(-dropped)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    # -- helpers ---------------------------------------------------------------------------
    def _forward(self, tokens: np.ndarray) -> torch.Tensor:
        """Run the model over ``tokens`` ([n]) appended to the cache; returns logits [n, V]."""
        ids = torch.as_tensor(tokens, dtype=torch.long, device=self.device).unsqueeze(0)  # [1, n]
        positions = torch.arange(self._cached, self._cached + ids.shape[1], device=self.device)  # [n]
        out = self.model(
            input_ids=ids,
            **{self._cache_kwarg: self._cache},
            cache_position=positions,
            position_ids=positions.unsqueeze(0),
            use_cache=True,
        )
        return out.logits[0].float()

    def chat_ids(self, messages: str | list[dict], system: str | None = None) -> list[int]:
        """Token ids of a chat prompt, ready for the assistant's answer.

        ``messages`` is a user message or a list of ``{"role", "content"}`` dicts.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys"):  # some versions return a BatchEncoding
                ids = ids["input_ids"]
            return [int(t) for t in ids]
        # no template: a plain transcript is the best we can do
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return self.tokenizer(text)["input_ids"]

    def __repr__(self) -> str:
        return f"ModelTarget({self.name!r}, device={self.device}, dtype={self.model.dtype})"


def _eos_ids(model, tokenizer) -> set[int]:
    """EOS ids from both the generation config and the tokenizer (they can disagree)."""
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        eos = getattr(source, "eos_token_id", None)
        if eos is None:
            continue
        ids.update([eos] if isinstance(eos, int) else eos)
    return {int(i) for i in ids}
