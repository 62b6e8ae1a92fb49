"""Run a comparison: every method on every case, rows to JSONL, a table per category."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from tqdm import tqdm

import decoding
from decoding.cost import cost_profile, estimated_times
from decoding.lossless import compare_outputs
from experiments import tasks as task_suites
from experiments.methods import Method, Run, Sampling, parse_method
from experiments.results import ResultStore, config_hash, git_sha, versions
from lookup.cost import CostProfile
from lookup.errors import PLDError


@dataclass
class Case:
    """One turn of one prompt, as token ids."""

    id: str  # "summarization/003" or "mt-bench/81#2"
    category: str
    turn: int  # 1-based
    ids: list[int]


def conversation_cases(target, prompt, answer: Callable[[Case], list[int]]) -> Iterator[Case]:
    """The turns of ``prompt`` as cases; each later turn follows the model's own earlier answers.

    ``answer(case)`` gives the tokens the model answered to a case (called after the case
    was yielded, so the caller can measure it first).
    """
    history: list[dict] = []
    for turn, user in enumerate(prompt.turns, start=1):
        history.append({"role": "user", "content": user})
        case_id = prompt.id if len(prompt.turns) == 1 else f"{prompt.id}#{turn}"
        case = Case(case_id, prompt.category, turn, target.chat_ids(history, prompt.system))
        yield case
        text = target.tokenizer.decode(answer(case), skip_special_tokens=True).strip()
        history.append({"role": "assistant", "content": text})


def check_settings(max_new_tokens: int, prompts: int, sampling: Sampling) -> None:
    if max_new_tokens < 1:
        raise PLDError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    if prompts < 1:
        raise PLDError(f"--prompts must be >= 1, got {prompts}")
    if sampling.temperature < 0:
        raise PLDError(f"--temperature must be >= 0, got {sampling.temperature}")
    if not 0 < sampling.top_p <= 1:
        raise PLDError(f"--top-p must be in (0, 1], got {sampling.top_p}")
    if sampling.top_k < 0:
        raise PLDError(f"--top-k must be >= 0, got {sampling.top_k}")


def select_prompts(args) -> list:
    """The prompts a comparison runs: the user's file when given, else the embedded task suites."""
    limit = None if args.full else args.prompts
    if getattr(args, "questions", None):
        prompts = task_suites.load_jsonl_questions(args.questions, category=args.category)
        by_category: dict[str, list] = {}
        for p in prompts:  # --prompts N applies per category, as for the embedded suites
            by_category.setdefault(p.category, []).append(p)
        return [p for group in by_category.values() for p in group[:limit]]
    if getattr(args, "dataset", None):
        if not args.template:
            raise PLDError("--dataset needs --template, e.g. --template 'Summarize:\\n{article}'")
        return task_suites.load_dataset_file(args.dataset, args.template, category=args.category or "custom",
                                             limit=limit)
    names = task_suites.available_tasks() if args.tasks is None else [t.strip() for t in args.tasks.split(",")]
    return [p for name in names for p in task_suites.load_task(name, limit)]


