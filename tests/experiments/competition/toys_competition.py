"""Tiny trace folders and quick limits for the competition's tests (no model, no recording).

Each sandboxed run starts a fresh interpreter (~1.5 s: it imports numpy, numba and torch), so the
tests use tiny trace folders and as few processes as their checks allow.

A test that needs one of the sandbox's kernel layers (bubblewrap, seccomp, Landlock) asks
:func:`require_layer` (or wears :func:`needs_layer`): it skips where the machine lacks the layer,
and fails with the reason where ``PLD_LAB_REQUIRE_ISOLATION=1`` (``.ci/run`` sets it, on machines
where ``make setup`` installs bubblewrap and libseccomp), so CI never passes by skipping them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

import numpy as np
import pytest

from decoding.target import TopRows
from experiments.benchmarks.traces import (TraceCase, append_case, case_seed, load_trace_sets, sampling_of,
                                           write_benchmark)
from experiments.competition import confine, isolation
from experiments.competition.sandbox import Limits
from lookup.base import MAX_TOP
from pldcore.cost import CostProfile
from pldcore.setting import GREEDY, Regime

VOCAB = 64
#: where set, a missing isolation layer fails the tests that need it instead of skipping them
REQUIRE_ISOLATION = os.environ.get("PLD_LAB_REQUIRE_ISOLATION", "") not in ("", "0")
#: quick limits for tests: a silent child is killed 1 s after its 50 ms (a grace a busy machine's stalls fit in: the
#: tests of time limits test the 50 ms, never the grace)
QUICK = Limits(call_s=0.05, margin_s=1.0, setup_s=60.0, total_s=60.0)


def top_rows(rng, sequence: list[int], k: int = MAX_TOP, vocab: int = VOCAB) -> TopRows:
    """Top-k rows of a greedy run: after token i, the next token first (greedy), then others."""
    n = len(sequence) - 1
    ids = np.concatenate([np.asarray(sequence[1:], np.int64)[:, None], rng.integers(0, vocab, (n, k - 1))], axis=1)
    probs = np.sort(rng.random((n, k)), axis=1)[:, ::-1].astype(np.float16)
    return TopRows(ids, probs)


def make_case(rng, name: str, category: str, turn: int = 1, doc: int = 48, out: int = 40) -> TraceCase:
    """A prompt holding a 'document', and an output that copies stretches of it with some noise:
    what lookup drafters are for. It holds the target's top-8 rows, as recorded traces do."""
    document = rng.integers(3, VOCAB, doc).tolist()
    prompt = document + rng.integers(3, VOCAB, 6).tolist()
    output: list[int] = []
    while len(output) < out:
        if rng.random() < 0.7:
            start = int(rng.integers(0, doc - 8))
            output += document[start: start + int(rng.integers(2, 9))]
        else:
            output += rng.integers(3, VOCAB, int(rng.integers(1, 4))).tolist()
    output = output[:out]
    return TraceCase(name, category, turn, prompt, output, [0.05] * len(output), "toy", VOCAB, [2], out,
                     top=top_rows(rng, prompt + output))


def make_trace_folder(folder: Path, seed: int = 0, tasks=("copy", "chat"), cases: int = 2,
                      profile: CostProfile | None = None, regime: Regime = GREEDY) -> Path:
    """A trace folder shaped like the recorder's: <task>-n40.jsonl.gz files and a profile.json; its
    cases as if decoded in ``regime`` (a sampled one: each with its seed, and a BENCHMARK.json, as a
    finished recording has)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for i in range(cases):
            multi = task == "chat"
            for turn in (1, 2) if multi else (1,):
                name = f"{task}/{i:03d}" + (f"#{turn}" if multi else "")
                case = make_case(rng, name, task, turn)
                if not regime.greedy:
                    case = dataclasses.replace(case, sampling=sampling_of(regime, case_seed(seed, name)))
                append_case(folder / f"{task}-n40.jsonl.gz", case)
    (profile or CostProfile((1, 2, 8, 64), (0.06, 0.09, 0.1, 0.25), model="toy", device="cpu")).save(
        folder / "profile.json")
    if not regime.greedy:
        write_benchmark(folder, load_trace_sets(folder))
    return folder


# -- the sandbox's kernel layers: skipped where missing, a failure where required -----------------------------
def missing_layer(layer: str) -> str | None:
    """Why the sandbox layer ``layer`` ("bwrap", "seccomp" or "landlock") cannot hold here; None: it can."""
    if layer == "bwrap":
        problem = isolation.bwrap_problem()
        return problem and f"no bubblewrap here: {problem}"
    if layer == "seccomp":
        return None if confine.seccomp_available() else "no libseccomp here (Debian: apt-get install libseccomp2)"
    if layer == "landlock":
        return None if confine.landlock_abi() else "the kernel offers no Landlock"
    raise ValueError(f"unknown layer {layer!r}")


def _kernel_has_landlock() -> bool:
    """Whether the running kernel reports Landlock among its security modules: Landlock depends on
    the kernel (and its boot options), not on ``make setup``, so it is required only where it is there."""
    try:
        return "landlock" in Path("/sys/kernel/security/lsm").read_text().split(",")
    except OSError:
        return False


def _required(layer: str) -> bool:
    return REQUIRE_ISOLATION and (layer != "landlock" or _kernel_has_landlock())


def require_layer(layer: str) -> None:
    """Skip the calling test where ``layer`` is missing here, or fail it with the reason where
    ``PLD_LAB_REQUIRE_ISOLATION`` is set."""
    problem = missing_layer(layer)
    if problem is None:
        return
    if _required(layer):
        pytest.fail(f"PLD_LAB_REQUIRE_ISOLATION is set, but {problem}", pytrace=False)
    pytest.skip(problem)


def needs_layer(layer: str):
    """A test decorator: :func:`require_layer` for the whole test (a skip mark where the layer is
    simply missing, so the reason shows at collection)."""
    def decorate(test):
        problem = missing_layer(layer)
        if problem is None:
            return test
        if not _required(layer):
            return pytest.mark.skip(reason=problem)(test)

        @functools.wraps(test)  # the same signature, so fixtures and parameters still reach it
        def failing(*args, **kwargs):
            require_layer(layer)

        return failing

    return decorate
