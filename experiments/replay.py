"""Replay drafters against recorded traces: tau and estimated speedup per category, in seconds."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Sequence

from tqdm import tqdm

from decoding.cost import estimated_speedup
from experiments.methods import DrafterMethod, parse_method
from experiments.runner import group_of
from experiments.table import render
from experiments.traces import TraceSet, replay_case
from lookup.cost import CostProfile
from lookup.errors import PLDError


def default_specs() -> list[str]:
    import lookup

    return lookup.available()


def replay_rows(sets: Sequence[TraceSet], specs: Sequence[str] | None = None, profile: CostProfile | None = None,
                progress: bool = True) -> list[dict]:
    """One row per (case, drafter): tau, estimated speedup, drafter time, replay throughput."""
    methods = [parse_method(s) for s in (specs or default_specs())]
    bad = [m.spec for m in methods if not isinstance(m, DrafterMethod)]
    if bad:
        raise PLDError(f"replay runs drafters only, not {', '.join(bad)}")
    rows = []
    total = len(methods) * sum(len(s.cases) for s in sets)
    with tqdm(total=total, desc="replay", unit="case", disable=not progress) as bar:
        for trace_set in sets:
            cost = profile or trace_set.profile
            for method in methods:
                for case in trace_set.cases:
                    t0 = time.perf_counter()
                    out = replay_case(case, method.make(None), cost)
                    wall = time.perf_counter() - t0
                    s = out.stats
                    rows.append({
                        "case": case.case, "category": case.category, "turn": case.turn, "method": method.spec,
                        "params": method.params(), "new_tokens": s.new_tokens, "forwards": s.forwards, "tau": s.tau,
                        "drafted": s.drafted, "accepted": s.accepted,
                        "est_speedup": estimated_speedup(s.steps, cost),
                        "drafter_us_per_step": 1e6 * s.drafter_s / max(s.forwards, 1),
                        "replay_s": wall, "prompt_tokens": len(case.prompt),
                        "accepted_lengths": [r.accepted for r in s.steps], "contexts": [r.context for r in s.steps],
                        "replay": True, "profile": cost.model,
                    })
                    bar.update()
    return rows


def replay_table(rows: list[dict], order: Sequence[str]) -> str:
    headers = ["method", "n", "new tok", "tau", "est speedup", "drafter µs/step", "replay tok/s"]
    table = []
    for spec in order:
        mine = [r for r in rows if r["method"] == spec]
        if not mine:
            continue
        tokens = sum(r["new_tokens"] for r in mine)
        forwards = sum(r["forwards"] for r in mine)
        # aggregate estimate = total plain time / total speculative time over the group
        plain = sum(r["new_tokens"] for r in mine)
        spec_time = sum(r["new_tokens"] / r["est_speedup"] for r in mine if r["est_speedup"])
        drafter = sum(r["drafter_us_per_step"] * r["forwards"] for r in mine) / max(forwards, 1)
        table.append([spec, len(mine), tokens, tokens / max(forwards, 1), plain / spec_time if spec_time else 0.0,
                      drafter, tokens / max(sum(r["replay_s"] for r in mine), 1e-9)])
    return render(headers, table)


def replay_report(sets: Sequence[TraceSet], specs: Sequence[str] | None = None) -> str:
    t0 = time.perf_counter()
    rows = replay_rows(sets, specs)
    order = list(dict.fromkeys(r["method"] for r in rows))
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[group_of(r)].append(r)
    profile = sets[0].profile.model if sets else "?"
    parts = [f"replay of {sum(len(s.cases) for s in sets)} traces, cost profile: {profile}"]
    for g in sorted(groups):
        parts.append(f"\n## {g}\n" + replay_table(groups[g], order))
    parts.append("\n## all\n" + replay_table(rows, order))
    parts.append(f"\n{len(rows)} replays in {time.perf_counter() - t0:.1f} s")
    return "\n".join(parts)
