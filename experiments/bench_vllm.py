"""vLLM on this CPU: tokens/s and acceptance at batch 1, 4 and 16, without and with lookup drafting.

    make bench-vllm [ARGS="--quick"]
    PLD_LAB_MODEL_DIR=DIR .venv-vllm/bin/python experiments/bench_vllm.py [--batches 1,4,16] [--prompts 16]
        [--max-new-tokens 128] [--methods none,ngram,suffix-automaton,adaptive] [--json results/bench_vllm.json]

Run it with the vLLM venv's Python. ``make bench-vllm`` builds that venv and sets
``PLD_LAB_MODEL_DIR`` to the embedded model's converted checkpoint, as ``make test-vllm`` does.

Methods: ``none`` (no speculation); ``ngram`` (vLLM's own prompt lookup, ``prompt_lookup_min`` /
``prompt_lookup_max`` from ``--ngram``, default 2 / 5); any other name is a drafter spec run through
our proposer (``decoding.integrations.vllm.DrafterProposer``) with its batch rule, or with the rule
off when written ``SPEC@whole``. Every method drafts at most ``--k`` (5) tokens a step.

One engine per method (its start is the expensive part: 20 s to two minutes here), all batch sizes on it,
the methods back to back in one run. At batch ``b`` the same ``--prompts`` prompts (input-grounded:
summarization, doc-qa, code-edit, chat-templated) go in consecutive groups of ``b``, one
``llm.generate`` each, greedy; tokens/s is generated tokens over the wall time of those calls
(prefill included), after a warm-up. Acceptance is vLLM's spec-decode counters over the same calls.
Each method's outputs are compared with ``none``'s at the same batch size. Prints a table and
writes JSON with the thread settings (the engine runs one OpenMP thread, which is also a torch
thread, per core in ``VLLM_CPU_OMP_THREADS_BIND``), versions and load averages.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable as a script from a checkout

# Our modules are imported inside the functions, never here: vLLM's engine processes start by
# spawn and import this file again, and a process that holds numba (which `lookup` imports) must
# not start vLLM's CPU worker (see engine_environment).
if TYPE_CHECKING:
    from experiments.benchmarks.tasks import Prompt

PROPOSER = "decoding.integrations.vllm.DrafterProposer"  # loaded by vLLM's engine process by this path
DEFAULT_METHODS = "none,ngram,suffix-automaton,adaptive"
DEFAULT_TASKS = "summarization,doc-qa,code-edit"  # input-grounded: answers copy spans of the prompt
WHOLE = "@whole"  # suffix of a drafter spec: our proposer without its batch rule
MODEL_ENV = "PLD_LAB_MODEL_DIR"
HEADERS = ("method", "batch", "tokens/s", "x none", "tokens", "seconds", "drafted", "accepted", "accept %",
           "mean acc. len", "same as none", "load")


@dataclass(frozen=True)
class BenchPrompt:
    """One chat-templated prompt."""

    id: str
    ids: list[int]  # token ids, the chat template applied


@dataclass
class Row:
    """One method at one batch size."""

    method: str
    batch: int
    tokens: int  # generated tokens, all groups
    seconds: float  # wall time of the llm.generate calls
    tokens_per_s: float
    drafts: int = 0  # vLLM's counters over those calls: steps of a request with a draft
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    same_as_none: int | None = None  # prompts whose output equals no speculation's (None: not compared)
    differing: list[str] = field(default_factory=list)  # ids of the prompts whose output differs
    load_before: float = 0.0  # 1-minute load average when the measurement began

    @property
    def acceptance(self) -> float | None:
        """Accepted draft tokens over drafted ones."""
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """vLLM's: 1 + accepted tokens per draft (the tokens a step with a draft commits)."""
        return 1 + self.accepted_tokens / self.drafts if self.drafts else None


