"""``suffix-automaton``: draft what followed the longest earlier match of the context's suffix.

The index is a :class:`lookup.automaton.SuffixAutomaton` over prompt + committed tokens: after
each ``extend`` it knows the longest suffix of the sequence that also occurs earlier, its most
recent earlier occurrence and its earliest one. ``propose`` copies the tokens that followed the
chosen occurrence: by default the most recent one, or the earliest when the most recent runs
into the current suffix before the draft is full.

With ``history=True`` the drafter also keeps the earlier requests it served
(:class:`lookup.history.History`) and copies from them where they hold a longer match.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from lookup.automaton import SuffixAutomaton
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.history import DEFAULT_MAX_TOKENS, History
from lookup.params import require_bool
from lookup.registry import register


# ---------------------------------------------------------------------- drafter


class Occurrence(enum.Enum):
    """Which earlier occurrence of the matched suffix to copy from."""

    RECENT = "recent"  # most recent: local context (the current paragraph, loop, file)
    EARLIEST = "earliest"  # first occurrence (firstpos), as SAM-Decoding does


@dataclass(frozen=True)
class LinearLength:
    """Draft length from match length: ``beta + alpha * match_len`` (SAM-Decoding's rule has this form).

    Longer matches are more often followed by the same tokens, so they earn longer drafts.
    """

    alpha: float
    beta: float

    def __call__(self, match_len: int) -> int:
        return int(self.beta + self.alpha * match_len)


class AutomatonDrafter(Drafter):
    """Base of drafters whose index is a :class:`SuffixAutomaton` in ``self.sam``."""

    sam: SuffixAutomaton

    def reset(self, prompt: Sequence[int]) -> None:
        self.sam.reset(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self.sam.extend(tokens)

    def match_length(self) -> int:
        """Length of the longest suffix of the context that also occurs earlier (for ``adaptive``)."""
        return int(self.sam.match()[1])


@register("suffix-automaton")
class SuffixAutomatonDrafter(AutomatonDrafter):
    """Copy the continuation of the longest earlier match of the context's suffix.

    Args:
        min_match: shortest suffix match worth drafting from. Default 1: the length rule keeps
            drafts from short matches short.
        max_tokens: longest draft.
        occurrence: which earlier occurrence to copy from (``"recent"`` or ``"earliest"``).
        length_rule: draft length from match length, capped by ``max_tokens``: a callable
            ``int -> int`` or an ``(alpha, beta)`` pair for :class:`LinearLength`; None = always
            ``max_tokens``. Default ``(2, 2)``: 4 tokens after a 1-token match, 16 after 7.
        max_depth: see :class:`SuffixAutomaton`: deeper rings keep the most recent occurrence
            exact more often, and each level costs a cache miss on long sequences.
        fallback: when the chosen occurrence is followed by fewer tokens than the draft wants
            (``len(context) - 1 - end < n``, n = the draft length after the budget cut: it runs
            into the current suffix), copy from the earliest occurrence instead. The earliest
            occurrence of the match has the longest continuation there is.
        history: keep the outputs of the requests served before (each added at the ``reset``
            that starts the next; or, where requests share one history, by whoever serves them:
            vLLM's proposer) and copy from the most recent occurrence there when the history holds
            a longer match of the context's suffix than the context itself.
        history_tokens: tokens of history kept (the oldest requests go first).
        occurrences: earlier occurrences the automaton remembers per match (the most recent ones),
            for :meth:`chain_agreement`; the draft always copies from the most recent or the earliest.
            The history remembers as many per match. Each state's row is padded to 8 int32 columns:
            1-2 occurrences fit in 8, 3-10 take 16 (``adaptive``'s default base remembers 8).
    """

    def __init__(
        self,
        min_match: int = 1,
        max_tokens: int = 16,
        occurrence: Occurrence | str = Occurrence.RECENT,
        length_rule: Callable[[int], int] | tuple[float, float] | None = (2.0, 2.0),
        max_depth: int = 8,
        fallback: bool = True,
        history: bool = False,
        history_tokens: int = DEFAULT_MAX_TOKENS,
        occurrences: int = 1,
    ):
        super().__init__()
        if min_match < 1 or max_tokens < 1 or occurrences < 1:
            raise ValueError("min_match, max_tokens and occurrences must be >= 1")
        self.fallback = require_bool("fallback", fallback)
        self.min_match = min_match
        self.max_tokens = max_tokens
        self.occurrence = Occurrence(occurrence)
        self.length_rule = LinearLength(*length_rule) if isinstance(length_rule, tuple) else length_rule
        self.sam = SuffixAutomaton(occurrences=occurrences, max_depth=max_depth)
        # [>= draft length] scratch (support, agree) for chain_agreement(), context_agreement() and
        # history_agreement()
        self._scratch = {name: (np.zeros(max_tokens, dtype=np.int64), np.zeros(max_tokens, dtype=np.int64))
                         for name in ("own", "context", "history")}
        self.history = History(history_tokens, occurrences) if require_bool("history", history) else None
        self._prompt_len = 0

    def reset(self, prompt: Sequence[int]) -> None:
        if self.history is not None:
            # the output of the request just served (nothing before the first). Outputs only, as
            # SuffixDecoding's global tree: earlier prompts share the chat template and the system
            # prompt, whose long matches lead to another question's text (docs/oracle-gap.md)
            self.history.add(self.sam.sequence[self._prompt_len:])
            self.history.restart(prompt)
        self._prompt_len = len(prompt)
        self.sam.reset(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self.sam.extend(tokens)
        if self.history is not None:
            self.history.follow(tokens)

    def _history_match(self) -> tuple[int, int, int] | None:
        """(length, start, stop) of :meth:`History.match` when the history holds a longer match than
        the context (and one of at least ``min_match``): the draft then comes from there; else None."""
        if self.history is None:
            return None
        found = self.history.match()
        return found if found[0] > self.sam.match()[1] and found[0] >= self.min_match else None

    def match_length(self) -> int:
        """The length of the match the drafter copies from: in the history when it is longer there."""
        found = self._history_match()
        return found[0] if found is not None else int(self.sam.match()[1])

    def match_source(self) -> str:
        """Where the draft :meth:`propose` would copy now comes from: ``"context"`` or ``"history"``
        (a longer match in earlier requests). ``adaptive`` learns acceptance per source."""
        return "context" if self._history_match() is None else "history"

    def chain_agreement(self, draft: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Evidence for a draft (``draft``: [n] token ids, normally what :meth:`propose` gave): how the
        continuations of the match's remembered earlier occurrences (up to ``occurrences``, the most
        recent ones, in the context or, for a draft from the history, in earlier requests; see
        :meth:`match_source`) agree with it. Per depth ``d``: ``support[d]``, the occurrences that
        continue with ``draft[:d]`` and have a token at ``d``, and ``agree[d]``, those of them that
        continue with ``draft[d]`` (both [n] int64; ``agree[0] / support[0]`` is the share of
        occurrences followed by the draft's first token). None when nothing matches. The arrays are
        this drafter's scratch, valid until the next call. A query: ``adaptive`` reads it for its
        models of acceptance (:mod:`lookup.first_token`, :mod:`lookup.later_nodes`)."""
        return self._agreement(self.sam if self._history_match() is None else self.history, draft, "own")

    def context_agreement(self, draft: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """What the context says of a draft from the history (``draft``: [n] token ids): (the context's own
        match length, support [n], agree [n]) as :meth:`chain_agreement` counts them, over the remembered
        occurrences of the context's longest match rather than the history's. None without a history
        draft now, or when the context has no match. Scratch arrays, valid until the next call. A query:
        ``adaptive``'s first-token model reads it for drafts from the history."""
        if self._history_match() is None:
            return None
        found = self._agreement(self.sam, draft, "context")
        return None if found is None else (int(self.sam.match()[1]), *found)

    def history_agreement(self, draft: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """The mirror of :meth:`context_agreement`: what the history says of a draft from the context
        (``draft``: [n] token ids): (the history's match length, support [n], agree [n]) over the
        remembered occurrences of the current request's match in earlier requests (each up to the end
        of its request). That match is no longer than the context's, unless nothing follows its most
        recent occurrence (the draft then comes from the context all the same). None without a
        history, for a draft from the history, or when the history has no match. Scratch arrays, valid
        until the next call. A query: ``adaptive:history=true``'s first-token model reads it for drafts
        from the context."""
        if self.history is None or self._history_match() is not None:
            return None
        found = self._agreement(self.history, draft, "history")
        return None if found is None else (self.history.match_length(), *found)

    def _agreement(self, index: SuffixAutomaton | History, draft: np.ndarray,
                   scratch: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``index.agreement`` of ``draft`` into this drafter's ``scratch`` pair of arrays (grown to fit;
        one pair per method, so that each method's answer stays valid while the other is asked):
        (support, agree), [n] each, or None when the index has no match."""
        draft = np.ascontiguousarray(draft, dtype=np.int64)  # the one array type the kernel is compiled for
        n = len(draft)
        support, agree = self._scratch[scratch]
        if len(support) < n:
            support, agree = self._scratch[scratch] = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        if index.agreement(draft, support, agree) == 0:
            return None
        return support[:n], agree[:n]

    def draft_length(self, match_len: int) -> int:
        """Tokens to draft after a match of ``match_len`` tokens (before budget and context end)."""
        if self.length_rule is None:
            return self.max_tokens
        return max(0, min(self.max_tokens, self.length_rule(match_len)))

    def propose(self, budget: int) -> Draft:
        if budget <= 0:
            return EMPTY_DRAFT
        found = self._history_match()
        if found is not None:
            length, start, stop = found
            n = min(budget, self.draft_length(length), stop - start)
            return Draft(self.history.tokens[start : start + n]) if n > 0 else EMPTY_DRAFT
        _, length, recent, earliest = self.sam.match()
        if length < self.min_match:
            return EMPTY_DRAFT
        end = recent if self.occurrence is Occurrence.RECENT else earliest
        n = min(budget, self.draft_length(length))
        if self.fallback and len(self.sam) - 1 - end < n:
            # The most recent occurrence runs into the current suffix (a tight repeat): the
            # earliest one is the same match with the longest continuation there is.
            end = earliest
        # end < len - 1, so at least one real token follows; never read past the context
        return Draft(self.sam.tokens[end + 1 : min(end + 1 + n, len(self.sam))]) if n > 0 else EMPTY_DRAFT

    def params(self) -> dict:
        return {
            "min_match": self.min_match,
            "max_tokens": self.max_tokens,
            "occurrence": self.occurrence.value,
            "length_rule": repr(self.length_rule) if self.length_rule is not None else None,
            "max_depth": self.sam.max_depth,
            "fallback": self.fallback,
            "history": self.history is not None,
            **({"history_tokens": self.history.max_tokens} if self.history is not None else {}),
            "occurrences": self.sam.occurrences,
        }
