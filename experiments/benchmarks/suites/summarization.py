"""The summarization suite: long passages of Python's documentation, each with an instruction to summarize it.

A fresh prompt draws a window of one pydoc topic (start and end at sentence or paragraph boundaries,
1,500-6,000 characters), with a composed instruction (opening x audience x form x length x extra
requirement x context).
"""

from __future__ import annotations

import functools
import itertools
import math
import random

from experiments.benchmarks.drawing import pick, windows
from experiments.benchmarks.prompts import SUITE_SIZE, FreshGenerator, Prompt, register_task, spread
from experiments.benchmarks.pydoc_text import pydoc_passages, python_version

# Varied phrasing, cycled in order, so a drafter is not tuned to one instruction.
SUMMARY_INSTRUCTIONS = (
    "Summarize the following documentation in one paragraph.",
    "Summarize the following documentation as a bulleted list of its key points.",
    "Summarize the following Python documentation for a programmer who has never read it. "
    "Keep the technical terms exact.",
    "Summarize the following documentation in three to five sentences, then list every rule "
    "or restriction it states.",
    "Write a concise summary of the following documentation, quoting the most important "
    "sentence verbatim.",
)


# --------------------------------------------------------------------------- fresh prompts

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


def _fresh(rng: random.Random, ident: str) -> Prompt:
    passage = windows(1500, 6000).draw(rng)
    instruction = SUMMARY_INSTRUCTIONS[0]
    while instruction in SUMMARY_INSTRUCTIONS:  # uniform over the other compositions
        instruction = _sum_instruction(tuple(pick(rng, options) for options in _SUM_PIECES))
    return Prompt(ident, "summarization", (f"{instruction}\n\n{passage.text}",),
                  meta={"source": "pydoc_data.topics", "topic": passage.topic, "start": passage.part,
                        "chars": len(passage.text), "title": passage.title, "instruction": instruction,
                        "python": python_version()})


@functools.cache
def _fresh_space() -> int:
    # The instruction ends at the first blank line, so (instruction, window) is read back from
    # the text. Distinct piece tuples make distinct instructions (counted, not assumed: the set
    # has every tuple), so the instruction is uniform over the compositions but the suite's.
    compositions = math.prod(map(len, _SUM_PIECES))
    instructions = {_sum_instruction(p) for p in itertools.product(*_SUM_PIECES)}
    assert len(instructions) == compositions, "two piece tuples compose one instruction"
    return (len(instructions - set(SUMMARY_INSTRUCTIONS))) * windows(1500, 6000).space()


# --------------------------------------------------------------------------- the suite and its fresh generator


@register_task("summarization", fresh=FreshGenerator(_fresh, _fresh_space))
def _summarization() -> list[Prompt]:
    """Long documentation passages (1,500-6,000 characters) with a summarization instruction."""
    passages = spread(pydoc_passages(1500, 3000, 6000), SUITE_SIZE)
    prompts = []
    for i, p in enumerate(passages):
        instruction = SUMMARY_INSTRUCTIONS[i % len(SUMMARY_INSTRUCTIONS)]
        prompts.append(
            Prompt(
                id=f"summarization/{i:03d}",
                category="summarization",
                turns=(f"{instruction}\n\n{p.text}",),
                meta={"source": "pydoc_data.topics", "topic": p.topic, "part": p.part,
                      "title": p.title, "python": python_version()},
            )
        )
    return prompts
