"""Fitting the first-token model on traces: rows as adaptive sees them, held-out scores, the command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from experiments.benchmarks.traces import TraceCase, TraceSet, append_case
from experiments.running.first_token_fit import collect, fit, held_out
from lookup import first_token
from lookup.cost import CPU_SMOLLM2


def toy_cases(n: int, seed: int = 0) -> list[TraceCase]:
    rng = np.random.default_rng(seed)
    motif = rng.integers(0, 6, 12).tolist()
    cases = []
    for i in range(n):
        # repeats of a motif with noise: matches that agree, and some that do not
        seq = [t if rng.random() > 0.2 else int(rng.integers(0, 6)) for _ in range(8) for t in motif]
        cases.append(TraceCase(f"toy/{i}", "toy", 1, seq[:24], seq[24:], [], "toy", 16, [], len(seq) - 24))
    return cases


def test_the_rows_are_adaptives_drafts_with_their_outcome():
    cases = toy_cases(4)
    data = collect([TraceSet(Path("toy.jsonl.gz"), "toy", cases, CPU_SMOLLM2)])
    assert data.x.shape == (len(data.y), len(first_token.FEATURES)) and len(data.y) > 50
    assert set(np.unique(data.y)) == {0.0, 1.0}
    assert sorted(set(data.case.tolist())) == [0, 1, 2, 3]
    log_match, estimate, occurrences, share = data.x.T
    assert np.all(log_match >= np.log(2)) and np.all((0 < estimate) & (estimate < 1))
    assert np.all((1 <= occurrences) & (occurrences <= 8)) and np.all((0 <= share) & (share <= 1))
    coefficients, intercept = fit(data)
    assert coefficients.shape == (len(first_token.FEATURES),) and np.isfinite(intercept)
    checks = held_out(data)
    assert [c["fitted on"] for c in checks] == ["even cases", "odd cases"]
    assert sum(c["rows"] for c in checks) == len(data.y)
    assert all(c["model"] is None or 0.0 <= c["model"] <= 1.0 for c in checks)


def test_the_fit_command_prints_a_fit_and_refuses_too_little(tmp_path, capsys):
    from experiments import traces

    for case in toy_cases(4, seed=1):
        append_case(tmp_path / "toy-n4.jsonl.gz", case)
    assert traces.main(["fit-first-token", "--traces", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "COEFFICIENTS = np.array([" in out and "INTERCEPT = " in out and "even cases" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    append_case(empty / "x-n1.jsonl.gz", TraceCase("x/0", "x", 1, [1, 2], [3, 4], [], "toy", 16, [], 2))
    assert traces.main(["fit-first-token", "--traces", str(empty)]) == 2
    assert "too few drafts" in capsys.readouterr().err
