"""The summarization suite: long passages of Python's documentation, each with an instruction to summarize it."""

from __future__ import annotations

from experiments.benchmarks.prompts import SUITE_SIZE, Prompt, register_task, spread
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


@register_task("summarization")
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
