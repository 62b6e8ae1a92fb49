"""The user-data loaders: MT-bench / Spec-Bench question files and dataset files, and their errors."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from experiments.benchmarks.tasks import load_dataset_file, load_jsonl_questions
from pldcore.errors import PLDError


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
