"""A recorded greedy run as a target: replay any drafter through the same loop, without a model.

The target's greedy answer at every position is the recorded output, so a drafter's
acceptance on a trace is exactly its greedy acceptance live. Forward times come from a cost
profile, so the loop's statistics give the estimated speedup directly.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from decoding.target import Scores, Target
from decoding.tree import TreeLayout
from lookup.cost import CPU_SMOLLM2, CostProfile
from lookup.errors import PLDError


class TraceTarget(Target):
    """Answers from ``output`` (the greedy continuation of ``prompt``); greedy decoding only."""

    greedy_only = True

    def __init__(
        self,
        prompt: Sequence[int],
        output: Sequence[int],
        vocab_size: int,
        eos_token_ids: Sequence[int] = (),
        profile: CostProfile = CPU_SMOLLM2,
    ) -> None:
        self.prompt = np.asarray(prompt, dtype=np.int64)
        # one spare slot: after the last recorded token the answer is irrelevant (the loop stops)
        self.output = np.append(np.asarray(output, dtype=np.int64), -1)  # [T + 1]
        self.vocab_size = vocab_size
        self.eos_token_ids = frozenset(int(t) for t in eos_token_ids)
        self.device = torch.device("cpu")
        self.profile = profile
        self.max_length = None
        self._pos = 0  # output tokens committed so far

    @property
    def length(self) -> int:
        """Tokens in the recorded output."""
        return len(self.output) - 1

    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> None:  # a trace holds argmaxes only
        if len(prompt_ids) != len(self.prompt) or not np.array_equal(prompt_ids, self.prompt):
            raise PLDError("this trace was recorded for another prompt")
        self._pos = 0

    def score(self, tokens: np.ndarray) -> Scores:
        n = len(tokens)
        if self._pos + n > len(self.output):
            raise PLDError(
                f"the trace has {self.length} tokens; replay asked for more (use max_new_tokens <= {self.length})"
            )
        # Greedy acceptance stops at the first mismatch, so what the model would say after a
        # wrong draft token never matters: the recorded token stands in for every position.
        argmax = self.output[self._pos : self._pos + n]
        return Scores(argmax=argmax, seconds=self.profile.cost(n, len(self.prompt) + self._pos))

    def keep(self, n: int) -> None:
        self._pos += n

    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        """Greedy answers for a token tree: the recorded token at ``context + depth(i)`` for input ``i``.

        That is the model's argmax whenever input ``i``'s path from the root matches the trace,
        and the greedy walk only ever reads rows on such paths. Costs one forward over all inputs.
        """
        depths = TreeLayout.of(parents).depths  # [n+1]
        n = len(tokens)
        if self._pos + int(depths.max()) + 1 > len(self.output):
            raise PLDError(
                f"the trace has {self.length} tokens; replay asked for more (use max_new_tokens <= {self.length})"
            )
        argmax = self.output[self._pos + depths]
        return Scores(argmax=argmax, seconds=self.profile.cost(n, len(self.prompt) + self._pos))

    def keep_path(self, inputs: np.ndarray) -> None:
        # only the path's length matters: its tokens are the recorded ones
        self._pos += len(inputs)
