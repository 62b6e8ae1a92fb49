"""The doc-qa suite: 2-4 documentation passages as evidence, then a question that one of them answers."""

from __future__ import annotations

import functools
import itertools
import math
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from experiments.benchmarks.prompts import SUITE_SIZE, Prompt, least_used, register_task, spread
from experiments.benchmarks.pydoc_text import PARAGRAPH, Passage, heading, pydoc_passages, python_version


@dataclass(frozen=True)
class _Question:
    kind: str
    text: str
    answer_span: str  # text, present in the target passage, that the question is about


GRAMMAR_RULE = re.compile(r"^[ \t]+([A-Za-z_][\w]*)[ \t]+::=.*$", re.M)
_STATEMENT_TITLE = re.compile(r'^The "(\w+)" statement$')
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


def _ask_section(p: Passage) -> _Question | None:
    if not p.starts_with_heading:
        return None
    q = (f"According to the documentation above, what does the section titled '{p.title}' explain? "
         "Answer in three to five sentences.")
    return _Question("section", q, p.title)


def _ask_grammar(p: Passage) -> _Question | None:
    m = GRAMMAR_RULE.search(p.text)
    if m is None:
        return None
    q = (f"According to the documentation above, what is the grammar rule for `{m.group(1)}`? "
         "Quote the rule, then explain each part in plain words.")
    return _Question("grammar", q, m.group().strip())


def _ask_statement(p: Passage) -> _Question | None:
    m = _STATEMENT_TITLE.match(p.title)
    if m is None or not p.starts_with_heading:
        return None
    q = (f'According to the documentation above, what does the "{m.group(1)}" statement do, '
         "and what restrictions apply to it?")
    return _Question("statement", q, p.title)


def _ask_example(p: Passage) -> _Question | None:
    # The first example line that occurs once, so the question points at one example.
    lines = [ln.strip() for ln in p.text.split("\n") if ln.lstrip().startswith(">>> ")]
    line = next((ln for ln in lines if p.text.count(ln) == 1), None)
    if line is None:
        return None
    q = (f'In the documentation above, what does the interactive example that starts with "{line}" '
         "show? Explain each line of its output.")
    return _Question("example", q, line)


DEFINITION = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)\n\n[ \t]+\S", re.M)  # "object.__repr__(self)" + indented text


def _ask_definition(p: Passage) -> _Question | None:
    m = DEFINITION.search(p.text)
    if m is None:
        return None
    q = f"According to the documentation above, what does `{m.group(1)}()` do, and when is it called or used?"
    return _Question("definition", q, f"{m.group(1)}({m.group(2)})")


_PROSE_START = re.compile(r"^\s*[A-Z][a-z]*\s+\S+\s+\S+")  # "Called by the ...", not "except E as N:"


def prose_sentences(text: str) -> list[str]:
    """Sentences of the prose paragraphs, with line wraps undone.

    Indented paragraphs count when they read like prose: in definition lists such as
    ``object.__repr__(self)`` the description itself is indented.
    """
    sentences = []
    for m in PARAGRAPH.finditer(text):
        para = m.group()
        if heading(para) is not None or not _PROSE_START.match(para) or ">>>" in para or "::=" in para:
            continue
        sentences += SENTENCE_END.split(" ".join(para.split()))
    return sentences


def unique_opening(sentence: str, text: str, min_words: int = 8) -> str | None:
    """The shortest opening of ``sentence`` (at least ``min_words`` words) found once in ``text``."""
    words = sentence.split()
    flat = " ".join(text.split())
    for n in range(min_words, len(words)):
        opening = " ".join(words[:n])
        if flat.count(opening) == 1:
            return opening
    return None


