"""Replay drafters against recorded traces: the live loop with a trace as the target, in seconds.

    out = replay_case(case, drafter, setting.profile)      # one trace, one drafter
    rows = replay_rows(sets, ["adaptive", "voting"])        # CaseResult rows, priced by the traces' profile

The streaming setting (``stream=True``, ``--stream``) serves the cases as a stream of requests:
one drafter per method sees every case in the benchmark's order (tasks by name, cases in file
order), ``reset`` starting each new request, so a drafter that keeps a history across requests
(``peer:suffix-decoding:history=true``) learns from earlier cases only, never the current case's
future. Without it every case gets a fresh drafter. Both come from
:func:`experiments.running.serving.serve_traces`, as every other loop over the benchmark takes them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import decoding
import lookup
from decoding.generate import DRAFT_BUDGET, DrafterBug, GenerationResult
from decoding.progress import progress_bar
from decoding.trace_target import TraceTarget
from experiments.benchmarks.traces import (TraceCase, TraceSet, benchmark_hash, default_folder, first_prompts, in_order,
                                          load_trace_sets, regime_folder, require_cases, traces_regime, traces_setting)
from experiments.benchmarks.untrusted import clean
from experiments.running.cases import check_prompts
from experiments.running.methods import REFERENCES, DrafterMethod, Sampling, parse_method
from experiments.running.rows import CaseResult, case_result
from experiments.running.serving import serve_traces
from experiments.running.store import ResultStore, code_key, config_hash, git_sha, reusable
from lookup.specs import parse_list, parse_spec
from pldcore.cost import CostProfile
from pldcore.errors import PLDError
from pldcore.names import unknown_name
from pldcore.setting import Regime, Setting


def replay_case(case: TraceCase, drafter: lookup.Drafter, profile: CostProfile,
                draft_budget: int = DRAFT_BUDGET) -> GenerationResult:
    """Run ``drafter`` against one trace through the live loop; returns the GenerationResult."""
    target = TraceTarget(case.prompt, case.output, case.vocab_size, case.eos, profile, case.top,
                         sampled=case.sampling is not None)
    # the budget a live run had: a budget cut to the trace's own length would tell the drafter
    # where the recorded answer stops; the loop stops at the recorded EOS through the target
    ended_at_eos = bool(case.output) and case.output[-1] in case.eos
    budget = max(case.max_new_tokens, len(case.output)) if ended_at_eos else len(case.output)
    return decoding.generate(target, case.prompt, drafter, max_new_tokens=budget, draft_budget=draft_budget)


def regime_words(regime: Regime) -> str:
    """What a replay's figures name: ``greedy``, or the sampling regime with "a seed per case"."""
    return "greedy" if regime.greedy else f"sampled: {regime.describe()}, a seed per case as recorded"


def regime_traces(folder: Path | str | None, sampling: Sampling) -> list[TraceSet]:
    """The trace sets a replay in ``sampling``'s regime reads, each read once: those of ``folder`` (default: the shipped
    benchmark) when its traces were decoded in that regime, else its subfolder for the regime
    (:func:`~experiments.benchmarks.traces.regime_folder`) when there is one. Greedy (the default)
    replays whatever ``folder`` holds, its figures named for the regime the traces record. A sampled
    regime no traces were recorded in is refused in one line: a replay never passes greedy figures off
    as sampled ones. The seed is each case's own, as recorded: another ``--seed`` is refused."""
    folder = Path(folder) if folder else default_folder()
    regime = sampling.regime
    if regime.greedy:
        return load_trace_sets(folder)
    if sampling.seed:
        raise PLDError("--seed with --replay: a sampled trace replays the seed it was recorded with (each case its "
                       "own); record traces with another seed to replay it (traces.py record --seed S)")
    for candidate in (folder, regime_folder(folder, regime)):
        if any(candidate.glob("*.jsonl.gz")):
            sets = load_trace_sets(candidate)
            if traces_regime(sets) == regime:
                return sets
    raise PLDError(f"--temperature {regime.temperature:g} with --replay: {clean(folder)} holds no traces sampled at "
                   f"{regime.describe()}; record them (traces.py record --temperature {regime.temperature:g}"
                   f"{f' --top-k {regime.top_k}' if regime.top_k else ''}{f' --top-p {regime.top_p:g}' if regime.top_p < 1 else ''}) "
                   "and replay that folder, or run live (without --replay)")


