"""Measure a target's cost profile, and keep one per model and device in the cache."""

from __future__ import annotations

import re

import numpy as np

from decoding.loading import cache_dir
from decoding.model_target import ModelTarget
from lookup.cost import CostProfile

DEFAULT_SIZES = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64)


def profile_path(target: ModelTarget):
    key = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{target.name}-{target.device}-{target.model.dtype}")
    return cache_dir() / "profiles" / f"{key}.json"


def measure_cost_profile(
    target: ModelTarget, sizes=DEFAULT_SIZES, context: int = 512, repeats: int = 5, progress: bool = False
) -> CostProfile:
    """Time one forward over ``n`` tokens after a ``context``-token cache, for each ``n`` in ``sizes``.

    Each size takes the fastest of ``repeats`` timed forwards after one warm-up: other work on
    a shared machine only ever adds time, so the minimum is the steadiest estimate of the
    forward's own cost. Sizes are interleaved across repeats so that a burst of noise does not
    hit one size only.
    """
    rng = np.random.default_rng(0)
    prompt = rng.integers(10, target.vocab_size, context + 1).tolist()
    target.start(prompt)
    times: dict[int, list[float]] = {n: [] for n in sizes}
    rounds = range(repeats + 1)
    if progress:
        from tqdm import tqdm

        rounds = tqdm(rounds, desc="cost profile", unit="round")
    for r in rounds:
        for n in sizes:
            scores = target.score(rng.integers(10, target.vocab_size, n))
            target.keep(0)
            if r:  # round 0 warms up
                times[n].append(scores.seconds)
    seconds = tuple(min(times[n]) for n in sizes)
    # A forward over more tokens never costs less in expectation; smooth the noise away.
    seconds = tuple(np.maximum.accumulate(seconds).tolist())
    return CostProfile(tuple(sizes), seconds, model=target.name, device=str(target.device))


def cost_profile(target: ModelTarget, remeasure: bool = False, **kwargs) -> CostProfile:
    """The cached profile of this model on this device, measured (and saved) when missing."""
    path = profile_path(target)
    if path.exists() and not remeasure:
        return CostProfile.load(path)
    profile = measure_cost_profile(target, **kwargs)
    profile.save(path)
    return profile


def estimated_speedup(steps, profile: CostProfile) -> float:
    """Speedup over plain decoding predicted by ``profile`` for a run's per-step records.

    ``tokens x cost(1) / sum over steps of (cost(drafted + 1) + drafter seconds)``: what the
    run would gain on the machine the profile was measured on, free of this machine's noise.
    """
    tokens = sum(s.committed for s in steps)
    spent = sum(profile.cost(s.drafted + 1) + s.drafter_s for s in steps)
    return tokens * profile.cost(1) / spent if spent else 0.0