def _ask_sentence(p: Passage) -> _Question | None:
    # Long-enough plain sentences; the middle one, so it is not always the opening line.
    candidates = [s for s in prose_sentences(p.text)
                  if 12 <= len(s.split()) <= 60 and s.endswith(".") and "::=" not in s]
    if not candidates:
        return None
    sentence = candidates[len(candidates) // 2]
    opening = unique_opening(sentence, p.text)
    if opening is None:
        return None
    q = (f'The documentation above contains a sentence that begins "{opening} ...". '
         "Quote the whole sentence and explain what it means.")
    return _Question("sentence", q, sentence)


# Every kind that fits a passage is a candidate; the least used so far is asked.
_QUESTION_KINDS: tuple[Callable[[Passage], _Question | None], ...] = (
    _ask_section, _ask_grammar, _ask_sentence, _ask_definition, _ask_statement, _ask_example,
)

DOC_QA_MAX_CHARS = 6000  # SmolLM2's 8k-token window holds this with room to answer
DOC_QA_HEADER = "Answer the question using only the documentation below.\n\n"


def _questions(p: Passage) -> list[tuple[str, _Question]]:
    """(kind, question) for every question kind that fits passage ``p``."""
    return [(q.kind, q) for q in (ask(p) for ask in _QUESTION_KINDS) if q is not None]


def document_block(k: int, p: Passage, label: str = "### Document {k}") -> str:
    """Passage ``p`` as the ``k``-th document of the evidence, under ``label`` (a format with ``{k}``)."""
    # A passage that starts mid-section gets its section title, so every document is labelled.
    head = label.format(k=k)
    return f"{head}\n{p.text}" if p.starts_with_heading else f"{head}: {p.title} (continued)\n{p.text}"


def _distractors(target: Passage, answer_span: str, pool: Sequence[Passage], n: int, budget: int) -> list[Passage]:
    """Up to ``n`` passages that share no text with the target, do not contain the answer
    span, and fit ``budget`` characters.

    Taken at a fixed stride through the pool from the target's place, so they vary between
    prompts but not between runs. Shared text is checked, not just the topic, because pydoc
    topics overlap ("compound" repeats "class", "for", "try" ...) and a copy of the answer in
    a distractor would make the question ambiguous. The span check catches cross-references
    ("see The standard type hierarchy") to a section the question names.
    """
    span = " ".join(answer_span.split())
    chosen: list[Passage] = []
    seen = _paragraphs(target)
    start = pool.index(target)
    # A stride co-prime with the pool size visits every passage; ~1/7 of it jumps well away from the target.
    stride = next(k for k in itertools.count(len(pool) // 7 + 1) if math.gcd(k, len(pool)) == 1)
    for step in range(1, len(pool)):
        if len(chosen) == n:
            break
        cand = pool[(start + step * stride) % len(pool)]
        if (_document_cost(cand) > budget or not seen.isdisjoint(_paragraphs(cand))
                or span in " ".join(cand.text.split())):
            continue
        chosen.append(cand)
        seen |= _paragraphs(cand)
        budget -= _document_cost(cand)
    return chosen


@functools.lru_cache(maxsize=None)
def _paragraphs(p: Passage) -> frozenset[str]:
    """The passage's substantial paragraphs, whitespace-normalised, for overlap checks."""
    return frozenset(flat for m in PARAGRAPH.finditer(p.text) if len(flat := " ".join(m.group().split())) >= 40)


def _document_cost(p: Passage) -> int:
    """Characters ``p`` adds to the evidence: its text, its longest possible label, the separator."""
    return len(document_block(9, p)) + 2


@register_task("doc-qa")
def _doc_qa() -> list[Prompt]:
    """2-4 documentation passages as evidence, then a question about one of them."""
    pool = pydoc_passages(400, 900, 1800)
    # Targets are passages some question kind fits (nearly all); every passage can be a distractor.
    askable = [p for p in pool if _questions(p)]
    uses: dict[str, int] = {}
    prompts = []
    for i, target in enumerate(spread(askable, SUITE_SIZE)):
        kind, question = least_used(_questions(target), uses)
        budget = (DOC_QA_MAX_CHARS - len(DOC_QA_HEADER) - len("\n\nQuestion: ") - len(question.text)
                  - _document_cost(target))
        docs = _distractors(target, question.answer_span, pool, 1 + i % 3, budget)
        # Rotate where the answer sits, so it is not always the first document.
        at = (i // 3) % (len(docs) + 1)
        docs.insert(at, target)
        body = "\n\n".join(document_block(k + 1, d) for k, d in enumerate(docs))
        text = f"{DOC_QA_HEADER}{body}\n\nQuestion: {question.text}"
        prompts.append(
            Prompt(
                id=f"doc-qa/{i:03d}",
                category="doc-qa",
                turns=(text,),
                meta={"source": "pydoc_data.topics", "topic": target.topic, "part": target.part,
                      "title": target.title, "question_kind": kind,
                      "answer_span": question.answer_span, "answer_document": at + 1,
                      "documents": [f"{d.topic}#{d.part}" for d in docs], "python": python_version()},
            )
        )
    return prompts
