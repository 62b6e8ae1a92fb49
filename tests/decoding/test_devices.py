"""Device choice: what this machine has, and one clear error for what it has not."""

from __future__ import annotations

import pytest
import torch

from decoding import devices
from lookup.errors import PLDError


@pytest.fixture
def cpu_only(monkeypatch):
    """A machine with no accelerator, whatever this one has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    if hasattr(torch, "xpu"):
        monkeypatch.setattr(torch.xpu, "is_available", lambda: False)


@pytest.fixture
def two_gpus(cpu_only, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def test_cpu_only_machine(cpu_only):
    assert devices.available_devices() == ["cpu"]
    assert devices.default_device() == torch.device("cpu")
    assert devices.resolve_device(None) == torch.device("cpu")
    assert devices.resolve_device("cpu") == torch.device("cpu")
    assert devices.resolve_device("cpu:0") == torch.device("cpu:0")  # the CPU ignores the index
    assert devices.resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda"), "mps"])
def test_a_missing_accelerator_is_one_line_naming_what_there_is(cpu_only, device):
    with pytest.raises(PLDError) as err:
        devices.resolve_device(device)
    assert str(err.value) == f"device {device!r} is not available on this machine; it has: cpu"


@pytest.mark.parametrize("device", ["tpu9", "cuda:x", "", 3.5, "cpu cpu"])
def test_an_unknown_device_string_is_one_line(cpu_only, device):
    with pytest.raises(PLDError) as err:
        devices.resolve_device(device)
    assert str(err.value) == f"device {device!r} is not a torch device; this machine has: cpu"


def test_gpu_indices_are_checked_against_the_count(two_gpus):
    assert devices.available_devices() == ["cpu", "cuda", "cuda:0", "cuda:1"]
    assert devices.default_device() == torch.device("cuda")
    assert devices.resolve_device("cuda:1") == torch.device("cuda:1")
    assert devices.resolve_device("cuda") == torch.device("cuda")
    with pytest.raises(PLDError) as err:
        devices.resolve_device("cuda:2")
    assert str(err.value) == "device 'cuda:2' is not available on this machine; it has: cpu, cuda, cuda:0, cuda:1"
