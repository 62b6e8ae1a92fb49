"""The GPU check: cost profiles of 7-8B models, the verifier's token identity, and the loop's overhead, on CUDA.

    PYTHONPATH=. python3 experiments/gpu_check.py --out gpu_check.json [--budget-s 420] [--small]
    make gpu-check                          # the same, with the system's python3

It needs only PyTorch and transformers (no numba, tqdm, wandb, matplotlib or gguf; no network) and
writes one JSON file, again after every part, so a run that is stopped keeps what it measured:

  (a) ``profiles``: random-weight models built from the configs of Llama-3-8B and Qwen2.5-7B in
      bf16 (timing does not depend on the weights' values): forward seconds over 1..64 tokens at
      contexts 512..8192, and the prefill, by ``decoding.cost.measure_cost_profile``; each profile
      in ``CostProfile.to_json``'s shape, then the loop's overhead on that model (as in (c)).
  (b) ``verifier``: the tiny random-weight families of ``decoding.families`` in fp32 and bf16, our
      greedy speculative generation against the model's own greedy ``generate`` on the same device:
      the identity rate and, at each first divergence, its position and the top-2 logit margin.
  (c) ``overhead``: the loop's own time per step around the forward, with a drafter at a fixed
      acceptance, in µs.

Each part runs against its share of ``--budget-s`` and stops between units (a family, a model)
when the share is spent, recording ``"status": "cut"``. Without CUDA (or with ``--small``) every
part runs tiny sizes. docs/gpu-check.md says what each part measures and what "identical" means
in bf16.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable as a script from a checkout


import numpy as np  # noqa: E402
import torch  # noqa: E402

import decoding  # noqa: E402
from decoding.cost import DEFAULT_SIZES, measure_cost_profile  # noqa: E402
from decoding.devices import describe_machine, resolve_device, synchronize  # noqa: E402
from decoding.families import FAMILIES, PROMPTS, IdTokenizer, tiny_family  # noqa: E402
from decoding.generate import Stats  # noqa: E402
from decoding.lossless import first_difference  # noqa: E402
from decoding.model_target import ModelTarget  # noqa: E402
from decoding.reference import hf_generate  # noqa: E402
from decoding.target import Scores, Target, TopRows  # noqa: E402
from experiments.cli import ArgumentParser, guarded, quiet_libraries  # noqa: E402
import lookup  # noqa: E402  (imports no drafter and no numba: a bare GPU machine may lack numba)
from lookup.base import EMPTY_DRAFT, Draft, Drafter  # noqa: E402
from pldcore.errors import PLDError  # noqa: E402

#: the JSON's layout version: bump it when a field changes meaning
SCHEMA = 1
DEFAULT_BUDGET_S = 420.0
#: the shares of the budget parts (b) and (c) may spend; (a) gets what is left, split between its models
VERIFIER_SHARE, OVERHEAD_SHARE = 0.25, 0.08
#: seconds kept back for writing the JSON and the summary
RESERVE_S = 5.0
#: a profile's measurement is planned from one probe forward; the plan allows for this much error
PLAN_SLACK = 1.5

#: the models of part (a): the published configs' shapes (no special tokens: a random model that
#: emitted EOS would end the overhead runs early; the shapes are what timing depends on)
MODELS: dict[str, tuple[str, dict]] = {
    "Llama-3-8B": ("llama", dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-5,
        hidden_act="silu", tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)),
    "Qwen2.5-7B": ("qwen2", dict(
        vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
        hidden_act="silu", tie_word_embeddings=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=28, bos_token_id=None, eos_token_id=None, pad_token_id=None)),
}
#: what --small changes in those configs: the same families, a few layers of a narrow width
SHRUNK = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=1024)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Plan:
    """The sizes of one run of the check: :data:`FULL` on a GPU, :data:`SMALL` elsewhere."""

    shrink: bool  # build part (a)'s models shrunk (SHRUNK)
    sizes: tuple[int, ...]  # forward sizes of the profiles
    contexts: tuple[int, ...]  # cache lengths of the profiles
    repeats: int  # timed repeats per profile point (the most; a tight budget plans fewer)
    families: tuple[str, ...]  # part (b)'s families
    prompts: tuple[int, ...]  # indices into decoding.families.PROMPTS
    max_new: int  # tokens per part (b) run
    overhead_new: int  # tokens per part (c) run
    overhead_runs: int  # timed runs per overhead setting (after one warm-up)
    model_prompt: int  # prompt tokens of the overhead runs on part (a)'s models
    model_new: int  # tokens of those runs


FULL = Plan(shrink=False, sizes=DEFAULT_SIZES, contexts=(512, 1024, 2048, 4096, 8192), repeats=5,
            families=tuple(FAMILIES), prompts=tuple(range(len(PROMPTS))), max_new=40, overhead_new=256,
            overhead_runs=3, model_prompt=512, model_new=64)
SMALL = Plan(shrink=True, sizes=(1, 2, 4, 8), contexts=(32, 64, 128), repeats=2, families=tuple(FAMILIES),
             prompts=(0,), max_new=12, overhead_new=48, overhead_runs=2, model_prompt=32, model_new=16)
#: (draft length, accepted per step) of the overhead runs: plain decoding through our loop, and half of 8 accepted
OVERHEAD_SETTINGS = ((0, 0), (8, 4))


class Deadline:
    """A point in time a part must stop by (checked between units of work)."""

    def __init__(self, seconds: float) -> None:
        self.at = time.perf_counter() + max(0.0, seconds)

    def left(self) -> float:
        return self.at - time.perf_counter()

    def passed(self) -> bool:
        return self.left() <= 0


# -- drafting at a known acceptance, recording the verifier's logits ------------------------------
class TruthDrafter(Drafter):
    """Knows the reference continuation and proposes ``accept`` of its next tokens, then wrong ones,
    ``length`` nodes in all: every step accepts exactly ``accept`` while the output follows the reference.

    With ``tree``, each depth holds a wrong sibling before the true node, so the accepted path is
    not a prefix of the nodes and the verifier must gather it (``keep_path``).
    """

    name = "truth"

    def __init__(self, full: Sequence[int], vocab_size: int, length: int, accept: int, tree: bool = False) -> None:
        super().__init__()
        self.full = [int(t) for t in full]  # prompt + the reference's output
        self.vocab_size, self.length, self.accept, self.tree = vocab_size, length, min(accept, length), tree

    def _true(self, i: int) -> int:
        return self.full[i] if i < len(self.full) else 0

    def propose(self, budget: int) -> Draft:
        if budget <= 0 or self.length <= 0:
            return EMPTY_DRAFT
        at, V = len(self.context), self.vocab_size
        # the true token at each depth up to `accept`, then one that is not (so the step stops there)
        chain = [self._true(at + d) if d < self.accept else (self._true(at + d) + 1) % V for d in range(self.length)]
        if not self.tree:
            return Draft(np.asarray(chain[:budget]))
        tokens, parents, parent = [], [], -1
        for d, token in enumerate(chain):
            tokens += [(self._true(at + d) + 2) % V, token]  # a wrong sibling first, then the chain's node
            parents += [parent, parent]
            parent = len(tokens) - 1
        return Draft(np.asarray(tokens[:budget]), np.asarray(parents[:budget]))


class LogitRecorder(Target):
    """Passes everything to ``inner`` and keeps, for each committed token, the verifier's logits row
    it was chosen from (``rows``, [n, V] float32 on the CPU once :meth:`logits` stacks them)."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.vocab_size, self.eos_token_ids, self.device = inner.vocab_size, inner.eos_token_ids, inner.device
        self.max_length = inner.max_length
        self.rows: list[torch.Tensor] = []
        self._last: torch.Tensor | None = None  # [n, V] the last forward's logits

    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> TopRows | None:
        self.rows, self._last = [], None
        return self.inner.start(prompt_ids, top_k)

    def score(self, tokens: np.ndarray) -> Scores:
        scores = self.inner.score(tokens)
        self._last = scores.logits
        return scores

    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        scores = self.inner.score_tree(tokens, parents)
        self._last = scores.logits
        return scores

    def keep(self, n: int) -> None:
        self.inner.keep(n)
        self.rows.append(self._last[:n].float().cpu())  # rows 0..n-1 chose the n committed tokens

    def keep_path(self, inputs: np.ndarray) -> None:
        self.inner.keep_path(inputs)
        self.rows.append(self._last[torch.as_tensor(np.asarray(inputs), device=self._last.device)].float().cpu())

    def committed_top(self, scores: Scores, rows: np.ndarray, k: int) -> TopRows | None:
        return self.inner.committed_top(scores, rows, k)

    def decode(self, ids: Sequence[int]) -> str:
        return self.inner.decode(ids)

    def vocab(self) -> Sequence[str] | None:
        return self.inner.vocab()

    def logits(self) -> torch.Tensor:
        return torch.cat(self.rows) if self.rows else torch.zeros(0, self.vocab_size)


