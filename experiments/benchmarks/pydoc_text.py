"""Passages of Python's own documentation (``pydoc_data.topics``), cut at paragraph boundaries.

The summarization and doc-qa suites draw their text from here. ``pydoc_data`` is part of the
standard library, so the passages need no network and are the same on every machine with the
same Python minor version (its text changes between versions; :func:`python_version` is
recorded in each prompt's ``meta``).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass

__all__ = ["PARAGRAPH", "SENTENCE_END", "Passage", "heading", "pydoc_passages", "python_version"]


@dataclass(frozen=True)
class Passage:
    """A contiguous slice of one ``pydoc_data.topics`` entry, cut at paragraph boundaries."""

    topic: str  # the pydoc topic name, e.g. "try"
    part: int  # index of this slice within the topic
    title: str  # the heading of the section the slice starts in
    text: str
    starts_with_heading: bool  # the slice opens with its own section heading


@dataclass(frozen=True)
class _Unit:
    """Paragraphs that must stay together: a heading with its first paragraph, prose with its code."""

    start: int  # character offsets into the topic text
    end: int
    title: str
    starts_section: bool


_HEADING_MARKS = frozenset("*=-~^")
PARAGRAPH = re.compile(r"(?:[^\n]*\S[^\n]*(?:\n|$))+")  # a run of non-blank lines
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")  # the gap between two sentences of prose


def heading(paragraph: str) -> str | None:
    """The title if ``paragraph`` opens with a reST-style heading (a title line, then an underline)."""
    lines = paragraph.split("\n")
    if len(lines) < 2 or not lines[0].strip() or lines[0][0].isspace():
        return None
    mark = lines[1].rstrip()
    if len(mark) == len(lines[0].rstrip()) and len(set(mark)) == 1 and mark[0] in _HEADING_MARKS:
        return lines[0].rstrip()
    return None


def _units(text: str) -> list[_Unit]:
    """Split a topic into units that a chunk boundary may fall between."""
    units: list[_Unit] = []
    title = ""
    glue_next = False  # a heading alone must not end a chunk
    for m in PARAGRAPH.finditer(text):
        para = m.group()
        title_here = heading(para)
        # Indented paragraphs are code, grammar or tables that explain the prose before them.
        if units and (glue_next or para[0].isspace()) and title_here is None:
            units[-1] = _Unit(units[-1].start, m.end(), units[-1].title, units[-1].starts_section)
        else:
            title = title_here or title
            units.append(_Unit(m.start(), m.end(), title, title_here is not None))
        glue_next = title_here is not None and para.rstrip().count("\n") == 1
    return units


def _pack(units: list[_Unit], min_chars: int, target_chars: int, max_chars: int) -> list[list[_Unit]]:
    """Greedily group units into chunks of at most ``max_chars``.

    A chunk also ends at a section heading once it has ``target_chars``, so chunks tend
    to be whole sections rather than arbitrary windows. Units longer than ``max_chars``
    become chunks of their own, which the caller drops.
    """
    chunks: list[list[_Unit]] = []
    for unit in units:
        if chunks:
            cur = chunks[-1]
            size = unit.end - cur[0].start
            if size <= max_chars and not (unit.starts_section and cur[-1].end - cur[0].start >= target_chars):
                cur.append(unit)
                continue
        chunks.append([unit])
    # A short tail reads better as the end of the previous chunk than as its own passage.
    tail_chars = chunks[-1][-1].end - chunks[-1][0].start if chunks else 0
    if len(chunks) > 1 and tail_chars < min_chars and chunks[-1][-1].end - chunks[-2][0].start <= max_chars:
        tail = chunks.pop()
        chunks[-1].extend(tail)
    return chunks


@functools.lru_cache(maxsize=None)
def pydoc_passages(min_chars: int, target_chars: int, max_chars: int) -> tuple[Passage, ...]:
    """All passages of ``min_chars``..``max_chars`` characters, ordered by (topic, part).

    Chunks aim for ``target_chars`` and end at a section heading once they reach it.
    """
    from pydoc_data.topics import topics

    passages = []
    for topic in sorted(topics):
        text = topics[topic]
        for part, chunk in enumerate(_pack(_units(text), min_chars, target_chars, max_chars)):
            body = text[chunk[0].start : chunk[-1].end].rstrip()
            if min_chars <= len(body) <= max_chars:
                passages.append(Passage(topic, part, chunk[0].title, body, chunk[0].starts_section))
    return tuple(passages)


def python_version() -> str:
    """``"major.minor"`` of the running Python, which fixes the ``pydoc_data`` text."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"
