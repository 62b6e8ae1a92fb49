"""Fresh cases for an official build: prompts made from a seed drawn then, recorded live on the
benchmark's model (the embedded one, or a second packaged model's), scored with its shipped
benchmark's reference profile. No file can know them.

    seed = draw_seed()
    sets, folder = record_fresh(seed, per_task=10)        # cached: the same seed records once
    info = fresh_info(sets, folder, seed, per_task)         # the board's description (hash, seed, ...)

The prompts come from :func:`experiments.benchmarks.fresh.fresh_prompts` (its version and the seed
go on the board, so anyone can make them again: ``leaderboard.py check-fresh``); the recorder is
the project's own (:func:`experiments.running.record.record_regimes`: greedy, 128 new tokens, the
target's top-8 rows), as for the shipped benchmark; and, for the sampled tracks, the same prompts
sampled in their regime with the build's seed (each case its own, ``case_seed``) into the regime's
subfolder, decoded beside the greedy ones.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

import decoding
from decoding.loading import EMBEDDED_NAME, cache_dir
from experiments.benchmarks.fresh import FRESH_VERSION, TASKS, fresh_prompts, space_size
from experiments.benchmarks.traces import (VOCAB_FILE, TraceSet, load_trace_sets, model_key, regime_folder, shipped_folder,
                                           write_benchmark)
from experiments.competition.scoring import Sampled, benchmark_info
from decoding.progress import progress_bar
from experiments.running.record import record_regimes
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime

#: new tokens per fresh case, as in the shipped benchmark
FRESH_NEW_TOKENS = 128
#: prompts per task of a build's fresh set (mt-bench's have two turns: two cases each)
DEFAULT_PER_TASK = 8


def draw_seed() -> int:
    """A seed nobody chose: drawn from the operating system when the build starts."""
    return secrets.randbelow(2**31)


def published_seeds(data: dict) -> set[int]:
    """Every fresh seed board file ``data`` has published: its ``seeds`` (each one a build linked,
    kept for good), and those its fresh links and benchmarks name (a board from before it kept them).
    Their cases can be made again by anyone (``check-fresh``), so memorised: none ranks again."""
    def seed(value) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    found = {seed(s) for s in data.get("seeds") or () if isinstance(data.get("seeds"), list)}
    for table, field in ((data.get("fresh"), None), (data.get("benchmarks"), "fresh")):
        for value in (table.values() if isinstance(table, dict) else ()):
            value = value.get(field) if field and isinstance(value, dict) else value
            found.add(seed(value.get("seed")) if isinstance(value, dict) else None)
    return found - {None}


def new_seed(published: set[int], draw=None) -> int:
    """A drawn seed the board has never published (``draw``: :func:`draw_seed`; redrawn on the
    rare collision, so a build's cases are always new ones)."""
    draw = draw or draw_seed
    while (seed := draw()) in published:
        pass
    return seed


def fresh_folder(seed: int, per_task: int, model: str = EMBEDDED_NAME) -> Path:
    """Where the fresh cases of ``seed`` are recorded on ``model``: the cache, never the checkout
    (the next build draws other cases; these stay for anyone who wants to check them)."""
    of = "" if model == EMBEDDED_NAME else f"-{model_key(model)}"
    return cache_dir() / "fresh" / f"v{FRESH_VERSION}-seed{seed}-n{per_task}{of}"


def record_fresh(seed: int, per_task: int = DEFAULT_PER_TASK, target=None, say=print,
                 folder: Path | None = None, model: str = EMBEDDED_NAME,
                 regimes: Sequence[Regime] = (), bars: bool = True, greedy: bool = True,
                 tasks: Sequence[str] | None = None) -> tuple[list[TraceSet], Path]:
    """Make the prompts of ``seed`` and record them on ``model`` (a packaged model's name: the
    benchmark's, ``decoding.loading.PACKAGED``) into ``folder`` (default :func:`fresh_folder`; what
    is recorded there already is kept: a build that stopped goes on where it stopped), scored with
    the reference profile of ``model``'s shipped benchmark. Greedy, and sampled in each of
    ``regimes`` too (the sampled tracks'), from the same seed, into the regime's subfolder
    (``regime_folder``: read back by ``scoring.sampled_sets``); ``greedy`` false: the sampled ones
    only; ``bars``: a progress bar on a terminal. Every regime of a task is recorded together
    (:func:`~experiments.running.record.record_regimes`: side by side, a prompt prefilled once).
    ``tasks``: record only these (a part of :func:`record_fresh_together`; the benchmark is written
    once they all are). Returns the greedy trace sets and their folder."""
    if per_task < 1:
        raise PLDError(f"--fresh must be >= 1 prompts per task, got {per_task}")
    folder = Path(folder) if folder is not None else fresh_folder(seed, per_task, model)
    shipped = shipped_folder(model)
    prompts = fresh_prompts(seed, per_task)
    chosen = [task for task in TASKS if tasks is None or task in tasks]
    all_regimes = ((GREEDY,) if greedy else ()) + tuple(regimes)
    total = sum(len(p.turns) for task in chosen for p in prompts[task]) * len(all_regimes)
    t0 = time.perf_counter()
    if target is None:
        regimes_said = " and ".join([*(["greedy"] if greedy else []), *(f"sampled at {r.describe()}" for r in regimes)])
        say(f"fresh cases: seed {seed}, {total} cases (generator v{FRESH_VERSION}) {regimes_said}; "
            f"recording on {model}")
        target = decoding.load_model(model)
    made = {"seed": seed, "per_task": per_task, "version": FRESH_VERSION}
    folders = {regime: regime_folder(folder, regime) for regime in all_regimes}
    for regime, here in folders.items():
        _as_shipped(here, regime_folder(shipped, regime) if (regime_folder(shipped, regime) / "profile.json").exists()
                    else shipped)
    with progress_bar(total, "fresh cases", enabled=bars, leave=False) as bar:
        for task in chosen:
            record_regimes(target, task, prompts[task], FRESH_NEW_TOKENS, folders, progress=bar, seed=seed)
    if tasks is None:
        for here in folders.values():
            write_benchmark(here, [s for s in load_trace_sets(here) if s.cases], fresh=made)
    sets = [s for s in load_trace_sets(folder) if s.cases]
    say(f"fresh cases recorded in {time.perf_counter() - t0:.0f} s: {folder}")
    return sets, folder


def record_fresh_together(seed: int, per_task: int, jobs: Sequence[tuple[str, Sequence[Regime]]],
                          say=print, worker=None) -> None:
    """Record the fresh cases of each ``(model, sampled regimes)`` of ``jobs`` (:func:`record_fresh`,
    into its cache folder, where the build's own call then finds them and writes the benchmark) side
    by side: one process per model and task, each recording the task in every regime (greedy, and
    each sampled one), as many at once as this machine has cores, each decoding with its share of them,
    the largest model's first. A build's recording then takes about its total over the cores rather
    than the sum. Nothing is timed while they record (a trace holds tokens and the target's rows, no
    time), so they may share the machine; the scoring after them runs alone. ``worker``: what each
    process runs (default :func:`_record_one`; a top-level function taking the same arguments)."""
    import concurrent.futures
    import multiprocessing
    import os

    parts = [(model, tuple(r.name for r in regimes), task) for model, regimes in jobs for task in TASKS]
    # the slowest first (a larger model, then a task with more cases): the cores stay busy to the end
    cases = {task: sum(len(p.turns) for p in prompts) for task, prompts in fresh_prompts(seed, per_task).items()}
    parts.sort(key=lambda part: (-_model_size(part[0]), -cases.get(part[2], 0)))
    workers = max(1, min(len(parts), os.cpu_count() or 1))
    threads = max(1, (os.cpu_count() or 1) // workers)
    say(f"fresh cases: seed {seed}, recording {len(jobs)} model{'s' if len(jobs) > 1 else ''} "
        f"({', '.join(f'{m} greedy' + ''.join(f' and {r.name}' for r in rs) for m, rs in jobs)}) a task at a time, "
        f"side by side, {workers} at once, {threads} thread{'s' if threads > 1 else ''} each")
    t0 = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state forked
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(worker or _record_one, seed, per_task, model, regimes, task, threads)
                   for model, regimes, task in parts]
        for future in concurrent.futures.as_completed(futures):
            future.result()  # a recording that failed fails the build, with its own error
    say(f"fresh cases of every model recorded in {time.perf_counter() - t0:.0f} s")


def _model_size(model: str) -> int:
    """The bytes of packaged ``model``'s weights (its GGUF; 0 for another name): what orders the
    recordings, a larger model decoding slower."""
    from decoding.loading import PACKAGED

    try:
        return PACKAGED[model]().stat().st_size
    except (KeyError, OSError, PLDError):
        return 0


def _record_one(seed: int, per_task: int, model: str, regimes: Sequence[str], task: str, threads: int) -> None:
    """One part of :func:`record_fresh_together`: ``model``'s fresh cases of ``task``, greedy and in each
    sampled regime of ``regimes`` (names), in a process of its own (no bars: several processes share
    one terminal)."""
    import torch

    torch.set_num_threads(threads)
    record_fresh(seed, per_task, model=model, regimes=[Regime.from_name(name) for name in regimes], tasks=[task],
                 say=lambda line: print(f"[{model} {task}] {line}", flush=True), bars=False)


def _as_shipped(folder: Path, shipped: Path) -> None:
    """Make ``folder`` hold the shipped benchmark's reference profile and vocabulary (from ``shipped``):
    fresh cases are scored as the public benchmark is, and for a drafter that asks (Drafter.wants_vocab)
    inside the sandbox the two look alike. Replaced in a folder recorded before, whatever it holds (the
    committed board's Gemma fresh cases were priced with the embedded model's profile)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("profile.json", VOCAB_FILE):
        source, copy = shipped / name, folder / name
        if source.exists() and (not copy.is_file() or copy.is_symlink() or copy.read_bytes() != source.read_bytes()):
            copy.unlink(missing_ok=True)
            shutil.copyfile(source, copy)


def fresh_info(sets: Sequence[TraceSet], folder: Path, seed: int, per_task: int, sampled: Sampled | None = None) -> dict:
    """The board's description of a fresh benchmark: :func:`benchmark_info` (with its ``sampled``
    traces) with what makes the cases again (seed, generator version, Python's version: the pydoc
    text is Python's own)."""
    info = benchmark_info(sets, folder, sampled)
    info["folder"] = f"fresh (seed {seed})"  # the cache's path is this machine's
    info["fresh"] = {"seed": seed, "per_task": per_task, "version": FRESH_VERSION,
                     "python": ".".join(map(str, sys.version_info[:3])),
                     "space": {task: space_size(task) for task in TASKS}}
    return info
