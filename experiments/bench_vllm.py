"""vLLM on this CPU: tokens/s and acceptance at batch 1 to 32, without speculation, with vLLM's own
model-free methods and with our drafters, measured in interleaved rounds.

    make bench-vllm [ARGS="--quick"]
    PLD_LAB_MODEL_DIR=DIR .venv-vllm/bin/python experiments/bench_vllm.py [--batches 1,4,16,32] [--prompts 32]
        [--max-new-tokens 128] [--rounds 3] [--engines auto|kept|restart]
        [--methods none,ngram,ngram@schedule,suffix,suffix-automaton,frequency] [--json results/bench_vllm.json]
        [--temperature 1.0 [--top-p 1.0] [--seed 0]]

Run it with the vLLM venv's Python. ``make bench-vllm`` builds that venv (arctic-inference included,
for ``suffix``) and sets ``PLD_LAB_MODEL_DIR`` to the embedded model's converted checkpoint, as
``make test-vllm`` does.

Methods. ``none``: no speculation. ``ngram``: vLLM's prompt lookup (``prompt_lookup_min`` /
``prompt_lookup_max`` from ``--ngram``, default 2 / 5). ``ngram@schedule``: the same with vLLM's
``num_speculative_tokens_per_batch_size`` (``--ngram-schedule``: one draft length per range of batch
sizes, for every row). ``suffix``: vLLM's SuffixDecoding (arctic-inference; ``max_tree_depth`` 24,
``max_spec_factor`` 1.0, ``min_token_prob`` 0.1, vLLM's defaults) with ``--suffix-cached-requests``
(default 0: no global tree of earlier responses, since every round serves the same prompts again and
a cache would copy the answers of the round before). Any other name is a drafter spec run through our
proposer (``decoding.integrations.vllm.DrafterProposer``) with its batch rule, or with the rule off
when written ``SPEC@whole``. Every speculative method drafts at most ``--k`` (5) tokens a step.

Measurement. At batch ``b`` the same ``--prompts`` prompts (input-grounded: summarization, doc-qa,
code-edit, chat-templated) go in consecutive groups of ``b``, one ``llm.generate`` each, greedy, or
sampled with ``--temperature`` and ``--top-p``, the request of prompt ``i`` seeded ``--seed`` + ``i``;
tokens/s is generated tokens over the wall time of those calls (prefill included). A machine shared
with other work drifts over minutes, so the methods are interleaved: ``--rounds`` rounds, and in each
every method at every batch size. With every engine kept alive (``--engines kept``; each holds a KV
cache sized to the prompts) a round runs the batch sizes in turn and at each one every method in turn;
where the engines do not fit in memory at once (``restart``; ``auto``, the default, decides from the
first engine's footprint) each round starts each method's engine, runs every batch size on it and
shuts it down. The method order rotates by one each round, so no method always goes first. Each
figure is the median over the rounds with its min-max, and "x none" the median of the per-round ratios
to ``none`` at the same batch (measured minutes apart, not an hour). A verdict (faster / slower) is
printed only where the two methods' ranges of tokens/s do not overlap; otherwise "within noise".
The 1-minute load average is recorded before every measurement and at the start and end of every
round.

Acceptance comes per request from vLLM's ``per_request_spec_decode_metrics`` ("summary": drafted and
accepted draft tokens, the steps with a draft and the histogram of accepted tokens per step), summed
per measurement; each request's steps (the forwards that produced its tokens: tokens less accepted
draft tokens, as far as they were output) come with them. vLLM's process-wide Prometheus counters are not used (with several
engines in one process they count one engine only). The proposer's own time, vLLM's and ours alike,
is taken inside the engine (:class:`ProposerClock`, mixed into its worker): wall and CPU seconds of
its calls, per measurement, and in the table its microseconds per step and its share of the
measured time. Each request's output is compared with ``none``'s at the same batch size in the same
round: greedy, every output must equal it. Sampled, the count is reported, not claimed: vLLM's
rejection sampler draws its own random numbers for draft tokens, so a seeded output with speculation
is not expected to equal one without (:func:`identity_line`); the run says where they first differ
and whether ``none`` reproduces itself. Our proposer is linked to each request's sampling parameters
(:class:`ProposerClock` is a :class:`~decoding.integrations.vllm_sampling.SamplingLink`) and reports
the drafters it built, by regime. Prints a table and the verdicts, and writes JSON with every measurement, every request, the
thread settings (the engine runs one OpenMP thread, which is also a torch thread, per core in
``VLLM_CPU_OMP_THREADS_BIND``), memory, versions and load averages.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import signal
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable as a script from a checkout
# numba caches compiled kernels beside our sources (lookup/**/__pycache__), for one numba version: the
# vLLM venv pins another numba than the main venv, and each would invalidate the other's cache (then
# the competition's sandboxed child, which may not write it, compiles inside its time limit)
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(sys.prefix) / "numba-cache"))

# vLLM's engine processes start by spawn and import this file again, and a process that holds numba
# must not start vLLM's CPU worker (see engine_environment). `import lookup` and the base import no
# numba (a drafter's module does, when it is built), so what this file needs is imported here; only
# the reporting tables, whose explain views import drafters, wait inside the function that renders.
from experiments.benchmarks.tasks import Prompt, load_task  # noqa: E402
from experiments.reporting.repeats import Spread, quartiles, verdict  # noqa: E402  (standard library only)
from experiments.running.store import git_sha  # noqa: E402
from experiments.running.store import versions as package_versions  # noqa: E402
from decoding.integrations.vllm_sampling import SamplingLink, link_sampling  # noqa: E402  (no drafter, no numba)
from pldcore.errors import PLDError  # noqa: E402
from pldcore.setting import Regime  # noqa: E402

PROPOSER = "decoding.integrations.vllm.DrafterProposer"  # loaded by vLLM's engine process by this path
CLOCK = "experiments.bench_vllm.ProposerClock"  # mixed into the engine's worker by this path
DEFAULT_METHODS = "none,ngram,ngram@schedule,suffix,suffix-automaton,frequency"
VLLM_METHODS = ("ngram", "ngram@schedule", "suffix")  # vLLM's own speculative methods
DEFAULT_TASKS = "summarization,doc-qa,code-edit"  # input-grounded: answers copy spans of the prompt
DEFAULT_SCHEDULE = "1-1:5,2-4:4,5-16:2,17-1024:1"  # ngram@schedule: draft length by batch size
WHOLE = "@whole"  # suffix of a drafter spec: our proposer without its batch rule
MODEL_ENV = "PLD_LAB_MODEL_DIR"
GIB = 2 ** 30
MEMORY_MARGIN = 3 * GIB  # left free when deciding whether every engine fits at once
#: the table's columns; "(min-max)" over the rounds, "(IQR)" over the requests
HEADERS = ("method", "batch", "tokens/s (min-max)", "x none (min-max)", "vs none", "steps", "drafted", "accepted",
           "accept %", "req. accept % (IQR)", "mean acc. len", "proposer us/step", "proposer %", "same as none",
           "load (min-max)")


@dataclass(frozen=True)
class BenchPrompt:
    """One chat-templated prompt."""

    id: str
    ids: list[int]  # token ids, the chat template applied


@dataclass(frozen=True)
class Slot:
    """One measurement of the schedule: a method at a batch size in a round."""

    round: int
    method: str
    batch: int


@dataclass
class Measurement:
    """One method at one batch size in one round: every prompt once, in groups of ``batch``."""

    method: str
    batch: int
    round: int
    tokens: int  # generated tokens, all groups
    seconds: float  # wall time of the llm.generate calls
    tokens_per_s: float
    drafts: int = 0  # per-request metrics, summed: verify steps with a draft
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    same_as_none: int | None = None  # prompts whose output equals no speculation's (None: not compared)
    differing: list[str] = field(default_factory=list)  # ids of the prompts whose output differs
    load_before: float = 0.0  # 1-minute load average when the measurement began
    order: int = 0  # its place in the run (0 = first)
    steps: int = 0  # the forwards that produced the tokens, all requests (request_steps)
    #: the speculative method's proposer inside the engine (ProposerClock): calls, rows drafted for,
    #: wall and CPU seconds; None without speculation
    proposer: dict | None = None


@dataclass
class Summary:
    """One method at one batch size over every round."""

    method: str
    batch: int
    tokens_per_s: Spread
    ratio: Spread | None  # per-round tokens/s over none's at the same batch and round
    vs_none: str | None  # verdict(this, none); None for none itself
    draft_tokens: int  # median over rounds
    accepted_tokens: int
    drafts: int
    request_acceptance: Spread | None  # acceptance of each request (with drafts), its median and IQR
    same_as_none: int | None  # over every round
    compared: int
    load: Spread
    steps: int = 0  # median over rounds: forwards that produced the tokens
    #: median over rounds of the proposer's wall time per call (one a step), in microseconds (None: no proposer)
    proposer_us_per_step: float | None = None
    proposer_share: float | None = None  # median over rounds: its share of the measurement's wall time

    @property
    def acceptance(self) -> float | None:
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
                    help="none, ngram, ngram@schedule, suffix, or drafter specs (SPEC@whole: no batch rule)")
    ap.add_argument("--batches", default="1,4,16,32", help="batch sizes, e.g. 1,4,16,32")
    ap.add_argument("--prompts", type=int, default=32, help="prompts, run at every batch size in every round")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--max-prompt-tokens", type=int, default=1024, help="skip longer prompts (prefill dominates)")
    ap.add_argument("--tasks", default=DEFAULT_TASKS, help="task suites the prompts come from, in turn")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (every method at every batch each)")
    ap.add_argument("--engines", choices=("auto", "kept", "restart"), default="auto",
                    help="keep every engine alive, or restart each per round (auto: keep them if they fit)")
    ap.add_argument("--k", type=int, default=5, help="num_speculative_tokens of every speculative method")
    ap.add_argument("--ngram", default="2,5", help="vLLM ngram's prompt_lookup_min,prompt_lookup_max")
    ap.add_argument("--ngram-schedule", default=DEFAULT_SCHEDULE,
                    help="ngram@schedule's num_speculative_tokens_per_batch_size, as FIRST-LAST:K,...")
    ap.add_argument("--suffix-cached-requests", type=int, default=0,
                    help="suffix's suffix_decoding_max_cached_requests (0: no tree of earlier responses)")
    ap.add_argument("--batch-rule", default=None,
                    help="our proposer's batch_rule setting, as JSON (e.g. '{\"fixed_tokens\": 4}')")
    ap.add_argument("--threads-bind", default=None, help="VLLM_CPU_OMP_THREADS_BIND (default: every core we may use)")
    ap.add_argument("--ignore-eos", action="store_true", help="always generate --max-new-tokens tokens")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy; else every request samples")
    ap.add_argument("--top-p", type=float, default=1.0, help="top-p of the sampled requests (1: off)")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed sampled requests: this plus the prompt's index (the same at every batch and round); "
                         "vLLM 0.32's CPU worker fails on a seeded request whose prefill is split over steps")
    ap.add_argument("--json", default="results/bench_vllm.json", help="where to write the results")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke test: 2 prompts, batches 1 and 2, 32 tokens, 2 rounds")
    args = ap.parse_args(argv)
    if args.quick:
        args.batches, args.prompts, args.max_new_tokens, args.max_prompt_tokens = "1,2", 2, 32, 512
        args.rounds = 2
    try:
        args.batches = sorted({int(b) for b in args.batches.split(",")})
        args.ngram = [int(n) for n in args.ngram.split(",")]
        args.batch_rule = json.loads(args.batch_rule) if args.batch_rule else None
    except ValueError as exc:
        raise PLDError(f"--batches and --ngram take integers, --batch-rule JSON: {exc}") from None
    args.ngram_schedule = parse_schedule(args.ngram_schedule)
    args.methods = list(dict.fromkeys(m.strip() for m in args.methods.split(",") if m.strip()))
    try:
        args.regime = Regime(args.temperature, 0, args.top_p)
    except PLDError as exc:
        raise PLDError(f"--temperature / --top-p: {exc}") from None
    return args


def parse_schedule(text: str) -> list[tuple[int, int, int]]:
    """``"1-1:5,2-4:4,5-1024:2"`` -> ``[(1, 1, 5), (2, 4, 4), (5, 1024, 2)]`` (vLLM's
    ``num_speculative_tokens_per_batch_size``: inclusive batch-size ranges from 1, a draft length each)."""

    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        ranges, _, k = part.partition(":")
        first, _, last = ranges.partition("-")
        try:
            out.append((int(first), int(last or first), int(k)))
        except ValueError:
            raise PLDError(f"--ngram-schedule: {part!r} is not FIRST-LAST:K (e.g. 1-4:5)") from None
    ends = [0] + [last for _, last, _ in out]
    if not out or any(first != ends[i] + 1 or last < first or k < 0 for i, (first, last, k) in enumerate(out)):
        raise PLDError(f"--ngram-schedule {text!r}: ranges must run on from 1 without gaps, each K >= 0")
    return out


def check(args: argparse.Namespace) -> None:
    """Refuse, in one line each, what would fail minutes later."""

    if not args.model:
        raise PLDError(f"no model: set {MODEL_ENV} to the converted embedded model (`make bench-vllm` does), "
                       "or pass --model DIR")
    if not (Path(args.model) / "config.json").exists():
        raise PLDError(f"{args.model}: not a transformers checkpoint folder (no config.json)")
    if min(args.batches) < 1 or args.prompts < 1 or args.k < 1 or args.rounds < 1 or len(args.ngram) != 2:
        raise PLDError("--batches, --prompts, --rounds and --k must be >= 1, and --ngram two integers MIN,MAX")
    if importlib.util.find_spec("vllm") is None:
        raise PLDError("vLLM is not installed in this Python: run with .venv-vllm/bin/python (`make bench-vllm`)")
    if "suffix" in args.methods and importlib.util.find_spec("arctic_inference") is None:
        raise PLDError("method suffix needs arctic-inference in this Python (`make bench-vllm` installs it), "
                       "or leave suffix out of --methods")


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
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep the progress lines readable
    # the engine process imports our proposer: make this checkout importable there too
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    import torch

    return {"VLLM_CPU_OMP_THREADS_BIND": os.environ["VLLM_CPU_OMP_THREADS_BIND"],
            # vLLM's CPU worker sets torch's threads to the bound cores, one OpenMP thread each
            "engine_omp_threads": len(cpu_list(os.environ["VLLM_CPU_OMP_THREADS_BIND"])),
            # set, it overrides the KV cache each engine is given (kv_cache_bytes)
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE"),
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


def kv_cache_bytes(config: dict, lengths: Sequence[int], batch: int, extra_tokens: int) -> int:
    """KV cache for the ``batch`` longest sequences at once (each ``length + extra_tokens``), with a
    quarter spare: a small cache per engine lets every engine stay alive side by side.

    ``config`` is the checkpoint's config.json (fp32: 4 bytes a value, a key and a value per layer).
    """
    heads = config.get("num_key_value_heads") or config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    per_token = 2 * config["num_hidden_layers"] * heads * head_dim * 4
    tokens = sum(sorted(lengths, reverse=True)[:batch]) + batch * extra_tokens
    return int(math.ceil(1.25 * tokens * per_token / 2 ** 20)) * 2 ** 20


def versions() -> dict:
    """What the run depends on: the packages' versions (vLLM and arctic-inference among them, where
    installed), Python's, and the checkout's commit."""

    return {**package_versions(("vllm", "arctic-inference")), "python": platform.python_version(),
            "git_sha": git_sha()}


# --------------------------------------------------------------------------- prompts


def build_prompts(model: str, tasks: list[str], n: int, max_tokens: int) -> list[BenchPrompt]:
    """``n`` prompts taken from the suites in turn, chat-templated, each at most ``max_tokens`` long."""
    from transformers import AutoTokenizer


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


# --------------------------------------------------------------------------- the schedule


def rotate(methods: Sequence[str], r: int) -> list[str]:
    """The method order of round ``r``: shifted by one each round, so no method always goes first."""
    r %= len(methods)
    return list(methods[r:]) + list(methods[:r])


def schedule(methods: Sequence[str], batches: Sequence[int], rounds: int, kept: bool) -> list[Slot]:
    """Every measurement of the run, in order. Kept engines: each round, each batch size, every method
    in turn. Restarted engines: each round, every method in turn, all batch sizes on its engine."""
    if kept:
        return [Slot(r, m, b) for r in range(rounds) for b in batches for m in rotate(methods, r)]
    return [Slot(r, m, b) for r in range(rounds) for m in rotate(methods, r) for b in batches]


def keep_engines(requested: str, engines: int, footprint: int, available: int, margin: int = MEMORY_MARGIN) -> bool:
    """Whether to keep every engine alive: asked for, or (``auto``) the other ``engines - 1`` engines
    fit in ``available`` bytes with ``margin`` to spare, each taking ``footprint`` (the first one's)."""
    if requested != "auto":
        return requested == "kept"
    return (engines - 1) * footprint + margin <= available


# --------------------------------------------------------------------------- engines


def engine_settings(method: str, args: argparse.Namespace, max_model_len: int, kv_bytes: int | None = None) -> dict:
    """``LLM(...)`` keyword arguments for ``method``."""
    settings: dict[str, Any] = dict(
        model=args.model, dtype="float32", enforce_eager=True, seed=0, max_model_len=max_model_len,
        max_num_seqs=max(args.batches), disable_log_stats=False,
        enable_prefix_caching=False)  # every batch size, round and method pays the same prefill
    if kv_bytes is not None:
        settings["kv_cache_memory_bytes"] = kv_bytes
    if method == "none":
        return settings
    if method in ("ngram", "ngram@schedule"):
        spec: dict[str, Any] = {"method": "ngram", "num_speculative_tokens": args.k,
                                "prompt_lookup_min": args.ngram[0], "prompt_lookup_max": args.ngram[1]}
        if method == "ngram@schedule":
            spec["num_speculative_tokens_per_batch_size"] = [list(t) for t in args.ngram_schedule]
    elif method == "suffix":
        spec = {"method": "suffix", "num_speculative_tokens": args.k,
                "suffix_decoding_max_cached_requests": args.suffix_cached_requests}
    else:
        drafter, whole = (method[: -len(WHOLE)], True) if method.endswith(WHOLE) else (method, False)
        spec = {"method": "custom_class", "model": PROPOSER, "num_speculative_tokens": args.k}
        rule = False if whole else args.batch_rule
        settings["additional_config"] = {"pld_lab": {"drafter": drafter,
                                                     **({} if rule is None else {"batch_rule": rule})}}
    settings["speculative_config"] = spec
    settings["per_request_spec_decode_metrics"] = "summary"  # drafted / accepted per request
    settings["worker_extension_cls"] = CLOCK  # the proposer's own time, whichever it is
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


class Engines:
    """The methods' engines: kept alive side by side, or (``kept=False``) one at a time, the one
    running shut down before the next starts."""

    def __init__(self, settings: dict[str, dict], prompts: list[BenchPrompt], started: float) -> None:
        self.settings, self.prompts, self.started = settings, prompts, started
        self.kept = True
        self.live: dict[str, tuple[Any, ExitStack]] = {}
        self.facts: dict[str, dict] = {}
        self.starts = 0

    def get(self, method: str) -> Any:
        if method in self.live:
            return self.live[method][0]
        if not self.kept:
            self.close()
        progress(self.started, f"{method}: starting its engine")
        stack = ExitStack()
        llm = stack.enter_context(engine(self.settings[method]))
        self.live[method] = (llm, stack)
        self.starts += 1
        self.facts[method] = engine_facts(llm)
        if "speculative_config" in self.settings[method]:  # it has the worker extension
            # our proposer reads each request's regime from then on; vLLM's own have nothing to link
            self.facts[method]["sampling_linked"] = link_sampling(llm)
        warm_up(llm, self.prompts)
        return llm

    def close(self) -> None:
        for _, stack in self.live.values():
            stack.close()
        self.live.clear()


class ProposerClock(SamplingLink):
    """Mixed into vLLM's worker (``worker_extension_cls``): times its proposer's ``propose`` calls,
    vLLM's own (ngram, suffix) and ours alike, inside the engine process; links our proposer to the
    requests' sampling parameters (:class:`~decoding.integrations.vllm_sampling.SamplingLink`)."""

    def pld_proposer_clock(self) -> dict | None:
        """What the proposer's calls took since the last call of this (the first call starts the
        clock): calls, rows drafted for (every row of a call), wall and CPU (this thread's) seconds;
        with our proposer, the prices its batch rule has learnt so far and the drafters it has built,
        by regime, since the engine started. None where the engine has no proposer."""
        drafter = getattr(getattr(self, "model_runner", None), "drafter", None)
        if drafter is None:
            return None
        clock = getattr(drafter, "_pld_clock", None)
        if clock is None:
            clock = drafter._pld_clock = {"calls": 0, "rows": 0, "seconds": 0.0, "cpu_seconds": 0.0}
            inner = drafter.propose

            def timed(*args, **kwargs):
                wall, cpu = time.perf_counter(), time.thread_time()
                out = inner(*args, **kwargs)
                clock["seconds"] += time.perf_counter() - wall
                clock["cpu_seconds"] += time.thread_time() - cpu
                clock["calls"] += 1
                clock["rows"] += len(out)  # one draft (maybe empty) per row of the batch
                return out

            drafter.propose = timed
        read = dict(clock)
        clock.update(calls=0, rows=0, seconds=0.0, cpu_seconds=0.0)
        # our proposer's batch rule: the prices (fixed_tokens, row_tokens) it has learnt from the steps
        costs = getattr(drafter, "costs", None)
        learnt = costs.tokens() if costs is not None else None
        read["learnt_prices"] = None if learnt is None else [float(x) for x in learnt]
        # our proposer's drafters by the regime each was built for: the requests' own, once linked
        read["regimes"] = self.pld_regimes_built()
        return read


def proposer_clock(llm: Any) -> dict | None:
    """The engine's :meth:`ProposerClock.pld_proposer_clock` (its one worker's)."""
    return llm.collective_rpc("pld_proposer_clock")[0]


def engine_facts(llm: Any) -> dict:
    """Scheduler settings vLLM chose for itself (the same for every method, unless the drafts change them)."""
    scheduler = getattr(getattr(llm.llm_engine, "vllm_config", None), "scheduler_config", None)
    return {name: getattr(scheduler, name, None)
            for name in ("max_num_batched_tokens", "max_num_scheduled_tokens", "max_num_seqs", "async_scheduling")}


def sampling_params(args: argparse.Namespace, index: int) -> Any:
    """vLLM's ``SamplingParams`` for the prompt at ``index``: greedy, or ``args.regime``, with the seed
    ``args.seed + index`` where ``args.seed`` is set (its own generator: the same draws whatever batch
    it is served in). Unseeded requests draw from the engine's generator (``LLM(seed=0)``), so what
    they sample depends on what ran before them.

    vLLM 0.32's CPU worker fails on a seeded request whose sampled token it discards, as it does
    while a prefill is split over steps (``RuntimeError: CPU Generator does not use offset``, in
    ``_bookkeeping_sync``): a batch whose prompts exceed ``max_num_batched_tokens``, as 16 of ours do."""
    from vllm import SamplingParams

    regime = args.regime
    if regime.greedy:
        return SamplingParams(temperature=0, max_tokens=args.max_new_tokens, ignore_eos=args.ignore_eos)
    seed = None if args.seed is None else args.seed + index
    return SamplingParams(temperature=regime.temperature, top_p=regime.top_p, seed=seed,
                          max_tokens=args.max_new_tokens, ignore_eos=args.ignore_eos)


def warm_up(llm: Any, prompts: list[BenchPrompt], tokens: int = 16) -> None:
    """A short run first: the first forwards (and our drafters' JIT) cost more than the rest."""
    from vllm import SamplingParams

    llm.generate([{"prompt_token_ids": p.ids} for p in prompts[:2]], SamplingParams(temperature=0, max_tokens=tokens),
                 use_tqdm=False)


def available_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


# --------------------------------------------------------------------------- one measurement


def request_record(prompt_id: str, output: Any) -> dict:
    """What a request generated and vLLM's per-request spec-decode metrics for it (``output`` is a
    ``CompletionOutput``; its ``spec_decode_metrics`` is None without speculation)."""
    metrics = getattr(output, "spec_decode_metrics", None)
    # without a draft, each forward commits one token (the prompt's commits the first)
    record: dict[str, Any] = {"prompt": prompt_id, "tokens": len(output.token_ids), "steps": len(output.token_ids)}
    if metrics is not None:
        m = metrics.to_dict()
        record.update(steps=request_steps(len(output.token_ids), m["num_spec_steps"], m["num_accepted_draft_tokens"]),
                      spec_steps=m["num_spec_steps"], draft_tokens=m["num_draft_tokens"],
                      accepted_tokens=m["num_accepted_draft_tokens"], histogram=list(m["acceptance_histogram"]),
                      acceptance=m["num_accepted_draft_tokens"] / m["num_draft_tokens"] if m["num_draft_tokens"]
                      else None)
    return record


def request_steps(tokens: int, spec_steps: int, accepted: int) -> int:
    """The forwards that produced a request's ``tokens``: its prompt's, which samples the first, then
    one a step, each committing one token and its accepted draft tokens. A step with a draft is one
    of them (``spec_steps``); a step without commits one token. The last step's accepted tokens past
    ``max_tokens`` (or an end of text) count as accepted but are not output, so the steps without a
    draft are at least none."""
    return 1 + spec_steps + max(0, tokens - 1 - spec_steps - accepted)


def accepted_by_position(histogram: Sequence[int]) -> list[int]:
    """From a histogram of accepted draft tokens per step (``h[j]``: steps with ``j`` accepted), how
    many steps had their draft's node ``i`` accepted, for each ``i`` (vLLM's per-position counter)."""
    return [sum(histogram[i + 1:]) for i in range(max(len(histogram) - 1, 0))]


def totals(records: Sequence[dict]) -> dict:
    """A measurement's spec-decode counters: the sums of its requests'."""
    hist = [0] * max((len(r.get("histogram", [])) for r in records), default=0)
    for r in records:
        for j, c in enumerate(r.get("histogram", [])):
            hist[j] += c
    return {"steps": sum(r.get("steps", 0) for r in records),
            "drafts": sum(r.get("spec_steps", 0) for r in records),
            "draft_tokens": sum(r.get("draft_tokens", 0) for r in records),
            "accepted_tokens": sum(r.get("accepted_tokens", 0) for r in records),
            "accepted_per_position": accepted_by_position(hist)}


def measure(llm: Any, slot: Slot, prompts: list[BenchPrompt], args: argparse.Namespace
            ) -> tuple[Measurement, list[list[int]], list[dict]]:
    """Run every prompt in consecutive groups of ``slot.batch``: the measurement, each prompt's output
    ids and its request record."""
    warm_up(llm, prompts[:1], tokens=4)  # wake an engine that sat idle while the others ran
    speculative = slot.method != "none"
    if speculative:
        proposer_clock(llm)  # starts (or restarts) the clock
    load = os.getloadavg()[0]
    outputs: list[list[int]] = []
    records: list[dict] = []
    seconds = 0.0
    for start in range(0, len(prompts), slot.batch):
        group = prompts[start: start + slot.batch]
        t0 = time.perf_counter()
        params = [sampling_params(args, start + j) for j in range(len(group))]
        results = llm.generate([{"prompt_token_ids": p.ids} for p in group], params, use_tqdm=False)
        seconds += time.perf_counter() - t0
        for p, r in zip(group, results):
            outputs.append(list(r.outputs[0].token_ids))
            records.append({"method": slot.method, "batch": slot.batch, "round": slot.round,
                            **request_record(p.id, r.outputs[0])})
    tokens = sum(map(len, outputs))
    row = Measurement(slot.method, slot.batch, slot.round, tokens, seconds, tokens / seconds,
                      load_before=load, proposer=proposer_clock(llm) if speculative else None, **totals(records))
    return row, outputs, records


def compare(rows: Sequence[Measurement], records: Sequence[dict], outputs: dict[tuple[str, int, int], list],
            prompts: list[BenchPrompt]) -> None:
    """Note on each row, and each request record, whether the outputs equal no speculation's at the
    same batch size in the same round (``outputs`` by (method, batch, round)); on each record, where
    they first differ (``first_difference``: a token index, None where equal)."""
    from decoding.lossless import first_difference

    for row in rows:
        plain = outputs.get(("none", row.batch, row.round))
        if plain is None or row.method == "none":
            continue
        same = [a == b for a, b in zip(outputs[(row.method, row.batch, row.round)], plain)]
        row.same_as_none = sum(same)
        row.differing = [p.id for p, s in zip(prompts, same) if not s]
    for rec in records:
        plain = outputs.get(("none", rec["batch"], rec["round"]))
        if plain is not None and rec["method"] != "none":
            i = [p.id for p in prompts].index(rec["prompt"])
            mine = outputs[(rec["method"], rec["batch"], rec["round"])][i]
            rec["same_as_none"] = mine == plain[i]
            rec["first_difference"] = first_difference(mine, plain[i])


def reproduced(outputs: dict[tuple[str, int, int], list], method: str = "none") -> tuple[int, int]:
    """How many of ``method``'s outputs at every other batch size and round equal its outputs at the
    first batch size in the first round, of how many compared: whether its (seeded) runs reproduce
    themselves."""
    keys = sorted((k for k in outputs if k[0] == method), key=lambda k: (k[2], k[1]))
    same = [a == b for k in keys[1:] for a, b in zip(outputs[k], outputs[keys[0]])] if keys else []
    return sum(same), len(same)


def identity_line(rows: Sequence[Measurement], records: Sequence[dict], outputs: dict[tuple[str, int, int], list],
                  regime: Regime, seed: int | None) -> str:
    """What "same as none" says of the run, in one line. Greedy: every output should equal no
    speculation's. Sampled: vLLM's rejection sampler draws a uniform from the request's generator
    for each draft token, and samples the token after a rejection from another distribution, so its
    generator's draws, and with them the tokens, part from no speculation's at the first step with a
    draft: equal outputs are not expected, and a difference says nothing of the output's distribution."""
    differ = sum(len(r.differing) for r in rows)
    compared = sum(r.same_as_none + len(r.differing) for r in rows if r.same_as_none is not None)
    if regime.greedy:
        return ("every output equals no speculation's" if not differ
                else "SOME OUTPUTS DIFFER from no speculation's (see JSON)")
    firsts = [r["first_difference"] for r in records if r.get("first_difference") is not None]
    same, checked = reproduced(outputs)
    where = f"; the others first differ at token {median(firsts):g} (median)" if firsts else ""
    seeds = "unseeded" if seed is None else f"seed {seed} + the prompt's index"
    why = ("unseeded requests draw from the engine's generator, so no two runs are expected to agree" if seed is None
           else "vLLM's rejection sampler draws its own random numbers for draft tokens, so seeded outputs with "
                "speculation are not expected to equal no speculation's")
    return (f"sampled ({regime.describe()}, {seeds}): {compared - differ}/{compared} outputs "
            f"with speculation equal no speculation's{where}. Not a test of losslessness: {why} "
            f"(no speculation reproduces itself across batch sizes and rounds: {same}/{checked})")


# --------------------------------------------------------------------------- statistics


def summarize(rows: Sequence[Measurement], records: Sequence[dict]) -> list[Summary]:
    """Per method and batch size (in the order first measured): medians and spreads over the rounds."""
    methods = list(dict.fromkeys(r.method for r in rows))
    by: dict[tuple[str, int], list[Measurement]] = {}
    for r in rows:
        by.setdefault((r.method, r.batch), []).append(r)
    out = []
    for method, batch in sorted(by, key=lambda k: (k[1], methods.index(k[0]))):
        mine = by[(method, batch)]
        plain = {r.round: r.tokens_per_s for r in by.get(("none", batch), [])}
        ratios = [r.tokens_per_s / plain[r.round] for r in mine if r.round in plain]
        accept = [rec["acceptance"] for rec in records if rec["method"] == method and rec["batch"] == batch
                  and rec.get("acceptance") is not None]
        compared = [r for r in mine if r.same_as_none is not None]
        out.append(Summary(
            method, batch, Spread.of([r.tokens_per_s for r in mine]), Spread.of(ratios) if method != "none" else None,
            None if method == "none" or not plain else verdict([r.tokens_per_s for r in mine], list(plain.values())),
            int(median(r.draft_tokens for r in mine)), int(median(r.accepted_tokens for r in mine)),
            int(median(r.drafts for r in mine)), quartiles(accept),
            sum(r.same_as_none for r in compared) if compared else None,
            sum(r.same_as_none + len(r.differing) for r in compared),
            Spread.of([r.load_before for r in mine]), int(median(r.steps for r in mine)),
            *proposer_time([r for r in mine if r.proposer and r.proposer.get("calls")])))
    return out


def proposer_time(rows: Sequence[Measurement]) -> tuple[float | None, float | None]:
    """The median over ``rows`` of the proposer's microseconds per call and of its share of the time."""
    if not rows:
        return None, None
    return (float(median(1e6 * r.proposer["seconds"] / r.proposer["calls"] for r in rows)),
            float(median(r.proposer["seconds"] / r.seconds for r in rows)))


def versus(rows: Sequence[Measurement], ours: Sequence[str], theirs: Sequence[str]) -> list[tuple[int, str, str, str]]:
    """Each of ``ours`` against each of ``theirs`` at every batch size: (batch, ours, theirs, verdict)."""
    speeds: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        speeds.setdefault((r.method, r.batch), []).append(r.tokens_per_s)
    out = []
    for batch in sorted({r.batch for r in rows}):
        for mine in ours:
            for other in theirs:
                if (mine, batch) in speeds and (other, batch) in speeds:
                    out.append((batch, mine, other, verdict(speeds[(mine, batch)], speeds[(other, batch)]) or "-"))
    return out


# --------------------------------------------------------------------------- report


def table(summaries: Sequence[Summary], markdown: bool = False) -> str:
    """One line per method and batch size: medians with their spread over the rounds, the counters."""
    from experiments.reporting.tables import render, spread_cell

    def percent(x: float | None) -> float | None:
        return None if x is None else 100 * x

    return render(HEADERS, [
        (s.method, s.batch, spread_cell(s.tokens_per_s), spread_cell(s.ratio), s.vs_none, s.steps, s.draft_tokens,
         s.accepted_tokens, percent(s.acceptance), spread_cell(s.request_acceptance, scale=100),
         s.mean_acceptance_length, s.proposer_us_per_step, percent(s.proposer_share),
         None if s.same_as_none is None else f"{s.same_as_none}/{s.compared}", spread_cell(s.load))
        for s in summaries], markdown=markdown)


def progress(started: float, text: str) -> None:
    print(f"[{time.perf_counter() - started:6.0f} s] {text}", flush=True)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # a plain SIGTERM (timeout, kill) would skip the engines' shutdown and leave their processes running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    threads = engine_environment(args.threads_bind)
    load_before = os.getloadavg()
    progress(started, f"building {args.prompts} prompts from {args.tasks}; threads: {threads}")
    prompts = build_prompts(args.model, args.tasks.split(","), args.prompts, args.max_prompt_tokens)
    extra = args.max_new_tokens + args.k + 16
    max_model_len = max(len(p.ids) for p in prompts) + extra
    config = json.loads((Path(args.model) / "config.json").read_text())
    kv = kv_cache_bytes(config, [len(p.ids) for p in prompts], max(args.batches), extra)
    settings = {m: engine_settings(m, args, max_model_len, kv) for m in args.methods}
    pool = Engines(settings, prompts, started)
    memory = {"available_at_start_gib": available_memory() / GIB, "kv_cache_gib_per_engine": kv / GIB}
    with ExitStack() as stack:
        stack.callback(pool.close)
        # the first engine's footprint says whether the others fit beside it
        before = available_memory()
        pool.get(args.methods[0])
        after = available_memory()
        memory["engine_footprint_gib"] = (before - after) / GIB
        # its KV cache is zeroed memory the kernel maps as the cache fills: count it as taken
        pool.kept = keep_engines(args.engines, len(args.methods), before - after + kv, after - kv)
        mode = "kept alive side by side" if pool.kept else "restarted for every round (they do not fit at once)"
        progress(started, f"engines {mode}: the first took {memory['engine_footprint_gib']:.1f} GiB "
                          f"and {kv / GIB:.1f} GiB of KV cache as it fills, {after / GIB:.1f} GiB left")
        if pool.kept:
            for method in args.methods[1:]:
                pool.get(method)
            memory["available_with_every_engine_gib"] = available_memory() / GIB
        rows, records, rounds, outputs = [], [], [], {}
        for slot in schedule(args.methods, args.batches, args.rounds, pool.kept):
            if not rounds or rounds[-1]["round"] != slot.round:
                if rounds:
                    rounds[-1]["load_end"] = os.getloadavg()[0]
                rounds.append({"round": slot.round, "load_start": os.getloadavg()[0],
                               "order": rotate(args.methods, slot.round)})
            llm = pool.get(slot.method)
            progress(started, f"round {slot.round + 1}/{args.rounds}: {slot.method} at batch {slot.batch}")
            row, out, recs = measure(llm, slot, prompts, args)
            row.order = len(rows)
            rows.append(row)
            records += recs
            outputs[(slot.method, slot.batch, slot.round)] = out
            accepted = f", {row.accepted_tokens}/{row.draft_tokens} draft tokens accepted" if row.draft_tokens else ""
            progress(started, f"  {row.tokens_per_s:.1f} tokens/s (load {row.load_before:.1f}){accepted}")
        rounds[-1]["load_end"] = os.getloadavg()[0]
        memory["available_at_end_gib"] = available_memory() / GIB
    compare(rows, records, outputs, prompts)
    summaries = summarize(rows, records)
    ours = [m for m in args.methods if m != "none" and m not in VLLM_METHODS]
    theirs = ["none"] + [m for m in args.methods if m in VLLM_METHODS]
    matchups = versus(rows, ours, theirs)
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    print()
    print(table(summaries))
    print(f"\n{args.rounds} rounds, engines {'kept' if pool.kept else 'restarted'} ({pool.starts} starts), "
          f"{elapsed:.0f} s; VLLM_CPU_OMP_THREADS_BIND={threads['VLLM_CPU_OMP_THREADS_BIND']} "
          f"({threads['engine_omp_threads']} engine threads, {threads['cores_usable']} cores); load average "
          f"{load_before[0]:.1f} -> {load_after[0]:.1f}; by round: "
          + ", ".join(f"{r['load_start']:.1f}-{r['load_end']:.1f}" for r in rounds))
    for batch in args.batches:
        line = "; ".join(f"{mine} vs {other}: {v}" for b, mine, other, v in matchups if b == batch)
        if line:
            print(f"batch {batch}: {line}")
    identity = {"line": identity_line(rows, records, outputs, args.regime, args.seed),
                "none_reproduced": reproduced(outputs)}
    print(identity["line"])
    write_json(Path(args.json), args, rows, summaries, records, matchups, rounds, prompts, threads, settings,
               pool, memory, elapsed, load_before, load_after, identity)
    return 0


def write_json(out: Path, args: argparse.Namespace, rows: list[Measurement], summaries: list[Summary],
               records: list[dict], matchups: list, rounds: list[dict], prompts: list[BenchPrompt], threads: dict,
               settings: dict, pool: Engines, memory: dict, elapsed: float, load_before: tuple,
               load_after: tuple, identity: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    engines = {m: {**{k: v for k, v in s.items() if k != "model"}, "engine": pool.facts.get(m)}
               for m, s in settings.items()}
    meta = {"model": args.model, "batches": args.batches, "rounds": args.rounds,
            "engines_kept": pool.kept, "engine_starts": pool.starts, "memory": memory,
            "prompts": [p.id for p in prompts], "prompt_tokens": [len(p.ids) for p in prompts],
            "max_new_tokens": args.max_new_tokens, "ignore_eos": args.ignore_eos, "k": args.k,
            "regime": args.regime.name, "temperature": args.temperature, "top_p": args.top_p,
            "seed": args.seed, "same_as_none": identity,
            "ngram_min_max": args.ngram, "ngram_schedule": args.ngram_schedule,
            "suffix_cached_requests": args.suffix_cached_requests, "threads": threads,
            "ld_preload": os.environ.get("LD_PRELOAD", ""), "versions": versions(), "engines": engines,
            "machine": platform.machine(), "processor": platform.processor() or platform.uname().machine,
            "cpu_count": os.cpu_count(), "memory_total_gib": total_memory() / GIB,
            "loadavg_before": list(load_before), "loadavg_after": list(load_after), "seconds": elapsed,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    summary_out = [{**asdict(s), "acceptance": s.acceptance, "mean_acceptance_length": s.mean_acceptance_length}
                   for s in summaries]
    out.write_text(json.dumps({"meta": meta, "rounds": rounds, "summary": summary_out,
                               "versus": [dict(zip(("batch", "ours", "theirs", "verdict"), m)) for m in matchups],
                               "measurements": [asdict(r) for r in rows], "requests": records}, indent=1))
    print(f"wrote {out}")


def total_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        check(args)
        return run(args)
    except PLDError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # vLLM spawns its engine process: LLM(...) only runs under this guard
    sys.exit(main())
