"""Measure a target's cost profile, and keep one per model and device in the cache."""

from __future__ import annotations

import re
import time
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from decoding.devices import BUSY_LOAD, describe_machine, load_per_core, synchronize
from decoding.loading import EMBEDDED_NAME, cache_dir
from decoding.progress import progress_bar
from pldcore.cost import CPU_SMOLLM2, CostProfile

if TYPE_CHECKING:  # measuring needs a model; estimating from a profile does not, nor transformers
    from decoding.model_target import ModelTarget

DEFAULT_SIZES = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64)
#: cache lengths measured; :meth:`CostProfile.cost` interpolates between them and extrapolates past the last
DEFAULT_CONTEXTS = (128, 512, 1024, 2048)
#: the profile's one-dimensional ``seconds`` is the row of the measured context nearest this
REFERENCE_CONTEXT = 512
#: top ids per row when timing a prefill for drafters that read rows (the recycling default)
ROWS_TOP_K = 8
#: a profile whose repeats spread wider than this (median over min, minus 1, the median over
#: points) was measured on a busy machine: it is never cached (and so is one begun with more runnable
#: processes than cores, ``BUSY_LOAD``: it was timed against other work, however steady the repeats look)
NOISY_SPREAD = 0.10
#: a noisy measurement is remembered this long: until then a run uses the stand-in without measuring again
NOISY_MEMORY = timedelta(hours=1)
#: how to measure now, whatever is cached or remembered
REMEASURE = "python experiments/traces.py profile --remeasure"


class NoisyProfileWarning(UserWarning):
    """A measured cost profile was too noisy to keep (or one measured lately was): another stands in."""


def profile_path(target: ModelTarget) -> Path:
    """Where this model's profile on this device is cached (a quiet measurement only)."""
    key = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{target.name}-{target.device}-{target.model.dtype}")
    return cache_dir() / "profiles" / f"{key}.json"


def noisy_path(target: ModelTarget) -> Path:
    """Where the last noisy measurement of this model and device is remembered: beside the cached
    profile, never in its place."""
    path = profile_path(target)
    return path.with_name(f"{path.stem}.noisy.json")


def measure_cost_profile(
    target: ModelTarget, sizes=DEFAULT_SIZES, contexts=DEFAULT_CONTEXTS, repeats: int = 5, progress: bool = False
) -> CostProfile:
    """Time forwards over ``n`` tokens after ``c`` cached tokens, for each ``n`` in ``sizes`` and ``c``
    in ``contexts``, and the prefill of a ``c``-token prompt.

    Each point takes the fastest of ``repeats`` timed runs after one warm-up: other work on a
    shared machine only ever adds time, so the minimum is the steadiest estimate of the
    forward's own cost. Sizes are interleaved across repeats so that a burst of noise does not
    hit one size only. Costs never fall with more tokens or a longer context; noise that says
    otherwise is smoothed away. With ``progress`` a bar counts the rounds (on a terminal only:
    :func:`decoding.progress.progress_bar`).
    """
    rng = np.random.default_rng(0)
    load = load_per_core()
    contexts = tuple(sorted(set(contexts)))
    steps = [(c, r) for c in contexts for r in range(repeats + 1)]
    times = {(c, n): [] for c in contexts for n in sizes}
    prefill = {c: [] for c in contexts}
    prefill_rows = {c: [] for c in contexts}
    target.start(rng.integers(10, target.vocab_size, 16).tolist())  # the very first forward pays for allocation
    with progress_bar(len(steps), "cost profile", unit="round", enabled=progress) as bar:
        for c, r in steps:
            if r < 2:  # two prefills per context; the first of the two is usually the slower one
                prompt = rng.integers(10, target.vocab_size, c + 1).tolist()
                synchronize(target.device)
                t0 = time.perf_counter()
                target.start(prompt)  # prefills prompt[:-1]: c tokens
                synchronize(target.device)
                prefill[c].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                target.start(prompt, top_k=ROWS_TOP_K)  # the same, for a drafter that reads every row
                synchronize(target.device)
                prefill_rows[c].append(time.perf_counter() - t0)
            for n in sizes:
                scores = target.score(rng.integers(10, target.vocab_size, n))
                target.keep(0)
                if r:  # round 0 warms up
                    times[c, n].append(scores.seconds)
            bar.update()
    grid = np.array([[min(times[c, n]) for n in sizes] for c in contexts])  # [c, m]
    spread = float(np.median([np.median(t) / min(t) - 1 for t in times.values()]))
    grid = np.maximum.accumulate(np.maximum.accumulate(grid, axis=1), axis=0)
    pre = np.maximum.accumulate([min(prefill[c]) for c in contexts])
    pre_rows = np.maximum(np.maximum.accumulate([min(prefill_rows[c]) for c in contexts]), pre)
    reference = grid[int(np.argmin([abs(c - REFERENCE_CONTEXT) for c in contexts]))]
    return CostProfile(
        tuple(sizes), tuple(reference.tolist()), model=target.name, device=str(target.device), contexts=contexts,
        grid=tuple(tuple(row) for row in grid.tolist()), prefill=tuple(pre.tolist()),
        prefill_rows=tuple(pre_rows.tolist()), spread=round(spread, 4),
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), host=describe_machine(target.device),
        load_per_core=None if load is None else round(load, 2),
    )


