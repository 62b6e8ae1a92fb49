"""Aggregates of result rows: the one place rows become the numbers tables, plots, W&B and the board show.

    s = summarize(rows)                         # one method's rows, on one group or all
    cells = by_method_and_group(rows)           # {(method, group): rows}, plus (method, "all")
    share = oracle_gain(score, oracle_score)    # the share of the oracle's gain an entry reaches
    ceiling = oracle_speedups(cases)            # {group: the cost-aware oracle's estimated speedup}
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Sequence

from experiments.benchmarks.prompts import ALL, group_of
from experiments.benchmarks.traces import TraceCase
from experiments.running.oracle import cost_aware_oracle_times
from experiments.running.rows import CaseResult
from lookup.cost import CostProfile


def method_order(rows: Iterable[CaseResult]) -> list[str]:
    """Methods in order of first appearance (a live comparison writes its reference first)."""
    return list(dict.fromkeys(r.method for r in rows))


def group_order(rows: Iterable[CaseResult]) -> list[str]:
    return sorted({r.group for r in rows})


def is_drafter(rows: Sequence[CaseResult]) -> bool:
    """Rows of a method that drafted something: per-step records and drafted > 0.

    hf-greedy and hf-lookup record no steps; the ``none`` drafter records steps but never drafts.
    """
    return any(r.accepted_lengths for r in rows) and sum(r.drafted for r in rows) > 0


def speedup_of(rows: Sequence[CaseResult]) -> float | None:
    """The rows' speedups pooled by wall time: sum(wall_s * speedup) / sum(wall_s).

    A row's speedup is its throughput over the reference's on that case. Under greedy decoding
    both produce the same tokens, so it is ref_wall / wall_s, wall_s * speedup is the reference's
    time and the pool is the ratio of total times (not a mean of ratios: long prompts weigh as
    much as they cost). Under sampling the lengths differ and it is a time-weighted mean of the
    throughput ratios. None when no row was measured against a reference.
    """
    timed = [r for r in rows if r.speedup is not None and r.wall_s]
    wall = sum(r.wall_s for r in timed)
    return sum(r.wall_s * r.speedup for r in timed) / wall if wall > 0 else None


def est_speedup_of(rows: Sequence[CaseResult]) -> float | None:
    """Estimated speedup pooled as ``speedup_of`` is: the ratio of the estimated total times,
    sum(plain) / sum(run), over the rows that have an estimate; None when none has one."""
    priced = [r for r in rows if r.est_run_s]
    spent = sum(r.est_run_s for r in priced)
    return sum(r.est_plain_s for r in priced) / spent if spent > 0 else None


def geo_mean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive finite values (None when there are none)."""
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def oracle_gain(score: float | None, oracle: float | None) -> float | None:
    """The share of the oracle's gain over plain decoding that ``score`` reaches: (s - 1) / (o - 1)."""
    if score is None or oracle is None or oracle <= 1:
        return None
    return (score - 1) / (oracle - 1)


def oracle_speedups(cases: Iterable[tuple[TraceCase, CostProfile]], with_prefill: bool = True) -> dict[str, float]:
    """The cost-aware oracle's estimated speedup per task group and over all (``ALL``), on the
    traces ``cases`` (each with the profile that prices it): pooled as :func:`est_speedup_of` pools
    rows, total plain seconds over total oracle seconds, with each prompt's prefill on both sides
    when ``with_prefill``, as a replay's estimates have it (the board rates the decoding phase)."""
    plain: dict[str, float] = defaultdict(float)
    best: dict[str, float] = defaultdict(float)
    for case, profile in cases:
        decode_plain, decode_best = cost_aware_oracle_times(case, profile)
        prefill = profile.prefill_cost(len(case.prompt)) if with_prefill else 0.0
        for group in (group_of(case.category, case.case, case.turn), ALL):
            plain[group] += prefill + decode_plain
            best[group] += prefill + decode_best
    return {group: plain[group] / best[group] for group in plain if best[group] > 0}


def summarize(rows: Sequence[CaseResult]) -> dict:
    """Aggregate metrics of one method's rows (on one group or all): what tables, plots and W&B show.

    Keys: n, new_tokens, forwards, tau (tokens / forwards), tokens_per_s (tokens / wall time),
    speedup and est_speedup (see their functions), worst_speedup, drafter_us_per_step (per forward),
    drafted, accepted, acceptance (accepted / drafted), mean_accepted (per step), identical
    (True / False / None when never checked). A value that no row has is None.
    """
    tokens, forwards = sum(r.new_tokens for r in rows), sum(r.forwards for r in rows)
    timed = [r for r in rows if r.wall_s]
    wall = sum(r.wall_s for r in timed)
    drafted, accepted = sum(r.drafted for r in rows), sum(r.accepted for r in rows)
    speedups = [r.speedup for r in rows if r.speedup is not None]
    us = [r for r in rows if r.drafter_us_per_step is not None]
    us_weight = sum(r.forwards for r in us)
    steps = [a for r in rows for a in r.accepted_lengths]
    checks = [r.identical for r in rows if r.identical is not None]
    return {
        "n": len(rows),
        "new_tokens": tokens,
        "forwards": forwards,
        "tau": tokens / forwards if forwards > 0 else None,
        "tokens_per_s": sum(r.new_tokens for r in timed) / wall if wall > 0 else None,
        "speedup": speedup_of(rows),
        "est_speedup": est_speedup_of(rows),
        "worst_speedup": min(speedups) if speedups else None,
        "drafter_us_per_step": sum(r.drafter_us_per_step * r.forwards for r in us) / us_weight if us_weight else None,
        "drafted": drafted,
        "accepted": accepted,
        "acceptance": accepted / drafted if drafted > 0 else None,
        "mean_accepted": sum(steps) / len(steps) if steps else None,
        "identical": all(checks) if checks else None,
    }


def by_method_and_group(rows: Sequence[CaseResult]) -> dict[tuple[str, str], list[CaseResult]]:
    """{(method, group): rows}, plus (method, "all") pooling every group."""
    out: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in rows:
        out[(r.method, r.group)].append(r)
        out[(r.method, ALL)].append(r)
    return dict(out)
