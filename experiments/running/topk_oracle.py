"""A ceiling for drafters that also read the target's top-k rows (``recycling``).

The lookup oracle (:mod:`experiments.running.oracle`) bounds drafters that copy from the context.
A drafter that also keeps the target's top-k ids after each token (``Drafter.observe_top``) can
draft a token the context never followed the previous one with, so it can pass that bound (on
MT-bench's first turns, where little of the answer is in the prompt). This bound knows the future
too, and also what such a drafter could hold:

    runs = topk_oracle_runs(seq, start, top_ids)     # the longest correct run at every position
    steps = topk_oracle_steps(case, profile)         # drafting exactly that run, every step

At each step: the lookup oracle's run, then on while the next true token is in the top-k row that
followed the previous token's most recent occurrence in the committed context (the rows such a
drafter holds: the row after token ``q`` comes with the step that commits ``q + 1``), as a tree
that leaves the copied run for the model's own candidates does. It bounds ``recycling``'s trees
(their lookup part is a prefix of the lookup oracle's run, and a node off it has only row
children), not every conceivable use of the rows.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from decoding.generate import StepRecord
from experiments.benchmarks.traces import TraceCase
from experiments.running.oracle import ORACLE_CAP, oracle_runs, sequence_of
from pldcore.cost import CostProfile


def topk_oracle_runs(seq: Sequence[int] | np.ndarray, start: int, top_ids: np.ndarray,
                     cap: int = ORACLE_CAP) -> np.ndarray:
    """The longest run a lookup drafter that reads the top-k rows could have had accepted, at every
    context length ``L`` in ``[start, len(seq))``.  # [T-start] int64

    ``top_ids``: [len(seq) - 1, k] the target's top ids after each token (row ``q`` follows token ``q``).
    Capped at ``cap`` and at the tokens left minus one, as :func:`oracle_runs`.
    """
    seq = np.asarray(seq, dtype=np.int64)
    lookup = oracle_runs(seq, start, cap)
    total = len(seq)
    rows: dict[int, np.ndarray] = {}  # token -> the row after its most recent committed occurrence
    for q in range(max(int(start) - 1, 0)):  # the prompt's rows but the last token's
        rows[int(seq[q])] = top_ids[q]
    runs = lookup.copy()
    for pos in range(int(start), total):
        if pos >= 2:
            rows[int(seq[pos - 2])] = top_ids[pos - 2]  # committed with the step that reached pos - 1
        limit = min(cap, total - pos - 1)
        run = int(lookup[pos - start])
        while run < limit:
            row = rows.get(int(seq[pos + run - 1]))
            if row is None or not np.any(row == seq[pos + run]):
                break
            run += 1
        runs[pos - start] = run
    return runs


def topk_oracle_steps(case: TraceCase, profile: CostProfile, cap: int = ORACLE_CAP) -> list[StepRecord]:
    """The bound's steps over one case: it drafts exactly the run it knows will be accepted (a case
    recorded without top-k rows gets the lookup oracle's)."""
    seq = sequence_of(case)
    start = len(case.prompt)
    runs = (topk_oracle_runs(seq, start, case.top.ids, cap) if case.top is not None
            else oracle_runs(seq, start, cap))
    steps, pos = [], 0
    while pos < len(runs):
        a = int(runs[pos])
        context = start + pos
        steps.append(StepRecord(context, a, a, a + 1, 0.0, profile.cost(a + 1, context)))
        pos += a + 1
    return steps
