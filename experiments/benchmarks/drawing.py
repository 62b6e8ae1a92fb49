"""What the suites' fresh-prompt generators draw with: a uniform pick, and windows of pydoc topics.

Each suite's generator (registered with its suite: ``register_task(name, fresh=FreshGenerator(...))``)
draws every choice from the ``random.Random`` that :func:`experiments.benchmarks.fresh.fresh_prompts`
seeds per prompt; the pieces two or more suites share live here, once. A generator's
``space()`` counts its choices, so a building block that draws also says how many equally
likely texts it can give (:meth:`Windows.space`).
"""

from __future__ import annotations

import bisect
import functools
import random
from collections import Counter
from dataclasses import dataclass
from typing import Sequence, TypeVar

from experiments.benchmarks.pydoc_text import PARAGRAPH, SENTENCE_END, Passage, heading

__all__ = ["Topic", "Windows", "pick", "topics", "windows"]

_T = TypeVar("_T")


def pick(rng: random.Random, options: Sequence[_T]) -> _T:
    """One of ``options``, uniformly (a sequence; sets are sorted first by the caller)."""
    return options[rng.randrange(len(options))]


# --------------------------------------------------------------------------- pydoc windows

_OPENING = 200  # two windows with different openings (or lengths) are different texts


@dataclass(frozen=True)
class Topic:
    """One pydoc topic and where a window may start or end in it."""

    name: str
    text: str
    starts: tuple[int, ...]  # offsets of paragraph and prose-sentence starts, sorted
    ends: tuple[int, ...]  # offsets just past a paragraph or prose sentence, sorted
    headings: tuple[tuple[int, str], ...]  # (offset, title) of every section heading

    @classmethod
    def cut(cls, name: str, text: str) -> "Topic":
        """Topic ``name`` with text ``text``: where its windows may start and end, and its headings."""
        paras = list(PARAGRAPH.finditer(text))
        starts, ends, headings = set(), set(), []
        for k, m in enumerate(paras):
            para, a = m.group(), m.start()
            title = heading(para)
            if title is not None:
                headings.append((a, title))
                starts.add(a)  # a window may open with a heading, never end with one
                continue
            if not para[0].isspace():  # prose: cut between its sentences too
                starts.add(a)
                for s in SENTENCE_END.finditer(para):
                    ends.add(a + s.start())
                    starts.add(a + s.end())
            # Indented code or grammar explains the prose before it: never cut in between.
            if k + 1 == len(paras) or not paras[k + 1].group()[0].isspace():
                ends.add(a + len(para.rstrip()))
        return cls(name, text, tuple(sorted(starts)), tuple(sorted(ends)), tuple(headings))

    def passage(self, start: int, end: int) -> Passage:
        """The window ``text[start:end]`` as a :class:`Passage` (``part`` is its start offset)."""
        k = bisect.bisect_right(self.headings, (start, "\uffff")) - 1
        title = self.headings[k][1] if k >= 0 else self.name
        return Passage(self.name, start, title, self.text[start:end], k >= 0 and self.headings[k][0] == start)


class Windows:
    """Every window of ``min_chars``..``max_chars`` characters of any pydoc topic that starts and
    ends at a boundary, drawable uniformly (each (topic, start, end) equally likely)."""

    def __init__(self, min_chars: int, max_chars: int):
        self.topics = topics()
        self.rows: list[tuple[int, int, int, int]] = []  # (topic index, start, first end index, end count)
        self.cum: list[int] = []  # windows in rows[:k+1]
        total = 0
        for t, topic in enumerate(self.topics):
            for start in topic.starts:
                lo = bisect.bisect_left(topic.ends, start + min_chars)
                hi = bisect.bisect_right(topic.ends, start + max_chars)
                if hi > lo:
                    self.rows.append((t, start, lo, hi - lo))
                    total += hi - lo
                    self.cum.append(total)
        self.count = total
        self.span: dict[str, tuple[int, int]] = {}  # topic -> [first, end) of its window numbers
        for r, (t, _, _, n) in enumerate(self.rows):
            lo, _ = self.span.get(self.topics[t].name, (self.cum[r] - n, 0))
            self.span[self.topics[t].name] = (lo, self.cum[r])
        # Windows with the same text share their opening and length: at most this many do.
        openings = Counter((self.topics[t].text[s : s + _OPENING]) for t, s, _, _ in self.rows)
        self.max_alike = max(openings.values())

    def draw(self, rng: random.Random) -> Passage:
        """A window, uniformly."""
        return self._window(rng.randrange(self.count))

    def _window(self, k: int) -> Passage:
        """The ``k``-th window (rows are in topic order, so one topic's windows are contiguous)."""
        r = bisect.bisect_right(self.cum, k)
        t, start, lo, _ = self.rows[r]
        topic = self.topics[t]
        return topic.passage(start, topic.ends[lo + k - (self.cum[r - 1] if r else 0)])

    def draw_other(self, rng: random.Random, topic: str) -> Passage:
        """A window of any topic but ``topic``, uniformly."""
        lo, hi = self.span[topic]
        k = rng.randrange(self.count - (hi - lo))
        return self._window(k if k < lo else k + hi - lo)

    def space(self) -> int:
        """``1 / max P(text)`` of one :meth:`draw`, at least."""
        return self.count // self.max_alike

    def space_other(self) -> int:
        """``1 / max P(text)`` of one :meth:`draw_other`, at least."""
        return (self.count - max(hi - lo for lo, hi in self.span.values())) // self.max_alike


@functools.cache
def topics() -> tuple[Topic, ...]:
    """Every pydoc topic, cut at its boundaries, in name order."""
    from pydoc_data.topics import topics as texts

    return tuple(Topic.cut(name, texts[name]) for name in sorted(texts))


@functools.cache
def windows(min_chars: int, max_chars: int) -> Windows:
    """The windows of ``min_chars``..``max_chars`` characters (built once per size)."""
    return Windows(min_chars, max_chars)
