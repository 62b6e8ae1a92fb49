"""A drafter with hindsight: the same candidates, sent with knowledge of the trace's future.

    drafter = Hindsight(lookup.create("adaptive"), case, "trim", profile)
    replay_case(case, drafter, profile)        # what perfect knowledge of acceptance would give

No drafter can do this (it reads the answer); it measures how much of a drafter's gap to the
oracle lies in *deciding* what to send rather than in what it could propose. Three modes:

* ``gate``: send the wrapped drafter's draft, or nothing where its first token is wrong (a perfect
  first-token gate). The tokens committed are the drafter's own, step by step.
* ``trim``: send only the draft's accepted part (a chain: the path the target accepts through a
  tree). Again the same tokens committed per step, now with no draft token wasted.
* ``cut``: trim, then send the prefix ``k`` of the accepted part with the most tokens per second,
  ``(1 + k) / cost(k + 1)``: perfect decisions on the wrapped drafter's candidates. Wrap a drafter
  that drafts as far as its match goes (``adaptive``'s base) to see what its candidates hold.

The wrapped drafter learns as it would alone: under ``gate`` and ``trim`` it is told it sent its own
draft (the committed tokens are the same); under ``cut`` it is told what was sent.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.cost import CostProfile
from lookup.policy import forward_costs

MODES = ("gate", "trim", "cut")


def accepted_path(draft: Draft, future: Sequence[int]) -> list[int]:
    """Indices of the draft nodes greedy verification accepts against ``future`` (the true next
    tokens), root to leaf: for a chain its correct prefix, for a tree the path of correct tokens."""
    if draft.is_chain:
        n = min(len(draft), len(future))
        wrong = np.flatnonzero(np.asarray(draft.tokens[:n]) != np.asarray(future[:n]))
        return list(range(int(wrong[0]) if len(wrong) else n))
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(draft.parents.tolist()):
        children.setdefault(int(parent), []).append(i)
    path, node = [], -1
    for token in future:
        node = next((k for k in children.get(node, []) if int(draft.tokens[k]) == int(token)), None)
        if node is None:
            break
        path.append(node)
    return path


class Hindsight(Drafter):
    """``inner``'s drafts, sent as mode ``mode`` says (see the module docstring), on trace ``sequence``
    (prompt then output, [P + T] ids) under ``profile``."""

    def __init__(self, inner: Drafter, sequence: Sequence[int], mode: str, profile: CostProfile) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"hindsight mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.inner, self.mode, self.profile = inner, mode, profile
        self.sequence = np.asarray(sequence, dtype=np.int64)
        self.wants_top = inner.wants_top
        self._context = 0
        self._own: Draft = EMPTY_DRAFT

    def reset(self, prompt: Sequence[int]) -> None:
        self.inner.reset(prompt)
        self._context = len(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self.inner.extend(tokens)
        self._context += len(tokens)

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        self.inner.observe_top(tokens, top, probs)

    def propose(self, budget: int) -> Draft:
        self._own = draft = self.inner.propose(budget)
        if len(draft) == 0:
            return draft
        path = accepted_path(draft, self.sequence[self._context:])
        if self.mode == "gate":
            return draft if path else EMPTY_DRAFT
        if self.mode == "cut":
            costs = forward_costs(self.profile, len(path), self._context)  # [r+1]
            path = path[: int(np.argmax((1.0 + np.arange(len(path) + 1)) / costs))]
        return Draft(draft.tokens[path]) if path else EMPTY_DRAFT

    def observe(self, draft: Draft, accepted: int) -> None:
        self.inner.observe(draft if self.mode == "cut" else self._own, accepted)

    def match_length(self) -> int | None:
        return self.inner.match_length()