# -- (b) the verifier against generate ---------------------------------------------------------------
def compare_run(ours: Sequence[int], ours_logits: torch.Tensor, reference: Sequence[int],
                reference_logits: torch.Tensor) -> dict:
    """Our tokens and verifier logits against the reference's (``[n, V]`` each, row ``i`` chose token ``i``).

    ``noise`` is the largest difference between the two logits rows over the positions where every
    earlier token agreed and this one did too (the same context, computed by a batched verify and
    by one-token decoding); ``divergence`` the first position where the tokens differ, with the
    reference's top-1 minus top-2 logit there (``margin``), the reference's logit of its token
    minus that of ours (``gap``), and the rows' difference there (``delta``). Verdicts come later
    (:func:`add_verdicts`): they need the noise of every run of the model.
    """
    d = first_difference(list(ours), list(reference))
    common = min(len(ours_logits), len(reference_logits), len(ours), len(reference))
    agreed = common if d is None else min(d, common)
    deltas = (ours_logits[:common] - reference_logits[:common]).abs().amax(dim=-1) if common else torch.zeros(0)
    out = dict(tokens=len(reference), matched=agreed, identical=d is None,
               noise=float(deltas[:agreed].max()) if agreed else 0.0,
               scale=float(reference_logits[:common].abs().max()) if common else 0.0, divergence=None)
    if d is not None and d < common:
        row = reference_logits[d]
        top = torch.topk(row, 2).values
        out["divergence"] = dict(position=d, reference=int(reference[d]), ours=int(ours[d]),
                                 margin=float(top[0] - top[1]), gap=float(row[reference[d]] - row[ours[d]]),
                                 delta=float(deltas[d]))
    elif d is not None:  # one output ended early (an EOS): no logits to compare there
        out["divergence"] = dict(position=d, reference=None, ours=None, margin=None, gap=None, delta=None)
    return out


