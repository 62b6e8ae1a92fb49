"""A drafter with hindsight: the same candidates, sent with knowledge of the trace's future.

    drafter = Hindsight(lookup.create("adaptive"), case, "trim", profile)
    replay_case(case, drafter, profile)        # what perfect knowledge of acceptance would give

No drafter can do this (it reads the answer); it measures how much of a drafter's gap to the
oracle lies in *deciding* what to send rather than in what it could propose. Three modes:

* ``gate``: send the wrapped drafter's draft, or nothing where its first token is wrong (a perfect
  first-token gate). The tokens committed are the drafter's own, step by step.
* ``trim``: send only the draft's accepted part (a chain: the path the target accepts through a
  tree). Again the same tokens committed per step, now with no draft token wasted.
* ``cut``: trim, then send the prefix ``k`` of the accepted part with the most tokens per second,
  ``(1 + k) / cost(k + 1)``: perfect decisions on the wrapped drafter's candidates. Wrap a drafter
  that drafts as far as its match goes (``adaptive``'s base) to see what its candidates hold.

The wrapped drafter learns as it would alone: under ``gate`` and ``trim`` it is told it sent its own
draft (the committed tokens are the same); under ``cut`` it is told what was sent.

A fourth mode asks how good a prediction would have to be: ``signal:A`` (A in [0.5, 1]) gives an
``adaptive`` drafter (:class:`Signal`) one more piece of evidence per node of its candidate, a noisy
reading ``z = y + sigma * noise`` of whether the node will be accepted (``y`` = 1 or 0, standard
normal noise), with ``sigma`` set so that ``z`` alone ranks accepted nodes above rejected ones with
an AUC of A. The drafter combines it with its own estimate ``a`` as a calibrated posterior,
``logit(q) = logit(a) + (z - 1/2) / sigma**2``, and cuts its chain by ``q`` instead of ``a`` (its own
cost-aware rule). ``signal:0.5`` is the drafter as it is, ``signal:1`` knows every node. The
AUC of ``q`` for first draft tokens (:attr:`Signal.readings`) says how well the drafter then
predicts, to set beside what real evidence achieves.
"""

from __future__ import annotations

import zlib
from statistics import NormalDist
from typing import Sequence

import numpy as np

from lookup.drafters.adaptive import AdaptiveDrafter
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from pldcore.cost import CostProfile
from pldcore.errors import PLDError
from lookup.acceptance.planner import forward_costs

MODES = ("gate", "trim", "cut")
#: the mode that adds a noisy reading of acceptance to ``adaptive``'s evidence: ``signal:AUC``
SIGNAL = "signal"
#: estimates are kept this far from 0 and 1, so that their logit is finite
EDGE = 1e-6


def accepted_path(draft: Draft, future: Sequence[int]) -> list[int]:
    """Indices of the draft nodes greedy verification accepts against ``future`` (the true next
    tokens), root to leaf: for a chain its correct prefix, for a tree the path of correct tokens."""
    if draft.is_chain:
        n = min(len(draft), len(future))
        wrong = np.flatnonzero(np.asarray(draft.tokens[:n]) != np.asarray(future[:n]))
        return list(range(int(wrong[0]) if len(wrong) else n))
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(draft.parents.tolist()):
        children.setdefault(int(parent), []).append(i)
    path, node = [], -1
    for token in future:
        node = next((k for k in children.get(node, []) if int(draft.tokens[k]) == int(token)), None)
        if node is None:
            break
        path.append(node)
    return path