def is_noisy(profile: CostProfile) -> bool:
    """Whether ``profile`` was measured while the machine was busy: its repeats spread too wide, or
    the load when it began was above one runnable process per core."""
    spread = profile.spread is not None and profile.spread > NOISY_SPREAD
    return spread or (profile.load_per_core is not None and profile.load_per_core >= BUSY_LOAD)


def reference_profile(target: ModelTarget) -> CostProfile | None:
    """The shipped reference profile of this model and device, if there is one (the embedded model on CPU)."""
    return CPU_SMOLLM2 if target.name == EMBEDDED_NAME and target.device.type == "cpu" else None


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _age(profile: CostProfile) -> timedelta | None:
    """How long ago ``profile`` was measured (None when it does not say when)."""
    try:
        when = datetime.fromisoformat(profile.measured_at)
    except ValueError:
        return None
    return _utc_now() - (when if when.tzinfo else when.replace(tzinfo=timezone.utc))


def _busy(profile: CostProfile) -> str:
    """What made ``profile`` noisy, in a few words."""
    return (f"repeats spread {100 * (profile.spread or 0):.0f}%, load {profile.load_per_core} per core; over "
            f"{100 * NOISY_SPREAD:.0f}% or {BUSY_LOAD:g} is busy")


def cost_profile(target: ModelTarget, remeasure: bool = False, **kwargs) -> CostProfile:
    """The cached profile of this model on this device, measured (and saved) when missing.

    A cached profile from before the context axis existed is measured again. A measurement
    too noisy to trust (:func:`is_noisy`: the machine was busy) is never cached and never
    replaces a cached one: the cached profile stands in where there is one (after ``remeasure``),
    else the reference profile where there is one, else the noisy one itself. The noisy
    measurement is remembered (:func:`noisy_path`) for :data:`NOISY_MEMORY`: until then a run
    uses the same stand-in without measuring again. A machine already busy when the measurement
    would begin (:func:`load_per_core` at :data:`BUSY_LOAD` or over: what :func:`is_noisy` reads) is
    not measured at all where a profile can stand in. Each case warns in one line
    (:class:`NoisyProfileWarning`) saying what stands in and how to measure now; ``remeasure``
    always measures.
    """
    path, noisy = profile_path(target), noisy_path(target)
    cached = CostProfile.load(path) if path.exists() else None
    cached = cached if cached is not None and cached.contexts else None
    if cached is not None and not remeasure:
        return cached
    if not remeasure and noisy.exists():
        remembered = CostProfile.load(noisy)
        age = _age(remembered)
        if age is not None and timedelta(0) <= age < NOISY_MEMORY:
            stand_in = reference_profile(target)
            until = (_utc_now() + NOISY_MEMORY - age).strftime("%H:%M UTC")
            instead = (f"the reference profile ({stand_in.model}, {stand_in.device})" if stand_in
                       else "that measurement")
            warnings.warn(f"cost profile not measured again: the last measurement, {age.total_seconds() / 60:.0f} min "
                          f"ago, was taken on a busy machine ({_busy(remembered)}); using {instead} until {until}. "
                          f"Measure now: {REMEASURE}", NoisyProfileWarning, stacklevel=2)
            return stand_in or remembered
    stand_in = cached or reference_profile(target)  # (a cached one was returned above unless remeasured)
    load = load_per_core()
    if not remeasure and stand_in is not None and load is not None and load >= BUSY_LOAD:
        # busy before it begins: the measurement would be thrown away as noisy (is_noisy reads this very
        # load), so none is taken; a model with nothing to stand in for it is measured all the same
        warnings.warn(f"cost profile not measured: the machine is busy (load {load:.2f} per core; {BUSY_LOAD:g} or "
                      f"more is busy), so a measurement would be too noisy to keep; using the reference profile "
                      f"({stand_in.model}, {stand_in.device}). Measure when "
                      f"nothing else runs: {REMEASURE}", NoisyProfileWarning, stacklevel=2)
        return stand_in
    profile = measure_cost_profile(target, **kwargs)
    if not is_noisy(profile):
        profile.save(path)
        noisy.unlink(missing_ok=True)
        return profile
    profile.save(noisy)  # remembered, so that the next runs do not pay for another busy measurement
    instead = ("the cached profile, kept" if cached else
               f"the reference profile ({stand_in.model}, {stand_in.device})" if stand_in else "it")
    warnings.warn(f"cost profile not cached: the machine was busy while it was measured ({_busy(profile)}); using "
                  f"{instead}, without measuring again for {NOISY_MEMORY.total_seconds() / 60:.0f} min. Measure "
                  f"again when nothing else runs: {REMEASURE}", NoisyProfileWarning, stacklevel=2)
    return stand_in or profile


