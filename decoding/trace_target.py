"""A recorded run as a target: replay any drafter through the same loop, without a model.

The target's greedy answer at every position is the recorded output, so a drafter's
acceptance on a trace is exactly its greedy acceptance live. A run sampled with our sampler is
replayed the same way: with a deterministic draft the token committed at each position is the
sample its own uniform picks from the target's law, whatever was drafted
(:func:`decoding.sampling.accept_deterministic`, and the tree walk likewise), so a drafter commits
exactly the recorded tokens, accepting its draft while it matches them. Drafts that carry their
probabilities are verified by another rule whose outcome depends on them: a sampled trace refuses them. Forward times come from a cost
profile, so the loop's statistics give the estimated speedup directly. Where the trace holds
the target's top-k rows, a drafter that reads them (``wants_top``) gets exactly the rows the live
loop would hand it: the prompt's after the prefill, then those of the tokens each step committed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from decoding.target import Scores, Target, TopRows
from decoding.tree import TreeLayout
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.errors import PLDError


class TraceTarget(Target):
    """Answers from ``output`` (the greedy continuation of ``prompt``); greedy decoding only.

    ``top`` (optional) holds the target's top-k rows after every token of ``prompt + output``
    but the last. Past the end of ``output`` (a run that ended at EOS, asked for more tokens)
    the answers never match: the loop stops at the recorded EOS, as a live run would.
    """

    greedy_only = True

    def __init__(
        self,
        prompt: Sequence[int],
        output: Sequence[int],
        vocab_size: int,
        eos_token_ids: Sequence[int] = (),
        profile: CostProfile = CPU_SMOLLM2,
        top: TopRows | None = None,
        sampled: bool = False,
    ) -> None:
        #: a sampled run: only deterministic drafts replay exactly (see the module doc)
        self.deterministic_drafts_only = sampled
        self.prompt = np.asarray(prompt, dtype=np.int64)
        self.recorded = len(output)
        # spare slots: after the last recorded token the answer is irrelevant (the loop stops)
        self.output = np.append(np.asarray(output, dtype=np.int64), -1)  # [T + 1]
        if top is not None and len(top) != len(self.prompt) + self.recorded - 1:
            raise PLDError(f"{len(top)} top-k rows for a trace of {len(self.prompt) + self.recorded} tokens")
        self.top = top
        self._scored_at = 0
        self.vocab_size = vocab_size
        self.eos_token_ids = frozenset(int(t) for t in eos_token_ids)
        self.device = torch.device("cpu")
        self.profile = profile
        self.max_length = None
        self._pos = 0  # output tokens committed so far

    @property
    def length(self) -> int:
        """Tokens in the recorded output."""
        return self.recorded

    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> TopRows | None:
        if len(prompt_ids) != len(self.prompt) or not np.array_equal(prompt_ids, self.prompt):
            raise PLDError("this trace was recorded for another prompt")
        self._pos = self._scored_at = 0
        return self._rows(0, len(self.prompt) - 1, top_k) if top_k else None

    def _answers(self, positions: np.ndarray) -> np.ndarray:
        """The recorded token at each output position (-1, never a token, past the end)."""
        past = positions >= self.recorded
        ended_at_eos = self.recorded > 0 and int(self.output[self.recorded - 1]) in self.eos_token_ids
        if past.any() and not ended_at_eos:
            raise PLDError(f"the trace has {self.length} tokens and did not end at EOS; replay asked for more "
                           f"(use max_new_tokens <= {self.length})")
        return np.where(past, -1, self.output[np.minimum(positions, self.recorded)])

    def score(self, tokens: np.ndarray) -> Scores:
        n = len(tokens)
        # Greedy acceptance stops at the first mismatch, so what the model would say after a
        # wrong draft token never matters: the recorded token stands in for every position.
        argmax = self._answers(np.arange(self._pos, self._pos + n))
        self._scored_at = self._pos
        return Scores(argmax=argmax, seconds=self.profile.cost(n, len(self.prompt) + self._pos))

    def keep(self, n: int) -> None:
        self._pos += n

    def committed_top(self, scores: Scores, rows: np.ndarray, k: int) -> TopRows | None:
        # the committed inputs of the last forward sit at output positions scored_at - 1 + j
        # (input 0 is the last committed token), so their rows follow sequence positions
        # len(prompt) - 1 + scored_at + j, j = 0 .. len(rows) - 1
        first = len(self.prompt) - 1 + self._scored_at
        return self._rows(first, first + len(rows), k)

    def _rows(self, first: int, end: int, k: int) -> TopRows:
        if self.top is None:
            raise PLDError("this trace holds no top-k rows (recorded before they were kept); "
                           "record it again, or replay drafters that do not read them")
        if k > self.top.ids.shape[1]:
            raise PLDError(f"a drafter wants the top-{k}; this trace holds the top-{self.top.ids.shape[1]}")
        return TopRows(self.top.ids[first:end, :k], self.top.probs[first:end, :k])

    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        """Greedy answers for a token tree: the recorded token at ``context + depth(i)`` for input ``i``.

        That is the model's argmax whenever input ``i``'s path from the root matches the trace,
        and the greedy walk only ever reads rows on such paths. Costs one forward over all inputs.
        """
        depths = TreeLayout.of(parents).depths  # [n+1]
        n = len(tokens)
        argmax = self._answers(self._pos + depths)
        self._scored_at = self._pos
        return Scores(argmax=argmax, seconds=self.profile.cost(n, len(self.prompt) + self._pos))

    def keep_path(self, inputs: np.ndarray) -> None:
        # only the path's length matters: its tokens are the recorded ones
        self._pos += len(inputs)