class TraceWrapper(Drafter):
    """Hands the sequence to ``inner`` and keeps the context length, for drafters that read the
    trace's future (``sequence``: prompt then output, [P + T] ids) at the current position."""

    def __init__(self, inner: Drafter, sequence: Sequence[int]) -> None:
        super().__init__()
        self.inner = inner
        self.sequence = np.asarray(sequence, dtype=np.int64)
        self.wants_top = inner.wants_top
        self._context = 0

    def reset(self, prompt: Sequence[int]) -> None:
        self.inner.reset(prompt)
        self._context = len(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        self.inner.extend(tokens)
        self._context += len(tokens)

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        self.inner.observe_top(tokens, top, probs)

    def observe(self, draft: Draft, accepted: int) -> None:
        self.inner.observe(draft, accepted)

    def match_length(self) -> int | None:
        return self.inner.match_length()


class Hindsight(TraceWrapper):
    """``inner``'s drafts, sent as mode ``mode`` says (see the module docstring), on trace ``sequence``
    (prompt then output, [P + T] ids) under ``profile``."""

    def __init__(self, inner: Drafter, sequence: Sequence[int], mode: str, profile: CostProfile) -> None:
        super().__init__(inner, sequence)
        if mode not in MODES:
            raise ValueError(f"hindsight mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode, self.profile = mode, profile
        self._own: Draft = EMPTY_DRAFT

    def propose(self, budget: int) -> Draft:
        self._own = draft = self.inner.propose(budget)
        if len(draft) == 0:
            return draft
        path = accepted_path(draft, self.sequence[self._context:])
        if self.mode == "gate":
            return draft if path else EMPTY_DRAFT
        if self.mode == "cut":
            costs = forward_costs(self.profile, len(path), self._context)  # [r+1]
            path = path[: int(np.argmax((1.0 + np.arange(len(path) + 1)) / costs))]
        return Draft(draft.tokens[path]) if path else EMPTY_DRAFT

    def observe(self, draft: Draft, accepted: int) -> None:
        self.inner.observe(draft if self.mode == "cut" else self._own, accepted)


def parse_mode(mode: str) -> tuple[str, float | None]:
    """``"trim"`` -> ``("trim", None)``; ``"signal:0.9"`` -> ``("signal", 0.9)``. PLDError when unknown."""
    name, _, value = mode.partition(":")
    if name in MODES and not value:
        return name, None
    if name == SIGNAL:
        try:
            auc = float(value)
        except ValueError:
            auc = -1.0
        if 0.5 <= auc <= 1.0:
            return name, auc
        raise PLDError(f"hindsight mode {mode!r}: write signal:AUC with an AUC in [0.5, 1], such as signal:0.9")
    raise PLDError(f"unknown hindsight mode {mode!r} (choose from {', '.join(MODES)}, or signal:AUC)")


def with_hindsight(inner: Drafter, sequence: Sequence[int], mode: str, profile: CostProfile) -> Drafter:
    """``inner`` wrapped for hindsight mode ``mode`` (see the module docstring) on trace ``sequence``."""
    name, auc = parse_mode(mode)
    if name != SIGNAL:
        return Hindsight(inner, sequence, name, profile)
    if not isinstance(inner, AdaptiveDrafter):
        raise PLDError(f"hindsight {mode}: needs an adaptive drafter (one that estimates acceptance), "
                       f"not {inner.name}")
    return Signal(inner, sequence, auc)


def signal_sigma(auc: float) -> float:
    """The noise ``sigma`` at which ``z = y + sigma * noise`` ranks y=1 above y=0 with this AUC:
    ``AUC = Phi(1 / (sigma * sqrt(2)))``; 0 at AUC 1, infinite at 0.5."""
    if auc >= 1.0:
        return 0.0
    if auc <= 0.5:
        return float("inf")
    return 1.0 / (np.sqrt(2.0) * NormalDist().inv_cdf(auc))


def rank_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """P(a random positive scores above a random negative), ties counting half (Mann-Whitney);
    None without both a positive and a negative. ``scores``, ``labels``: [n]."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return None
    values, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    # the average 1-based rank of each distinct value, then of each score
    average = np.cumsum(counts) - (counts - 1) / 2.0
    ranks = average[inverse]
    return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


class Signal(TraceWrapper):
    """``inner`` (an ``adaptive`` drafter) with a noisy reading of each node's acceptance, of AUC
    ``auc`` alone, on trace ``sequence`` (prompt then output, [P + T] ids); see the module docstring.

    The noise is drawn from a generator seeded by the trace, so a run repeats exactly. Tree
    candidates are sent as ``inner`` would send them (the reading is defined for chains).
    """

    def __init__(self, inner: AdaptiveDrafter, sequence: Sequence[int], auc: float) -> None:
        super().__init__(inner, sequence)
        self.auc = auc
        self.sigma = signal_sigma(auc)
        self.rng = np.random.default_rng(zlib.crc32(self.sequence.tobytes()))
        #: (posterior P(first node accepted), whether it was) for every chain candidate proposed
        self.readings: list[tuple[float, bool]] = []

    def propose(self, budget: int) -> Draft:
        inner = self.inner
        candidate = inner.candidate(budget)
        full = candidate.draft
        if len(full) == 0 or not full.is_chain:
            return inner.send(candidate, inner.decide(candidate))
        accepted = len(accepted_path(full, self.sequence[self._context:]))
        truth = (np.arange(len(full)) < accepted).astype(np.float64)  # [n] 1 = the node will be accepted
        own = np.clip(inner.model.chain(candidate.row, candidate.evidence, len(full), full.tokens), EDGE, 1.0 - EDGE)  # [n]
        if self.sigma == 0.0:
            posterior = np.clip(truth, EDGE, 1.0 - EDGE)
        else:
            reading = truth + self.sigma * self.rng.standard_normal(len(full))
            logit = np.log(own / (1.0 - own))
            if np.isfinite(self.sigma):
                logit = logit + (reading - 0.5) / self.sigma**2
            posterior = 1.0 / (1.0 + np.exp(-logit))
        # the posterior of node 0 given the nodes before it (none) is P(first node accepted)
        self.readings.append((float(posterior[0]), bool(truth[0])))
        return inner.send(candidate, inner.decide(candidate, posterior), own)