# --------------------------------------------------------------------------- settings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.environ.get(MODEL_ENV), help=f"checkpoint folder (default: ${MODEL_ENV})")
    ap.add_argument("--methods", default=DEFAULT_METHODS,
                    help="none, ngram, or drafter specs (SPEC@whole: no batch rule)")
    ap.add_argument("--batches", default="1,4,16", help="batch sizes, e.g. 1,4,16")
    ap.add_argument("--prompts", type=int, default=16, help="prompts, run at every batch size")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--max-prompt-tokens", type=int, default=1024, help="skip longer prompts (prefill dominates)")
    ap.add_argument("--tasks", default=DEFAULT_TASKS, help="task suites the prompts come from, in turn")
    ap.add_argument("--k", type=int, default=5, help="num_speculative_tokens of every speculative method")
    ap.add_argument("--ngram", default="2,5", help="vLLM ngram's prompt_lookup_min,prompt_lookup_max")
    ap.add_argument("--batch-rule", default=None,
                    help="our proposer's batch_rule setting, as JSON (e.g. '{\"fixed_tokens\": 4}')")
    ap.add_argument("--threads-bind", default=None, help="VLLM_CPU_OMP_THREADS_BIND (default: every core we may use)")
    ap.add_argument("--ignore-eos", action="store_true", help="always generate --max-new-tokens tokens")
    ap.add_argument("--json", default="results/bench_vllm.json", help="where to write the results")
    ap.add_argument("--quick", action="store_true", help="a smoke test: 2 prompts, batches 1 and 2, 32 tokens")
    args = ap.parse_args(argv)
    if args.quick:
        args.batches, args.prompts, args.max_new_tokens, args.max_prompt_tokens = "1,2", 2, 32, 512
    args.batches = sorted({int(b) for b in args.batches.split(",")})
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.ngram = [int(n) for n in args.ngram.split(",")]
    args.batch_rule = json.loads(args.batch_rule) if args.batch_rule else None
    return args


def check(args: argparse.Namespace) -> None:
    """Refuse, in one line each, what would fail minutes later."""
    from lookup.errors import PLDError

    if not args.model:
        raise PLDError(f"no model: set {MODEL_ENV} to the converted embedded model (`make bench-vllm` does), "
                       "or pass --model DIR")
    if not (Path(args.model) / "config.json").exists():
        raise PLDError(f"{args.model}: not a transformers checkpoint folder (no config.json)")
    if importlib.util.find_spec("vllm") is None:
        raise PLDError("vLLM is not installed in this Python: run with .venv-vllm/bin/python (`make bench-vllm`)")
    if min(args.batches) < 1 or args.prompts < 1 or args.k < 1 or len(args.ngram) != 2:
        raise PLDError("--batches, --prompts and --k must be >= 1, and --ngram two integers MIN,MAX")


def engine_environment(bind: str | None) -> dict:
    """Set vLLM's CPU environment (before its engine starts); the thread settings it makes.

    vLLM binds one OpenMP thread per listed core; by default it lists one core here, which halved
    plain greedy throughput on our 2-core machine, so by default every core we may use is listed.
    Its engine processes start by spawn, not fork: vLLM 0.32's CPU worker scans every loaded
    module when it starts and fails on llvmlite's (``AttributeError: '_lib_fn_wrapper' object has
    no attribute 'get'``), which a forked worker inherits from this process (numba, via ``lookup``).
    """
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
    cores = sorted(os.sched_getaffinity(0))
    every_core = ",".join(map(str, cores))
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = bind or os.environ.get("VLLM_CPU_OMP_THREADS_BIND") or every_core
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB of KV cache: plenty for 16 x 1,200 tokens
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep the progress lines readable
    # the engine process imports our proposer: make this checkout importable there too
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    import torch

    return {"VLLM_CPU_OMP_THREADS_BIND": os.environ["VLLM_CPU_OMP_THREADS_BIND"],
            # vLLM's CPU worker sets torch's threads to the bound cores, one OpenMP thread each
            "engine_omp_threads": len(cpu_list(os.environ["VLLM_CPU_OMP_THREADS_BIND"])),
            "VLLM_CPU_KVCACHE_SPACE": os.environ["VLLM_CPU_KVCACHE_SPACE"],
            "VLLM_WORKER_MULTIPROC_METHOD": os.environ["VLLM_WORKER_MULTIPROC_METHOD"],
            "cores_usable": len(cores), "cpu_count": os.cpu_count(),
            "torch_threads_main_process": torch.get_num_threads()}


