"""Shared fixtures (the embedded model is loaded once per test session; no test times a cost profile)
and hypothesis profiles."""

from __future__ import annotations

import functools
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


BUSY = pytest.StashKey[str | None]()  # the load check's warning, shown in the session's header


def pytest_configure(config):
    config.addinivalue_line("markers", "measures_profile: the test times a cost profile itself (on a tiny model)")
    # beside other work, torch gets only the free cores: a thread that waits for a taken core
    # stalls the others at every barrier, and the suite's model tests crawl
    from decoding.devices import fit_threads_to_load

    config.stash[BUSY] = fit_threads_to_load()


def pytest_report_header(config):
    busy = config.stash.get(BUSY, None)
    return [busy] if busy else []


_MEASURING = {"allowed": False}  # whether the running test may time a cost profile


@pytest.fixture(scope="session", autouse=True)
def no_profile_is_measured():
    """Tests never time a cost profile: it takes minutes beside other work, and a run's speedups
    would hang on this machine's noise. ``measure_cost_profile`` fails, wherever it was imported,
    unless the test is marked ``measures_profile`` (the tests of measuring itself, on a tiny model);
    a test that runs a live comparison takes the ``live_profile`` fixture instead."""
    from decoding import cost

    measure = cost.measure_cost_profile

    @functools.wraps(measure)
    def guarded(*args, **kwargs):
        if not _MEASURING["allowed"]:
            raise AssertionError("a test measured a cost profile: hand it one (the live_profile fixture, or patch "
                                 "cost_profile), or mark it measures_profile if timing one is what it tests")
        return measure(*args, **kwargs)

    # modules imported so far (traces.py) hold a reference of their own; later imports get the guard
    holders = [m for m in list(sys.modules.values())
               if getattr(m, "__dict__", {}).get("measure_cost_profile") is measure]
    for module in holders:
        module.measure_cost_profile = guarded
    yield
    for module in holders:
        module.measure_cost_profile = measure


@pytest.fixture(autouse=True)
def _measures_profile_marker(request):
    _MEASURING["allowed"] = request.node.get_closest_marker("measures_profile") is not None
    yield
    _MEASURING["allowed"] = False


@pytest.fixture(autouse=True)
def drafts_are_planned_under_the_reference_profile(monkeypatch, tmp_path):
    """A drafter built for a live model (transformers' generate(), ``decoding.generate`` given a spec)
    plans under its model's cached or measured profile: in tests, nothing cached on this machine is read
    and nothing is timed, the shipped reference profile stands in for a measurement."""
    from decoding import setting
    from pldcore.cost import CPU_SMOLLM2

    monkeypatch.setattr(setting, "profile_path", lambda target: tmp_path / "no-cached-profile.json")
    monkeypatch.setattr(setting, "cost_profile", lambda target, **kwargs: CPU_SMOLLM2)


@pytest.fixture(autouse=True)
def torch_threads():
    """Whatever a test does to torch's thread count (a live run sizes it to the machine's load) ends with it."""
    before = torch.get_num_threads()
    yield
    if torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture
def live_profile(monkeypatch):
    """The shipped reference profile for live comparisons (compare.py without --replay): nothing is
    timed, and no run reads or writes the profile cached on this machine."""
    from experiments.running import live
    from pldcore.cost import CPU_SMOLLM2

    monkeypatch.setattr(live, "cost_profile", lambda target, **kwargs: CPU_SMOLLM2)
    return CPU_SMOLLM2


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