def add_verdicts(runs: list[dict]) -> None:
    """The rule of what counts as identical: each run gets ``verdict`` "identical" (the same tokens),
    "rounding" (the first divergence has a top-2 margin within twice the noise measured on the same
    model and dtype where the tokens agreed: that much rounding can swap those two tokens), or
    "mismatch" (a margin wider than any rounding seen: a verifier bug)."""
    noise: dict[tuple, float] = {}
    for run in runs:
        key = run["family"], run["dtype"]
        noise[key] = max(noise.get(key, 0.0), run["noise"])
    for run in runs:
        run["model_noise"] = noise[run["family"], run["dtype"]]
        div = run["divergence"]
        if div is None:
            run["verdict"] = "identical"
        else:
            explained = div["margin"] is not None and div["margin"] <= 2 * run["model_noise"]
            run["verdict"] = "rounding" if explained else "mismatch"


def verifier_drafters(target: ModelTarget) -> dict[str, Callable[[list[int]], Drafter]]:
    """Part (b)'s drafters by name, each made from (prompt + reference output)."""
    V = target.vocab_size
    out: dict[str, Callable[[list[int]], Drafter]] = {
        "none": lambda full: TruthDrafter(full, V, 0, 0),
        "chain-3-of-6": lambda full: TruthDrafter(full, V, 6, 3),
        "chain-8-of-8": lambda full: TruthDrafter(full, V, 8, 8),
    }
    if target.tree_support():
        out["tree-2-of-3"] = lambda full: TruthDrafter(full, V, 3, 2, tree=True)
    if numba_works():
        out["suffix-automaton"] = lambda full: lookup.create("suffix-automaton")
    return out


