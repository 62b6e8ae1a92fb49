"""The cases a comparison runs: the prompts it selects, and each turn of each prompt as token ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from experiments.benchmarks import tasks as task_suites
from experiments.benchmarks.tasks import Prompt
from experiments.running.methods import Sampling
from pldcore.errors import PLDError


@dataclass
class Case:
    """One turn of one prompt, as token ids."""

    id: str  # "summarization/003" or "mt-bench/81#2"
    category: str
    turn: int  # 1-based
    ids: list[int]


def conversation_cases(target, prompt: Prompt, answer: Callable[[Case], list[int]]) -> Iterator[Case]:
    """The turns of ``prompt`` as cases; each later turn follows the model's own earlier answers.

    ``answer(case)`` gives the tokens the model answered to a case (called after the case
    was yielded, so the caller can measure it first).
    """
    history: list[dict] = []
    for turn, user in enumerate(prompt.turns, start=1):
        history.append({"role": "user", "content": user})
        case_id = prompt.id if len(prompt.turns) == 1 else f"{prompt.id}#{turn}"
        case = Case(case_id, prompt.category, turn, target.chat_ids(history, prompt.system))
        yield case
        text = target.tokenizer.decode(answer(case), skip_special_tokens=True).strip()
        history.append({"role": "assistant", "content": text})


def check_prompts(prompts: int) -> None:
    """``--prompts``: how many prompts of each task (live) or traces of each task (replay) to run."""
    if prompts < 1:
        raise PLDError(f"--prompts must be >= 1, got {prompts}")


def check_settings(max_new_tokens: int, prompts: int, sampling: Sampling) -> None:
    if max_new_tokens < 1:
        raise PLDError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    check_prompts(prompts)
    if sampling.temperature < 0:
        raise PLDError(f"--temperature must be >= 0, got {sampling.temperature}")
    if not 0 < sampling.top_p <= 1:
        raise PLDError(f"--top-p must be in (0, 1], got {sampling.top_p}")
    if sampling.top_k < 0:
        raise PLDError(f"--top-k must be >= 0, got {sampling.top_k}")


def select_prompts(args) -> list[Prompt]:
    """The prompts a comparison runs: the user's file when given, else the embedded task suites."""
    limit = None if args.full else args.prompts
    if getattr(args, "questions", None):
        prompts = task_suites.load_jsonl_questions(args.questions, category=args.category)
        by_category: dict[str, list] = {}
        for p in prompts:  # --prompts N applies per category, as for the embedded suites
            by_category.setdefault(p.category, []).append(p)
        return [p for group in by_category.values() for p in group[:limit]]
    if getattr(args, "dataset", None):
        if not args.template:
            raise PLDError("--dataset needs --template, e.g. --template 'Summarize:\\n{article}'")
        return task_suites.load_dataset_file(args.dataset, args.template, category=args.category or "custom",
                                             limit=limit)
    names = task_suites.available_tasks() if args.tasks is None else [t.strip() for t in args.tasks.split(",")]
    return [p for name in names for p in task_suites.load_task(name, limit)]
