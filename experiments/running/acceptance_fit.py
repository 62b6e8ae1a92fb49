"""Fit ``adaptive``'s models of acceptance on traces, and check them on cases they were not fitted on.

Two models (:data:`lookup.acceptance.model.FITTED`): the first node's
(:mod:`lookup.acceptance.first_token`) and each later node's, given the ones before it were accepted
(:mod:`lookup.acceptance.later_nodes`), each with a fit per source of the draft: from the context,
from a history of earlier requests (``adaptive:history=true``) and, for the first node, from the
context while a history is kept (:data:`lookup.acceptance.WITH_HISTORY`).

    data = collect(sets)                     # adaptive replayed without the models: rows per fit and model
    report = held_out(data["history"]["later"])   # fitted on even cases, scored on odd ones, and back
    fits = fits_of(data, model, benchmark)   # fitted on every case: what pldcore/fits/ ships

Rows for the context's own fits come from each case replayed on its own (as ``adaptive`` drafts
without a history); rows for the other fits, from the benchmark served as one stream of requests
by ``adaptive:history=true`` (each case has earlier cases as its history, as ``--stream`` replays
do). The rows are what the acceptance model reads (:meth:`lookup.acceptance.AcceptanceModel.inputs`).
``python experiments/traces.py fit-acceptance [--write]`` runs all three for every fit, prints them
and writes the fit file.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np

from experiments.benchmarks.traces import TraceSet, in_order, traces_regime, traces_setting
from experiments.running.hindsight import TraceWrapper, accepted_path, rank_auc
from experiments.running.oracle import sequence_of
from experiments.running.replay import replay_case
from experiments.running.serving import serve_traces
from lookup.acceptance import WITH_HISTORY, first_token, later_nodes
from pldcore.fits import Fits
from pldcore.setting import GREEDY, Regime, Setting, reference_setting
from lookup.acceptance.model import FITTED
from lookup.base import SOURCES, Draft
from lookup.drafters.adaptive import DEFAULT_BASE_PARAMS, AdaptiveDrafter

#: the models' feature names, by the name of their rows
FEATURES = {"first": first_token.FEATURES, "later": later_nodes.FEATURES}
#: the drafts each fit judges
FIT_NAMES = {SOURCES[0]: "drafts from the context",
             SOURCES[1]: "drafts from the history (the cases served as one stream)",
             WITH_HISTORY: "drafts from the context while a history is kept (the cases served as one stream)"}
#: the drafter replayed to collect the rows: adaptive without the models (so that their fits do not
#: judge the drafts they are fitted on), by its spec
COLLECTOR_SPEC = "adaptive:first_token_model=false:chain_model=false"
#: the longest draft the collector sends
COLLECTED_TOKENS = 32


@dataclass
class Rows:
    """One row per judged node: the model's features, whether the node was accepted, ``adaptive``'s
    own estimate of that, and which case (in the order collected) it came from."""

    x: np.ndarray  # [n, F] the model's features
    y: np.ndarray  # [n] 1.0 = the node was the target's token there
    own: np.ndarray  # [n] adaptive's estimate from its statistics
    case: np.ndarray  # [n] int index of the case


def collector(setting: Setting, history: bool = False) -> AdaptiveDrafter:
    """The drafter whose drafts the rows are collected from (:data:`COLLECTOR_SPEC`)."""
    # drafts of up to 32 nodes (the CPU tracks' budget when the shipped fits were collected): the rows
    # they were fitted on
    return AdaptiveDrafter(setting=setting, first_token_model=False, chain_model=False, history=history,
                           max_tokens=COLLECTED_TOKENS, base_params={**DEFAULT_BASE_PARAMS, "max_tokens": COLLECTED_TOKENS})


def settings() -> dict:
    """What a fit depends on besides the benchmark: the collecting drafter's parameters (its base,
    the statistics' priors, strength and decay), as a fit file records them."""
    drafter = collector(reference_setting())
    params = drafter.params()
    return {"collected_with": COLLECTOR_SPEC, "base": params["base"], "base_params": params["base_params"],
            **drafter.model.settings()}


