"""Scoring for the leaderboard: benchmark identity, per-category scores, and the lookup oracle.

    bench = benchmark_hash(sets)                 # which traces (and cost profile) a score belongs to
    rows = [case_row(case, steps, cpu, GPU_PROFILE) for ...]
    scores = entry_scores(rows)                  # per group: tau, est. speedup (CPU / GPU), drafter µs
    steps = oracle_steps(case, cpu)              # the best any lookup of the context could do

Groups are categories with multi-turn prompts split per turn (``experiments.runner.group_of``).
The rank is the geometric mean over groups of the estimated speedup under the CPU profile, so each
category weighs the same whatever its length; the large-GPU profile is shown beside it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from typing import Iterable, Sequence

import numpy as np

from decoding.cost import estimated_speedup
from decoding.generate import StepRecord
from lookup.cost import CostProfile

#: the oracle's longest draft, in tokens
ORACLE_CAP = 64
#: the large-GPU regime: verifying up to 64 tokens costs one forward of a 7B-class model on a big
#: GPU (~25 ms), so that drafter microseconds weigh what they would weigh there
GPU_FORWARD_S = 0.025
GPU_PROFILE = CostProfile.flat(64, seconds=GPU_FORWARD_S, name="large GPU (flat up to 64 tokens)")


# -- which benchmark ---------------------------------------------------------------------------------
def benchmark_hash(sets) -> str:
    """A hash of what is scored: every case of every trace file (by task name) and the cost profile.

    Hashes the decoded cases rather than the gzip bytes, so that recompressing a file (gzip headers
    hold a time stamp) keeps the hash, and a cut tail that the reader drops does not count.
    """
    h = hashlib.sha256()
    for trace_set in sorted(sets, key=lambda s: s.task):
        h.update(f"task {trace_set.task} {len(trace_set.cases)}\n".encode())
        for case in trace_set.cases:
            h.update(json.dumps(asdict(case), sort_keys=True).encode())
            h.update(b"\n")
    profiles = sorted({s.profile.to_json() for s in sets})
    h.update("\n".join(profiles).encode())
    return h.hexdigest()[:16]


def benchmark_info(sets, folder) -> dict:
    """What a reader of the board needs to know about the benchmark behind it."""
    cpu = sets[0].profile
    return {
        "hash": benchmark_hash(sets),
        "folder": str(folder),
        "tasks": {s.task: len(s.cases) for s in sets},
        "cases": sum(len(s.cases) for s in sets),
        "tokens": sum(s.tokens for s in sets),
        "model": sorted({c.model for s in sets for c in s.cases}),
        "cpu_profile": {"model": cpu.model, "device": cpu.device, "forward_ms_1": 1e3 * cpu.cost(1),
                        "relative": {n: round(cpu.relative(n), 3) for n in (2, 4, 8, 16, 32, 64)}},
        "gpu_profile": {"model": GPU_PROFILE.model, "forward_ms_1": 1e3 * GPU_FORWARD_S, "flat_up_to": 64},
    }


# -- rows and scores ---------------------------------------------------------------------------------
def case_row(case, steps: Sequence[StepRecord], cpu: CostProfile, gpu: CostProfile = GPU_PROFILE) -> dict:
    """One replayed case, as the numbers the board aggregates."""
    tokens = sum(s.committed for s in steps)
    drafter_s = sum(s.drafter_s for s in steps)
    return {
        "case": case.case, "category": case.category, "turn": case.turn,
        "new_tokens": tokens, "forwards": len(steps),
        "drafted": sum(s.drafted for s in steps), "accepted": sum(s.accepted for s in steps),
        # the board rates the decoding phase: every entry pays the same prefill
        "est_speedup": estimated_speedup(steps, cpu, with_prefill=False),
        "est_speedup_gpu": estimated_speedup(steps, gpu, with_prefill=False),
        "drafter_us_per_step": 1e6 * drafter_s / max(len(steps), 1),
    }


def geo_mean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def group_scores(rows: Sequence[dict]) -> dict:
    """Aggregate one entry's rows (any subset): tau, estimated speedups, drafter µs per step."""
    from experiments.plots import est_speedup_of, summarize

    s = summarize(rows)
    gpu = est_speedup_of([{**r, "est_speedup": r.get("est_speedup_gpu")} for r in rows])
    return {
        "cases": s["n"], "new_tokens": s["new_tokens"], "forwards": s["forwards"], "tau": s["tau"],
        "est_speedup": s["est_speedup"], "est_speedup_gpu": gpu,
        "drafter_us_per_step": s["drafter_us_per_step"], "acceptance": s["acceptance"],
    }


