"""Torch devices: which ones this machine has, the default, checking a user's choice, waiting for one.

Kept apart from :mod:`decoding.model_target` so that code that only times or picks a device
(cost profiles, the loop, CLIs) never imports transformers.
"""

from __future__ import annotations

import os
import platform

import torch

from lookup.errors import PLDError


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
    """What a timing was measured on, in a few words: the GPU's name, or the CPU's model and cores."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def load_per_core() -> float | None:
    """The 1-minute load average per core (None where the OS does not say)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None
