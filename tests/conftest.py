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