def check_verifier(plan: Plan, device: torch.device, deadline: Deadline, errors: list[str]) -> dict:
    """Part (b): every family x dtype x prompt x drafter, our output against generate's."""
    runs: list[dict] = []
    trees: dict[str, dict[str, bool]] = {}  # family -> dtype -> whether the target verifies trees here
    status = "done"
    for family in plan.families:
        for dtype_name, dtype in DTYPES.items():
            if deadline.passed():
                status = "cut"
                break
            try:
                target = tiny_family(family, device=device, dtype=dtype)
                drafters = verifier_drafters(target)
                trees.setdefault(family, {})[dtype_name] = target.tree_support()
                for p in plan.prompts:
                    prompt = PROMPTS[p]
                    reference = hf_generate(target, prompt, plan.max_new, with_logits=True)
                    for name, make in drafters.items():
                        recorder = LogitRecorder(target)
                        out = decoding.generate(recorder, prompt, make(prompt + reference.tokens), plan.max_new)
                        run = dict(family=family, dtype=dtype_name, drafter=name, prompt=p,
                                   drafted=out.stats.drafted, accepted=out.stats.accepted)
                        run.update(compare_run(out.tokens, recorder.logits(), reference.tokens, reference.logits))
                        runs.append(run)
            except Exception as exc:  # noqa: BLE001 - one family's failure must not lose the others
                errors.append(f"verifier {family} {dtype_name}: {_one_line(exc)}")
        if status == "cut":
            break
    add_verdicts(runs)
    return dict(status=status, summary=verifier_summary(runs), tree_support=trees, runs=runs)


def verifier_summary(runs: list[dict]) -> dict:
    """Per dtype: runs, how many identical / rounding / mismatch, the identity rate, tokens matched
    before the first divergence, and the largest noise (absolute, and relative to the largest logit)."""
    out = {}
    for dtype in DTYPES:
        mine = [r for r in runs if r["dtype"] == dtype]
        if not mine:
            continue
        count = {v: sum(r["verdict"] == v for r in mine) for v in ("identical", "rounding", "mismatch")}
        out[dtype] = dict(runs=len(mine), **count, identity_rate=round(count["identical"] / len(mine), 4),
                          tokens=sum(r["tokens"] for r in mine), matched=sum(r["matched"] for r in mine),
                          max_noise=max(r["noise"] for r in mine),
                          max_noise_relative=max((r["noise"] / r["scale"] if r["scale"] else 0.0) for r in mine),
                          families=sorted({r["family"] for r in mine}),
                          divergent_families=sorted({r["family"] for r in mine if r["verdict"] != "identical"}))
    return out


