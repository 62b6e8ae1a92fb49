"""Shared fixtures (the embedded model is loaded once per test session) and hypothesis profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))  # for `import toys`

# CI (the CI variable set) runs the same examples every time: a red build must be reproducible,
# and no example database survives between runs there (derandomize also overrides
# --hypothesis-seed). Locally hypothesis keeps exploring, replays its saved failures first, and
# --hypothesis-seed=N repeats a run.
# Neither has a deadline: an example's first call may compile numba kernels (seconds on a fresh
# cache) and a shared machine stalls at random, so a deadline fails on timing, not on behaviour,
# and a timing is not reproducible. Speed has tests of its own.
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(scope="session")
def embedded():
    """The embedded SmolLM2-135M-Instruct target (converted and cached on first use)."""
    import decoding

    return decoding.load_model(device="cpu")


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread: tiny tensors gain nothing from a second OpenMP thread, which only adds
    wake-up latency on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