def entry_scores(rows: Sequence[dict]) -> dict:
    """Per-group scores, and the entry's headline numbers: score (geo-mean over groups of the CPU
    estimated speedup, what the board ranks by), score_gpu, and pooled tau and drafter µs/step."""
    from experiments.runner import group_of

    by_group: dict[str, list[dict]] = {}
    for r in rows:
        by_group.setdefault(group_of(r), []).append(r)
    groups = {g: group_scores(rs) for g, rs in sorted(by_group.items())}
    pooled = group_scores(rows)
    return {
        "groups": groups,
        "score": geo_mean(g["est_speedup"] for g in groups.values()),
        "score_gpu": geo_mean(g["est_speedup_gpu"] for g in groups.values()),
        "tau": pooled["tau"], "drafter_us_per_step": pooled["drafter_us_per_step"],
        "new_tokens": pooled["new_tokens"], "forwards": pooled["forwards"], "cases": pooled["cases"],
    }


# -- the oracle ----------------------------------------------------------------------------------------
def oracle_runs(seq: Sequence[int] | np.ndarray, start: int, cap: int = ORACLE_CAP) -> np.ndarray:
    """The longest correct lookup run at every context length ``L`` in ``[start, len(seq))``.  # [T-start] int64

    At ``L`` (last token ``seq[L-1]``): the longest run of the true continuation ``seq[L:]`` that
    follows some earlier occurrence ``j < L-1`` of the last token, ``max_j lcp(seq[j+1:], seq[L:])``
    -- a run may overlap the future, as a drafter copying its own draft would -- capped at ``cap``
    and at the tokens left minus one (the target always adds one); 0 when nothing matches.

    Cost: per position, one pass over the earlier tokens, then a shrinking candidate set per
    matched token: milliseconds for a long trace.
    """
    seq = np.asarray(seq, dtype=np.int64)
    total = len(seq)
    runs = np.zeros(max(total - int(start), 0), dtype=np.int64)
    for pos in range(int(start), total):
        limit = min(cap, total - pos - 1)
        run = 0
        if limit > 0 and pos >= 1:
            cand = np.flatnonzero(seq[: pos - 1] == seq[pos - 1]) + 1  # where each continuation starts
            while cand.size and run < limit:
                cand = cand[seq[cand + run] == seq[pos + run]]  # cand + run <= pos - 1 + run < total
                if cand.size:
                    run += 1
        runs[pos - start] = run
    return runs


def oracle_accepts(seq: Sequence[int] | np.ndarray, start: int, cap: int = ORACLE_CAP) -> np.ndarray:
    """Accepted draft tokens per step of the lookup oracle generating ``seq[start:]``.  # [steps] int64

    Each step drafts the longest correct run (:func:`oracle_runs`), so nothing is wasted and tau is
    the highest any lookup drafter can reach: how far a step reaches never decreases with the
    context length, so taking the longest run every time is optimal.
    """
    runs = oracle_runs(seq, start, cap)
    out, pos = [], 0
    while pos < len(runs):
        out.append(int(runs[pos]))
        pos += int(runs[pos]) + 1
    return np.asarray(out, dtype=np.int64)


def oracle_steps(case, profile: CostProfile, cap: int = ORACLE_CAP) -> list[StepRecord]:
    """The oracle's steps over one trace case: it drafts exactly the run it knows will be accepted."""
    seq = np.concatenate([np.asarray(case.prompt, dtype=np.int64), np.asarray(case.output, dtype=np.int64)])
    steps, context = [], len(case.prompt)
    for a in oracle_accepts(seq, len(case.prompt), cap).tolist():
        steps.append(StepRecord(context, a, a, a + 1, 0.0, profile.cost(a + 1, context)))
        context += a + 1
    return steps


def cost_aware_oracle_speedup(case, profile: CostProfile, cap: int = ORACLE_CAP) -> float:
    """The estimated-speedup ceiling of lookup under ``profile``: the oracle that also knows the
    cost of a forward, and drafts a prefix of the longest correct run (possibly nothing) wherever
    that makes the whole generation cheapest (dynamic programming over positions).

    On a CPU, where verifying 2 tokens costs ~1.5 plain steps, drafting every 1-token run loses
    time; this oracle skips those, so its speedup bounds every lookup drafter's under ``profile``.
    """
    seq = np.concatenate([np.asarray(case.prompt, dtype=np.int64), np.asarray(case.output, dtype=np.int64)])
    runs = oracle_runs(seq, len(case.prompt), cap)
    n = len(runs)
    if n == 0:
        return 0.0
    start = len(case.prompt)
    best = np.zeros(n + 1)
    plain = 0.0
    for pos in range(n - 1, -1, -1):
        # a drafter may draft more than it gets accepted: moving k+1 tokens costs at least the
        # cheapest forward over >= k+1 tokens (at this step's context)
        costs = np.array([profile.cost(m, start + pos) for m in range(1, cap + 2)])
        cheapest = np.minimum.accumulate(costs[::-1])[::-1]  # [cap+1]: cheapest[k] = min cost over >= k+1 tokens
        k = np.arange(int(runs[pos]) + 1)
        best[pos] = np.min(cheapest[k] + best[pos + k + 1])
        plain += costs[0]
    return plain / best[0]