# -- (c) the loop's own overhead ---------------------------------------------------------------------
def per_step(stats: Stats) -> dict:
    """One run's times per step (per target forward), in µs: the whole step (after the prefill), the
    forward (``Target.score``: the model, the argmax and its copy to the host), the drafter, and the
    rest: the loop's own Python (acceptance, cache crop, checks, bookkeeping)."""
    steps = max(stats.forwards, 1)
    step = (stats.wall_s - stats.prefill_s) / steps
    forward, drafter = stats.forward_s / steps, stats.drafter_s / steps
    return dict(steps=stats.forwards, step_us=1e6 * step, forward_us=1e6 * forward, drafter_us=1e6 * drafter,
                loop_us=1e6 * (step - forward - drafter), tau=stats.tau, acceptance=stats.acceptance_rate)


def measure_overhead(target: ModelTarget, prompt: list[int], new_tokens: int, runs: int,
                     deadline: Deadline) -> list[dict]:
    """Our loop on ``target`` with a :class:`TruthDrafter` at each of :data:`OVERHEAD_SETTINGS`: the
    median over ``runs`` timed runs (after one warm-up) of :func:`per_step`, and generate's own
    time per token on the same prompt for comparison."""
    reference = hf_generate(target, prompt, new_tokens)
    out = []
    for length, accept in OVERHEAD_SETTINGS:
        if deadline.passed():
            break
        timed = []
        for r in range(runs + 1):
            drafter = TruthDrafter(prompt + reference.tokens, target.vocab_size, length, accept)
            result = decoding.generate(target, prompt, drafter, new_tokens)  # as users run it: steps recorded
            if r:  # the first run warms up (allocation, kernels' first launch)
                timed.append(per_step(result.stats))
        median = {k: float(np.median([t[k] for t in timed])) for k in timed[0]}
        out.append(dict(model=target.name, dtype=str(target.model.dtype).removeprefix("torch."), draft=length,
                        accept=accept, prompt=len(prompt), new_tokens=new_tokens, runs=runs, **median,
                        generate_us_per_token=1e6 * reference.wall_s / max(len(reference.tokens), 1)))
    return out


def check_overhead(plan: Plan, device: torch.device, deadline: Deadline, errors: list[str]) -> dict:
    """Part (c) on the tiny Llama of part (b) (fp32): where the forward is cheapest, the loop shows most."""
    try:
        target = tiny_family("llama", device=device, max_positions=4 * plan.overhead_new)
        prompt = PROMPTS[0]
        runs = measure_overhead(target, prompt, plan.overhead_new, plan.overhead_runs, deadline)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"overhead tiny-llama: {_one_line(exc)}")
        return dict(status="error", runs=[])
    return dict(status="done" if len(runs) == len(OVERHEAD_SETTINGS) else "cut", runs=runs)


