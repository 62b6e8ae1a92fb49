"""The one result row: a method on one case, as live runs, replays and the board write and read it.

    row = case_result(case_id, category, turn, prompt_tokens, method, params, result, profile=profile, ...)
    store.append(row)                       # JSON, one line per row
    row = CaseResult.from_json(line_dict)   # a missing or unknown field raises PLDError

Every number a table, plot, W&B run or board entry shows is computed from these fields by
``experiments.reporting.summary``; nothing else derives them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from decoding.cost import estimated_times
from decoding.generate import GenerationResult
from experiments.benchmarks.prompts import group_of
from pldcore.cost import CostProfile
from pldcore.errors import PLDError


@dataclass
class CaseResult:
    """One method on one case (one turn of one prompt).

    Optional fields are None where they do not apply, never where they were forgotten: a
    replay has no wall time, transformers' references have no drafter and no per-step records,
    and only a greedy live run is checked against the reference's tokens.
    """

    case: str  # "summarization/003" or "mt-bench/81#2"
    category: str
    turn: int  # 1-based
    method: str  # the method's spec, e.g. "suffix-automaton:max_tokens=8"
    params: dict
    prompt_tokens: int
    new_tokens: int
    forwards: int  # target forwards (tau = new_tokens / forwards)
    drafted: int  # draft nodes verified
    accepted: int  # draft nodes accepted
    drafter_us_per_step: float | None  # reset + propose + extend + observe, per forward; None: no drafter
    wall_s: float | None  # measured seconds of the whole generation; None: not measured (replay)
    forward_s: float | None  # of which in target forwards
    # measured throughput over the reference method on this case. None in a replay: nothing was timed,
    # and an estimate in this field would read as a measurement; a replay's figure is ``est_speedup``
    # (derived from the two fields below, a column of the CSV/Parquet export)
    speedup: float | None
    est_plain_s: float | None  # plain decoding's seconds under ``profile``; None: no per-step records
    est_run_s: float | None  # this run's seconds under ``profile`` (forwards + all its drafter time, reset included)
    est_prefill_s: float | None  # the prefill both est_* include (0.0: they rate the decoding phase alone)
    identical: bool | None  # tokens equal the reference's; None: not checked (sampling, the reference itself)
    mismatch: str | None  # where they first differ, with the top-2 margin there
    accepted_lengths: list[int]  # [steps] accepted draft nodes per forward
    drafted_lengths: list[int]  # [steps] verified draft nodes per forward
    contexts: list[int]  # [steps] committed tokens before each forward
    tokens: list[int]  # generated ids ([] in a replay: the trace holds them)
    profile: str | None  # the cost profile behind est_*
    experiment: str  # the config hash of the run that made the row
    code: str  # hash of the code that made the row: rows are reused only while it is unchanged
    git_sha: str | None
    time: float  # when the row was made (Unix seconds)
    config: dict = field(default_factory=dict)  # the comparison's settings (model, device, sampling, ...)

    # -- derived, never stored ------------------------------------------------------------------
    @property
    def tau(self) -> float:
        return self.new_tokens / self.forwards if self.forwards else 0.0

    @property
    def tokens_per_s(self) -> float | None:
        return self.new_tokens / self.wall_s if self.wall_s else None

    @property
    def est_speedup(self) -> float | None:
        """Estimated speedup over plain decoding, as priced (prefill included unless rated for the
        decoding phase alone); None without an estimate."""
        return self.est_plain_s / self.est_run_s if self.est_run_s else None

    @property
    def decode_speedup(self) -> float | None:
        """Estimated speedup of the decoding phase alone (the prefill left out of both sides, as
        the board rates entries); None without an estimate."""
        if not self.est_run_s or self.est_prefill_s is None or self.est_run_s <= self.est_prefill_s:
            return None
        return (self.est_plain_s - self.est_prefill_s) / (self.est_run_s - self.est_prefill_s)

    @property
    def group(self) -> str:
        return group_of(self.category, self.case, self.turn)

    @property
    def replay(self) -> bool:
        return self.wall_s is None

    # -- (de)serialisation ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str = "row") -> "CaseResult":
        """The row ``data`` (a parsed JSON object); a missing or unknown field raises PLDError."""
        if not isinstance(data, dict):
            raise PLDError(f"{where}: a result row must be a JSON object, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        missing, unknown = sorted(names - data.keys()), sorted(data.keys() - names)
        if missing or unknown:
            parts = ([f"lacks {', '.join(missing)}"] if missing else []) + (
                [f"has unknown {', '.join(unknown)}"] if unknown else [])
            raise PLDError(f"{where} {' and '.join(parts)}: it was written by another version of pld-lab "
                           "(rerun with --fresh, or point --results at a new folder)")
        return cls(**data)


def run_times(result: GenerationResult, profile: CostProfile, with_prefill: bool = True) -> tuple[float, float, float]:
    """(plain decoding's seconds, the run's seconds, the prefill both include) of one generation under
    ``profile``: :func:`decoding.cost.estimated_times` of its steps, plus the drafter time that no step
    holds (``reset`` and the prompt's top-k rows: the sandbox charges it to the first step, so the board
    counts it too). ``with_prefill=False`` rates the decoding phase alone (prefill 0.0)."""
    stats = result.stats
    plain, spent = estimated_times(stats.steps, profile, with_prefill=with_prefill, prefill_rows=stats.top_rows > 0)
    outside_steps = profile.drafter_scale * max(0.0, stats.drafter_s - sum(s.drafter_s for s in stats.steps))
    prefill = profile.prefill_cost(stats.steps[0].context) if with_prefill and stats.steps else 0.0
    return plain, spent + outside_steps, prefill


def case_result(case_id: str, category: str, turn: int, prompt_tokens: int, method: str, params: dict,
                result: GenerationResult, *, profile: CostProfile | None, experiment: str, code: str,
                has_drafter: bool = True, with_prefill: bool = True, reference: CaseResult | None = None,
                identical: bool | None = None, mismatch: str | None = None, measured: bool = True,
                keep_tokens: bool = True, config: dict | None = None, git_sha: str | None = None) -> CaseResult:
    """Build the row of ``result`` (one generation: its tokens and stats): the one place a run's
    numbers become a row.

    ``profile`` prices the run's per-step records (``with_prefill=False`` rates the decoding phase
    alone, as the board does); ``has_drafter=False`` marks transformers' references
    (:data:`experiments.running.methods.REFERENCES`), which have no drafter time and report no
    forward time; ``reference`` is the row of the method speedups are measured against on this
    case (None: this run is the reference); ``measured=False`` marks a replay, whose wall time is
    not a generation's and is not recorded.
    """
    stats, new_tokens = result.stats, len(result.tokens)
    steps = stats.steps
    plain, spent, prefill = run_times(result, profile, with_prefill) if steps and profile is not None else (None,) * 3
    speedup = None
    if measured and reference is None:  # the reference itself
        speedup = 1.0
    elif measured and reference.wall_s and reference.new_tokens and stats.wall_s > 0:
        # a throughput ratio: the wall-time ratio when outputs match (greedy), and still fair when
        # sampled outputs differ in length from the reference's
        speedup = (new_tokens / stats.wall_s) / (reference.new_tokens / reference.wall_s)
    return CaseResult(
        case=case_id, category=category, turn=turn, method=method, params=params, prompt_tokens=prompt_tokens,
        new_tokens=new_tokens, forwards=stats.forwards, drafted=stats.drafted, accepted=stats.accepted,
        drafter_us_per_step=1e6 * stats.drafter_s / max(stats.forwards, 1) if has_drafter else None,
        wall_s=stats.wall_s if measured else None, forward_s=stats.forward_s if measured and has_drafter else None,
        speedup=speedup, est_plain_s=plain, est_run_s=spent, est_prefill_s=prefill, identical=identical,
        mismatch=mismatch,
        accepted_lengths=[s.accepted for s in steps], drafted_lengths=[s.drafted for s in steps],
        contexts=[s.context for s in steps], tokens=list(result.tokens) if keep_tokens else [],
        profile=profile.model if profile is not None and steps else None,
        experiment=experiment, code=code, git_sha=git_sha, time=time.time(), config=dict(config or {}),
    )
