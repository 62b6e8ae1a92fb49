"""Torch devices: which ones this machine has, the default, checking a user's choice, waiting for one,
and how busy the CPU is (the load, torch's threads sized to the free cores).

Kept apart from :mod:`decoding.model_target` so that code that only times or picks a device
(cost profiles, the loop, CLIs) never imports transformers.
"""

from __future__ import annotations

import os
import platform

import torch

from pldcore.errors import PLDError


def default_device() -> torch.device:
    """CUDA when present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def available_devices() -> list[str]:
    """Device strings that work here, e.g. ``["cpu", "cuda", "cuda:0"]``."""
    out = ["cpu"]
    if torch.cuda.is_available():
        out += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    if torch.backends.mps.is_available():
        out += ["mps", "mps:0"]
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        out += ["xpu", *(f"xpu:{i}" for i in range(xpu.device_count()))]
    return out


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``device`` as a :class:`torch.device` this machine has (``None`` = :func:`default_device`).

    Raises :class:`PLDError` (one line, listing what is available) for a string torch does not
    parse and for a device this machine lacks, before any weights are loaded.
    """
    if device is None:
        return default_device()
    here = available_devices()
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):  # torch raises RuntimeError for bad strings
        raise PLDError(f"device {device!r} is not a torch device; this machine has: {', '.join(here)}") from None
    if parsed.type == "cpu":  # "cpu:0" too: the CPU ignores the index
        return parsed
    # a bare type ("cuda") means its current device, which exists whenever the type does
    name = parsed.type if parsed.index is None else f"{parsed.type}:{parsed.index}"
    if name not in here:
        raise PLDError(f"device {device!r} is not available on this machine; it has: {', '.join(here)}")
    return parsed


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so that wall-clock timings are real (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def describe_machine(device: torch.device) -> str:
    """What a timing was measured on, in a few words: the GPU's name, or the CPU's model and cores (and
    torch's threads when it runs fewer than that)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    cores, threads = usable_cores(), torch.get_num_threads()
    # a timing taken with fewer torch threads than cores (see fit_threads_to_load) is slower than one with all
    return f"{model}, {cores} cores" + (f", {threads} torch thread{'s' * (threads != 1)}" if threads < cores else "")


#: one runnable process per core (the 1-minute load average over the usable cores): past it every
#: core is taken, and timings measure the other work as much as our own
BUSY_LOAD = 1.0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says, else every core)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The 1-minute load average: runnable processes, averaged (None where the OS does not say)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def load_per_core() -> float | None:
    """The 1-minute load average per usable core (None where the OS does not say)."""
    load = load_average()
    return None if load is None else load / usable_cores()


def fit_threads_to_load(load: float | None = None, cores: int | None = None) -> str | None:
    """Check how busy the machine is before timing anything on the CPU, and give torch only the free cores.

    ``load`` (the 1-minute load average) and ``cores`` default to this machine's readings. The
    cores free are ``cores - load``, rounded, at least 1. When fewer cores are free than torch has
    threads, torch gets one thread per free core (an OpenMP thread that waits for a taken core
    stalls every other thread at each barrier, so fewer threads run faster on a busy machine).
    Returns the one-line warning to show when the machine is busy (every core taken, or threads
    cut), else None (a quiet machine, or an OS that reports no load: nothing is changed).
    """
    load = load_average() if load is None else load
    if load is None:
        return None
    cores = usable_cores() if cores is None else cores
    threads = torch.get_num_threads()
    free = max(1, min(cores, int(cores - load + 0.5)))  # half up
    if free >= threads and load < BUSY_LOAD * cores:
        return None
    seen = f"machine busy: load {load:.2f} on {cores} core{'s' * (cores != 1)} (1-minute average)"
    effect = "timings will be slower and noisier than on a quiet machine"
    if free < threads:
        torch.set_num_threads(free)
        return f"{seen}; {effect}; torch runs {free} thread{'s' * (free != 1)} instead of {threads}, one per free core"
    return f"{seen}; {effect}"
