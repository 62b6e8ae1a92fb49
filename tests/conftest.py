"""Shared fixtures: the embedded model is loaded once per test session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))  # for `import toys`

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
