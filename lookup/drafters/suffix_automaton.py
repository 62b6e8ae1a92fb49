"""``suffix-automaton``: draft what followed the longest earlier match of the context's suffix.

The index is a :class:`lookup.indexes.automaton.SuffixAutomaton` over prompt + committed tokens: after
each ``extend`` it knows the longest suffix of the sequence that also occurs earlier, its most
recent earlier occurrence and its earliest one. ``propose`` copies the tokens that followed the
chosen occurrence: by default the most recent one, or the earliest when the most recent runs
into the current suffix before the draft is full.

With ``history=True`` the drafter also keeps the earlier requests it served
(:class:`lookup.indexes.history.History`) and copies from them where they hold a longer match.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from lookup.indexes.automaton import SuffixAutomaton
from lookup.indexes.continuations import continuation_tree, majority_chain
from lookup.base import EMPTY_DRAFT, SOURCES, Agreement, Draft, Drafter, Evidence
from lookup.indexes.history import DEFAULT_MAX_TOKENS, History
from lookup.indexes.loop import overlapping_copy
from lookup.params import require_bool
from lookup.registry import register


# ---------------------------------------------------------------------- drafter


class Occurrence(enum.Enum):
    """Which earlier occurrence of the matched suffix to copy from."""

    RECENT = "recent"  # most recent: local context (the current paragraph, loop, file)
    EARLIEST = "earliest"  # first occurrence (firstpos), as SAM-Decoding does
    MAJORITY = "majority"  # the way most remembered occurrences go, depth by depth (ties: the newest)


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
        occurrence: which earlier occurrence to copy from (``"recent"`` or ``"earliest"``), or
            ``"majority"``: the chain most of the ``occurrences`` remembered follow, depth by depth,
            ties to the newest (:func:`lookup.indexes.continuations.majority_chain`; ``fallback``
            does not apply: each continuation goes as far as it goes, round its loop with ``loop``).
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
            for :meth:`evidence`; the draft always copies from the most recent or the earliest.
            The history remembers as many per match. Each state's row is padded to 8 int32 columns:
            1-2 occurrences fit in 8, 3-10 take 16 (``adaptive``'s default base remembers 8).
        branches: with more than 1, draft a token tree instead of a chain: the continuations of up
            to ``branches`` of the match's most recent occurrences, merged where they agree
            (:func:`lookup.indexes.continuations.continuation_tree`; the automaton then remembers at
            least that many). Worth it where a forward over a tree costs about one over a token (a
            large GPU); ``occurrence`` and ``fallback`` choose among occurrences only for a chain.
        loop: where the chosen occurrence's continuation (each branch's, in a tree) runs into the end
            of the context before the draft is full, go on round the loop it is one period of: the
            draft's own tokens that period back (:mod:`lookup.indexes.loop`). A draft from the history
            stops where its request did.
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
        branches: int = 1,
        loop: bool = True,
    ):
        super().__init__()
        if min_match < 1 or max_tokens < 1 or occurrences < 1 or branches < 1:
            raise ValueError("min_match, max_tokens, occurrences and branches must be >= 1")
        self.branches = branches
        occurrences = max(occurrences, branches)
        self._ends = np.zeros(occurrences, dtype=np.int64)  # [occurrences] scratch for propose(): the match's ends
        self.fallback = require_bool("fallback", fallback)
        self.loop = require_bool("loop", loop)
        self._copy = np.zeros(max_tokens, dtype=np.int64)  # [max_tokens] scratch: a looped draft
        self.min_match = min_match
        self.max_tokens = max_tokens
        self.occurrence = Occurrence(occurrence)
        self.length_rule = LinearLength(*length_rule) if isinstance(length_rule, tuple) else length_rule
        self.sam = SuffixAutomaton(occurrences=occurrences, max_depth=max_depth)
        # [>= draft length] scratch (support, agree) for evidence(): the own match's, the other index's
        self._scratch = {name: (np.zeros(max_tokens, dtype=np.int64), np.zeros(max_tokens, dtype=np.int64))
                         for name in ("own", "other")}
        self.history = History(history_tokens, occurrences) if require_bool("history", history) else None
        self._prompt_len = 0
        # (the history's version, _history_match()) until the text changes: asked several times a step
        self._found: tuple[int, tuple[int, int, int] | None] | None = None

    def reset(self, prompt: Sequence[int]) -> None:
        if self.history is not None:
            # the output of the request just served (nothing before the first). Outputs only, as
            # SuffixDecoding's global tree: earlier prompts share the chat template and the system
            # prompt, whose long matches lead to another question's text (docs/oracle-gap.md)
            self.history.add(self.sam.sequence[self._prompt_len:])
            self.history.restart(prompt)
        self._prompt_len = len(prompt)
        self.sam.reset(prompt)
        self._found = None

    def extend(self, tokens: Sequence[int]) -> None:
        self.sam.extend(tokens)
        if self.history is not None:
            self.history.follow(tokens)
        self._found = None

    def _history_match(self) -> tuple[int, int, int] | None:
        """(length, start, stop) of :meth:`History.match` when the history holds a longer match than
        the context (and one of at least ``min_match``): the draft then comes from there; else None.
        Asked several times a step (propose, match_length, evidence): found once per change of the text."""
        if self.history is None:
            return None
        version = self.history.version  # a shared history may grow under it (another request ended)
        if self._found is None or self._found[0] != version:
            found = self.history.match()
            self._found = version, (found if found[0] > self.sam.match()[1] and found[0] >= self.min_match else None)
        return self._found[1]

    def match_length(self) -> int:
        """The length of the match the drafter copies from: in the history when it is longer there."""
        found = self._history_match()
        return found[0] if found is not None else int(self.sam.match()[1])

    def keeps_history(self) -> bool:
        return self.history is not None

    def shareable_history(self) -> "SuffixAutomatonDrafter | None":
        return self if self.history is not None else None

    def share_history(self, history: History) -> None:
        if self.history is None:
            raise TypeError(f"{self.name} was made without a history (history=True) to share")
        self.history = history
        self._found = None

    def evidence(self, draft: Draft) -> Evidence:
        """Where ``draft`` comes from (``"history"`` when the history holds the longer match) and, for a
        chain, how the continuations of the match's remembered earlier occurrences (up to
        ``occurrences``, the most recent ones, in the context or in earlier requests) agree with it
        (``own``); with a history, ``other`` says the same of the other index's match: the context's
        own match for a chain from the history, the history's match (each occurrence up to the end of
        its request) for a chain from the context. That match is no longer than the context's, unless
        nothing follows its most recent occurrence there. With ``loop``, the context's occurrences are
        read round the loop as the draft is (the text going on as the draft). ``adaptive`` reads it for its models of
        acceptance (:mod:`lookup.acceptance`)."""
        return self._evidence(draft, self._history_match())

    def context_candidate(self, budget: int) -> tuple[Draft, Evidence] | None:
        """The context's own draft and its evidence where :meth:`propose` copies from the history
        (None where it drafts nothing)."""
        if self._history_match() is None:
            return None
        draft = self._propose(budget, None)
        return (draft, self._evidence(draft, None)) if len(draft) else None

    def _evidence(self, draft: Draft, found: tuple[int, int, int] | None) -> Evidence:
        """:meth:`evidence` of ``draft``, copied from the history's match ``found`` (None: the context's)."""
        length = found[0] if found is not None else int(self.sam.match()[1])
        own = other = None
        if draft.is_chain:
            tokens = draft.tokens
            if found is None:
                own = self._agreement(self.sam, tokens, "own", length)
                if self.history is not None:
                    other = self._agreement(self.history, tokens, "other", self.history.match_length())
            else:
                own = self._agreement(self.history, tokens, "own", length)
                other = self._agreement(self.sam, tokens, "other", int(self.sam.match()[1]))
        return Evidence(SOURCES[0] if found is None else SOURCES[1], length, own, other,
                        second_index=self.history is not None)

    def _agreement(self, index: SuffixAutomaton | History, draft: np.ndarray, scratch: str,
                   length: int) -> Agreement | None:
        """``index.agreement`` of ``draft`` ([n] ids) into this drafter's ``scratch`` pair of arrays (grown
        to fit; one pair per role, so that the other stays valid while this one is asked), as the
        agreement of a match of ``length`` tokens; None when the index has no match."""
        draft = np.ascontiguousarray(draft, dtype=np.int64)  # the one array type the kernel is compiled for
        n = len(draft)
        support, agree = self._scratch[scratch]
        if len(support) < n:
            support, agree = self._scratch[scratch] = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        # the context's own occurrences go round the loop as the draft does; the history's stop
        # where their request did
        if index is self.sam:
            found = index.agreement(draft, support, agree, self.loop)
        else:
            found = index.agreement(draft, support, agree)
        if found == 0:
            return None
        return Agreement(length, support[:n], agree[:n])

    def draft_length(self, match_len: int) -> int:
        """Tokens to draft after a match of ``match_len`` tokens (before budget and context end)."""
        if self.length_rule is None:
            return self.max_tokens
        return max(0, min(self.max_tokens, self.length_rule(match_len)))

    def propose(self, budget: int) -> Draft:
        return self._propose(budget, self._history_match())

    def _propose(self, budget: int, found: tuple[int, int, int] | None) -> Draft:
        """The draft copied from the history's match ``found``, or (None) from the context's own."""
        if budget <= 0:
            return EMPTY_DRAFT
        if found is not None:
            length, start, stop = found
            n = min(budget, self.draft_length(length), stop - start)
            return Draft(self.history.tokens[start : start + n]) if n > 0 else EMPTY_DRAFT
        _, length, recent, earliest = self.sam.match()
        if length < self.min_match:
            return EMPTY_DRAFT
        n = min(budget, self.draft_length(length))
        if self.branches > 1 and n > 0:
            k = self.sam.match_ends(self._ends[: self.branches])
            tokens, parents = continuation_tree(self.sam.sequence, self._ends[:k], n, budget, self.loop)
            return Draft(tokens, parents) if len(tokens) else EMPTY_DRAFT
        if self.occurrence is Occurrence.MAJORITY and n > 0:
            k = self.sam.match_ends(self._ends)
            return Draft(self._copy[: majority_chain(self.sam.sequence, self._ends[:k], n, self.loop, self._copy)].copy())
        end = recent if self.occurrence is Occurrence.RECENT else earliest
        if self.fallback and len(self.sam) - 1 - end < n:
            # The most recent occurrence runs into the current suffix (a tight repeat): the
            # earliest one is the same match with the longest continuation there is.
            end = earliest
        if n <= 0:
            return EMPTY_DRAFT
        if self.loop:
            return Draft(self._copy[: overlapping_copy(self.sam.tokens, len(self.sam), end + 1, n, self._copy)].copy())
        # end < len - 1, so at least one real token follows; never read past the context
        return Draft(self.sam.tokens[end + 1 : min(end + 1 + n, len(self.sam))])

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
            **({"branches": self.branches} if self.branches > 1 else {}),
            "loop": self.loop,
        }
