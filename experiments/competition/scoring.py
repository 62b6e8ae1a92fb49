"""Scoring for the leaderboard: benchmark identity, per-group scores, and the lookup oracle.

    info = benchmark_info(sets, folder)          # which traces (and cost profile) a score belongs to
    cpu, gpu = board_rows(case, spec, params, out, profile)   # one replayed case, priced under each profile
    scores = entry_scores(cpu_rows, gpu_rows)    # per group: tau, est. speedup (CPU / GPU), drafter µs
    scores = replay_scores(evaluation.cases, spec, params)   # the same, from an evaluation's replays
    steps = oracle_steps(case, cpu)              # the best any lookup of the context could do

Groups are categories with multi-turn prompts split per turn (``CaseResult.group``). The rank is
the geometric mean over groups of the estimated speedup under the CPU profile, so each group weighs
the same whatever its length; the large-GPU profile is shown beside it. Estimates rate the decoding
phase (every entry pays the same prefill) and pool as ratios of estimated total times.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

from decoding.generate import GenerationResult, Stats
from experiments.benchmarks.paths import portable_path
from experiments.benchmarks.traces import (TraceCase, TraceSet, benchmark_hash, default_folder, load_trace_sets,
                                           read_benchmark, regime_folder, shipped_benchmarks)
from experiments.reporting.summary import est_speedup_of, geo_mean, summarize
from experiments.running.oracle import ORACLE_CAP, cost_aware_oracle_times, oracle_steps
from experiments.running.tracks import (BATCH_TRACKS, CPU_TRACK, GPU_TRACKS, SAMPLED_TRACKS, TRACKS, Track,  # noqa: F401 (the board's tracks)
                                        track_named)

#: the tracks a build replays every entry on besides the CPU one: the GPU tracks, one request at a time;
#: sampling at temperature 1.0 on the benchmark's own profile and on the H100 roofline (replaying the
#: benchmark's sampled traces, where it has some: :func:`sampled_sets`); and a server's (the H100
#: roofline at a batch of 32 and of 128 requests, its drafting priced as a server spreads it:
#: pldcore.hardware)
BOARD_TRACKS: tuple[Track, ...] = (*GPU_TRACKS, *SAMPLED_TRACKS, *BATCH_TRACKS)
#: a benchmark's trace sets in each sampled regime it was recorded in, by the regime's name ("t1")
Sampled = Mapping[str, Sequence[TraceSet]]
from experiments.running.rows import CaseResult, case_result
from experiments.running.topk_oracle import topk_oracle_steps
from pldcore.cost import CostProfile
from pldcore.hardware import profile_named

#: the large-GPU regime: verifying up to 64 tokens costs one forward of a 7B-class model on a big
#: GPU, so that drafter microseconds weigh what they would weigh there (pldcore.hardware's ``flat``)
GPU_PROFILE = profile_named("flat")
GPU_FORWARD_S = GPU_PROFILE.cost(1)


# -- which benchmark ---------------------------------------------------------------------------------
def sampled_sets(folder) -> dict[str, list[TraceSet]]:
    """The benchmark in ``folder``'s traces in each sampled board track's regime, by the regime's name:
    those recorded there (``regime_folder``) and finished (a ``BENCHMARK.json``: a recording under way
    scores nothing). Empty for a benchmark with none: its entries are scored on the greedy tracks only."""
    found: dict[str, list[TraceSet]] = {}
    for regime in dict.fromkeys(t.regime for t in BOARD_TRACKS if not t.regime.greedy):
        sub = regime_folder(Path(folder), regime)
        if sub.is_dir() and read_benchmark(sub) is not None:
            sets = [s for s in load_trace_sets(sub) if s.cases]
            if sets:
                found[regime.name] = sets
    return found


def track_sets(track: Track, sets: Sequence[TraceSet], sampled: Sampled) -> Sequence[TraceSet] | None:
    """The cases ``track`` replays: ``sets`` (the greedy ones) on a greedy track, the benchmark's traces
    in the track's regime on a sampled one (None where the benchmark has none)."""
    return sets if track.regime.greedy else sampled.get(track.regime.name)


def track_profile(track: Track, sets: Sequence[TraceSet]) -> CostProfile:
    """What ``track`` prices under: its own profile, or (the CPU tracks) that of the cases it replays."""
    return track.profile or sets[0].profile


