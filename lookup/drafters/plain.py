"""The ``plain`` drafter (alias ``none``): never proposes anything, so the loop is plain greedy decoding.

Named ``plain`` so that a spec's value parser, which reads ``none`` as Python's None
(``adaptive:base=none``), cannot mistake it; ``none`` still creates it, as it always did."""

from __future__ import annotations

from typing import Sequence

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.registry import register


@register("plain", aliases=("none",))
class NoDrafter(Drafter):
    """Always proposes an empty draft: every step is an ordinary decoding step."""

    def reset(self, prompt: Sequence[int]) -> None:  # keeps no state: nothing to look up
        pass

    def extend(self, tokens: Sequence[int]) -> None:
        pass

    def propose(self, budget: int) -> Draft:
        return EMPTY_DRAFT
