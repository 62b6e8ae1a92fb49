"""Fit ``adaptive``'s models of acceptance on traces, and check them on cases they were not fitted on.

Two models (:data:`MODELS`): :mod:`lookup.first_token` (the chain's first node) and
:mod:`lookup.later_nodes` (each later node, given the ones before it were accepted), each with a fit
per key of its ``FITS``: for drafts from the context, for drafts from a history of earlier requests
(``adaptive:history=true``; :data:`lookup.adaptive.SOURCES`) and, for the first node, for drafts
from the context while a history is kept (:data:`lookup.first_token.WITH_HISTORY`).

    data = collect(sets)                     # adaptive replayed without the models: rows per fit and model
    report = held_out(data["history"]["later"])   # fitted on even cases, scored on odd ones, and back
    coefficients, intercept = fit(data["context"]["first"])  # on every case: what lookup/first_token.py ships

Rows for the context's own fits come from each case replayed on its own (as ``adaptive`` drafts
without a history); rows for the other fits, from the benchmark served as one stream of requests
by ``adaptive:history=true`` (each case has earlier cases as its history, as ``--stream`` replays
do). ``python experiments/traces.py fit-acceptance`` runs all three for every fit and prints them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from types import ModuleType
from typing import Collection, Sequence

import numpy as np

from experiments.benchmarks.traces import TraceSet, in_order
from experiments.running.hindsight import TraceWrapper, accepted_path, rank_auc
from experiments.running.oracle import sequence_of
from experiments.running.replay import replay_case
from lookup import first_token, later_nodes
from lookup.adaptive import SOURCES, AdaptiveDrafter
from lookup.base import Draft

#: the models fitted here, by the name of their rows
MODELS: dict[str, ModuleType] = {"first": first_token, "later": later_nodes}
#: per fit (a key of a model's ``FITS``): the prefix of its constants in the model's module, and the drafts it judges
FIT_NAMES = {SOURCES[0]: ("", "drafts from the context"),
             SOURCES[1]: ("HISTORY_", "drafts from the history (the cases served as one stream)"),
             first_token.WITH_HISTORY: ("WITH_HISTORY_", "drafts from the context while a history is kept "
                                                         "(the cases served as one stream)")}


@dataclass
class Rows:
    """One row per judged node: the model's features, whether the node was accepted, ``adaptive``'s
    own estimate of that, and which case (in the order collected) it came from."""

    x: np.ndarray  # [n, F] the model's features
    y: np.ndarray  # [n] 1.0 = the node was the target's token there
    own: np.ndarray  # [n] adaptive's estimate from its statistics
    case: np.ndarray  # [n] int index of the case


class _Collector(TraceWrapper):
    """``adaptive`` (without the models) on one trace, noting the rows of each chain candidate that a
    fit in ``fits`` judges (:meth:`~lookup.adaptive.AdaptiveDrafter.fit_of`): its first node, and each
    later node reached with every node before it accepted. ``rows[(fit, model)]``: (features, accepted,
    ``adaptive``'s own estimate) per node."""

    def __init__(self, inner: AdaptiveDrafter, sequence: Sequence[int], fits: Collection[str] = (SOURCES[0],)) -> None:
        super().__init__(inner, sequence)
        self.fits = frozenset((fits,) if isinstance(fits, str) else fits)
        self.rows: dict[tuple[str, str], list[tuple[np.ndarray, float, float]]] = defaultdict(list)

    def propose(self, budget: int) -> Draft:
        inner = self.inner
        full, bucket = inner.candidate(budget)
        if len(full) and full.is_chain and self._context < len(self.sequence):
            # the fit each model judges this chain by, and what the other index says for it
            (first_fit, first_other), (later_fit, later_other) = inner.model_evidence(inner.source(bucket),
                                                                                      full.tokens)
            fits, seen = {"first": first_fit, "later": later_fit}, {"first": first_other, "later": later_other}
            evidence = inner.chain_evidence(full.tokens) if self.fits.intersection(fits.values()) else None
            if evidence is not None:
                own = inner.acceptance(bucket)
                future = self.sequence[self._context :]
                accepted = len(accepted_path(full, future))
                if fits["first"] in self.fits:
                    x = first_token.features(*inner.first_token_inputs(evidence, float(own[0]), seen["first"]))
                    self.rows[(fits["first"], "first")].append((x, float(accepted > 0), own[0]))
                if fits["later"] in self.fits:
                    # node d is judged where nodes 0..d-1 were all accepted (and the trace goes that far):
                    # the first miss ends the chain
                    judged = min(accepted + 1, len(full), len(future))
                    for d, x in enumerate(later_nodes.features(*evidence, seen["later"])[: judged - 1], start=1):
                        self.rows[(fits["later"], "later")].append((x, float(d < accepted), own[d]))
        return inner.propose(budget)


def collect(sets: Sequence[TraceSet], progress=None) -> dict[str, dict[str, Rows]]:
    """Replay ``adaptive`` (default base, without the models) on every case of ``sets``, each priced by
    its set's profile, and collect the rows of every fit of each model (``out[fit][model]``, for each
    key ``fit`` of the model's ``FITS``, with ``model`` a key of :data:`MODELS`): the fits for drafts
    from the context with each case on its own, the others (drafts from the history, and from the
    context while a history is kept) with the cases served as one stream (``history=True``).
    ``progress`` is called once per case replayed (twice per case in all)."""
    found: dict[tuple[str, str], list] = defaultdict(list)
    ordered = in_order(sets)
    # the stream's one drafter is priced by the first set's profile, each case by its own set's, as
    # explain's and replay's streams do (a benchmark has one profile)
    shared = AdaptiveDrafter(profile=ordered[0].profile, first_token_model=False, chain_model=False,
                             history=True) if ordered else None
    every = {fit for module in MODELS.values() for fit in module.FITS}
    for fits, history in (({SOURCES[0]}, False), (every - {SOURCES[0]}, True)):
        index = 0
        for trace_set in ordered:
            for case in trace_set.cases:
                inner = shared if history else AdaptiveDrafter(profile=trace_set.profile, first_token_model=False,
                                                                chain_model=False)
                drafter = _Collector(inner, sequence_of(case), fits)
                replay_case(case, drafter, trace_set.profile)
                for key, rows in drafter.rows.items():
                    found[key] += [(x, y, own, index) for x, y, own in rows]
                index += 1
                if progress is not None:
                    progress()
    return {fit: {name: _as_rows(found[(fit, name)], len(module.FEATURES))
                  for name, module in MODELS.items() if fit in module.FITS}
            for fit in sorted(every, key=lambda fit: (fit not in SOURCES, fit))}


def _as_rows(rows: list, width: int) -> Rows:
    x, y, own, case = zip(*rows) if rows else ((), (), (), ())
    return Rows(np.array(x).reshape(-1, width), np.array(y), np.array(own), np.array(case, dtype=np.int64))


def fit(rows: Rows) -> tuple[np.ndarray, float]:
    """A model's (coefficients [F], intercept) fitted on every row."""
    return first_token.fit_logistic(rows.x, rows.y)


def held_out(rows: Rows) -> list[dict]:
    """Fitted on the even-numbered cases and scored on the odd ones, then the other way round: per
    half, the AUC of the model and of ``adaptive``'s own estimate."""
    out = []
    for fitted_on in (0, 1):
        train, test = rows.case % 2 == fitted_on, rows.case % 2 != fitted_on
        coefficients, intercept = first_token.fit_logistic(rows.x[train], rows.y[train])
        y = rows.y[test] > 0
        out.append({
            "fitted on": "even cases" if fitted_on == 0 else "odd cases",
            "rows": int(test.sum()),
            "model": rank_auc(first_token.probability(rows.x[test], coefficients, intercept), y),
            "adaptive's estimate": rank_auc(rows.own[test], y),
        })
    return out