def default_specs() -> list[str]:
    """Every registered drafter but the peers' (``peer:...``, compared when asked for)."""
    return lookup.available(peers=False)


def replayable_spec(spec: str) -> bool:
    """Whether a trace can stand in for the target of method ``spec``: any drafter (transformers'
    references need the model)."""
    return parse_spec(spec)[0] not in REFERENCES


def replay_methods(specs: Sequence[str | DrafterMethod]) -> list[DrafterMethod]:
    """The drafter methods of ``specs`` (parsed once: a method already parsed is kept as it is);
    references are refused."""
    methods = [s if isinstance(s, DrafterMethod) else parse_method(s) for s in specs]
    bad = [m.spec for m in methods if not isinstance(m, DrafterMethod)]
    if bad:
        raise PLDError(f"replay runs drafters only, not {', '.join(bad)}")
    return methods


def check_top_rows(sets: Sequence[TraceSet], methods: Sequence[DrafterMethod]) -> None:
    """Drafters that read the target's top-k need traces that hold enough of it."""
    wants = {m.spec: m.drafter_spec.wants_top for m in methods}
    if not any(wants.values()):
        return
    for trace_set in sets:
        for case in trace_set.cases:
            held = 0 if case.top is None else case.top.ids.shape[1]
            short = [spec for spec, k in wants.items() if k > held]
            if short:
                raise PLDError(f"{', '.join(short)} read the target's top-{max(wants[s] for s in short)}; "
                               f"{trace_set.path.name} holds {'no top-k rows' if not held else f'the top-{held}'} "
                               f"(case {case.case}): replay the shipped benchmark, or compare them live")


def replay_row(case: TraceCase, method: DrafterMethod, setting: Setting, *, experiment: str, code: str,
               config: dict | None = None, drafter: lookup.Drafter | None = None,
               draft_budget: int = DRAFT_BUDGET) -> CaseResult:
    """One drafter on one trace, as a row priced under the setting's profile (a fresh drafter unless
    one is given: the stream's, which keeps what earlier cases taught it)."""
    profile = setting.profile
    try:
        out = replay_case(case, drafter or method.make(setting), profile, draft_budget)
    except DrafterBug as exc:  # the drafter's bug, named with the case it happened in
        raise exc.in_case(case.case) from exc.__cause__
    return case_result(case.case, case.category, case.turn, len(case.prompt), method.spec, method.params(),
                       out, profile=profile, experiment=experiment, code=code, measured=False,
                       keep_tokens=False, config=config, git_sha=git_sha())


def replay_rows(sets: Sequence[TraceSet], specs: Sequence[str] | None = None, profile: CostProfile | None = None,
                progress: bool = True) -> list[CaseResult]:
    """One row per (case, drafter): tau, estimated speedup, drafter time (nothing stored)."""
    comparison = ReplayComparison(sets, specs or default_specs(), results_dir=None, profile=profile)
    comparison.run(progress=progress)
    return list(comparison.rows.values())


def _check_unique_cases(sets: Sequence[TraceSet]) -> None:
    """Rows are keyed by (case, method): a case recorded twice (one prompt at two lengths) would
    have its rows mixed up, so it is refused."""
    seen: dict[str, Path] = {}
    for trace_set in sets:
        for case in trace_set.cases:
            if case.case in seen and seen[case.case] != trace_set.path:
                raise PLDError(f"case {case.case} is in both {seen[case.case].name} and {trace_set.path.name}; "
                               "replay one of them at a time (a folder of its own, --traces DIR)")
            seen[case.case] = trace_set.path


