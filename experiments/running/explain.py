"""Where a drafter loses time against the cost-aware oracle: a decomposition whose parts add up.

    parts = explain_case(case, result, profile)      # one replayed case: seconds per part
    table = explain(sets, "adaptive")                # per task group and overall

The oracle's plan (:func:`experiments.running.oracle.cost_aware_plan`) gives ``best[i]``, the
least time to finish the output from position ``i``. A drafter's step at ``i`` that verifies
``d`` draft tokens and commits ``c`` tokens costs ``cost(d + 1)``; against the plan it loses

    waste    = cost(d + 1) - cost(c)                 verifying draft tokens that were rejected
    progress = cost(c) + best[i + c] - best[i]       advancing c tokens instead of the best move

and over the whole run these telescope: the sum over steps is the drafter's forward time minus
the oracle's, exactly. Adding the drafter's own time gives the whole gap. Each step's loss goes
to one part:

* ``missed``: it drafted nothing (the loss is zero where the oracle would not draft either);
* ``wrong``: it drafted, nothing was accepted, and a correct run existed (the wrong continuation);
* ``long``: draft tokens past the accepted ones (``waste`` of a step that accepted some, or a
  draft where no run existed at all), and accepted runs longer than the oracle's best cut;
* ``short``: an accepted run shorter than the oracle's best cut at that position;
* ``beyond``: steps that accepted more than any run of the context holds (sources other than
  lookup, such as the target's top-k); negative where that beats the oracle;
* ``drafter``: the drafter's own time (propose, extend, observe, and its reset), and the dearer
  prefill of a drafter that reads the target's top-k rows, beyond plain decoding's.

All figures rate the decoding phase (every method pays the same prefill), and the run is priced as
its row is (:func:`experiments.running.rows.run_times`), as the board prices it: a group's speedup
here is its ``decode speedup`` (``experiments.reporting.summary``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from decoding.generate import GenerationResult
from experiments.benchmarks.prompts import ALL, group_of
from experiments.benchmarks.traces import TraceCase, TraceSet, traces_setting
from experiments.running.methods import parse_method
from experiments.running.hindsight import Signal, rank_auc, with_hindsight
from experiments.running.oracle import ORACLE_CAP, OraclePlan, cost_aware_plan, oracle_gain, sequence_of
from experiments.running.replay import DRAFT_BUDGET, replay_case
from experiments.running.rows import run_times
from experiments.running.serving import serve_traces
from pldcore.cost import CostProfile

PARTS = ("missed", "wrong", "short", "long", "beyond", "drafter")


@dataclass
class Loss:
    """Estimated seconds of one drafter against the oracle, on one case or pooled over several."""

    plain: float = 0.0  # plain decoding
    oracle: float = 0.0  # the cost-aware oracle
    run: float = 0.0  # the drafter: forwards + its own time
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    cases: int = 0
    #: how well the drafter predicted its first draft tokens' acceptance (rank AUC), where measured
    #: (the ``signal`` hindsight mode); None elsewhere
    first_token_auc: float | None = None

    @property
    def gap(self) -> float:
        return self.run - self.oracle

    @property
    def speedup(self) -> float:
        return self.plain / self.run if self.run else 0.0

    @property
    def oracle_speedup(self) -> float:
        return self.plain / self.oracle if self.oracle else 0.0

    @property
    def share_of_oracle_gain(self) -> float | None:
        """(speedup - 1) / (oracle speedup - 1) (:func:`experiments.running.oracle.oracle_gain`): None
        when the oracle gains next to nothing."""
        return oracle_gain(self.speedup, self.oracle_speedup)

    def add(self, other: "Loss") -> None:
        self.plain += other.plain
        self.oracle += other.oracle
        self.run += other.run
        self.cases += other.cases
        for part, seconds in other.parts.items():
            self.parts[part] += seconds


def step_part(plan: OraclePlan, pos: int, drafted: int, committed: int) -> tuple[str, str]:
    """Which parts a step's (waste, progress) go to; see the module docstring."""
    accepted = committed - 1
    if drafted == 0:
        return "missed", "missed"
    if accepted <= 0:
        return ("wrong", "wrong") if plan.runs[pos] >= 1 else ("long", "long")
    if accepted > plan.runs[pos]:
        return "long", "beyond"
    return "long", ("short" if accepted < plan.choice[pos] else "long")


