"""``adaptive``: wrap any drafter and choose, each step, how much of its draft to send.

A draft is not free: every node it adds makes the target's forward dearer (by how much is the
target's cost profile), so a wasted draft is a slowdown. Each step this drafter

1. asks the wrapped drafter for its longest draft and the evidence behind it
   (:meth:`lookup.base.Drafter.evidence`: where it comes from, the match, how the match's earlier
   occurrences continue), a :class:`Candidate`; where that draft comes from a history of earlier
   requests (``history``), also the context's own draft, and keeps the one whose planned forward
   commits more tokens a second (``choose_source``): a longer match in the history is not always
   the better copy;
2. asks the acceptance model (:class:`lookup.acceptance.AcceptanceModel`) for each node's
   probability of acceptance: statistics learnt in this sequence per source and match length,
   from priors, refined by the fitted first-node and later-nodes models where there is evidence,
   moved by how often a node holding each of its tokens was accepted before (``token_rates``) and by
   how the estimates of the nodes checked so far in this request compare with what became of them
   (``calibrate``);
3. asks the planner (:class:`lookup.acceptance.Planner`) how many nodes to send under the cost
   profile: a chain planned over this forward and the ones after it (``chain_model``), a tree by
   the expected tokens per second of this forward.

Then it tells the model what the target accepted. When it drafts less than it could, the token the
target commits still tells whether the next node would have been right, so it keeps learning even
while drafting nothing. A wrapped drafter that reports no evidence is judged by the statistics
alone, at its :meth:`~lookup.base.Drafter.match_length` (a middling one when it reports none), and
``params()`` says so (``"evidence": false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from lookup.acceptance import AcceptanceModel, Planner, Row
from lookup.base import EMPTY_DRAFT, SOURCES, Agreement, Draft, Drafter, Evidence
from lookup.params import require_bool, with_history
from lookup.registry import create, register
from pldcore.fits import Fits
from pldcore.setting import Setting

DEFAULT_BASE = "suffix-automaton"
#: the policy picks the length, so the default base drafts as far as its match goes; without the
#: fallback to the earliest occurrence, whose long continuations from far away were mostly wrong
#: (docs/oracle-gap.md); remembering 8 occurrences per match for the evidence, and drafting the way
#: most of them go (the newest's where they tie): where the newest runs off on its own (the last lap
#: of a loop in an earlier answer that the output goes on round) the others outvote it; as long a
#: draft as the longest a board track allows (63 nodes, the oracle's longest run less the token
#: before it), since the plan, not the base, cuts it
DEFAULT_MAX_TOKENS = 63
DEFAULT_BASE_PARAMS = {"max_tokens": DEFAULT_MAX_TOKENS, "length_rule": None, "fallback": False, "occurrences": 8,
                       "occurrence": "majority"}


def _fits(fits: str | Path | dict) -> Fits:
    if isinstance(fits, dict):
        return Fits.from_dict(fits)
    if isinstance(fits, (str, Path)):
        return Fits.load(fits)
    raise TypeError(f"fits must be a path to a fit file or its content (a dict), got {type(fits).__name__}")


def _base_params(base: str | Drafter, base_params: dict | None, history: bool) -> dict:
    """The parameters a base given by name is built with: ``base_params`` (the default base's own when
    none are given), with ``history=True`` when asked; for a base given as an instance, only the check
    that it takes no history."""
    if base_params is None:
        base_params = DEFAULT_BASE_PARAMS if base == DEFAULT_BASE else {}
    return with_history(base, base_params, history)


@dataclass(frozen=True)
class Candidate:
    """The wrapped drafter's longest draft now, and what it is judged by."""

    draft: Draft
    row: Row  # the acceptance model's statistics for it
    evidence: Evidence | None  # what the wrapped drafter reports of it (None: nothing)


