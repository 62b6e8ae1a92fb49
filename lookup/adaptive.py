"""``adaptive``: wrap any drafter and choose, each step, how much of its draft to send.

A draft is not free: on a CPU, verifying 2-9 tokens costs ~1.5x a plain step, so a wasted
draft is a 35% slowdown. Each step this drafter

1. asks the wrapped drafter for its longest draft, and the length of the match behind it;
2. estimates ``P(node i accepted | nodes before it accepted)`` from the acceptances seen so
   far in this sequence at the same match length (recent steps weigh more), starting from
   a prior;
3. sends the prefix length ``k`` (possibly 0) that maximises expected committed tokens per
   second: ``(1 + sum_{i<=k} prod_{j<=i} a_j) / cost(k + 1)``, with ``cost`` the target's
   measured cost profile.

When it drafts less than it could, the token the target commits still tells whether the
next draft node would have been right, so it keeps learning even while drafting nothing.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.cost import CPU_SMOLLM2, CostProfile
from lookup.registry import create, register

#: match-length bucket edges: [0-1], 2, 3, [4-5], [6-9], [10+]
BUCKET_EDGES = np.array([2, 3, 4, 6, 10])
#: prior P(first node accepted) per bucket; later nodes (given the earlier ones) are likelier
PRIOR_FIRST = np.array([0.2, 0.35, 0.5, 0.6, 0.7, 0.8])
PRIOR_LATER_BONUS = 0.2
DEFAULT_BASE = "suffix-automaton"
#: the policy picks the length, so the default base drafts as far as its match goes
DEFAULT_BASE_PARAMS = {"max_tokens": 32, "length_rule": None}


@register("adaptive")
class AdaptiveDrafter(Drafter):
    """Cost-aware draft length on top of ``base`` (a drafter name or instance)."""

    def __init__(
        self,
        base: str | Drafter = DEFAULT_BASE,
        profile: CostProfile | str | None = None,
        max_tokens: int = 32,
        prior_strength: float = 2.0,
        decay: float = 0.98,
        base_params: dict | None = None,
    ) -> None:
        super().__init__()
        if base_params is None:
            base_params = DEFAULT_BASE_PARAMS if base == DEFAULT_BASE else {}
        self.base = create(base, **base_params) if isinstance(base, str) else base
        self.profile = CostProfile.load(profile) if isinstance(profile, str) else (profile or CPU_SMOLLM2)
        self.max_tokens, self.prior_strength, self.decay = max_tokens, prior_strength, decay
        later = np.minimum(PRIOR_FIRST + PRIOR_LATER_BONUS, 0.9)
        self._prior = np.column_stack([PRIOR_FIRST, np.repeat(later[:, None], max_tokens - 1, axis=1)])  # [B, L]
        # cost of a forward over k+1 tokens, k = 0..max_tokens, looked up once
        self._cost = np.array([self.profile.cost(k + 1) for k in range(max_tokens + 1)])  # [L+1]
        self._init_counts()

    def _init_counts(self) -> None:
        self._trials = np.zeros_like(self._prior)  # [B, L] decayed count of nodes tried at (bucket, depth)
        self._hits = np.zeros_like(self._prior)  # [B, L] decayed count of those accepted
        self._last: tuple[np.ndarray, int, int] | None = None  # (full draft, bucket, sent) of the last propose
        self._committed: list[int] = []

    # -- the Drafter interface ---------------------------------------------------------------
    def reset(self, prompt: Sequence[int]) -> None:
        self.base.reset(prompt)
        self._init_counts()

    def extend(self, tokens: Sequence[int]) -> None:
        self.base.extend(tokens)
        self._committed = list(tokens)

    def propose(self, budget: int) -> Draft:
        full = self.base.propose(min(budget, self.max_tokens))
        if len(full) == 0 or not full.is_chain:
            self._last = None
            return full if len(full) else EMPTY_DRAFT
        bucket = self._bucket()
        k = self.best_length(bucket, len(full))
        # remembered for observe(); it changes no future proposal by itself
        self._last = (full.tokens, bucket, k)
        return Draft(full.tokens[:k]) if k else EMPTY_DRAFT

    def observe(self, draft: Draft, accepted: int) -> None:
        self.base.observe(draft, accepted)
        if self._last is None:
            return
        full, bucket, sent = self._last
        self._last = None
        self._trials *= self.decay
        self._hits *= self.decay
        # nodes actually verified: 0..accepted were tried, 0..accepted-1 hit
        tried = min(accepted + 1, sent)
        self._trials[bucket, :tried] += 1
        self._hits[bucket, :accepted] += 1
        # the node after an all-accepted (or empty) draft is checked for free against the
        # target's own next token
        if accepted == sent and sent < len(full) and len(self._committed) > sent:
            self._trials[bucket, sent] += 1
            self._hits[bucket, sent] += float(self._committed[sent] == full[sent])

    # -- the policy ------------------------------------------------------------------------
    def acceptance(self, bucket: int) -> np.ndarray:
        """Estimated P(node i accepted | nodes before accepted) at this bucket.  # [L]"""
        s = self.prior_strength
        return (self._hits[bucket] + s * self._prior[bucket]) / (self._trials[bucket] + s)

    def best_length(self, bucket: int, available: int) -> int:
        """The draft length (0..available) with the most expected tokens per second."""
        survive = np.cumprod(self.acceptance(bucket)[:available])  # [k] P(first i+1 nodes accepted)
        expected = 1.0 + np.concatenate([[0.0], np.cumsum(survive)])  # [k+1] committed tokens for length 0..k
        rate = expected / self._cost[: available + 1]
        return int(np.argmax(rate))

    def _bucket(self) -> int:
        match_length = getattr(self.base, "match_length", None)
        m = match_length() if callable(match_length) else 3  # unknown: assume a middling match
        return int(np.searchsorted(BUCKET_EDGES, m, side="right"))

    def params(self) -> dict:
        return {"base": self.base.name, "base_params": self.base.params(), "profile": self.profile.model,
                "max_tokens": self.max_tokens, "prior_strength": self.prior_strength, "decay": self.decay}