class Comparison:
    """Methods x cases, measured back to back per case so that machine noise hits all alike."""

    def __init__(self, target, methods: Sequence[Method], prompts, max_new_tokens: int, sampling: Sampling,
                 results_dir: str | Path = "results", fresh: bool = False, profile: CostProfile | None = None) -> None:
        self.target, self.prompts, self.profile = target, prompts, profile
        self.max_new_tokens, self.sampling = max_new_tokens, sampling
        # The first method is the reference: its answers seed later turns, and speedups are over it.
        self.methods = list(methods)
        self.config = {
            "model": target.name, "device": str(target.device), "dtype": str(target.model.dtype),
            "max_new_tokens": max_new_tokens, "temperature": sampling.temperature, "top_k": sampling.top_k,
            "top_p": sampling.top_p, "seed": sampling.seed, "prompts": task_suites.prompts_digest(prompts),
            "reference": self.methods[0].spec,
        }
        self.experiment = config_hash(self.config)
        self.store = ResultStore(Path(results_dir) / f"compare-{self.experiment}.jsonl")
        self.rows: dict[tuple[str, str], dict] = {}
        if not fresh:
            for row in self.store.rows():
                self.rows[(row["case"], row["method"])] = row

    @classmethod
    def from_args(cls, args, method_specs: Sequence[str]) -> "Comparison":
        sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
        check_settings(args.max_new_tokens, args.prompts, sampling)
        methods = [parse_method(s) for s in method_specs]
        # hf-greedy is the natural reference; put it first when it is there
        methods.sort(key=lambda m: m.spec != "hf-greedy")
        prompts = select_prompts(args)
        target = decoding.load_model(args.model, device=args.device)
        profile = cost_profile(target, progress=True)  # measured once per model and device, then cached
        return cls(target, methods, prompts, args.max_new_tokens, sampling, args.results, args.fresh, profile)

    # -- running -----------------------------------------------------------------------------
    def cases_total(self) -> int:
        return sum(len(p.turns) for p in self.prompts)

    def run(self) -> None:
        todo = self.cases_total() * len(self.methods)
        self._warm_up()
        with tqdm(total=todo, desc="compare", unit="run", dynamic_ncols=True) as bar:
            for prompt in self.prompts:
                for case in conversation_cases(self.target, prompt, self._reference_answer):
                    for method in self.methods:
                        bar.set_postfix_str(f"{case.id} {method.spec}"[:40])
                        if (case.id, method.spec) not in self.rows:
                            self._measure(case, method)
                        bar.update()

    def _warm_up(self) -> None:
        """One short run per method first: the first forwards pay for allocation and JIT."""
        ids = self.target.chat_ids("Say hello.")
        for method in self.methods:
            method.run(self.target, ids, 4, self.sampling, self.profile)

    def _reference_answer(self, case: Case) -> list[int]:
        return self.rows[(case.id, self.methods[0].spec)]["tokens"]

    def _measure(self, case: Case, method: Method) -> None:
        run = method.run(self.target, case.ids, self.max_new_tokens, self.sampling, self.profile)
        ref = self.rows.get((case.id, self.methods[0].spec))
        row = self._row(case, method, run, ref)
        self.rows[(case.id, method.spec)] = row
        self.store.append(row)

    def _row(self, case: Case, method: Method, run: Run, ref: dict | None) -> dict:
        identical, mismatch = None, None
        if ref is not None and self.sampling.greedy:
            diff = compare_outputs(self.target, case.ids, run.tokens, ref["tokens"])
            identical, mismatch = diff is None, (str(diff) if diff else None)
        steps = max(run.forwards, 1)
        return {
            "experiment": self.experiment, "case": case.id, "category": case.category, "turn": case.turn,
            "method": method.spec, "params": method.params(), "prompt_tokens": len(case.ids),
            "new_tokens": run.new_tokens, "forwards": run.forwards, "tau": run.tau, "drafted": run.drafted,
            "accepted": run.accepted, "wall_s": run.wall_s, "tokens_per_s": run.new_tokens / run.wall_s,
            "forward_s": run.forward_s, "drafter_us_per_step": 1e6 * run.drafter_s / steps,
            # throughput ratio: equal to the wall-time ratio when outputs match (greedy), and still
            # fair when sampled outputs differ in length from the reference's
            "speedup": (run.new_tokens / run.wall_s) / (ref["new_tokens"] / ref["wall_s"]) if ref is not None else 1.0,
            **self._estimates(run),
            "identical": identical, "mismatch": mismatch,
            "accepted_lengths": run.accepted_lengths, "drafted_lengths": run.drafted_lengths,
            "contexts": run.contexts, "tokens": run.tokens,
            "config": self.config, "git_sha": git_sha(), "versions": versions(), "time": time.time(),
        }

    def _estimates(self, run: Run) -> dict:
        """The estimated speedup, and the estimated times behind it (tables pool those)."""
        if not run.steps or self.profile is None:
            return {"est_speedup": None}
        plain, spent = estimated_times(run.steps, self.profile, prefill_rows=run.top_rows > 0)
        return {"est_speedup": plain / spent if spent else None, "est_plain_s": plain, "est_run_s": spent}

    # -- reporting -----------------------------------------------------------------------------
    def report(self) -> str:
        from experiments.report import category_tables

        head = (f"model {self.config['model']} on {self.config['device']}, max_new_tokens {self.max_new_tokens}, "
                f"{'greedy' if self.sampling.greedy else f'temperature {self.sampling.temperature}'}; "
                f"speedup over {self.methods[0].spec}; results: {self.store.path}")
        return head + "\n\n" + category_tables(list(self.rows.values()), [m.spec for m in self.methods])


def group_of(row: dict) -> str:
    """Category, with multi-turn prompts split per turn (lookup gains differ sharply between turns)."""
    return row["category"] if row["case"].count("#") == 0 else f"{row['category']} (turn {row['turn']})"
