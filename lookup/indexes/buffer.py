"""A growing buffer of committed token ids: appends in amortised O(1), the context read as a view."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np


class TokenBuffer:
    """Token ids in ``data[..., :length]``; the storage doubles when full, never one copy per step.

    ``new(capacity)`` makes empty storage whose last axis holds the tokens: a numpy array, or a
    ``[1, capacity]`` torch tensor for drafters that hand the context to torch code. ``convert``
    turns appended ids into something that storage accepts (default: an int64 numpy array).
    """

    def __init__(self, new: Callable[[int], Any], capacity: int = 256,
                 convert: Callable[[Sequence[int]], Any] = lambda t: np.asarray(t, dtype=np.int64)) -> None:
        self._new, self._convert = new, convert
        self.data = new(capacity)
        self.length = 0

    def clear(self) -> None:
        self.length = 0

    def extend(self, tokens: Sequence[int]) -> None:
        n = len(tokens)
        if n == 0:
            return
        end = self.length + n
        if end > self.data.shape[-1]:  # amortised doubling
            grown = self._new(2 * end)
            grown[..., : self.length] = self.data[..., : self.length]
            self.data = grown
        self.data[..., self.length : end] = self._convert(tokens)
        self.length = end

    def view(self):
        """The committed ids, without a copy: ``data[..., :length]``."""
        return self.data[..., : self.length]


class TensorContext:
    """Drafter mixin: the committed context as a ``[1, L]`` int64 torch tensor, as transformers'
    lookup functions take it (``unfold``, ``peer:hf-prompt-lookup``). Call :meth:`_init_context`
    in ``__init__``; ``reset`` and ``extend`` keep it, :attr:`input_ids` reads it without a copy."""

    def _init_context(self, device=None) -> None:
        import torch  # with the drafter, not with this module: ``import lookup`` stays light

        self._buf = TokenBuffer(lambda c: torch.zeros(1, c, dtype=torch.long, device=device),
                                convert=lambda t: torch.as_tensor(np.asarray(t, dtype=np.int64), device=device))

    def reset(self, prompt: Sequence[int]) -> None:
        self._buf.clear()
        self._buf.extend(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self._buf.extend(tokens)

    @property
    def input_ids(self):
        """The committed context.  # [1, L] int64 torch tensor"""
        return self._buf.view()