@register("adaptive")
class AdaptiveDrafter(Drafter):
    """Cost-aware draft length on top of ``base`` (a drafter name or instance).

    Args:
        base: the wrapped drafter, by name (made with ``base_params``) or as an instance.
        setting: where it runs (:class:`pldcore.setting.Setting`): the cost profile it plans under and
            the acceptance fit of the target model and regime.
        max_tokens: the longest draft.
        prior_strength, decay: the acceptance model's statistics (:class:`~lookup.acceptance.AcceptanceModel`).
        base_params: parameters of a base given by name (default: the default base's, see above).
        history: make the wrapped drafter (by name, with a ``history`` parameter, as ``suffix-automaton``
            has) keep the requests served before and draft from them too, and keep the acceptance
            statistics from one request to the next.
        first_token_model, chain_model: use the fitted first-node and later-nodes models where the
            wrapped drafter reports evidence; ``chain_model`` also plans a chain over later forwards.
        token_rates: with either model on, move a chain's estimates by how often a node holding each
            of its tokens was accepted before (:mod:`lookup.acceptance.tokens`; with ``history``, over
            the requests served too). Off with the models, so the drafts the models are fitted on
            (``traces.py fit-acceptance``) stay what they were.
        calibrate: with either model on, move a chain's estimates by one log-odds offset learnt in the
            request (:mod:`lookup.acceptance.calibration`): the fit's estimates set right for it. Off
            with the models, as ``token_rates``.
        fits: a fit file of the models (``traces.py fit-acceptance --write``), or its content as a
            dict, in place of the setting's (None: the setting's, the shipped fit of its model and regime).
        choose_source: with either model on, where the wrapped drafter copies from its history
            (``history``), judge the context's own draft too (:meth:`Drafter.context_candidate`) and
            send the one whose planned forward commits more tokens a second, by the models'
            estimates; else always the history's, where its match is the longer. Off with the
            models, as ``token_rates``.
    """

    uses_setting = True

    @classmethod
    def wrapped_specs(cls, params: dict) -> list[tuple[str, dict]]:
        """The base it builds: by name, with ``base_params`` (the default base's own by default) and
        ``history``, as :meth:`__init__` builds it."""
        base = params.get("base", DEFAULT_BASE)
        if not isinstance(base, str):
            return []
        return [(base, _base_params(base, params.get("base_params"), params.get("history", False)))]

    def __init__(self, base: str | Drafter = DEFAULT_BASE, *, setting: Setting, max_tokens: int = DEFAULT_MAX_TOKENS, prior_strength: float = 2.0, decay: float = 0.98,
                 base_params: dict | None = None, history: bool = False, first_token_model: bool = True,
                 chain_model: bool = True, fits: str | Path | dict | None = None, token_rates: bool = True,
                 calibrate: bool = True, choose_source: bool = True) -> None:
        super().__init__()
        if not isinstance(base, (str, Drafter)):
            # a spec's base=none parses to None: the plain drafter is base=plain
            hint = " (the drafter that drafts nothing is base=plain)" if base is None else ""
            raise TypeError(f"base must be a drafter name or instance, got {base!r}{hint}")
        base_params = _base_params(base, base_params, history)  # checks history against base
        if not isinstance(setting, Setting):
            raise TypeError(f"setting must be a pldcore.setting.Setting, got {type(setting).__name__}")
        self.base = create(base, **base_params) if isinstance(base, str) else base
        self.setting = setting
        self.profile = setting.profile
        self.max_tokens, self.history = max_tokens, history
        self.wants_top = self.base.wants_top  # the wrapped drafter's wish
        #: whether the wrapped drafter reports evidence (overrides the contract's hook)
        self.reports_evidence = type(self.base).evidence is not Drafter.evidence
        self.first_token_model = require_bool("first_token_model", first_token_model)
        self.chain_model = require_bool("chain_model", chain_model)
        models = self.reports_evidence and (self.first_token_model or self.chain_model)
        self.token_rates = require_bool("token_rates", token_rates) and models
        self.calibrate = require_bool("calibrate", calibrate) and models
        self.choose_source = require_bool("choose_source", choose_source) and models
        #: the fitted models' coefficients (None where no model reads them)
        given = _fits(fits) if fits is not None else None  # read (and so checked) even where no model reads it
        self.fits = (given or setting.fits) if models else None
        self.model = AcceptanceModel(max_tokens, prior_strength, decay, self.fits,
                                     first_node=self.first_token_model and self.reports_evidence,
                                     later_nodes=self.chain_model and self.reports_evidence,
                                     tokens=self.token_rates, calibrate=self.calibrate)
        self.planner = Planner(self.profile, max_tokens, planned=self.chain_model)
        self._context = 0  # committed tokens (prompt + output)
        #: the last propose's candidate, what was sent, and the chain's estimates it was planned on (or None)
        self._last: tuple[Candidate, int, np.ndarray | None] | None = None
        self._committed: list[int] = []
        #: this proposal's rated candidates (:meth:`_rate`): (candidate, its estimate, the plan's k)
        self._rated: list[tuple[Candidate, np.ndarray, int]] = []

    # -- the Drafter interface ---------------------------------------------------------------
    def reset(self, prompt: Sequence[int]) -> None:
        self.base.reset(prompt)
        self._context = len(prompt)
        # with a history, what the last requests taught carries on (decaying as within a request):
        # requests served one after the other are alike more often than not (docs/oracle-gap.md)
        if not self.history:
            self.model.clear()
        self.model.restart()
        self._last, self._committed = None, []

    def extend(self, tokens: Sequence[int]) -> None:
        self.base.extend(tokens)
        self._committed = list(tokens)
        self._context += len(tokens)

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        self.base.observe_top(tokens, top, probs)

    def propose(self, budget: int) -> Draft:
        candidate = self.candidate(budget)
        acceptance = self.estimate(candidate)
        return self.send(candidate, self.decide(candidate, acceptance), acceptance)

    def observe(self, draft: Draft, accepted: int) -> None:
        self.base.observe(draft, accepted)
        if self._last is None:
            return
        candidate, sent, acceptance = self._last
        self._last = None
        self.model.age()
        full, row = candidate.draft, candidate.row
        if full.is_chain:
            self.model.learn_chain(row, full.tokens, sent, accepted, self._committed, acceptance)
        else:
            self.model.learn_tree(row, full, self._committed)

    def fitted_on(self) -> str | None:
        """The benchmark its models' fit was made on (None where no model reads a fit)."""
        return None if self.fits is None else self.fits.benchmark

    def match_length(self) -> int | None:
        """The wrapped drafter's match length (None when it reports none)."""
        return self.base.match_length()

    # -- the three steps (analyses, such as experiments/running/hindsight.py, call them too) ----
    def candidate(self, budget: int) -> Candidate:
        """The wrapped drafter's longest draft now (within ``budget`` and ``max_tokens``), its evidence
        and the statistics it is judged by; with ``choose_source``, where that draft is the history's,
        the context's own instead when the plan rates it higher (:meth:`_rate`). A query."""
        self._rated.clear()
        budget = min(budget, self.max_tokens)
        full = self.base.propose(budget)
        if not len(full):
            return Candidate(full, Row(0, 0), None)
        chosen = self._candidate_of(full, self.base.evidence(full) if self.reports_evidence else None)
        if not (self.choose_source and chosen.evidence is not None and chosen.evidence.source != SOURCES[0]):
            return chosen
        # the context's evidence reuses the base's scratch arrays: the history's is copied first
        chosen = Candidate(full, chosen.row, _copied(chosen.evidence))
        found = self.base.context_candidate(budget)
        if found is None or not len(found[0]):
            return chosen
        other = self._candidate_of(*found)
        return max((chosen, other), key=self._rate)  # the history's draft where they tie

    def _candidate_of(self, draft: Draft, evidence: Evidence | None) -> Candidate:
        """``draft`` (non-empty) with its ``evidence`` and the statistics' row it is judged by."""
        length = evidence.match_length if evidence is not None else None
        source = evidence.source if evidence is not None else SOURCES[0]
        return Candidate(draft, self.model.row(source, self.base.match_length() if length is None else length), evidence)

    def _rate(self, candidate: Candidate) -> float:
        """Expected tokens a second of the forward that sends what the plan sends of ``candidate`` (a
        chain): ``(1 + the sent nodes' path probabilities) / cost``. Keeps the estimate and the plan
        for :meth:`estimate` and :meth:`decide` of the same candidate in this proposal."""
        acceptance = self.estimate(candidate)
        if acceptance is None:  # a tree: not rated
            return 0.0
        k = self.decide(candidate, acceptance)
        self._rated.append((candidate, acceptance, k))
        return (1.0 + float(np.cumprod(acceptance[:k]).sum())) / float(self.planner.costs(self._context)[k])

    def estimate(self, candidate: Candidate) -> np.ndarray | None:
        """The model's P(node i accepted | nodes before it accepted) for ``candidate``'s chain ([n]; None
        for a tree or an empty draft). A query."""
        draft = candidate.draft
        if not len(draft) or not draft.is_chain:
            return None
        for rated, acceptance, _ in self._rated:
            if rated is candidate:
                return acceptance
        return self.model.chain(candidate.row, candidate.evidence, len(draft), draft.tokens)

    def decide(self, candidate: Candidate, acceptance: np.ndarray | None = None) -> int:
        """How many nodes of ``candidate`` to send: the planner's choice under the cost profile, over
        the model's probabilities (or, for a chain, over ``acceptance``: [n] P(node i accepted | nodes
        before it accepted), an analysis's own)."""
        draft = candidate.draft
        if not len(draft):
            return 0
        if draft.is_chain:
            if acceptance is None:
                acceptance = self.estimate(candidate)
            for rated, estimate, k in self._rated:
                if rated is candidate and estimate is acceptance:
                    return k
            return self.planner.chain(acceptance, self._context)
        return self.planner.tree(self.model.tree(candidate.row, draft.parents), self._context)

    def send(self, candidate: Candidate, k: int, acceptance: np.ndarray | None = None) -> Draft:
        """The first ``k`` nodes of ``candidate``'s draft, remembered for :meth:`observe` (which learns
        from the whole candidate, and calibrates on ``acceptance``, the model's :meth:`estimate` of its
        chain: computed here where not given); it changes no future proposal by itself."""
        full = candidate.draft
        if acceptance is None and self.calibrate:  # a caller that planned on its own: the model's own, to calibrate on
            acceptance = self.estimate(candidate)
        self._last = (candidate, k, acceptance) if len(full) else None  # the last propose's, whichever call that was
        self._rated.clear()
        if not k:
            return EMPTY_DRAFT
        probs = None if full.probs is None else full.probs[:k]
        return Draft(full.tokens[:k], probs=probs) if full.is_chain else Draft(full.tokens[:k], full.parents[:k], probs)

    def params(self) -> dict:
        model = self.model.settings()
        return {"base": self.base.name, "base_params": self.base.params(), "profile": self.profile.model,
                "model": self.setting.model, "regime": self.setting.regime.name,
                "max_tokens": self.max_tokens, "prior_strength": model["prior_strength"], "decay": model["decay"],
                "history": self.history, "first_token_model": self.first_token_model,
                "chain_model": self.chain_model, "token_rates": self.token_rates, "calibrate": self.calibrate,
                "choose_source": self.choose_source,
                "evidence": self.reports_evidence,
                **({"fits": self.fits.describe()} if self.fits is not None else {})}


def _copied(evidence: Evidence) -> Evidence:
    """``evidence`` with arrays of its own (a base's may be its scratch, valid until its next call)."""
    own, other = evidence.own, evidence.other
    return Evidence(evidence.source, evidence.match_length,
                    None if own is None else Agreement(own.match_length, own.support.copy(), own.agree.copy()),
                    None if other is None else Agreement(other.match_length, other.support.copy(), other.agree.copy()),
                    evidence.second_index)