def benchmark_info(sets, folder, sampled: Sampled | None = None) -> dict:
    """What a reader of the board needs to know about the benchmark behind it (``sampled``: its
    traces in sampled regimes, :func:`sampled_sets`; their hashes go in ``regimes``, and the tracks that
    replay them in ``tracks``)."""
    cpu = sets[0].profile
    sampled = sampled or {}
    shipped = {f.resolve(): name for name, f in shipped_benchmarks().items()}
    name = shipped.get(Path(folder).resolve())
    tracks = {}
    for t in BOARD_TRACKS:
        replayed = track_sets(t, sets, sampled)
        if replayed is None:
            continue
        profile = track_profile(t, replayed)
        tracks[t.name] = {"model": profile.model, "device": profile.device, "forward_ms_1": 1e3 * profile.cost(1, 1024),
                          "draft_budget": t.draft_budget, "regime": t.regime.describe(), "batch": t.batch}
    return {
        "hash": benchmark_hash(sets),
        "folder": portable_path(folder),
        # a shipped benchmark is public: what an entry says about it may be shown; of any other
        # (fresh cases, a private set) the board keeps no word of the entry's own
        "public": name is not None,
        # the embedded model's is the default one: the board's own views; another shipped one (a
        # second model's) has its views in a folder of the board named for it
        "name": name,
        "default": Path(folder).resolve() == default_folder().resolve(),
        "tasks": {s.task: len(s.cases) for s in sets},
        "cases": sum(len(s.cases) for s in sets),
        "tokens": sum(s.tokens for s in sets),
        "model": sorted({c.model for s in sets for c in s.cases}),
        "cpu_profile": {"model": cpu.model, "device": cpu.device, "forward_ms_1": 1e3 * cpu.cost(1),
                        "relative": {n: round(cpu.relative(n), 3) for n in (2, 4, 8, 16, 32, 64)}},
        "gpu_profile": {"model": GPU_PROFILE.model, "forward_ms_1": 1e3 * GPU_FORWARD_S, "flat_up_to": 64},
        "tracks": tracks,
        **({"regimes": {regime: {"hash": benchmark_hash(s), "cases": sum(len(x.cases) for x in s),
                                 "tasks": {x.task: len(x.cases) for x in s}} for regime, s in sampled.items()}}
           if sampled else {}),
    }


# -- rows and scores ---------------------------------------------------------------------------------
def board_rows(case: TraceCase, spec: str, params: dict, out: GenerationResult, cpu: CostProfile,
               benchmark: str = "") -> tuple[CaseResult, CaseResult]:
    """One replayed case (``out``, its replay) as rows priced under the CPU profile and the large-GPU
    one (decoding phase)."""
    common = dict(experiment=benchmark, code="", with_prefill=False, measured=False, keep_tokens=False)
    return tuple(case_result(case.case, case.category, case.turn, len(case.prompt), spec, params, out,
                             profile=profile, **common) for profile in (cpu, GPU_PROFILE))


def group_scores(cpu: Sequence[CaseResult], gpu: Sequence[CaseResult]) -> dict:
    """Aggregate one entry's rows (any subset): tau, estimated speedups, drafter µs per step."""
    s = summarize(cpu)
    return {
        "cases": s["n"], "new_tokens": s["new_tokens"], "forwards": s["forwards"], "tau": s["tau"],
        "est_speedup": s["est_speedup"], "est_speedup_gpu": est_speedup_of(gpu),
        "drafter_us_per_step": s["drafter_us_per_step"], "acceptance": s["acceptance"],
    }


def entry_scores(cpu: Sequence[CaseResult], gpu: Sequence[CaseResult]) -> dict:
    """Per-group scores, and the entry's headline numbers: score (geo-mean over groups of the CPU
    estimated speedup, what the board ranks by), score_gpu, and pooled tau and drafter µs/step.
    ``cpu[i]`` and ``gpu[i]`` are the same case under the two profiles."""
    by_group: dict[str, tuple[list[CaseResult], list[CaseResult]]] = {}
    for c, g in zip(cpu, gpu, strict=True):
        mine = by_group.setdefault(c.group, ([], []))
        mine[0].append(c)
        mine[1].append(g)
    groups = {name: group_scores(*pair) for name, pair in sorted(by_group.items())}
    pooled = group_scores(cpu, gpu)
    return {
        "groups": groups,
        "score": geo_mean(g["est_speedup"] for g in groups.values()),
        "score_gpu": geo_mean(g["est_speedup_gpu"] for g in groups.values()),
        "tau": pooled["tau"], "drafter_us_per_step": pooled["drafter_us_per_step"],
        "new_tokens": pooled["new_tokens"], "forwards": pooled["forwards"], "cases": pooled["cases"],
    }