def estimated_times(steps, profile: CostProfile, with_prefill: bool = True,
                    prefill_rows: bool = False) -> tuple[float, float]:
    """(plain decoding's seconds, the run's seconds) for a run's per-step records, under ``profile``.

    Plain decoding of the same tokens costs one one-token forward per token, at contexts
    P, P+1, ... (P = the prompt's length, ``steps[0].context``); the run costs, per step, a
    forward over its verified tokens at its context plus the drafter's time. Both pay the same
    prefill, which ``with_prefill`` adds to each (it is what a wall-clock measurement sees;
    leave it out to rate the decoding phase alone). With ``prefill_rows`` (the run's drafter read
    the target's top-k) the run's prefill is the dearer one that computes every prompt row: the
    difference is the drafter's own cost, so the run pays it in the decoding phase's rating too.
    """
    if not steps:
        return 0.0, 0.0
    start = steps[0].context
    tokens = sum(s.committed for s in steps)
    plain = sum(profile.cost(1, start + i) for i in range(tokens))
    # a server drafting a batch pays its requests' drafter time (over its drafting threads) in each step
    spent = sum(profile.cost(s.drafted + 1, s.context) + profile.drafter_scale * s.drafter_s for s in steps)
    rows_extra = profile.prefill_cost(start, rows=True) - profile.prefill_cost(start) if prefill_rows else 0.0
    if not with_prefill:
        return plain, spent + rows_extra
    return profile.prefill_cost(start) + plain, profile.prefill_cost(start) + rows_extra + spent


def estimated_speedup(steps, profile: CostProfile, with_prefill: bool = True) -> float:
    """Speedup over plain decoding predicted by ``profile``: the ratio of :func:`estimated_times`.

    Without a context axis or prefill in the profile this is the plain
    ``tokens x cost(1) / sum over steps of (cost(verified) + drafter seconds)``. The result is
    what the run would gain on the machine the profile was measured on, free of this machine's
    noise.
    """
    plain, spent = estimated_times(steps, profile, with_prefill)
    return plain / spent if spent else 0.0
