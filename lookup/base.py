"""The drafter contract: what every lookup strategy implements.

A drafter is one object per sequence. The decoding loop calls, in order::

    drafter.reset(prompt)              # once; then observe_top(prompt[:-1], ids, probs) if wants_top
    loop:
        draft = drafter.propose(budget)    # may be skipped when no budget is left
        drafter.extend(committed)          # the tokens the target accepted, plus its own next one
        drafter.observe(draft, accepted)   # feedback on that draft (EMPTY_DRAFT if propose was skipped)
        drafter.observe_top(tokens, top, probs)   # the target's top-k after committed tokens; only if wants_top

What a drafter knows about the sequence (the committed tokens, and the feedback of
``observe``/``observe_top``) changes only in ``reset``, ``extend``, ``observe`` and
``observe_top``. ``propose`` is a query: see :meth:`Drafter.propose` for exactly what it may
keep. ``tests/lookup/test_contract.py`` checks every rule stated here on every registered drafter.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np

EMPTY_TOKENS = np.zeros(0, dtype=np.int64)

#: the widest top-k a drafter may read through :meth:`Drafter.observe_top` (what traces hold)
MAX_TOP = 8


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
        bad = np.flatnonzero((self.parents < -1) | (self.parents >= np.arange(len(self.parents))))
        if len(bad):
            i = int(bad[0])
            return f"node {i} has parent {int(self.parents[i])}; parents must be -1 or an earlier node"
        return None


EMPTY_DRAFT = Draft()

#: where a draft may be copied from: the current request's context, or a history of earlier requests
SOURCES = ("context", "history")


@dataclass(frozen=True)
class Agreement:
    """How the remembered earlier occurrences of one match continue, against a chain of ``n`` tokens."""

    match_length: int  # the length of the match whose occurrences these are
    support: np.ndarray  # [n] int64: occurrences that continue with chain[:d] and have a token at d
    agree: np.ndarray  # [n] int64: those of them that continue with chain[d] (<= support[d])


@dataclass(frozen=True)
class Evidence:
    """What a drafter's index knows of the draft it proposes, before the target sees it.

    ``source`` and ``match_length`` describe the match the draft is copied after (where, and how
    long: None = the drafter does not say). For a chain, ``own`` counts how that match's remembered
    occurrences continue against it, and ``other`` what a second index says of the same chain: the
    context's own match for a chain from the history, the history's match for a chain from the
    context (None where there is no second index, or no match in it). ``second_index`` says whether
    the drafter keeps one (a history across requests), whatever it says of this chain.
    """

    source: str = SOURCES[0]  # one of SOURCES
    match_length: int | None = None
    own: Agreement | None = None
    other: Agreement | None = None
    second_index: bool = False


class Drafter(abc.ABC):
    """Base class of every drafter.

    Subclasses implement :meth:`propose`; most also override :meth:`reset` and
    :meth:`extend` to keep an index of the context. The default ``reset``/``extend`` keep
    the whole context in ``self.context`` (a Python list of ints) so that a simple
    drafter can be written in a few lines.

    Capabilities are declared here, never guessed from attribute or parameter names:
    :attr:`wants_top` (reads the target's top ids), :attr:`uses_setting` (takes the setting it
    runs in: the target model, its cost profile, the regime, the batch), :meth:`fitted_on` (reads models fitted on a benchmark), :meth:`match_length`
    (reports the match behind its draft), :meth:`evidence`
    (reports what its index knows of a draft), :meth:`keeps_history` (carries a history from one
    request to the next) and :meth:`wants_vocab` (reads the vocabulary's strings, handed over once
    through :meth:`set_vocab`).
    """

    #: registry name, set by :func:`lookup.register`
    name: str = "?"
    #: how many of the target's most likely next tokens, after each committed token, this drafter
    #: wants through :meth:`observe_top` (0: none, and the loop computes none). The class value is
    #: what an instance built with default parameters wants (tools read it without building one);
    #: an instance may set its own in ``__init__`` (from a width, or from a drafter it wraps) and
    #: keeps it for its whole life. The loop reads the instance's value.
    wants_top: int = 0
    #: True when the constructor takes ``setting: Setting`` (:class:`pldcore.setting.Setting`: the target
    #: model, its cost profile, the decoding regime, the batch and the acceptance fit), so that whoever
    #: builds it hands it the setting it will run in by that name (:meth:`lookup.specs.DrafterSpec.build`).
    uses_setting: ClassVar[bool] = False

    @classmethod
    def wrapped_specs(cls, params: dict) -> "list[tuple[str, dict]]":
        """The drafters, by name and parameters, that an instance built with ``params`` would build and
        wrap (``adaptive``'s base), so that a spec knows what it is made of without building anything:
        the source files it depends on, the top-k rows it reads. Default: none."""
        return []

    @classmethod
    def top_rows(cls, params: dict) -> int:
        """How many top ids after each token an instance built with ``params`` wants
        (:attr:`wants_top`), not counting the drafters it wraps. Default: the class value."""
        return cls.wants_top

    def __init__(self) -> None:
        self.context: list[int] = []

    def reset(self, prompt: Sequence[int]) -> None:
        """Start a new sequence whose first tokens are ``prompt``.

        Forgets everything about the previous sequence, feedback included: afterwards the
        drafter behaves exactly as a new instance given ``reset(prompt)``.
        """
        self.context = [int(t) for t in prompt]

    def extend(self, tokens: Sequence[int]) -> None:
        """Append committed tokens (never speculative ones).

        ``reset(a + b)`` and ``reset(a); extend(b)`` leave the drafter proposing the same drafts.
        """
        self.context.extend(int(t) for t in tokens)

    @abc.abstractmethod
    def propose(self, budget: int) -> Draft:
        """Propose at most ``budget`` draft nodes (none when ``budget <= 0``).

        ``propose`` must not change what the drafter knows about the sequence: only
        :meth:`reset` and :meth:`extend` (and the feedback of :meth:`observe` and
        :meth:`observe_top`) do. It may remember what it returned, or the candidate it chose,
        for the :meth:`observe` that follows; that memory must not change any later draft by
        itself. So:

        * calling ``propose`` again with the same budget and no ``extend`` in between returns
          the same draft (a random drafter draws once per context, not once per call);
        * extra calls, with any budget, change no later draft, as long as the draft given to
          :meth:`observe` is the one the most recent ``propose`` returned (as in the loop).

        Drafters look continuations up: until :meth:`observe_top` has offered other candidates,
        every root-to-node path of a draft is a run of the context, or goes on from one round a loop
        (a copy that reads its own tokens past the end of the context: :mod:`lookup.indexes.loop`).
        """

    def observe(self, draft: Draft, accepted: int) -> None:
        """Feedback after :meth:`extend`: ``accepted`` nodes of ``draft`` matched the target.

        ``draft`` is what the most recent :meth:`propose` returned (:data:`EMPTY_DRAFT` when the
        loop skipped propose this step). Default: nothing.
        """

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        """The target's ``wants_top`` most likely next ids after tokens of the sequence:
        ``top[i]`` ([c, k] int64, most likely first) and their probabilities ``probs[i]``
        ([c, k] float16, the softmax of the raw logits) follow ``tokens[i]`` ([c]) at its place
        in the sequence. Called after :meth:`reset` with the prompt's rows (all its tokens but the
        last), then after each :meth:`observe` with the rows of the tokens the step committed
        after: the last committed token and the accepted draft nodes. Never the row of the newest
        committed token (the target has not read it yet; under greedy decoding its top-1 *is* the
        next token), never a rejected draft node's. Live models and the shipped traces (top-8)
        both call it with the same rows. Default: nothing.
        """

    def match_length(self) -> int | None:
        """Length of the match behind the current draft, in ``[0, len(context)]`` (0: no match).

        A query: it changes nothing. None (the default) means this drafter does not report a
        match length; wrappers such as ``adaptive`` then assume a middling one.
        """
        return None

    def evidence(self, draft: Draft) -> Evidence | None:
        """What this drafter's index knows of ``draft``, the draft its most recent :meth:`propose`
        returned (in the context it was proposed in): its source, the match behind it and, for a
        chain, how that match's occurrences continue (:class:`Evidence`). A query: it changes nothing.

        None (the default) means this drafter reports no evidence; ``adaptive`` then judges its drafts
        by its statistics alone (at :meth:`match_length`). Arrays may be the drafter's scratch, valid
        until its next call. ``tests/lookup/test_contract.py`` checks every drafter that reports it.
        """
        return None

    def context_candidate(self, budget: int) -> "tuple[Draft, Evidence | None] | None":
        """Where :meth:`propose` drafts from a history of earlier requests, the draft the context
        alone would give now (at most ``budget`` nodes), with its :meth:`evidence`; else None (the
        default, and for a drafter that keeps no history). ``adaptive`` weighs it against the
        history's draft. A query: it changes nothing, and arrays may be the drafter's scratch, valid
        until its next call."""
        return None

    def fitted_on(self) -> str | None:
        """The hash of the benchmark whose traces the numbers this drafter reads were fitted on (the
        acceptance models' fit file: :class:`lookup.acceptance.Fits`), or None (the default) when it
        reads none. Such a drafter's constructor takes ``fits``: a path to a fit file or the file's
        content as a dict. Numbers fitted on a benchmark flatter a score on that same benchmark, so
        the board scores such a drafter there cross-fitted too: each half of the cases with a fit
        made on the other half (``experiments/competition/cross_fit.py``)."""
        return None

    def keeps_history(self) -> bool:
        """True when this drafter (or one it wraps) carries what earlier requests said into the next
        one (``history=True``): a fresh drafter per request would keep nothing. Default: whether a
        wrapped drafter does."""
        return any(d.keeps_history() for d in self.wrapped()[1:])

    def wants_vocab(self) -> bool:
        """True while this drafter (or one it wraps) wants the vocabulary's strings and has not been
        handed them. Whoever builds a drafter with the strings at hand hands them over once, before
        the first :meth:`reset` (:func:`hand_vocab`): the decoding loop from the target's tokenizer,
        a replay from the benchmark's vocabulary file, the competition's sandbox from its parent; a
        drafter that has them says False from then on. A drafter must draft without them too (a
        target may have no tokenizer, a trace folder no vocabulary file). Default: whether a wrapped
        drafter wants them."""
        return any(d.wants_vocab() for d in self.wrapped()[1:])

    def set_vocab(self, strings: Sequence[str]) -> None:
        """The vocabulary's strings: ``strings[i]`` is the text of token id ``i`` alone, as the
        tokenizer decodes ``[i]`` (special tokens included, spaces and newlines as themselves; a
        token that is only part of a character reads as U+FFFD); ids at or past ``len(strings)`` have
        none. The sequence is shared: read it, keep it, never change it. Called at most once, and only
        while :meth:`wants_vocab`; never changes what the drafter knows of the sequence. Default: hand
        them to each wrapped drafter that wants them."""
        for d in self.wrapped()[1:]:
            if d.wants_vocab():
                d.set_vocab(strings)

    def shareable_history(self) -> "Drafter | None":
        """The drafter, this one or one it wraps, whose history across requests is a
        :class:`lookup.indexes.history.History`: the one kind that requests served side by side can
        share (through :meth:`share_history`). None where there is none (or the history is of
        another kind, as the peers' are). Default: a wrapped drafter's."""
        return next((d for d in self.wrapped()[1:] if d.shareable_history() is d), None)

    def share_history(self, history) -> None:
        """Draft from ``history`` (a cursor of a :class:`lookup.indexes.history.History` that other
        requests share) instead of the history this drafter was made with; called before the first
        :meth:`reset`. Only the drafter that :meth:`shareable_history` names implements it."""
        raise TypeError(f"{self.name} keeps no history that requests can share")

    def params(self) -> dict:
        """Parameters worth logging (JSON-serialisable)."""
        return {}

    def wrapped(self) -> "list[Drafter]":
        """This drafter and every drafter it wraps (``adaptive``'s base, say), found in its attributes."""
        out: list[Drafter] = [self]
        for value in getattr(self, "__dict__", {}).values():  # a drafter with __slots__ wraps none we can see
            if isinstance(value, Drafter) and value is not self:
                out += value.wrapped()
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


def hand_vocab(drafter: Drafter, strings: Callable[[], Sequence[str] | None]) -> None:
    """Hand ``drafter`` the vocabulary's strings if it wants them (:meth:`Drafter.wants_vocab`):
    ``strings()`` is called only then, so that nobody reads or decodes a vocabulary that no drafter
    asked for; when it returns None (no tokenizer, no vocabulary file) the drafter goes without."""
    if drafter.wants_vocab():
        vocab = strings()
        if vocab is not None:
            drafter.set_vocab(vocab)