def cpu_list(spec: str) -> list[int]:
    """The CPUs of a ``0-3,5`` list (``|`` separates tensor-parallel ranks)."""
    out: list[int] = []
    for part in spec.replace("|", ",").split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            out += list(range(int(lo), int(hi or lo) + 1))
    return out


def versions() -> dict:
    import torch
    import transformers
    import vllm

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"vllm": vllm.__version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "pld_lab": commit}


# --------------------------------------------------------------------------- prompts


def build_prompts(model: str, tasks: list[str], n: int, max_tokens: int) -> list[BenchPrompt]:
    """``n`` prompts taken from the suites in turn, chat-templated, each at most ``max_tokens`` long."""
    from transformers import AutoTokenizer

    from experiments.benchmarks.tasks import load_task
    from lookup.errors import PLDError

    tokenizer = AutoTokenizer.from_pretrained(model)
    suites = [load_task(t) for t in tasks]
    out: list[BenchPrompt] = []
    for i in range(max(map(len, suites))):
        for suite in suites:
            if i < len(suite) and len(out) < n:
                ids = chat_ids(tokenizer, suite[i])
                if len(ids) <= max_tokens:
                    out.append(BenchPrompt(suite[i].id, ids))
    if len(out) < n:
        raise PLDError(f"only {len(out)} prompts of {tasks} fit in {max_tokens} tokens; raise --max-prompt-tokens")
    return out


def chat_ids(tokenizer: Any, prompt: Prompt) -> list[int]:
    """The prompt's first turn (and system prompt) through the model's chat template."""
    messages = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + \
        [{"role": "user", "content": prompt.turns[0]}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])


# --------------------------------------------------------------------------- engines


def engine_settings(method: str, args: argparse.Namespace, max_model_len: int) -> dict:
    """``LLM(...)`` keyword arguments for ``method``."""
    settings: dict[str, Any] = dict(
        model=args.model, dtype="float32", enforce_eager=True, seed=0, max_model_len=max_model_len,
        max_num_seqs=max(args.batches), disable_log_stats=False,  # the spec-decode counters need the stats
        enable_prefix_caching=False)  # every batch size and method pays the same prefill
    if method == "ngram":
        settings["speculative_config"] = {"method": "ngram", "num_speculative_tokens": args.k,
                                          "prompt_lookup_min": args.ngram[0], "prompt_lookup_max": args.ngram[1]}
    elif method != "none":
        spec, whole = (method[: -len(WHOLE)], True) if method.endswith(WHOLE) else (method, False)
        settings["speculative_config"] = {"method": "custom_class", "model": PROPOSER, "num_speculative_tokens": args.k}
        rule = False if whole else args.batch_rule
        settings["additional_config"] = {"pld_lab": {"drafter": spec, **({} if rule is None else {"batch_rule": rule})}}
    return settings


@contextmanager
def engine(settings: dict) -> Iterator[Any]:
    """A started vLLM engine, shut down on the way out (it holds both cores' worth of threads)."""
    from vllm import LLM

    llm = LLM(**settings)
    try:
        yield llm
    finally:
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        del llm


def engine_facts(llm: Any) -> dict:
    """Scheduler settings vLLM chose for itself (the same for every method, unless the drafts change them)."""
    scheduler = getattr(getattr(llm.llm_engine, "vllm_config", None), "scheduler_config", None)
    return {name: getattr(scheduler, name, None)
            for name in ("max_num_batched_tokens", "max_num_scheduled_tokens", "max_num_seqs")}