def explain_case(case: TraceCase, result: GenerationResult, profile: CostProfile, cap: int = ORACLE_CAP,
                 plan: OraclePlan | None = None) -> Loss:
    """The decomposition of one replayed case (``result`` = :func:`replay_case` of it) under ``profile``."""
    plan = plan or cost_aware_plan(case, profile, cap)
    loss = Loss(plain=plan.plain, oracle=plan.seconds, cases=1)
    forward = 0.0
    for step in result.stats.steps:
        pos = step.context - plan.start
        step_s = profile.cost(step.drafted + 1, step.context)
        kept = profile.cost(step.committed, step.context)
        waste_part, progress_part = step_part(plan, pos, step.drafted, step.committed)
        loss.parts[waste_part] += step_s - kept
        loss.parts[progress_part] += kept + plan.best[pos + step.committed] - plan.best[pos]
        forward += step_s
    # the run's time as its row has it: the forwards above, the drafter's time in and outside the
    # steps (reset), and a top-k reader's dearer prefill; all but the forwards are the drafter's
    loss.run = run_times(result, profile, with_prefill=False)[1]
    loss.parts["drafter"] = loss.run - forward
    return loss


def pool_losses(runs: Iterable[tuple[TraceCase, GenerationResult, CostProfile]],
                cap: int = ORACLE_CAP) -> dict[str, Loss]:
    """The decomposition of replayed cases (case, its replay, the profile it is priced under):
    one :class:`Loss` per task group, then ``"(all)"`` pooling every case."""
    out: dict[str, Loss] = defaultdict(Loss)
    for case, result, profile in runs:
        loss = explain_case(case, result, profile, cap)
        out[group_of(case.category, case.case, case.turn)].add(loss)
        out[ALL].add(loss)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == ALL, kv[0])))


def explain(sets: Sequence[TraceSet], spec: str, profile: CostProfile | None = None,
            cap: int = ORACLE_CAP, progress=None, stream: bool = False, hindsight: str | None = None,
            draft_budget: int = DRAFT_BUDGET) -> dict[str, Loss]:
    """Replay drafter ``spec`` on every case of ``sets`` and decompose its gap to the oracle
    (:func:`pool_losses`), under ``profile`` (default: the traces' own,
    :func:`~experiments.benchmarks.traces.traces_setting`), with at most
    ``draft_budget`` draft nodes a step (a track's: :mod:`experiments.running.tracks`).

    ``stream``: one drafter serves every case in the benchmark's order, as ``--stream`` replays do
    (a drafter with a history learns from earlier cases). ``hindsight``: wrap the drafter for that
    mode (:func:`experiments.running.hindsight.with_hindsight`; a ceiling, not a drafter). A mode
    that records the drafter's first-token predictions (``signal:AUC``) sets ``first_token_auc``.
    """
    method = parse_method(spec)
    setting = traces_setting(sets, profile)
    readings: dict[str, list[tuple[float, bool]]] = defaultdict(list)  # group -> (prediction, outcome)

    def runs():
        for served in serve_traces(sets, method.make, setting, stream=stream):
            case, priced, drafter = served.case, served.setting.profile, served.drafter
            if hindsight is not None:
                drafter = with_hindsight(drafter, sequence_of(case), hindsight, priced)
            yield case, replay_case(case, drafter, priced, draft_budget), priced
            for group in (group_of(case.category, case.case, case.turn), ALL):
                readings[group].extend(drafter.readings if isinstance(drafter, Signal) else ())
            if progress is not None:
                progress()

    losses = pool_losses(runs(), cap)
    for group, pairs in readings.items():
        if pairs:
            losses[group].first_token_auc = rank_auc(*zip(*pairs))
    return losses