# -- (a) cost profiles ------------------------------------------------------------------------------
def build_model(name: str, plan: Plan, device: torch.device, dtype: torch.dtype = torch.bfloat16) -> ModelTarget:
    """A random-weight model of ``name`` (:data:`MODELS`; shrunk under ``plan.shrink``), built on ``device``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    model_type, fields = MODELS[name]
    config = AutoConfig.for_model(model_type, **{**fields, **(SHRUNK if plan.shrink else {})})
    torch.manual_seed(0)
    with torch.device(device):  # initialised where it runs: 16 GB of weights never pass through the host
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        except TypeError:  # transformers before 4.56 calls it torch_dtype
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    model = model.to(dtype).eval()
    model.generation_config.eos_token_id = None
    label = f"{name}{' (shrunk)' if plan.shrink else ''} (random weights, {str(dtype).removeprefix('torch.')})"
    return ModelTarget(model, IdTokenizer(), name=label)


def plan_profile(target: ModelTarget, plan: Plan, seconds: float) -> tuple[tuple[int, ...], int, float]:
    """(contexts, repeats, estimated seconds) of a measurement that fits in ``seconds``: one probe
    (a prefill of the longest context, then a forward over the most tokens) bounds every point,
    and repeats (down to 2), then the longest contexts, are given up until the estimate fits."""
    rng = np.random.default_rng(1)
    top = plan.contexts[-1]
    synchronize(target.device)
    t0 = time.perf_counter()
    target.start(rng.integers(0, target.vocab_size, top + 1).tolist())
    synchronize(target.device)
    prefill = time.perf_counter() - t0
    forward = target.score(rng.integers(0, target.vocab_size, plan.sizes[-1])).seconds
    target.keep(0)

    def estimate(contexts: Sequence[int], repeats: int) -> float:
        # per context: 2 prefills, each also with every row's top-k (~2x), and (repeats + 1) rounds of every size
        return PLAN_SLACK * sum(2 * 3 * prefill * c / top + (repeats + 1) * len(plan.sizes) * forward for c in contexts)

    contexts, repeats = list(plan.contexts), plan.repeats
    while estimate(contexts, repeats) > seconds and repeats > 2:
        repeats -= 1
    while estimate(contexts, repeats) > seconds and len(contexts) > 1:
        contexts.pop()
    return tuple(contexts), repeats, estimate(contexts, repeats)


def check_profiles(plan: Plan, device: torch.device, deadline: Deadline, errors: list[str]) -> dict:
    """Part (a): per model, build it, plan and measure its cost profile, then the loop's overhead on it."""
    models: dict[str, dict] = {}
    status = "done"
    names = list(MODELS)
    for i, name in enumerate(names):
        share = Deadline(deadline.left() / (len(names) - i))
        if share.left() <= 0:
            status = "cut"
            models[name] = dict(status="skipped")
            continue
        entry = models[name] = dict(status="started")
        target = None
        try:
            t0 = time.perf_counter()
            target = build_model(name, plan, device)
            synchronize(device)
            entry.update(build_s=round(time.perf_counter() - t0, 2), attention=target.model.config._attn_implementation,
                         parameters=sum(p.numel() for p in target.model.parameters()))
            # what is left of the share once the overhead runs (a few seconds) have theirs
            contexts, repeats, estimate = plan_profile(target, plan, share.left() * 0.8)
            entry.update(contexts_planned=list(contexts), repeats=repeats, estimate_s=round(estimate, 1))
            if estimate > share.left():
                entry["status"] = status = "cut"
                continue
            t0 = time.perf_counter()
            profile = measure_cost_profile(target, sizes=plan.sizes, contexts=contexts, repeats=repeats)
            entry.update(measure_s=round(time.perf_counter() - t0, 2), profile=json.loads(profile.to_json()))
            entry["status"] = "done" if contexts == plan.contexts else "cut"
            status = status if entry["status"] == "done" else "cut"
            rng = np.random.default_rng(2)
            prompt = rng.integers(0, target.vocab_size, plan.model_prompt).tolist()
            entry["overhead"] = measure_overhead(target, prompt, plan.model_new, 2, share)
        except Exception as exc:  # noqa: BLE001 - an out-of-memory or a kernel missing here must not lose the rest
            entry["status"] = "error"
            errors.append(f"profile {name}: {_one_line(exc)}")
        finally:
            del target
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return dict(status=status, models=models)


# -- the run ------------------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}{at}"


def numba_works() -> bool:
    """Whether numba imports here (a bare GPU machine may lack it, or have one built against another
    numpy): the drafters that need it (``suffix-automaton``) are checked only then."""
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - missing, or broken: either way unusable
        return False
    return True


def machine(device: torch.device) -> dict:
    import transformers

    return dict(device=str(device), name=describe_machine(device), torch=torch.__version__,
                transformers=transformers.__version__, cuda=torch.version.cuda, python=platform.python_version(),
                tf32=bool(torch.backends.cuda.matmul.allow_tf32), numba=numba_works())


def write(report: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1))
    tmp.replace(path)


