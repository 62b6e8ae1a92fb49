"""Fit :mod:`lookup.first_token`'s model on traces, and check it on cases it was not fitted on.

    data = collect(sets)                 # adaptive replayed without the model: features, outcomes
    report = held_out(data)              # fitted on even cases, scored on odd ones, and back
    coefficients, intercept = fit(data)  # on every case: what lookup/first_token.py ships

``python experiments/traces.py fit-first-token`` runs all three and prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from experiments.benchmarks.traces import TraceSet
from experiments.running.hindsight import TraceWrapper, rank_auc
from experiments.running.oracle import sequence_of
from experiments.running.replay import replay_case
from lookup import first_token
from lookup.adaptive import AdaptiveDrafter
from lookup.base import Draft


@dataclass
class FirstTokenData:
    """One row per chain draft from the context: the model's features, whether the first token
    was accepted, and which case (in the order collected) it came from."""

    x: np.ndarray  # [n, F] first_token.features
    y: np.ndarray  # [n] 1.0 = the first draft token was the target's next token
    case: np.ndarray  # [n] int index of the case


class _Collector(TraceWrapper):
    """``adaptive`` (without the model) on one trace, noting the features of each candidate."""

    def __init__(self, inner: AdaptiveDrafter, sequence: Sequence[int]) -> None:
        super().__init__(inner, sequence)
        self.rows: list[tuple[np.ndarray, float]] = []

    def propose(self, budget: int) -> Draft:
        inner = self.inner
        full, bucket = inner.candidate(budget)
        if len(full) and full.is_chain and self._context < len(self.sequence):
            first = int(full.tokens[0])
            inputs = inner.first_token_inputs(first, float(inner.acceptance(bucket)[0]))
            if inputs is not None:
                self.rows.append((first_token.features(*inputs), float(self.sequence[self._context] == first)))
        return inner.propose(budget)


def collect(sets: Sequence[TraceSet], progress=None) -> FirstTokenData:
    """Replay ``adaptive`` (default base, ``first_token_model=False``) on every case of ``sets``,
    each priced by its set's profile, and collect the model's rows."""
    xs, ys, cases = [], [], []
    index = 0
    for trace_set in sets:
        for case in trace_set.cases:
            drafter = _Collector(AdaptiveDrafter(profile=trace_set.profile, first_token_model=False), sequence_of(case))
            replay_case(case, drafter, trace_set.profile)
            for x, y in drafter.rows:
                xs.append(x)
                ys.append(y)
                cases.append(index)
            index += 1
            if progress is not None:
                progress()
    width = len(first_token.FEATURES)
    return FirstTokenData(np.array(xs).reshape(-1, width), np.array(ys), np.array(cases, dtype=np.int64))


def fit(data: FirstTokenData) -> tuple[np.ndarray, float]:
    """The model's (coefficients [F], intercept) fitted on every row."""
    return first_token.fit_logistic(data.x, data.y)


def held_out(data: FirstTokenData) -> list[dict]:
    """Fitted on the even-numbered cases and scored on the odd ones, then the other way round: per
    half, the first-token AUC of the model, of ``adaptive``'s own estimate and of match length."""
    out = []
    for fitted_on in (0, 1):
        train, test = data.case % 2 == fitted_on, data.case % 2 != fitted_on
        coefficients, intercept = first_token.fit_logistic(data.x[train], data.y[train])
        y = data.y[test] > 0
        out.append({
            "fitted on": "even cases" if fitted_on == 0 else "odd cases",
            "rows": int(test.sum()),
            "model": rank_auc(first_token.probability(data.x[test], coefficients, intercept), y),
            "adaptive's estimate": rank_auc(data.x[test, 1], y),
            "match length": rank_auc(data.x[test, 0], y),
        })
    return out
