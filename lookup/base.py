"""The drafter contract: what every lookup strategy implements.

A drafter is one object per sequence. The decoding loop calls, in order::

    drafter.reset(prompt)            # once
    draft = drafter.propose(budget)  # no side effects
    drafter.extend(committed)        # the tokens the target accepted, plus its own next one
    drafter.observe(draft, accepted) # feedback, optional
    drafter.observe_top(tokens, top) # the target's top-k after committed tokens; only if wants_top
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

EMPTY_TOKENS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Draft:
    """A proposed continuation: a chain (``parents is None``) or a token tree.

    ``tokens[i]`` is node ``i``. In a tree, ``parents[i]`` is the index of node ``i``'s parent
    (``-1`` = child of the last committed token) and parents come before children.
    """

    tokens: np.ndarray = field(default_factory=lambda: EMPTY_TOKENS)  # [n] int64
    parents: np.ndarray | None = None  # [n] int32, -1 = root; None = a chain
    probs: np.ndarray | None = None  # [n, V] draft distribution q each node was drawn from; None = deterministic

    def __post_init__(self) -> None:
        # Normalise dtypes once here so that every consumer can rely on them.
        object.__setattr__(self, "tokens", np.asarray(self.tokens, dtype=np.int64).reshape(-1))
        if self.parents is not None:
            object.__setattr__(self, "parents", np.asarray(self.parents, dtype=np.int32).reshape(-1))
            if len(self.parents) != len(self.tokens):
                raise ValueError(f"Draft has {len(self.tokens)} tokens but {len(self.parents)} parents")
        if self.probs is not None:
            probs = np.asarray(self.probs, dtype=np.float32)
            if probs.ndim != 2 or len(probs) != len(self.tokens):
                raise ValueError(f"Draft.probs must have shape [n, V] with n={len(self.tokens)}, got {probs.shape}")
            object.__setattr__(self, "probs", probs)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def is_chain(self) -> bool:
        """True when every node's parent is the node before it (or there are no parents)."""
        if self.parents is None:
            return True
        return bool(np.array_equal(self.parents, np.arange(-1, len(self.tokens) - 1)))

    def depths(self) -> np.ndarray:
        """Depth of each node, 1 for children of the root.  # [n] int32"""
        if self.parents is None:
            return np.arange(1, len(self.tokens) + 1, dtype=np.int32)
        depth = np.zeros(len(self.tokens), dtype=np.int32)
        for i, p in enumerate(self.parents):
            depth[i] = 1 if p < 0 else depth[p] + 1
        return depth

    def problem(self) -> str | None:
        """Why this draft is malformed (tree structure), or None when it is well-formed."""
        if self.parents is None:
            return None
        for i, p in enumerate(self.parents):
            if p < -1 or p >= i:
                return f"node {i} has parent {p}; parents must be -1 or an earlier node"
        return None


EMPTY_DRAFT = Draft()


class Drafter(abc.ABC):
    """Base class of every drafter.

    Subclasses implement :meth:`propose`; most also override :meth:`reset` and
    :meth:`extend` to keep an index of the context. The default ``reset``/``extend`` keep
    the whole context in ``self.context`` (a Python list of ints) so that a simple
    drafter can be written in a few lines.
    """

    #: registry name, set by :func:`lookup.register`
    name: str = "?"
    #: how many of the target's most likely next tokens, after each committed token, this drafter
    #: wants through :meth:`observe_top` (0: none, and the loop computes none)
    wants_top: int = 0

    def __init__(self) -> None:
        self.context: list[int] = []

    def reset(self, prompt: Sequence[int]) -> None:
        """Start a new sequence whose first tokens are ``prompt``."""
        self.context = [int(t) for t in prompt]

    def extend(self, tokens: Sequence[int]) -> None:
        """Append committed tokens (never speculative ones)."""
        self.context.extend(int(t) for t in tokens)

    @abc.abstractmethod
    def propose(self, budget: int) -> Draft:
        """Propose at most ``budget`` draft nodes. Must not change the drafter's state."""

    def observe(self, draft: Draft, accepted: int) -> None:
        """Feedback after verification: ``accepted`` nodes of ``draft`` matched the target."""

    def observe_top(self, tokens: np.ndarray, top: np.ndarray) -> None:
        """The target's ``wants_top`` most likely next ids after tokens it has just read:
        ``top[i]`` ([c, k] int64, most likely first) follows ``tokens[i]`` ([c]) in the context
        the target read it in. Called after :meth:`reset` with the prompt's rows (all its tokens
        but the last), then after each :meth:`observe` with every input of the step's forward:
        the rejected draft nodes (on their own draft path) first, the committed tokens last.
        Only targets with logits call it (a recorded trace has none).
        """

    def params(self) -> dict:
        """Parameters worth logging (JSON-serialisable)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