def summary_lines(report: dict) -> list[str]:
    """The few lines printed at the end: one per model, dtype and overhead setting."""
    lines = [f"machine: {report['machine']['name']} (torch {report['machine']['torch']}, "
             f"transformers {report['machine']['transformers']}){' [small]' if report['small'] else ''}"]
    for name, entry in report["parts"].get("profiles", {}).get("models", {}).items():
        profile = entry.get("profile")
        if not profile:
            lines.append(f"(a) {name}: {entry['status']}")
            continue
        grid, sizes, contexts = profile["grid"], profile["sizes"], profile["contexts"]
        first, last = grid[0], grid[-1]
        lines.append(f"(a) {name}: 1 token {1e3 * first[0]:.2f} ms at {contexts[0]}, {1e3 * last[0]:.2f} ms at "
                     f"{contexts[-1]}; {sizes[-1]} tokens cost {first[-1] / first[0]:.2f}x one at {contexts[0]}, "
                     f"{last[-1] / last[0]:.2f}x at {contexts[-1]}; prefill of {contexts[-1]}: "
                     f"{profile['prefill'][-1]:.3f} s; spread {profile['spread']} [{entry['status']}]")
    verifier = report["parts"].get("verifier", {})
    for dtype, s in verifier.get("summary", {}).items():
        lines.append(f"(b) {dtype}: {s['identical']}/{s['runs']} runs identical, {s['rounding']} rounding, "
                     f"{s['mismatch']} mismatch; largest logit noise {s['max_noise']:.3g} "
                     f"({100 * s['max_noise_relative']:.2g}% of the largest logit) [{verifier['status']}]")
    runs = list(report["parts"].get("overhead", {}).get("runs", []))
    for entry in report["parts"].get("profiles", {}).get("models", {}).values():
        runs += entry.get("overhead", [])
    for r in runs:
        lines.append(f"(c) {r['model']}, draft {r['draft']} accepting {r['accept']}: loop {r['loop_us']:.0f} µs/step "
                     f"around a {r['forward_us']:.0f} µs forward (drafter {r['drafter_us']:.0f} µs; generate "
                     f"{r['generate_us_per_token']:.0f} µs/token)")
    return lines


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="gpu_check.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="gpu_check.json", help="the JSON file to write (default gpu_check.json)")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                   help=f"seconds the whole check may take (default {DEFAULT_BUDGET_S:g}); parts stop early to fit")
    p.add_argument("--small", action="store_true", help="tiny sizes (automatic without CUDA)")
    p.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    return p


@guarded
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.budget_s > 0:
        raise PLDError(f"--budget-s must be a positive number of seconds, got {args.budget_s:g}")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise PLDError(f"--out {args.out}: folder {out.parent} does not exist")
    quiet_libraries()
    device = resolve_device(args.device)
    small = args.small or device.type != "cuda"
    plan = SMALL if small else FULL
    start = time.perf_counter()
    total = Deadline(args.budget_s - RESERVE_S)
    errors: list[str] = []
    report = dict(schema=SCHEMA, small=small, budget_s=args.budget_s, machine=machine(device), plan=asdict(plan),
                  parts={}, errors=errors, elapsed_s=0.0)

    def part(name: str, run: Callable[[Deadline], dict], share: float | None) -> None:
        deadline = Deadline(min(total.left(), share * args.budget_s) if share else total.left())
        t0 = time.perf_counter()
        result = run(deadline) if deadline.left() > 0 else dict(status="skipped")
        report["parts"][name] = dict(result, seconds=round(time.perf_counter() - t0, 2))
        report["elapsed_s"] = round(time.perf_counter() - start, 2)
        write(report, out)

    part("verifier", lambda d: check_verifier(plan, device, d, errors), VERIFIER_SHARE)
    part("overhead", lambda d: check_overhead(plan, device, d, errors), OVERHEAD_SHARE)
    part("profiles", lambda d: check_profiles(plan, device, d, errors), None)
    for line in summary_lines(report):
        print(line)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"wrote {out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
