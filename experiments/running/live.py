"""Run a live comparison: every method on every case of the model, rows to JSONL as they come.

With ``stream=True`` (``compare.py --stream``) each drafter method keeps one drafter for every case,
in order, as a server answering a stream of requests would: a drafter with a history across
requests (``adaptive:history=true``) learns from the earlier cases of the run. Either way the
drafters come from :func:`experiments.running.serving.serve`, as in every other loop over a benchmark.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Callable, Sequence

import decoding
import lookup
from decoding.cost import NoisyProfileWarning, cost_profile
from decoding.devices import fit_threads_to_load, resolve_device
from decoding.lossless import compare_outputs
from decoding.generate import DrafterBug
from decoding.progress import progress_bar
from experiments.benchmarks.tasks import Prompt, prompts_digest
from experiments.running.cases import Case, check_settings, conversation_cases, select_prompts
from experiments.running.methods import DrafterMethod, Method, Sampling, parse_method
from experiments.running.rows import CaseResult, case_result
from experiments.running.serving import serve
from experiments.running.store import ResultStore, code_key, config_hash, git_sha, reusable, versions
from pldcore.cost import CPU_SMOLLM2, CostProfile
from pldcore.setting import Setting


def _warn(line: str) -> None:
    """One line on stderr, as every CLI warning."""
    print(f"warning: {line}", file=sys.stderr, flush=True)


def machine_profile(target) -> CostProfile:
    """This machine's cost profile of ``target`` (:func:`decoding.cost.cost_profile`: cached, or measured
    once), with its notices (busy machine, what stands in) as one warning line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NoisyProfileWarning)
        profile = cost_profile(target, progress=True)
    for w in caught:
        if issubclass(w.category, NoisyProfileWarning):
            _warn(str(w.message))
        else:  # not ours to reword: shown as it would have been
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return profile


#: how much faster than plain decoding a drafter's run is taken to be, for an estimate only (the
#: README's measured table: 1.2x to 1.5x on this CPU; plain decoding through our loop: 1x)
ESTIMATED_SPEEDUP = 1.3


def time_one_token(target, repeats: int = 8) -> float:
    """Seconds of one one-token forward after a 256-token prompt on this machine now (the median of
    ``repeats``): what a busy machine makes of the model's cost, in well under a second when quiet."""
    import time

    import numpy as np

    rng = np.random.default_rng(0)
    target.start(rng.integers(10, target.vocab_size, 257).tolist())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        target.score(rng.integers(10, target.vocab_size, 1))
        times.append(time.perf_counter() - t0)
        target.keep(0)
    return float(np.median(times))


