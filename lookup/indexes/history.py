"""A history across requests: what earlier requests said, searchable from the current one.

    history = History()
    history.restart(prompt)          # a new request: its context so far
    history.follow(tokens)           # the request grows
    length, start, stop = history.match()   # longest suffix of the request found in earlier ones
    draft = history.tokens[start:stop]
    history.agreement(draft, support, agree)   # how the match's other occurrences continue
    history.add(output)              # the request is over: what it said joins the history
    other = history.cursor()         # another request, served beside it: its own match, the same history

Drafting from the current context alone cannot propose what the context never held; a server
answering similar requests sees the same phrases again in other requests' outputs. This index
keeps what earlier requests added (each as its own segment; the drafters add outputs) in one suffix automaton
and follows the current request through it by matching statistics
(:func:`lookup.indexes.automaton_kernels.follow`): after every token it knows the longest suffix of the
current request that occurs in an earlier one, and the most recent such occurrence. A match may
span two earlier requests; the continuation it offers stops at the end of the request it is in.

Only what a request has committed is added, and only once it is over (``add``): a stream of
requests replayed in order gives each request a history of earlier requests only. Requests served
side by side (a serving engine's batch) share one history through cursors (:meth:`History.cursor`):
what any of them adds, all of them see, each following its own request through it.

The idea follows SuffixDecoding's global suffix tree over earlier responses (arctic-inference,
``suffix_decoding/cache.py``); the index is this package's suffix automaton.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lookup.indexes import automaton_kernels as K
from lookup.indexes.automaton import SuffixAutomaton, _as_tokens

#: tokens kept by default; past it the oldest requests are dropped (the index is rebuilt)
DEFAULT_MAX_TOKENS = 1 << 20
#: a cursor's newest tokens kept to follow again when the index changes under it: a match found
#: afresh is at most this long (drafts copy far fewer tokens), and following again costs this much
REFOLLOW_TOKENS = 1024


class _Recent:
    """The newest ``REFOLLOW_TOKENS`` or more tokens of a request, appended in amortised O(1)."""

    def __init__(self) -> None:
        self.buffer = np.zeros(2 * REFOLLOW_TOKENS, dtype=np.int64)  # [2W] the newest tokens at [:size]
        self.size = 0

    def clear(self) -> None:
        self.size = 0

    def append(self, new: np.ndarray) -> None:
        if len(new) >= REFOLLOW_TOKENS:  # these alone fill the window
            new, self.size = new[-REFOLLOW_TOKENS:], 0
        elif self.size + len(new) > len(self.buffer):  # full: keep the newest W - len(new), then append
            keep = REFOLLOW_TOKENS - len(new)
            self.buffer[:keep] = self.buffer[self.size - keep:self.size].copy()
            self.size = keep
        self.buffer[self.size:self.size + len(new)] = new
        self.size += len(new)

    def tokens(self) -> np.ndarray:
        """The newest tokens, at most 2 W of them (a view).  # [m] int64"""
        return self.buffer[:self.size]


class _Index:
    """What every cursor of one history shares: the automaton over the earlier requests, where each
    request starts in it, and a version that changes whenever they do."""

    def __init__(self, max_tokens: int, occurrences: int, max_depth: int) -> None:
        self.max_tokens = int(max_tokens)
        self.occurrences = occurrences
        self.sam = SuffixAutomaton(occurrences=occurrences, max_depth=max_depth)
        self.starts: list[int] = []  # start offset of each request in the index
        self.start_array = np.zeros(0, dtype=np.int64)  # the same, for the kernels
        self.version = 0

    def add(self, request: np.ndarray) -> None:
        if len(self.sam) + len(request) > self.max_tokens:
            self._drop_oldest(len(request))
        self.starts.append(len(self.sam))
        self.sam.extend(request[-self.max_tokens:])
        self._changed()

    def _drop_oldest(self, incoming: int) -> None:
        """Drop the oldest requests until the newest ones and ``incoming`` tokens fit in half the budget."""
        bounds = self.starts + [len(self.sam)]
        keep, total = len(self.starts), incoming
        while keep > 0 and total + bounds[keep] - bounds[keep - 1] <= self.max_tokens // 2:
            total += bounds[keep] - bounds[keep - 1]
            keep -= 1
        kept = self.sam.sequence[bounds[keep]:].copy()
        self.starts = [start - bounds[keep] for start in self.starts[keep:]]
        self.sam.reset(kept)

    def _changed(self) -> None:
        self.start_array = np.array(self.starts, dtype=np.int64)
        self.version += 1


