"""Offline task suites: the prompts that traces, comparisons and the leaderboard run on.

This is the public face of the benchmark data; the work is done in one module per job:

=============================================== ==============================================
module                                          its one job
=============================================== ==============================================
:mod:`experiments.benchmarks.prompts`           the :class:`Prompt` type, the task registry,
                                                helpers suites are built with
:mod:`experiments.benchmarks.pydoc_text`        passages of Python's documentation
:mod:`experiments.benchmarks.suites`            the embedded suites, one module each (its
                                                docstring lists them and how to add one)
:mod:`experiments.benchmarks.user_data`         prompts from the user's own files
=============================================== ==============================================

Four suites are embedded and need no network: ``summarization``, ``doc-qa``, ``code-edit``
and ``mt-bench``. :func:`load_task` returns a suite's prompts, the same ones on every machine
with the same Python minor version; :func:`prompts_digest` tells whether two runs used the
same prompts.

Users bring their own data with :func:`load_jsonl_questions` (MT-bench / Spec-Bench
question files) or :func:`load_dataset_file` (any ``.jsonl`` / ``.json`` / ``.parquet``
records plus a ``str.format`` template). More suites register with :func:`register_task`:
a new module in ``experiments/benchmarks/suites/`` imported by its ``__init__``, or any
code of the user's own; a suite registered with a :class:`FreshGenerator` also gets fresh cases
on the board (:mod:`experiments.benchmarks.fresh`), and every registered suite must have one.
"""

from __future__ import annotations

from experiments.benchmarks import suites  # importing the package registers the embedded suites
from experiments.benchmarks.prompts import (
    SUITE_SIZE,
    FreshGenerator,
    Prompt,
    available_tasks,
    group_of,
    load_task,
    prompts_digest,
    register_task,
)
from experiments.benchmarks.user_data import load_dataset_file, load_jsonl_questions

__all__ = [
    "FreshGenerator",
    "Prompt",
    "SUITE_SIZE",
    "available_tasks",
    "group_of",
    "load_dataset_file",
    "load_jsonl_questions",
    "load_task",
    "prompts_digest",
    "register_task",
]

del suites  # imported for its registrations only; not part of this facade
