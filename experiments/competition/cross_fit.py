"""Cross-fitted scores: an entry that reads numbers fitted on the benchmark it is scored on, scored
with fits that never saw the case.

``adaptive``'s acceptance models are fitted on the shipped benchmark (``traces.py fit-acceptance``),
so its score there is in sample. The board scores such an entry (:meth:`lookup.Drafter.fitted_on`
names the benchmark it is scored on) cross-fitted too:

1. the benchmark's prompts split in two halves (:func:`experiments.benchmarks.traces.halves`:
   alternate prompts, a prompt's turns together);
2. the models are fitted on each half alone, as ``fit-acceptance`` fits them on the whole
   (:mod:`experiments.running.acceptance_fit`);
3. the entry replays the whole benchmark twice in the sandbox, once with each half's fit (handed to
   it as its ``fits`` parameter), and each case is scored from the run whose fit did not see it. A
   stream entry serves the whole stream both times, so its history is what it was in sample: only
   the fit differs.

What stays in sample: the priors and settings chosen by replays of the whole benchmark (they are
documented as chosen, in ``docs/oracle-gap.md``); the fresh cases of a build are out of sample for
those too.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from experiments.benchmarks.traces import TraceSet, benchmark_hash, halves, subset
from experiments.competition.scoring import replay_scores
from experiments.competition.text import clean
from experiments.running.acceptance_fit import collect, fits_of, model_of
from pldcore.fits import Fits

#: one half's held-out cases (by id) and the fit made on the other half
Fold = tuple[frozenset[str], Fits]


def folds(sets: Sequence[TraceSet]) -> list[Fold]:
    """The two folds of ``sets``: each half of the cases with the fit made on the other half alone."""
    first, second = halves(sets)
    model = model_of(sets)  # as fit-acceptance names it
    out = []
    for held_out, fitted_on in ((first, second), (second, first)):
        part = subset(sets, fitted_on)
        out.append((held_out, fits_of(collect(part), model, benchmark_hash(part))))
    return out


def cross_fitted(submission, folds_: Sequence[Fold], evaluate: Callable, benchmark: str) -> dict:
    """Score ``submission`` (a :class:`~experiments.competition.sandbox.Submission` whose drafter
    reads a fit) cross-fitted: ``evaluate(submission)`` once per fold, with that fold's fit as its
    ``fits`` parameter, each run keeping the cases its fit did not see. Returns the scores
    (:func:`~experiments.competition.scoring.entry_scores`' headline numbers and groups, and each
    fold's fit benchmark), or ``{"status": "disqualified", "reason": ...}`` when a run was."""
    kept = []
    for held_out, fits in folds_:
        run = dataclasses.replace(submission, params={**submission.params, "fits": fits.to_dict()})
        evaluation = evaluate(run)
        if not evaluation.ok:
            return {"status": "disqualified", "reason": clean(evaluation.reason, 500)}
        kept += [(trace_set, case, out) for trace_set, case, out in evaluation.cases if case.case in held_out]
    scores = replay_scores(kept, submission.name, submission.params, benchmark)
    return {"status": "ok", "score": scores["score"], "score_gpu": scores["score_gpu"], "tau": scores["tau"],
            "drafter_us_per_step": scores["drafter_us_per_step"], "cases": scores["cases"], "groups": scores["groups"],
            "fits": [fits.benchmark for _, fits in folds_]}