def track_scores(cases, spec: str, params: dict, profile: CostProfile, benchmark: str = "") -> dict:
    """An entry's scores on one track, from its replayed ``cases`` (``(trace set, case,
    GenerationResult)`` triples) priced under the track's ``profile``: score (geo-mean over groups),
    per group the estimated speedup and tau, and pooled tau and drafter µs/step."""
    common = dict(experiment=benchmark, code="", with_prefill=False, measured=False, keep_tokens=False)
    rows = [case_result(case.case, case.category, case.turn, len(case.prompt), spec, params, out,
                        profile=profile, **common) for _, case, out in cases]
    scores = entry_scores(rows, rows)
    return {"status": "ok", "score": scores["score"], "tau": scores["tau"],
            "drafter_us_per_step": scores["drafter_us_per_step"],
            "groups": {g: {"est_speedup": v["est_speedup"], "tau": v["tau"]} for g, v in scores["groups"].items()}}


def _run_of(case: TraceCase, steps: list) -> GenerationResult:
    """An oracle's steps over ``case`` as the run they make."""
    tokens = list(case.output[: sum(s.committed for s in steps)])
    stats = Stats(new_tokens=len(tokens), forwards=len(steps), drafted=sum(s.drafted for s in steps),
                  accepted=sum(s.accepted for s in steps), steps=steps)
    return GenerationResult(tokens, stats, stop_reason="eos" if tokens and tokens[-1] in case.eos else "length")


def oracle_track(sets, profile: CostProfile, cap: int = ORACLE_CAP) -> dict:
    """The oracle on one track: its score and per-group speedups under ``profile``, the cost-aware
    oracle's (the ceiling of lookup under that profile), and the bound of a lookup drafter that also
    reads the target's top-k rows (:mod:`experiments.running.topk_oracle`, ``*_topk``)."""
    rows = [oracle_rows(case, profile, cap=cap) for s in sets for case in s.cases]
    common = dict(experiment="", code="", with_prefill=False, measured=False, keep_tokens=False)
    topk = [case_result(case.case, case.category, case.turn, len(case.prompt), "oracle+top-k", {"cap": cap},
                        _run_of(case, topk_oracle_steps(case, profile, cap)), profile=profile, **common)
            for s in sets for case in s.cases]
    plain = entry_scores([r for r, _, _ in rows], [r for r, _, _ in rows])
    best = entry_scores([b for _, _, b in rows], [b for _, _, b in rows])
    known = entry_scores(topk, topk)
    return {"status": "ok", "score": plain["score"], "score_cost_aware": best["score"], "tau": plain["tau"],
            "score_topk": known["score"],
            "groups": {g: {"est_speedup": v["est_speedup"], "tau": v["tau"],
                           "est_speedup_cost_aware": best["groups"][g]["est_speedup"],
                           "est_speedup_topk": known["groups"][g]["est_speedup"]}
                       for g, v in plain["groups"].items()}}


def replay_scores(cases, spec: str, params: dict, benchmark: str = "") -> dict:
    """:func:`entry_scores` of an entry's replayed ``cases``: ``(trace set, case, GenerationResult)``
    triples (an evaluation's), each priced under its set's CPU profile and the large-GPU one."""
    rows = [board_rows(case, spec, params, out, trace_set.profile, benchmark) for trace_set, case, out in cases]
    return entry_scores([cpu for cpu, _ in rows], [gpu for _, gpu in rows])


# -- the oracle (experiments.running.oracle) ---------------------------------------------------------
def cost_aware_oracle_speedup(case: TraceCase, profile: CostProfile, cap: int = ORACLE_CAP) -> float:
    """The estimated-speedup ceiling of lookup under ``profile`` (see :func:`cost_aware_oracle_times`)."""
    plain, best = cost_aware_oracle_times(case, profile, cap)
    return plain / best if best else 0.0


def oracle_rows(case: TraceCase, profile: CostProfile, benchmark: str = "",
                cap: int = ORACLE_CAP) -> tuple[CaseResult, CaseResult, CaseResult]:
    """The oracle on one case: its rows under the CPU and GPU profiles, and the cost-aware
    oracle's CPU row (the same steps, priced at the cost-aware ceiling)."""
    out = _run_of(case, oracle_steps(case, profile, cap))
    cpu, gpu = board_rows(case, "oracle", {"cap": cap}, out, profile, benchmark)
    plain, best = cost_aware_oracle_times(case, profile, cap)
    return cpu, gpu, dataclasses.replace(cpu, est_plain_s=plain, est_run_s=best)
