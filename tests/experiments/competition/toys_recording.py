"""Toy recording workers for test_fresh_together.py: each runs in a spawned process, so they live in a
module that imports nothing heavy (no torch)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pldcore.errors import PLDError

OUT = "PLD_TEST_TOGETHER_OUT"


def _toy_worker(seed: int, per_task: int, model: str, regimes: list[str], task: str, threads: int) -> None:
    """What a recording process was asked, written where the test reads it."""
    path = Path(os.environ[OUT]) / f"{model}-{task}.json"
    path.write_text(json.dumps({"pid": os.getpid(), "seed": seed, "per_task": per_task, "threads": threads,
                                "regimes": list(regimes)}))


def _failing_worker(seed: int, per_task: int, model: str, regimes: list[str], task: str, threads: int) -> None:
    if model == "broken":
        raise PLDError("no such model: broken")
    _toy_worker(seed, per_task, model, regimes, task, threads)
