"""Aggregates of result rows: the one place rows become the numbers tables, plots, W&B and the board show.

    s = summarize(rows)                         # one method's rows, on one group or all
    cells = by_method_and_group(rows)           # {(method, group): rows}, plus (method, "all")
    score = score_of(rows)                      # the board's figure: geo-mean over groups of decode speedup
    share = oracle_gain(score, oracle_score)    # the share of the oracle's gain an entry reaches
    times = oracle_times(cases)                 # {group: the cost-aware oracle's seconds, and plain decoding's}
    ceiling = oracle_speedups(times)            # {group: the cost-aware oracle's estimated speedup}
    notes = sample_notes(cases_per_group, oracle)   # warnings: small groups, an oracle that gains next to nothing

The figures, one name and one definition each, in every table, plot, export and W&B run:

- ``est speedup`` (:func:`est_speedup_of`): estimated from the cost profile, pooled over the cases
  as total times, as the rows were priced: a comparison's rows include each prompt's prefill on
  both sides (what a wall-clock measurement sees), the board's rate the decoding phase alone;
- ``decode speedup`` (:func:`decode_speedup_of`): the same for the decoding phase alone, whatever
  the rows include: what the board shows per task group;
- ``score`` (:func:`score_of`, :func:`board_score`): the geometric mean over task groups of the
  decode speedup, so each group weighs the same whatever its length: what the board ranks by.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping, Sequence

from experiments.benchmarks.prompts import ALL, group_of
from experiments.benchmarks.traces import TraceCase
from experiments.running.oracle import MIN_ORACLE_GAIN, cost_aware_oracle_times
from experiments.running.oracle import oracle_gain  # noqa: F401  (the views import it from here)
from experiments.running.rows import CaseResult
from pldcore.cost import CostProfile


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


def acceptance_by_position(rows: Sequence[CaseResult], positions: int = 8) -> list[tuple[int, float | None]]:
    """Per draft position k = 1..``positions``: (how many steps' drafts reached k, the share of them that
    accepted the k-th token). A draft reaches k when it had at least k tokens and its first k - 1 were
    accepted: the acceptance rate of the k-th token given the ones before it, which a planner of draft
    lengths reads (where "accepted at least k" mixes in how long the drafts were). For a tree, k counts
    its nodes, not its depth: an approximation there."""
    drafted = [d for r in rows for d in r.drafted_lengths[:len(r.accepted_lengths)]]
    accepted = [a for r in rows for a in r.accepted_lengths[:len(r.drafted_lengths)]]
    out = []
    for k in range(1, positions + 1):
        reached = [a for d, a in zip(drafted, accepted) if d >= k and a >= k - 1]
        out.append((len(reached), sum(a >= k for a in reached) / len(reached) if reached else None))
    return out


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


def decode_speedup_of(rows: Sequence[CaseResult]) -> float | None:
    """Estimated speedup of the decoding phase, pooled as :func:`est_speedup_of` is: the prefill the
    rows' estimates include (``est_prefill_s``) taken out of both sides first; None when no row has
    an estimate. Equal to :func:`est_speedup_of` on rows rated for the decoding phase (the board's)."""
    priced = [r for r in rows if r.est_run_s and r.est_prefill_s is not None]
    spent = sum(r.est_run_s - r.est_prefill_s for r in priced)
    return sum(r.est_plain_s - r.est_prefill_s for r in priced) / spent if spent > 0 else None


def geo_mean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive finite values (None when there are none)."""
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def board_score(by_group: Mapping[str, float | None]) -> float | None:
    """The board's rule: the geometric mean of per-group speedups (``ALL`` left out, so each task
    group weighs the same whatever its length); None when no group has one."""
    return geo_mean(v for group, v in by_group.items() if group != ALL)


def score_of(rows: Sequence[CaseResult]) -> float | None:
    """What the board ranks by, of ``rows`` (one method's): :func:`board_score` of each task group's
    :func:`decode_speedup_of`. On one group it is that group's decode speedup."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    return board_score({g: decode_speedup_of(rs) for g, rs in groups.items()})


def oracle_times(cases: Iterable[tuple[TraceCase, CostProfile]]) -> dict[str, tuple[float, float, float]]:
    """The cost-aware oracle on the traces ``cases`` (each with the profile that prices it), per task
    group and over all (``ALL``): (plain decoding's seconds, the oracle's, the prefill both would
    pay), each summed over the group's cases (decoding phase for the first two)."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for case, profile in cases:
        plain, best = cost_aware_oracle_times(case, profile)
        prefill = profile.prefill_cost(len(case.prompt))
        for group in (group_of(case.category, case.case, case.turn), ALL):
            for i, seconds in enumerate((plain, best, prefill)):
                sums[group][i] += seconds
    return {group: (plain, best, prefill) for group, (plain, best, prefill) in sums.items()}


def oracle_speedups(times: Mapping[str, tuple[float, float, float]], with_prefill: bool = True) -> dict[str, float]:
    """The cost-aware oracle's estimated speedup per group of :func:`oracle_times`: total plain seconds
    over total oracle seconds, as :func:`est_speedup_of` pools rows, with the prefill on both sides
    when ``with_prefill`` (a comparison's est speedup) or without (its decode speedup, the board's)."""
    out = {}
    for group, (plain, best, prefill) in times.items():
        extra = prefill if with_prefill else 0.0
        if best + extra > 0:
            out[group] = (plain + extra) / (best + extra)
    return out


#: a task group with fewer cases than this gets a warning: its figures move by several percent
#: from one handful of prompts to the next
MIN_CASES = 10


def sample_notes(cases: Mapping[str, int], oracle: Mapping[str, float | None] | None = None) -> list[str]:
    """One warning line per kind of small sample among task groups: ``cases`` per group (``ALL``
    left out), and, where given, the ``oracle``'s speedup per group (its share of a gain of less
    than ``MIN_ORACLE_GAIN`` is not shown: :func:`oracle_gain`)."""
    notes = []
    small = [f"{g} ({n})" for g, n in cases.items() if g != ALL and n < MIN_CASES]
    if small:
        notes.append(f"warning: fewer than {MIN_CASES} cases in {', '.join(small)}: figures of a group this small "
                     "describe these prompts, not the task")
    flat = [f"{g} ({v:.3f}x)" for g, v in (oracle or {}).items() if v is not None and v - 1 < MIN_ORACLE_GAIN]
    if flat:
        notes.append(f"warning: the oracle gains less than {100 * MIN_ORACLE_GAIN:.0f}% over plain decoding in "
                     f"{', '.join(flat)}: no lookup can do much there, and a share of its gain would be noise "
                     "(not shown)")
    return notes


def summarize(rows: Sequence[CaseResult]) -> dict:
    """Aggregate metrics of one method's rows (on one group or all): what tables, plots and W&B show.

    Keys: n, new_tokens, forwards, tau (tokens / forwards), tokens_per_s (tokens / wall time),
    speedup, est_speedup, decode_speedup and score (see their functions), worst_speedup,
    drafter_us_per_step (per forward, reset included; in process, where the board's is the sandbox's),
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
        "decode_speedup": decode_speedup_of(rows),
        "score": score_of(rows),
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
