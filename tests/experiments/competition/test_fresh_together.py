"""A build records every model's fresh cases side by side before it scores any
(``fresh_cases.record_fresh_together``): one process per model and task (every regime of it), each with its share of
the cores, a recording's failure the build's. Here with toy workers (a real recording needs the models)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from experiments import leaderboard as cli
from experiments.benchmarks.fresh import TASKS
from experiments.competition import fresh_cases
from pldcore.errors import PLDError
from pldcore.setting import Regime
from toys_recording import OUT, _failing_worker  # tests/experiments/competition is on sys.path; light to import

def test_each_model_records_in_a_process_of_its_own_and_a_failure_is_the_builds(tmp_path, monkeypatch):
    monkeypatch.setenv(OUT, str(tmp_path))
    t1 = Regime.from_name("t1")
    said = []
    with pytest.raises(PLDError, match="no such model: broken"):
        fresh_cases.record_fresh_together(7, 3, [("a", [t1]), ("broken", []), ("b", [])], say=said.append,
                                          worker=_failing_worker)
    made = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    # each model's every task, in a process of its own, greedy and in the model's sampled regimes; kept
    assert set(made) == {f"{model}-{task}" for model in "ab" for task in TASKS}
    assert all(m["regimes"] == (["t1"] if name.startswith("a-") else []) for name, m in made.items())
    assert {(m["seed"], m["per_task"]) for m in made.values()} == {(7, 3)}
    assert os.getpid() not in {m["pid"] for m in made.values()}
    cores = os.cpu_count() or 1
    parts = 3 * len(TASKS)
    assert {m["threads"] for m in made.values()} == {max(1, cores // min(parts, cores))}  # the cores shared out
    assert "side by side" in said[0]


def test_a_build_of_every_benchmark_records_them_all_first(monkeypatch, tmp_path):
    asked = []

    class Stop(Exception):
        pass

    def together(seed, per_task, jobs, say=print, worker=None):
        asked.append((seed, per_task, [(model, [r.name for r in regimes]) for model, regimes in jobs]))
        raise Stop

    monkeypatch.setattr(cli, "record_fresh_together", together)
    monkeypatch.setattr(cli, "_build", lambda *a, **k: pytest.fail("scored before the fresh cases were recorded"))
    with pytest.raises(Stop):
        cli.main(["build", "--board", str(tmp_path / "board"), "--seed", "5", "--fresh", "2"])
    (seed, per_task, jobs), = asked
    models = {model: regimes for model, regimes in jobs}
    assert (seed, per_task) == (5, 2) and set(models) == {"SmolLM2-135M-Instruct", "gemma-3-270m-q4_k_m"}
    assert all(regimes == ["t1"] for regimes in models.values())  # each shipped benchmark's sampled tracks