def estimate_seconds(prompt_tokens: Sequence[int], drafted: Sequence[bool], max_new_tokens: int, forward: float,
                     profile: CostProfile) -> float:
    """Roughly how long runs take: per run its prefill and ``max_new_tokens`` one-token forwards, each
    priced under ``profile`` scaled to ``forward`` (a one-token forward timed now: a busy machine's
    slowdown is in it), a drafter's run taken :data:`ESTIMATED_SPEEDUP` times faster."""
    scale = forward / profile.cost(1, 256)
    total = 0.0
    for n, with_drafter in zip(prompt_tokens, drafted):
        decode = sum(profile.cost(1, n + i) for i in range(0, max_new_tokens, 16)) * 16 * scale
        total += profile.prefill_cost(n) * scale + decode / (ESTIMATED_SPEEDUP if with_drafter else 1.0)
    return total


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class Comparison:
    """Methods x cases, measured back to back per case so that machine noise hits all alike."""

    def __init__(self, target, methods: Sequence[Method], prompts: Sequence[Prompt], max_new_tokens: int,
                 sampling: Sampling, results_dir: str | Path = "results", fresh: bool = False,
                 profile: CostProfile = CPU_SMOLLM2, stream: bool = False) -> None:
        self.target, self.prompts, self.profile, self.stream = target, list(prompts), profile, stream
        self.busy: str | None = None  # the busy-machine warning of the load check, when there was one
        self.max_new_tokens, self.sampling = max_new_tokens, sampling
        #: where every drafter runs: this model on this machine, in this comparison's regime
        self.setting = Setting.of(target.name, profile, sampling.regime,
                                  profile_source=f"measured on {target.device}")
        # The first method is the reference: its answers seed later turns, and speedups are over it.
        self.methods = list(methods)
        self.config = {
            "model": target.name, "device": str(target.device), "dtype": str(target.model.dtype),
            "max_new_tokens": max_new_tokens, "temperature": sampling.temperature, "top_k": sampling.top_k,
            "top_p": sampling.top_p, "seed": sampling.seed, "prompts": prompts_digest(self.prompts),
            "reference": self.methods[0].spec, "versions": versions(), **({"stream": True} if stream else {}),
        }
        self.experiment = config_hash(self.config)
        self.store = ResultStore(Path(results_dir) / f"compare-{self.experiment}.jsonl")
        # a reference method has no drafter; its rows depend on the loop and libraries all the same
        self.codes = {m.spec: code_key(*(m.drafter_spec.classes() if isinstance(m, DrafterMethod) else []),
                                       profile=profile) for m in self.methods}
        rows = reusable(self.store, fresh, self.codes)
        # a stream: one drafter per drafter method serves every case in order, so each runs every case
        # again (its history is what the earlier cases of this run left); references keep their rows
        drafter_specs = {m.spec for m in self.methods if isinstance(m, DrafterMethod)}
        rows = {k: r for k, r in rows.items() if not (stream and k[1] in drafter_specs)}
        # a row's speedup and identity check are against its case's reference row: keep rows only
        # where that reference row is kept too
        ref = self.methods[0].spec
        self.rows: dict[tuple[str, str], CaseResult] = {k: r for k, r in rows.items() if (k[0], ref) in rows}

    @classmethod
    def from_args(cls, args, method_specs: Sequence[str | Method]) -> "Comparison":
        sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
        check_settings(args.max_new_tokens, args.prompts, sampling)
        resolve_device(args.device)  # a machine without the device fails now, before any prompt work
        methods = [s if isinstance(s, Method) else parse_method(s) for s in method_specs]
        # hf-greedy is the natural reference; put it first when it is there
        methods.sort(key=lambda m: m.spec != "hf-greedy")
        prompts = select_prompts(args)
        busy = fit_threads_to_load()  # before loading: timings (the profile's too) run with the threads it leaves
        if busy:
            _warn(busy)
        target = decoding.load_model(args.model, device=args.device)
        profile = machine_profile(target)
        comparison = cls(target, methods, prompts, args.max_new_tokens, sampling, args.results, args.fresh, profile,
                         stream=getattr(args, "stream", False))
        comparison.busy = busy  # the plots mark timings taken on a busy machine
        return comparison

    # -- running -----------------------------------------------------------------------------
    def cases_total(self) -> int:
        return sum(len(p.turns) for p in self.prompts)

    def estimate(self) -> str:
        """One line, said before the work: the runs to do and roughly how long they take on this
        machine now (:func:`estimate_seconds`, from a one-token forward timed now)."""
        todo = [(case_tokens, m) for case_tokens in self._case_lengths() for m in self.methods]
        todo = [(n, m) for (n, m), key in zip(todo, self._keys()) if key not in self.rows]
        forward = time_one_token(self.target)
        seconds = estimate_seconds([n for n, _ in todo], [isinstance(m, DrafterMethod) for _, m in todo],
                                   self.max_new_tokens, forward, self.profile)
        done = self.cases_total() * len(self.methods) - len(todo)
        return (f"compare: {len(todo)} runs ({len(self.methods)} methods x {self.cases_total()} cases, up to "
                f"{self.max_new_tokens} new tokens each{f'; {done} reused from {self.store.path}' if done else ''}): "
                f"about {_minutes(seconds)} on this machine now (a one-token forward takes {forward * 1e3:.0f} ms "
                f"here now, {self.profile.cost(1, 512) * 1e3:.0f} ms in the cost profile)")

    def _case_lengths(self) -> list[int]:
        """Each case's prompt length, roughly: a later turn's holds the earlier turns and their answers."""
        lengths = []
        for prompt in self.prompts:
            held = 0
            for turn in prompt.turns:
                held += len(self.target.chat_ids(turn, system=prompt.system))
                lengths.append(held)
                held += self.max_new_tokens
        return lengths

    def _keys(self) -> list[tuple[str, str]]:
        """(case id, method) of every run, in :meth:`_case_lengths`' order of cases."""
        ids = [p.id if len(p.turns) == 1 else f"{p.id}#{i + 1}" for p in self.prompts  # conversation_cases' ids
               for i in range(len(p.turns))]
        return [(case, m.spec) for case in ids for m in self.methods]

    def run(self) -> None:
        todo = self.cases_total() * len(self.methods)
        self._warm_up()
        # later turns are made from the reference's earlier answers: cases come as the loop runs
        cases = (case for prompt in self.prompts
                 for case in conversation_cases(self.target, prompt, self._reference_answer))
        with progress_bar(todo, "compare", unit="run") as bar:
            for case, drafters in serve(cases, lambda _case: self._drafters(), stream=self.stream):
                for method in self.methods:
                    bar.set_postfix_str(f"{case.id} {method.spec}"[:40])
                    if (case.id, method.spec) not in self.rows:
                        self._measure(case, method, drafters)
                    bar.update()

    def _drafters(self) -> Callable[[DrafterMethod], lookup.Drafter]:
        """What serves one case (as a stream, every case): a drafter per drafter method, made when
        first asked for (a method whose row is reused needs none)."""
        made: dict[str, lookup.Drafter] = {}

        def drafter(method: DrafterMethod) -> lookup.Drafter:
            if method.spec not in made:
                made[method.spec] = method.make(self.setting)
            return made[method.spec]

        return drafter

    def _warm_up(self) -> None:
        """One short run per method first: the first forwards pay for allocation and JIT."""
        ids = self.target.chat_ids("Say hello.")
        for method in self.methods:
            method.run(self.target, ids, 4, self.sampling, self.setting)

    def _reference_answer(self, case: Case) -> list[int]:
        return self.rows[(case.id, self.methods[0].spec)].tokens

    def _measure(self, case: Case, method: Method, drafters: Callable[[DrafterMethod], lookup.Drafter]) -> None:
        has_drafter = isinstance(method, DrafterMethod)  # transformers' references have none
        served = {"drafter": drafters(method)} if has_drafter else {}
        try:
            result = method.run(self.target, case.ids, self.max_new_tokens, self.sampling, self.setting, **served)
        except DrafterBug as exc:  # the drafter's bug, named with the case it happened in
            raise exc.in_case(case.id) from exc.__cause__
        ref = self.rows.get((case.id, self.methods[0].spec))
        identical = mismatch = None
        # sampled: every deterministic drafter commits plain sampling's tokens with one seed, up to a
        # sampling boundary within float error (decoding.lossless); transformers' own sampling draws
        # from another generator, so only our loop's runs are compared there; a run whose drafts carried
        # their probabilities is plain sampling in distribution only (its own draws decide), so unchecked
        stochastic = not self.sampling.greedy and result.stats.stochastic_steps > 0
        if ref is not None and not stochastic and (self.sampling.greedy or has_drafter
                                                   and isinstance(self.methods[0], DrafterMethod)):
            diff = compare_outputs(self.target, case.ids, result.tokens, ref.tokens,
                                   self.sampling.regime, result.seed)
            identical, mismatch = diff is None, (str(diff) if diff else None)
        row = case_result(case.id, case.category, case.turn, len(case.ids), method.spec, method.params(), result,
                          profile=self.profile, experiment=self.experiment, code=self.codes[method.spec],
                          has_drafter=has_drafter, reference=ref, identical=identical, mismatch=mismatch,
                          config=self.config, git_sha=git_sha())
        self.rows[(case.id, method.spec)] = row
        self.store.append(row)

    # -- what a report says around the tables (experiments.reporting.tables.report) ----------------
    @property
    def order(self) -> list[str]:
        return [m.spec for m in self.methods]

    def heading(self) -> str:
        return (f"model {self.config['model']} on {self.config['device']}, max_new_tokens {self.max_new_tokens}, "
                f"{'greedy' if self.sampling.greedy else f'temperature {self.sampling.temperature}'}; "
                f"speedup over {self.methods[0].spec}; results: {self.store.path}")

    def footer(self) -> str:
        return ""