class History:
    """Earlier requests (a suffix automaton over them) and the current request's match in them.

    Args:
        max_tokens: tokens of history kept; when an added request would pass it, the oldest
            requests are dropped (until at most half of it is left) and the index is rebuilt.
        occurrences: earlier occurrences remembered per match (the most recent ones), for
            :meth:`agreement`.
        max_depth: see :class:`lookup.indexes.automaton.SuffixAutomaton` (``suffix-automaton`` leaves the
            history at this default, 16, whatever its own automaton's).
    """

    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS, occurrences: int = 1, max_depth: int = 16) -> None:
        if max_tokens < 1 or occurrences < 1:
            raise ValueError(f"max_tokens and occurrences must be >= 1, got {max_tokens} and {occurrences}")
        self._follow_index(_Index(max_tokens, occurrences, max_depth))

    def _follow_index(self, index: _Index) -> None:
        self._index = index
        self._ends = np.zeros(index.occurrences, dtype=np.int64)  # [occurrences] scratch for agreement()
        self._stops = np.zeros(index.occurrences, dtype=np.int64)  # [occurrences] the same
        self._recent = _Recent()  # the current request's newest tokens, to follow again
        self._state, self._length = 0, 0
        self._version = index.version  # of the index the state was found in
        self._matched: tuple[int, int, int] | None = None

    def cursor(self) -> "History":
        """Another request's view of this history, served beside this one: it shares the earlier
        requests (what either adds, both see) and follows a request of its own (empty until
        :meth:`restart`)."""
        other = History.__new__(History)
        other._follow_index(self._index)
        return other

    # -- the history ------------------------------------------------------------------------
    @property
    def max_tokens(self) -> int:
        return self._index.max_tokens

    @property
    def tokens(self) -> np.ndarray:
        """Every earlier request, one after the other (a view).  # [n] int32"""
        return self._index.sam.sequence

    @property
    def version(self) -> int:
        """Changes whenever a request is added (by this cursor or another sharing the history)."""
        return self._index.version

    @property
    def requests(self) -> int:
        """Earlier requests held."""
        return len(self._index.starts)

    def add(self, request: Sequence[int] | np.ndarray) -> None:
        """A request is over: its tokens (what the caller keeps of it: the drafters keep its output) join the
        history, for every cursor. Each cursor's request (its newest :data:`REFOLLOW_TOKENS`) is then
        followed again through the changed index, when next asked (the index's states may have been
        split or rebuilt under it). A drafter adds and then restarts, which follows afresh anyway."""
        request = _as_tokens(request)
        if len(request):
            self._index.add(request)

    # -- the current request ----------------------------------------------------------------
    def restart(self, context: Sequence[int] | np.ndarray = ()) -> None:
        """A new request begins with ``context``: its match starts over."""
        self._recent.clear()
        self._state, self._length = 0, 0
        self._version = self._index.version
        self._matched = None
        self.follow(context)

    def follow(self, tokens: Sequence[int] | np.ndarray) -> None:
        """The current request grows by ``tokens``."""
        if not len(tokens):
            return
        new = _as_tokens(tokens)
        self._recent.append(new)
        if self._current():
            self._advance(new)

    def _advance(self, new: np.ndarray) -> None:
        sam = self._index.sam
        if len(sam):
            self._state, self._length = K.follow(sam.states, sam.table, sam.meta, self._state, self._length,
                                                 new, len(new))
        self._matched = None

    def _current(self) -> bool:
        """Bring the match up to date with the index: follow the request again where the index changed
        under it. False when it was followed again (the newest tokens included)."""
        if self._version == self._index.version:
            return True
        self._version = self._index.version
        self._state, self._length = 0, 0
        # the newest tokens only: a longer match than they hold is rare and no draft needs it
        recent = self._recent.tokens()
        if len(recent):
            self._advance(recent[-REFOLLOW_TOKENS:])  # a slice of a 1-d buffer: contiguous
        self._matched = None
        return False

    def match_length(self) -> int:
        """The length of the current request's longest suffix found in the history (0: none), whether
        or not anything follows it there (:meth:`match` needs something to copy)."""
        self._current()
        return int(self._length)

    def match(self) -> tuple[int, int, int]:
        """(length, start, stop): the longest suffix of the current request found in the history,
        and where the tokens after its most recent occurrence are, ``tokens[start:stop]`` (up to the
        end of the request that occurrence is in). (0, 0, 0) when nothing matches or nothing follows.
        """
        self._current()
        if self._matched is None:  # a drafter asks several times a step: once per change is enough
            self._matched = self._find_match()
        return self._matched

    def _find_match(self) -> tuple[int, int, int]:
        if self._length <= 0:
            return 0, 0, 0
        sam = self._index.sam
        end, stop = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
        if not K.recent_ends(sam.states, self._state, len(sam), end):
            end[0] = sam.states[self._state, K.FIRST]
        K.request_stops(self._index.start_array, len(sam), end, 1, stop)
        start = int(end[0]) + 1
        return (self._length, start, int(stop[0])) if start < stop[0] else (0, 0, 0)

    def agreement(self, draft: np.ndarray, support: np.ndarray, agree: np.ndarray) -> int:
        """How the remembered occurrences of the current match continue (the most recent first, as
        :meth:`match` copies from), against ``draft`` ([n] int64), each up to the end of the request
        it is in: per depth ``d``, ``support[d]`` occurrences continue with ``draft[:d]`` and have a
        token at ``d``, and ``agree[d]`` of them continue with ``draft[d]`` (both [>= n] int64,
        overwritten up to n; :func:`lookup.indexes.automaton_kernels.chain_agreement`). Returns how many
        occurrences were read (0 when nothing matches)."""
        if len(support) < len(draft) or len(agree) < len(draft):
            raise ValueError(f"support and agree need room for the {len(draft)} draft tokens")
        self._current()
        draft = _as_tokens(draft)  # the one array type the kernel is compiled for
        sam = self._index.sam
        k = int(K.recent_ends(sam.states, self._state, len(sam), self._ends)) if self._length > 0 else 0
        K.request_stops(self._index.start_array, len(sam), self._ends, k, self._stops)
        K.chain_agreement(sam.tokens, self._stops, self._ends, k, draft, support, agree)
        return k