class _Collector(TraceWrapper):
    """``adaptive`` (without the models) on one trace, noting the rows of each chain candidate that a
    fit in ``fits`` judges: its first node, and each later node reached with every node before it
    accepted. ``rows[(fit, model)]``: (features, accepted, ``adaptive``'s own estimate) per node."""

    def __init__(self, inner: AdaptiveDrafter, sequence: Sequence[int], fits: Collection[str] = (SOURCES[0],)) -> None:
        super().__init__(inner, sequence)
        self.fits = frozenset((fits,) if isinstance(fits, str) else fits)
        self.rows: dict[tuple[str, str], list[tuple[np.ndarray, float, float]]] = defaultdict(list)

    def propose(self, budget: int) -> Draft:
        inner = self.inner
        candidate = inner.candidate(budget)
        full, evidence = candidate.draft, candidate.evidence
        if len(full) and full.is_chain and self._context < len(self.sequence) and evidence is not None:
            inputs = inner.model.inputs(candidate.row, evidence, len(full))
            future = self.sequence[self._context :]
            accepted = len(accepted_path(full, future))
            if inputs.first is not None and inputs.first_fit in self.fits:
                self.rows[(inputs.first_fit, "first")].append((inputs.first, float(accepted > 0), inputs.own[0]))
            if inputs.later is not None and inputs.later_fit in self.fits:
                # node d is judged where nodes 0..d-1 were all accepted (and the trace goes that far):
                # the first miss ends the chain
                judged = min(accepted + 1, len(full), len(future))
                for d, x in enumerate(inputs.later[: judged - 1], start=1):
                    self.rows[(inputs.later_fit, "later")].append((x, float(d < accepted), inputs.own[d]))
        return inner.send(candidate, inner.decide(candidate))


def collect(sets: Sequence[TraceSet], progress=None) -> dict[str, dict[str, Rows]]:
    """Replay ``adaptive`` (default base, without the models) on every case of ``sets``, in their setting
    (:func:`~experiments.benchmarks.traces.traces_setting`: priced by their own profile), and collect the rows of every fit of each model (``out[fit][model]``, for each
    fit of :data:`~lookup.acceptance.model.FITTED`): the fits for drafts from the context with each case
    on its own, the others (drafts from the history, and from the context while a history is kept)
    with the cases served as one stream (``history=True``). ``progress`` is called once per case
    replayed (twice per case in all)."""
    found: dict[tuple[str, str], list] = defaultdict(list)
    ordered = in_order(sets)
    every = {fit for fits in FITTED.values() for fit in fits}
    # a case on its own; then the cases as one stream, as explain's and replay's are
    setting = traces_setting(ordered)
    for fits, history in (({SOURCES[0]}, False), (every - {SOURCES[0]}, True)):
        served = serve_traces(ordered, lambda setting, history=history: collector(setting, history=history),
                              setting, stream=history)
        for index, (_, case, setting, inner) in enumerate(served):
            drafter = _Collector(inner, sequence_of(case), fits)
            replay_case(case, drafter, setting.profile)
            for key, rows in drafter.rows.items():
                found[key] += [(x, y, own, index) for x, y, own in rows]
            if progress is not None:
                progress()
    return {fit: {model: _as_rows(found[(fit, model)], len(FEATURES[model]))
                  for model, fits in FITTED.items() if fit in fits}
            for fit in sorted(every, key=lambda fit: (fit not in SOURCES, fit))}


def fits_of(data: dict[str, dict[str, Rows]], model: str, benchmark: str, regime: Regime = GREEDY) -> Fits:
    """The fits of every model on every row of ``data`` (:func:`collect`'s), as the fit file of target
    ``model`` on ``benchmark``, decoded in ``regime``, records them. A fit with too few rows (or rows
    all alike) is left out: the drafter then judges those drafts by a fit it has (its source's, or the
    statistics)."""
    tables: dict[str, dict] = {"first": {}, "later": {}}
    rows: dict[str, dict[str, int]] = {"first": {}, "later": {}}
    for fit_name, by_model in data.items():
        for name, found in by_model.items():
            if fittable(found):
                tables[name][fit_name] = fit(found)
                rows[name][fit_name] = int(len(found.y))
    return Fits(model, benchmark, settings(), tables["first"], tables["later"], rows, regime=regime.name)


def model_of(sets: Sequence[TraceSet]) -> str:
    """The target model a fit on ``sets`` is named after: the traces' folder, as the recorder names
    it after the model (``experiments.benchmarks.traces.recording_folder``); for a sampled regime's
    traces, the folder above theirs (``<model>/t1``: :func:`~experiments.benchmarks.traces.regime_folder`)."""
    folder = sets[0].path.parent
    regime = traces_regime(sets)
    return folder.parent.name if not regime.greedy and folder.name == regime.name else folder.name


def fittable(rows: Rows) -> bool:
    """Enough rows to fit a model: at least two, not all alike."""
    return len(rows.y) >= 2 and rows.y.min() != rows.y.max()


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