def spec_counters(llm: Any) -> dict[str, Any]:
    """vLLM's cumulative spec-decode counters (absent without speculation)."""
    return {m.name: getattr(m, "value", getattr(m, "values", None)) for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode")}


def delta(after: dict, before: dict, name: str) -> Any:
    """How much counter ``name`` grew (element-wise for a vector)."""
    a, b = after.get(name), before.get(name)
    if a is None:
        return 0
    if isinstance(a, list):
        return [int(x - y) for x, y in zip(a, b or [0] * len(a))]
    return int(a - (b or 0))


def measure(llm: Any, method: str, batch: int, prompts: list[BenchPrompt], args: argparse.Namespace
            ) -> tuple[Row, list[list[int]]]:
    """Run every prompt in consecutive groups of ``batch``; the row and each prompt's output ids."""
    from vllm import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=args.max_new_tokens, ignore_eos=args.ignore_eos)
    load = os.getloadavg()[0]
    before = spec_counters(llm)
    outputs: list[list[int]] = []
    seconds = 0.0
    for start in range(0, len(prompts), batch):
        group = [{"prompt_token_ids": p.ids} for p in prompts[start: start + batch]]
        t0 = time.perf_counter()
        results = llm.generate(group, params, use_tqdm=False)
        seconds += time.perf_counter() - t0
        outputs += [list(r.outputs[0].token_ids) for r in results]
    after = spec_counters(llm)
    tokens = sum(map(len, outputs))
    row = Row(method, batch, tokens, seconds, tokens / seconds,
              drafts=delta(after, before, "vllm:spec_decode_num_drafts"),
              draft_tokens=delta(after, before, "vllm:spec_decode_num_draft_tokens"),
              accepted_tokens=delta(after, before, "vllm:spec_decode_num_accepted_tokens"),
              accepted_per_position=delta(after, before, "vllm:spec_decode_num_accepted_tokens_per_pos") or [],
              load_before=load)
    return row, outputs


def warm_up(llm: Any, prompts: list[BenchPrompt]) -> None:
    """A short run first: the first forwards (and our drafters' JIT) cost more than the rest."""
    from vllm import SamplingParams

    llm.generate([{"prompt_token_ids": p.ids} for p in prompts[:2]], SamplingParams(temperature=0, max_tokens=16),
                 use_tqdm=False)


def compare(row: Row, outputs: list[list[int]], plain: list[list[int]] | None, prompts: list[BenchPrompt]) -> None:
    """Note on ``row`` which prompts' greedy outputs equal no speculation's at the same batch size."""
    if plain is None:
        return
    same = [a == b for a, b in zip(outputs, plain)]
    row.same_as_none = sum(same)
    row.differing = [p.id for p, s in zip(prompts, same) if not s]


# --------------------------------------------------------------------------- report