class ReplayComparison:
    """compare.py --replay: drafters against recorded traces, rows to JSONL, tables per category.

    Rows already in the store whose code key is current are kept, not replayed again (and not
    appended again); ``results_dir=None`` keeps rows in memory only.
    """

    def __init__(self, sets: Sequence[TraceSet], specs: Sequence[str | DrafterMethod], results_dir: str | Path | None = "results",
                 fresh: bool = False, profile: CostProfile | None = None, stream: bool = False,
                 draft_budget: int = DRAFT_BUDGET) -> None:
        self.sets, self.stream, self.draft_budget = in_order(sets), stream, draft_budget
        _check_unique_cases(self.sets)
        #: where every drafter runs: the traces' model, greedy, priced under ``profile`` or the traces' own
        self.setting = traces_setting(self.sets, profile)
        self.profile = self.setting.profile
        self.methods = replay_methods(specs)
        check_top_rows(self.sets, self.methods)
        self.specs = [m.spec for m in self.methods]
        # the traces' contents, not only their names: re-recorded traces are another benchmark
        self.config = {"replay": True, "benchmark": benchmark_hash(self.sets),
                       "traces": [f"{s.path.name}:{len(s.cases)}" for s in self.sets],
                       "profile": self.profile.model, **({"stream": True} if stream else {}),
                       **({} if self.setting.regime.greedy else {"regime": self.setting.regime.name}),
                       # profiles of one model on other hardware or batches (h100-8b, -b32, a100-8b) differ here
                       **({} if profile is None else {"device": self.profile.device}),
                       **({"draft_budget": draft_budget} if draft_budget != DRAFT_BUDGET else {})}
        self.experiment = config_hash(self.config)
        self.codes = {m.spec: code_key(*m.drafter_spec.classes(), profile=self.profile) for m in self.methods}
        self.store = ResultStore(Path(results_dir) / f"replay-{self.experiment}.jsonl") if results_dir else None
        self.rows: dict[tuple[str, str], CaseResult] = reusable(self.store, fresh, self.codes) if self.store else {}
        self.reused = len(self.rows)
        self.seconds = 0.0

    @classmethod
    def from_args(cls, args, method_specs: Sequence[str | DrafterMethod], profile: CostProfile | None = None,
                  draft_budget: int = DRAFT_BUDGET) -> "ReplayComparison":
        check_prompts(args.prompts)
        sets = regime_traces(args.traces, Sampling(getattr(args, "temperature", 0.0),
                                                                  getattr(args, "top_k", 0), getattr(args, "top_p", 1.0),
                                                                  getattr(args, "seed", 0)))
        if args.tasks:
            have = [s.task for s in sets]
            for task in parse_list(args.tasks):
                if task not in have:
                    raise PLDError(f"{unknown_name('task', task, have)} (in the traces)")
            sets = [s for s in sets if s.task in parse_list(args.tasks)]
        if not args.full:  # the quick subset: the first --prompts prompts of each task (turns kept together)
            sets = first_prompts(sets, args.prompts)
        require_cases(sets, f"{args.traces or 'the shipped benchmark'} (as selected)")
        return cls(sets, method_specs, args.results, fresh=args.fresh, stream=getattr(args, "stream", False),
                   profile=profile, draft_budget=draft_budget)

    def run(self, progress: bool = True) -> None:
        t0 = time.perf_counter()
        total = len(self.methods) * sum(len(s.cases) for s in self.sets)
        # a stream serves every case again, reused rows or not (its drafter's history is what the
        # earlier cases left); per request, a case with a current row is not replayed
        kept = 0 if self.stream else sum((c.case, m.spec) in self.rows
                                         for m in self.methods for s in self.sets for c in s.cases)
        with progress_bar(total, "replay", initial=kept, enabled=progress) as bar:
            for method in self.methods:
                served = serve_traces(self.sets, method.make, self.setting, stream=self.stream,
                                      needed=lambda case, spec=method.spec: (case.case, spec) not in self.rows)
                for _, case, setting, drafter in served:
                    row = replay_row(case, method, setting, experiment=self.experiment,
                                     code=self.codes[method.spec], config=self.config, drafter=drafter,
                                     draft_budget=self.draft_budget)
                    if (case.case, method.spec) not in self.rows and self.store is not None:
                        self.store.append(row)
                    self.rows[(case.case, method.spec)] = row
                    bar.update()
        self.seconds = time.perf_counter() - t0

    # -- what a report says around the tables (experiments.reporting.tables.report) ----------------
    @property
    def order(self) -> list[str]:
        return self.specs

    def heading(self) -> str:
        where = f"; results: {self.store.path}" if self.store else ""
        stream = "; as one stream of requests (drafters keep what earlier cases taught them)" if self.stream else ""
        return (f"replay of {sum(len(s.cases) for s in self.sets)} traces ({regime_words(self.setting.regime)}){stream}; "
                f"estimated speedup from the cost profile of {self.config['profile']}{where}")

    def footer(self) -> str:
        tokens = sum(r.new_tokens for r in self.rows.values())
        reused = f" ({self.reused} reused from the results)" if self.reused else ""
        return f"{len(self.rows)} replays{reused}, {tokens:,} tokens in {self.seconds:.1f} s"
