"""The doc-qa suite: 2-4 documentation passages as evidence, then a question that one of them answers.

A fresh prompt draws a target window (700-1,800 characters), a question about it (a sentence, a
quoted term, a section, a grammar rule, an example, a definition, or the passage itself; a
phrasing, an answer form, a header), 1-3 distractor windows from other topics that share no text
with it, and where the target sits.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from experiments.benchmarks.drawing import pick, windows
from experiments.benchmarks.prompts import SUITE_SIZE, FreshGenerator, Prompt, least_used, register_task, spread
from experiments.benchmarks.pydoc_text import (PARAGRAPH, SENTENCE_END, Passage, heading, pydoc_passages,
                                              python_version)


@dataclass(frozen=True)
class _Question:
    kind: str
    text: str
    answer_span: str  # text, present in the target passage, that the question is about


GRAMMAR_RULE = re.compile(r"^[ \t]+([A-Za-z_][\w]*)[ \t]+::=.*$", re.M)
_STATEMENT_TITLE = re.compile(r'^The "(\w+)" statement$')


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


def _document_cost(p: Passage, label: str = "### Document {k}") -> int:
    """Characters ``p`` adds to the evidence under ``label``: its text, its longest possible label, the separator."""
    return len(document_block(9, p, label)) + 2


# --------------------------------------------------------------------------- fresh prompts


@dataclass(frozen=True)
class _QuestionKind:
    """Questions of one kind: the things in a passage it can ask about, and its phrasings."""

    name: str
    items: Callable[[Passage], list[tuple[str, str]]]  # passage -> [(slot text, answer span)]
    phrasings: tuple[str, ...]  # each with one "{x}"


_QUOTED_TERM = re.compile(r'"([A-Za-z_][\w.]*(?:\(\))?)"')
_OPENING_WORDS = 8


def _terms(p: Passage) -> list[tuple[str, str]]:
    # Quoted names ("__init__()", "except") the passage mentions; the question quotes one.
    return [(t, f'"{t}"') for t in sorted(set(_QUOTED_TERM.findall(p.text))) if len(t) >= 3]


def _sentences(p: Passage) -> list[tuple[str, str]]:
    out = []
    for s in prose_sentences(p.text):
        if 12 <= len(s.split()) <= 60 and s.endswith(".") and "::=" not in s:
            opening = unique_opening(s, p.text)
            if opening is not None:
                out.append((opening, s))
    return sorted(set(out))


def _sections(p: Passage) -> list[tuple[str, str]]:
    titles = [t for m in PARAGRAPH.finditer(p.text) if (t := heading(m.group())) is not None]
    return [(t, t) for t in sorted(set(titles))]


def _grammar_rules(p: Passage) -> list[tuple[str, str]]:
    first: dict[str, str] = {}
    for m in GRAMMAR_RULE.finditer(p.text):
        first.setdefault(m.group(1), m.group().strip())
    return sorted(first.items())


def _examples(p: Passage) -> list[tuple[str, str]]:
    lines = {ln.strip() for ln in p.text.split("\n") if ln.lstrip().startswith(">>> ")}
    return [(ln, ln) for ln in sorted(lines) if p.text.count(ln) == 1]


def _definitions(p: Passage) -> list[tuple[str, str]]:
    return sorted({(m.group(1), f"{m.group(1)}({m.group(2)})") for m in DEFINITION.finditer(p.text)})


def _whole(p: Passage) -> list[tuple[str, str]]:
    # Always applies: the passage's first words name the document the question is about.
    opening = " ".join(p.text.split()[:_OPENING_WORDS])
    return [(opening, opening)]


_FRESH_KINDS: tuple[_QuestionKind, ...] = (
    _QuestionKind("sentence", _sentences, (
        'The documentation above contains a sentence that begins "{x} ...". Quote the whole sentence and explain what it means.',
        'Find the sentence in the documentation above that starts with "{x}". Quote it in full, then restate it in your own words.',
        'Which sentence of the documentation above begins "{x}"? Quote it, then explain why it matters.',
        'Quote the complete sentence of the documentation above that opens with "{x}", and explain it with an example.',
        'In the documentation above, one sentence starts "{x} ...". What does it say, and what follows from it?',
        'Explain the sentence of the documentation above that begins "{x}": quote it, then explain each of its claims.',
    )),
    _QuestionKind("term", _terms, (
        'What does the documentation above say about "{x}"? Quote the relevant sentences and explain them.',
        'According to the documentation above, what is "{x}" and how is it used?',
        'Explain every statement the documentation above makes about "{x}".',
        'Using only the documentation above, describe the role of "{x}" in detail.',
        'Where does the documentation above mention "{x}", and what does it say about it each time?',
        'Summarize what a reader learns about "{x}" from the documentation above.',
    )),
    _QuestionKind("section", _sections, (
        "According to the documentation above, what does the section titled '{x}' explain?",
        "Summarize the section '{x}' of the documentation above.",
        "What are the main rules described in the section '{x}' of the documentation above?",
        "Explain the section '{x}' of the documentation above to someone new to Python.",
        "What does the documentation above say in its section '{x}'? List the key points.",
        "Describe the purpose of the section titled '{x}' in the documentation above, point by point.",
    )),
    _QuestionKind("grammar", _grammar_rules, (
        "According to the documentation above, what is the grammar rule for `{x}`? Quote the rule, then explain each part in plain words.",
        "Quote the grammar rule that defines `{x}` in the documentation above and explain what it allows.",
        "How does the documentation above define `{x}` in its grammar? Quote the rule and give an example it matches.",
        "Explain, symbol by symbol, the grammar rule for `{x}` given in the documentation above.",
        "What syntax does the rule `{x}` in the documentation above describe? Quote it first.",
        "Write out the grammar rule for `{x}` from the documentation above and explain each alternative.",
    )),
    _QuestionKind("example", _examples, (
        'In the documentation above, what does the interactive example that starts with "{x}" show? Explain each line of its output.',
        'Walk through the example in the documentation above that begins with "{x}", line by line.',
        'What is the example starting "{x}" in the documentation above meant to demonstrate?',
        'Explain the output of the interactive session in the documentation above that starts with "{x}".',
        'Quote the example that begins "{x}" from the documentation above and explain what each line does.',
        'Why does the example beginning "{x}" in the documentation above produce the output it shows?',
    )),
    _QuestionKind("definition", _definitions, (
        "According to the documentation above, what does `{x}()` do, and when is it called or used?",
        "Explain `{x}()` as described in the documentation above, including its parameters.",
        "What does the documentation above say about `{x}()`? Quote its description.",
        "When is `{x}()` used, according to the documentation above, and what should it return?",
        "Describe the behaviour of `{x}()` that the documentation above specifies.",
        "Summarize the documentation above's entry for `{x}()` and give an example of its use.",
    )),
    _QuestionKind("passage", _whole, (  # last: asked only where no other kind fits
        'What does the document that begins "{x}" explain? Answer using only the documentation above.',
        'Explain in detail the document above that starts with "{x}".',
        'Summarize the key facts of the document beginning "{x}" above.',
        'What rules or behaviour does the document that opens with "{x}" describe?',
        'List and explain the main points of the document above that begins "{x}".',
        'What should a programmer remember from the document that starts "{x}"?',
    )),
)
_QA_SUFFIXES = (
    "", " Answer in three to five sentences.", " Use only facts stated in the documentation.",
    " Quote the documentation where it helps.", " Give a short example if the documentation has one.",
    " Answer in a numbered list.", " Be precise and complete.", " Name the document your answer comes from.",
    " Explain it so that a beginner can follow.", " Mention any exceptions it notes.",
)
_QA_HEADERS = (  # the suite's header is left out, so no fresh prompt can equal a shipped one
    "Use only the documentation below to answer the question.\n\n",
    "Read the documentation below, then answer the question at the end.\n\n",
    "Here is some Python documentation. Answer the question after it using only what it says.\n\n",
    "Answer the question at the end from the documents below; do not use outside knowledge.\n\n",
    "The following documents are excerpts of the Python reference. Answer the question below them.\n\n",
    "Answer the question below. Base your answer only on these documents.\n\n",
    "Below are several documents and then a question. Answer it from the documents alone.\n\n",
    "Answer the final question using nothing but the documentation that follows.\n\n",
)
assert DOC_QA_HEADER not in _QA_HEADERS
_QA_LABELS = ("### Document {k}", "## Document {k}", "### Source {k}", "### Excerpt {k}", "**Document {k}**",
              "### Doc {k}", "### Reference {k}")
_QA_MARKERS = ("Question: ", "Q: ", "My question: ", "Question to answer: ")
_QA_DOCS = (700, 1800)  # characters per document: the suite takes 400-1,800, mostly near 900-1,800
_QA_MAX_DISTRACTORS = 3
# Draws per distractor. A draw shares text with the target (or holds the answer) rarely, so the
# first distractor takes its last draw regardless, and a prompt never lacks one.
_QA_TRIES = 10


def _fresh(rng: random.Random, ident: str) -> Prompt:
    pool = windows(*_QA_DOCS)
    target = pool.draw(rng)
    kinds = [(k, items) for k in _FRESH_KINDS if (items := k.items(target))]
    kind, items = pick(rng, kinds[:-1] or kinds)  # the last, "passage", only where no other fits
    slot, span = pick(rng, items)
    question = pick(rng, kind.phrasings).format(x=slot) + pick(rng, _QA_SUFFIXES)
    header, label, marker = pick(rng, _QA_HEADERS), pick(rng, _QA_LABELS), pick(rng, _QA_MARKERS)
    n = 1 + rng.randrange(_QA_MAX_DISTRACTORS)
    budget = DOC_QA_MAX_CHARS - len(header) - len("\n\n") - len(marker) - len(question) - _document_cost(target, label)
    assert budget >= _document_cost(target, label) + 200, "a first distractor of any length must fit"
    docs, seen, flat_span, clean = [], _paragraphs(target), " ".join(span.split()), True
    for j in range(n):
        for attempt in range(_QA_TRIES):
            cand = pool.draw_other(rng, target.topic)
            ok = seen.isdisjoint(_paragraphs(cand)) and flat_span not in " ".join(cand.text.split())
            if _document_cost(cand, label) <= budget and (ok or (j == 0 and attempt == _QA_TRIES - 1)):
                clean &= ok
                break
        else:  # the budget is spent, or every draw overlapped: fewer distractors
            break
        docs.append(cand)
        seen |= _paragraphs(cand)
        budget -= _document_cost(cand, label)
    at = rng.randrange(len(docs) + 1)
    docs.insert(at, target)
    body = "\n\n".join(document_block(k + 1, d, label) for k, d in enumerate(docs))
    return Prompt(ident, "doc-qa", (f"{header}{body}\n\n{marker}{question}",),
                  meta={"source": "pydoc_data.topics", "topic": target.topic, "start": target.part,
                        "title": target.title, "question_kind": kind.name, "answer_span": span,
                        "answer_document": at + 1, "clean": clean,  # clean: no distractor shares text with the target
                        "documents": [[d.topic, d.part, d.part + len(d.text)] for d in docs],
                        "python": python_version()})


def _fresh_space() -> int:
    # A text fixes its header, label style, question marker, question and documents; the target
    # is one of <= 4 documents, so P(text) <= 4 * max P(target) * P(question | target) * P(first
    # distractor), where the question is bounded by its phrasing and suffix alone (the kind and
    # the item may have one option) and the first distractor by _QA_TRIES draws of a window of
    # another topic.
    pool = windows(*_QA_DOCS)
    phrasings = min(len(set(k.phrasings)) for k in _FRESH_KINDS)
    surface = len(set(_QA_HEADERS)) * len(set(_QA_LABELS)) * len(set(_QA_MARKERS))
    return (surface * phrasings * len(set(_QA_SUFFIXES)) * pool.space() * pool.space_other()
            // (4 * _QA_TRIES))


# --------------------------------------------------------------------------- the suite and its fresh generator


@register_task("doc-qa", fresh=FreshGenerator(_fresh, _fresh_space))
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
