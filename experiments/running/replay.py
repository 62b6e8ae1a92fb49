"""Replay drafters against recorded traces: tau and estimated speedup per category, in seconds."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from decoding.cost import estimated_times
from experiments.methods import DrafterMethod, parse_method
from experiments.traces import TraceSet, replay_case
from lookup.cost import CostProfile
from lookup.errors import PLDError


def default_specs() -> list[str]:
    """Every registered drafter a trace can replay (not those that read the target's logits)."""
    import lookup

    return [name for name in lookup.available() if lookup.replayable(name)]


def replay_rows(sets: Sequence[TraceSet], specs: Sequence[str] | None = None, profile: CostProfile | None = None,
                progress: bool = True) -> list[dict]:
    """One row per (case, drafter): tau, estimated speedup, drafter time, replay throughput."""
    methods = [parse_method(s) for s in (specs or default_specs())]
    bad = [m.spec for m in methods if not isinstance(m, DrafterMethod)]
    if bad:
        raise PLDError(f"replay runs drafters only, not {', '.join(bad)}")
    reads_logits = [m.spec for m in methods if m.make(None).wants_top]
    if reads_logits:
        raise PLDError(f"{', '.join(reads_logits)} read the target's top-k, which traces do not hold: "
                       "compare them live (without --replay)")
    rows = []
    total = len(methods) * sum(len(s.cases) for s in sets)
    with tqdm(total=total, desc="replay", unit="case", disable=not progress) as bar:
        for trace_set in sets:
            cost = profile or trace_set.profile
            for method in methods:
                for case in trace_set.cases:
                    t0 = time.perf_counter()
                    out = replay_case(case, method.make(None, cost), cost)
                    wall = time.perf_counter() - t0
                    s = out.stats
                    plain, spent = estimated_times(s.steps, cost)
                    rows.append({
                        "case": case.case, "category": case.category, "turn": case.turn, "method": method.spec,
                        "params": method.params(), "new_tokens": s.new_tokens, "forwards": s.forwards, "tau": s.tau,
                        "drafted": s.drafted, "accepted": s.accepted,
                        "est_plain_s": plain, "est_run_s": spent, "est_speedup": plain / spent if spent else 0.0,
                        "drafter_us_per_step": 1e6 * s.drafter_s / max(s.forwards, 1),
                        "replay_s": wall, "prompt_tokens": len(case.prompt),
                        "accepted_lengths": [r.accepted for r in s.steps], "contexts": [r.context for r in s.steps],
                        "replay": True, "profile": cost.model,
                    })
                    bar.update()
    return rows


class ReplayComparison:
    """compare.py --replay: drafters against recorded traces, rows to JSONL, tables per category."""

    def __init__(self, sets: Sequence[TraceSet], specs: Sequence[str], results_dir: str | Path = "results") -> None:
        from experiments.results import ResultStore, config_hash

        self.sets, self.specs = list(sets), list(specs)
        self.config = {"replay": True, "traces": [f"{s.path.name}:{len(s.cases)}" for s in self.sets],
                       "profile": self.sets[0].profile.model if self.sets else None}
        self.experiment = config_hash(self.config)
        self.store = ResultStore(Path(results_dir) / f"replay-{self.experiment}.jsonl")
        self.rows: dict[tuple[str, str], dict] = {}
        self.seconds = 0.0

    @classmethod
    def from_args(cls, args, method_specs: Sequence[str]) -> "ReplayComparison":
        from experiments.traces import load_trace_sets

        sets = load_trace_sets(args.traces)
        if args.tasks:
            wanted = {t.strip() for t in args.tasks.split(",")}
            sets = [s for s in sets if s.task in wanted]
            if not sets:
                raise PLDError(f"no traces for tasks {sorted(wanted)}")
        if not args.full:  # the quick subset: the first --prompts cases of each task (turns kept together)
            for s in sets:
                keep = list(dict.fromkeys(c.case.split("#")[0] for c in s.cases))[: args.prompts]
                s.cases = [c for c in s.cases if c.case.split("#")[0] in keep]
        specs = [m for m in method_specs if not m.startswith("hf-")]  # references need the model
        return cls(sets, specs, args.results)

    def run(self) -> None:
        from experiments.results import git_sha

        t0 = time.perf_counter()
        for row in replay_rows(self.sets, self.specs):
            row.update(experiment=self.experiment, config=self.config, git_sha=git_sha())
            self.rows[(row["case"], row["method"])] = row
            self.store.append(row)
        self.seconds = time.perf_counter() - t0

    def report(self) -> str:
        from experiments.report import category_tables

        rows = list(self.rows.values())
        tokens = sum(r["new_tokens"] for r in rows)
        head = (f"replay of {sum(len(s.cases) for s in self.sets)} traces; estimated speedup from the cost profile "
                f"of {self.config['profile']}; results: {self.store.path}")
        tail = f"{len(rows)} replays, {tokens:,} tokens in {self.seconds:.1f} s"
        return f"{head}\n\n{category_tables(rows, self.specs)}\n\n{tail}"
