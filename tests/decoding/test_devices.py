"""Device choice: what this machine has, and one clear error for what it has not."""

from __future__ import annotations

import pytest
import torch

from decoding import devices
from pldcore.errors import PLDError


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


@pytest.fixture
def two_threads():
    """torch with two threads, as on a quiet 2-core machine (the conftest restores the count after)."""
    torch.set_num_threads(2)


def test_a_quiet_machine_is_left_alone(two_threads):
    assert devices.fit_threads_to_load(load=0.3, cores=2) is None
    assert torch.get_num_threads() == 2


def test_a_busy_machine_warns_in_one_line_and_gives_torch_the_free_cores(two_threads):
    line = devices.fit_threads_to_load(load=1.6, cores=2)
    assert line == ("machine busy: load 1.60 on 2 cores (1-minute average); timings will be slower and noisier than "
                    "on a quiet machine; torch runs 1 thread instead of 2, one per free core")
    assert torch.get_num_threads() == 1


def test_no_core_free_still_leaves_torch_one_thread_and_says_the_machine_is_busy(two_threads):
    torch.set_num_threads(1)
    line = devices.fit_threads_to_load(load=3.5, cores=2)
    assert line == ("machine busy: load 3.50 on 2 cores (1-minute average); timings will be slower and noisier than "
                    "on a quiet machine")
    assert torch.get_num_threads() == 1


def test_free_cores_round_half_up_and_never_exceed_the_cores():
    torch.set_num_threads(16)
    line = devices.fit_threads_to_load(load=2.5, cores=16)
    assert line.endswith("torch runs 14 threads instead of 16, one per free core")
    assert torch.get_num_threads() == 14
    assert devices.fit_threads_to_load(load=0.0, cores=16) is None and torch.get_num_threads() == 14


def test_the_readings_default_to_this_machine(two_threads, monkeypatch):
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (4.0, 1.0, 1.0))
    monkeypatch.setattr(devices, "usable_cores", lambda: 2)
    assert devices.fit_threads_to_load().startswith("machine busy: load 4.00 on 2 cores")
    assert devices.load_per_core() == 2.0
    assert "2 cores, 1 torch thread" in devices.describe_machine(torch.device("cpu"))  # a profile says so


def test_an_os_without_a_load_average_changes_nothing(two_threads, monkeypatch):
    def no_load():
        raise OSError("no load average here")

    monkeypatch.setattr(devices.os, "getloadavg", no_load)
    assert devices.load_average() is None and devices.load_per_core() is None
    assert devices.fit_threads_to_load() is None and torch.get_num_threads() == 2


def test_usable_cores_follow_the_affinity_where_there_is_one(monkeypatch):
    monkeypatch.setattr(devices.os, "sched_getaffinity", lambda pid: {0, 3}, raising=False)
    assert devices.usable_cores() == 2
    monkeypatch.delattr(devices.os, "sched_getaffinity")
    monkeypatch.setattr(devices.os, "cpu_count", lambda: 6)
    assert devices.usable_cores() == 6