def table(rows: list[Row]) -> str:
    from experiments.reporting.tables import render

    plain = {r.batch: r.tokens_per_s for r in rows if r.method == "none"}

    def fmt(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    return render(HEADERS, [
        (r.method, r.batch, f"{r.tokens_per_s:.1f}",
         fmt(r.tokens_per_s / plain[r.batch] if r.batch in plain else None, ".2f"),
         r.tokens, f"{r.seconds:.1f}", r.draft_tokens, r.accepted_tokens,
         fmt(None if r.acceptance is None else 100 * r.acceptance, ".0f"), fmt(r.mean_acceptance_length, ".2f"),
         "-" if r.same_as_none is None else f"{r.same_as_none}/{r.same_as_none + len(r.differing)}",
         f"{r.load_before:.1f}")
        for r in rows])


def progress(started: float, text: str) -> None:
    print(f"[{time.perf_counter() - started:6.0f} s] {text}", flush=True)


def bench_method(method: str, args: argparse.Namespace, prompts: list[BenchPrompt], max_model_len: int,
                 plain: dict[int, list[list[int]]], started: float) -> tuple[list[Row], dict]:
    """One engine for ``method``, every batch size on it: the rows and the engine's settings.
    ``none``'s outputs go into ``plain`` (by batch size); other methods' are compared with them."""
    settings = engine_settings(method, args, max_model_len)
    used = {k: v for k, v in settings.items() if k != "model"}
    rows = []
    progress(started, f"{method}: starting the engine")
    with engine(settings) as llm:
        used["engine"] = engine_facts(llm)
        progress(started, f"{method}: warming up")
        warm_up(llm, prompts)
        for batch in args.batches:
            progress(started, f"{method}: batch {batch}, {len(prompts)} prompts x {args.max_new_tokens} tokens")
            row, outputs = measure(llm, method, batch, prompts, args)
            if method == "none":
                plain[batch] = outputs
            compare(row, outputs, plain.get(batch), prompts)
            rows.append(row)
            accepted = f", {row.accepted_tokens}/{row.draft_tokens} draft tokens accepted" if row.draft_tokens else ""
            progress(started, f"{method}: batch {batch}: {row.tokens_per_s:.1f} tokens/s{accepted}")
    return rows, used


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # a plain SIGTERM (timeout, kill) would skip engine()'s shutdown and leave its processes running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    threads = engine_environment(args.threads_bind)
    load_before = os.getloadavg()
    progress(started, f"building {args.prompts} prompts from {args.tasks}; threads: {threads}")
    prompts = build_prompts(args.model, args.tasks.split(","), args.prompts, args.max_prompt_tokens)
    max_model_len = max(len(p.ids) for p in prompts) + args.max_new_tokens + args.k + 16
    rows: list[Row] = []
    plain: dict[int, list[list[int]]] = {}
    settings: dict[str, dict] = {}
    for method in args.methods:  # back to back, in one run: the same machine state for all
        method_rows, settings[method] = bench_method(method, args, prompts, max_model_len, plain, started)
        rows += method_rows
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    print()
    print(table(rows))
    print(f"\n{len(args.methods)} engines in {elapsed:.0f} s; "
          f"VLLM_CPU_OMP_THREADS_BIND={threads['VLLM_CPU_OMP_THREADS_BIND']} "
          f"({threads['engine_omp_threads']} engine threads, {threads['cores_usable']} cores); "
          f"load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    write_json(Path(args.json), args, rows, prompts, threads, settings, elapsed, load_before, load_after)
    return 0


def write_json(out: Path, args: argparse.Namespace, rows: list[Row], prompts: list[BenchPrompt], threads: dict,
               settings: dict, elapsed: float, load_before: tuple, load_after: tuple) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"model": args.model, "batches": args.batches, "prompts": [p.id for p in prompts],
            "prompt_tokens": [len(p.ids) for p in prompts], "max_new_tokens": args.max_new_tokens,
            "ignore_eos": args.ignore_eos, "k": args.k, "ngram_min_max": args.ngram, "threads": threads,
            "ld_preload": os.environ.get("LD_PRELOAD", ""), "versions": versions(), "engines": settings,
            "machine": platform.machine(), "processor": platform.processor() or platform.uname().machine,
            "loadavg_before": list(load_before), "loadavg_after": list(load_after), "seconds": elapsed,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    rows_out = [{**asdict(r), "acceptance": r.acceptance, "mean_acceptance_length": r.mean_acceptance_length}
                for r in rows]
    out.write_text(json.dumps({"meta": meta, "rows": rows_out}, indent=1))
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    from lookup.errors import PLDError

    args = parse_args(argv)
    try:
        check(args)
        return run(args)
    except PLDError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # vLLM spawns its engine process: LLM(...) only runs under this guard
    sys.exit(main())
