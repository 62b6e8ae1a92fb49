"""traces.py record on the user's own prompts: one trace file per category, ready to replay and explain."""

from __future__ import annotations

import json

import pytest
from toys import IdTokenizer, tiny_llama

import decoding
from experiments import traces
from experiments.benchmarks.traces import load_trace_sets
from pldcore.cost import CostProfile

VOCAB = 48


class CharTokenizer(IdTokenizer):
    """Characters to ids, enough for a model without a chat template (a plain transcript)."""

    def __call__(self, text: str) -> dict:
        return {"input_ids": [ord(c) % VOCAB for c in text]}


@pytest.fixture
def toy_model(monkeypatch):
    target = tiny_llama(vocab_size=VOCAB, seed=5)
    target.tokenizer = CharTokenizer()
    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: target)
    # nothing is timed here: the recorded folder gets a flat profile
    monkeypatch.setattr(traces, "cost_profile", lambda *a, **k: CostProfile.flat(8, seconds=0.01))
    return target


def write_questions(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


QUESTIONS = [
    {"question_id": 1, "category": "math reasoning/v2", "turns": ["Add 3 and 4, then add 3 and 4 again."]},
    {"question_id": 2, "category": "math reasoning/v2", "turns": ["What is 12 times 12?"]},
    {"question_id": 7, "category": "qa", "turns": ["Why is the sky blue?", "And at sunset?"]},
]


def test_questions_are_recorded_per_category_and_explained(tmp_path, toy_model, capsys):
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "traces"
    assert traces.main(["record", "--questions", questions, "--out", str(out), "--prompts", "1",
                        "--max-new-tokens", "6"]) == 0
    # a category's odd characters stay out of the file name, and in the cases
    assert sorted(p.name for p in out.glob("*.jsonl.gz")) == ["math-reasoning-v2-n6.jsonl.gz", "qa-n6.jsonl.gz"]
    cases = {c.case: c for s in load_trace_sets(out) for c in s.cases}
    assert sorted(cases) == ["math reasoning/v2/1", "qa/7#1", "qa/7#2"]  # --prompts 1 applies per category
    assert cases["math reasoning/v2/1"].category == "math reasoning/v2"
    assert [cases["qa/7#1"].turn, cases["qa/7#2"].turn] == [1, 2]
    # the second turn follows the model's own first answer
    assert len(cases["qa/7#2"].prompt) > len(cases["qa/7#1"].prompt) + len(cases["qa/7#1"].output)
    capsys.readouterr()
    assert traces.main(["explain", "--traces", str(out), "--drafters", "suffix-automaton", "--plot", ""]) == 0
    assert "math reasoning/v2" in capsys.readouterr().out


def test_recording_again_adds_only_what_is_missing(tmp_path, toy_model):
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "traces"
    args = ["record", "--questions", questions, "--out", str(out), "--max-new-tokens", "6"]
    assert traces.main([*args, "--prompts", "1"]) == 0
    first = {c.case: c.output for s in load_trace_sets(out) for c in s.cases}
    assert traces.main([*args, "--full"]) == 0
    every = {c.case: c.output for s in load_trace_sets(out) for c in s.cases}
    assert sorted(every) == ["math reasoning/v2/1", "math reasoning/v2/2", "qa/7#1", "qa/7#2"]
    assert all(every[k] == v for k, v in first.items())


@pytest.mark.parametrize(
    "extra,match",
    [
        ([], "--out DIR"),  # never into the cache's folder of the embedded suites
        (["--out", "OUT", "--prompts", "0"], "--prompts must be >= 1"),
        (["--out", "OUT", "--questions", "MISSING"], "MISSING"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, toy_model, capsys, extra, match):
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS)
    extra = [str(tmp_path / "x") if a == "OUT" else str(tmp_path / "missing.jsonl") if a == "MISSING" else a
             for a in extra]
    match = str(tmp_path / "missing.jsonl") if match == "MISSING" else match
    code = traces.main(["record", "--questions", questions, *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert match in err


def test_a_dataset_needs_its_template(tmp_path, toy_model, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"article": "some text"}) + "\n")
    assert traces.main(["record", "--dataset", str(data), "--out", str(tmp_path / "x")]) == 2
    assert "--template" in capsys.readouterr().err
    assert traces.main(["record", "--dataset", str(data), "--template", "Summarize: {article}",
                        "--category", "news", "--out", str(tmp_path / "x"), "--max-new-tokens", "4"]) == 0
    assert [s.task for s in load_trace_sets(tmp_path / "x")] == ["news"]


# -- profile --ship: a second model's benchmark gets its own reference profile --------------------------------
def _shipped_toy(tmp_path, monkeypatch, target) -> "Path":
    """A shipped benchmark of ``target`` (the toy) in a scratch data folder, as `record --ship` leaves it."""
    from experiments.benchmarks import traces as trace_files

    monkeypatch.setattr(trace_files, "SHIPPED_ROOT", tmp_path / "data")
    monkeypatch.setattr(traces, "shipped_folder", trace_files.shipped_folder)
    folder = trace_files.shipped_folder(target.name)
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:2])
    assert traces.main(["record", "--ship", "--questions", questions, "--out", str(folder), "--max-new-tokens", "4"]) == 0
    return folder


@pytest.mark.parametrize("noisy", [False, True])
def test_profile_ship_makes_a_quiet_measurement_the_benchmarks_reference_and_refuses_a_noisy_one(
        tmp_path, monkeypatch, toy_model, capsys, noisy):
    from experiments.benchmarks.traces import read_benchmark

    folder = _shipped_toy(tmp_path, monkeypatch, toy_model)
    before = read_benchmark(folder)
    measured = CostProfile((1, 2, 8), (0.02, 0.021, 0.03), model=toy_model.name, device="cpu",
                           spread=0.25 if noisy else 0.02, load_per_core=0.1, host="a test")
    monkeypatch.setattr(traces, "measure_cost_profile", lambda *a, **k: measured)
    code = traces.main(["profile", "--ship"])
    after = read_benchmark(folder)
    shipped = CostProfile.load(folder / "profile.json")
    if noisy:  # nothing changes: the benchmark keeps its profile and its hash
        assert code == 1 and "not shipped" in capsys.readouterr().out
        assert after == before and shipped.model != f"{toy_model.name} (reference)"
        return
    assert code == 0
    assert shipped.model == f"{toy_model.name} (reference)" and shipped.seconds == measured.seconds
    # the profile is part of the hash: rehashed, the rest of BENCHMARK.json kept
    assert after["hash"] != before["hash"] and after["model"] == toy_model.name and after["max_new_tokens"] == 4
    assert load_trace_sets(folder)[0].profile == shipped
