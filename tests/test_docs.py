"""The code in docs/ runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lookup

DOCS = Path(__file__).resolve().parent.parent / "docs"


def python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.S)


def test_drafter_example_is_at_most_30_lines_and_honours_the_contract():
    example = python_blocks("writing-a-drafter.md")[0]
    assert len(example.strip().splitlines()) <= 30
    namespace: dict = {}
    exec(compile(example, "writing-a-drafter.md", "exec"), namespace)
    try:
        drafter = lookup.create("last-bigram")
        drafter.reset([5, 6, 7, 5, 6])
        assert drafter.propose(8).tokens.tolist() == [7, 5, 6, 7, 5, 6, 7, 5]
        assert drafter.propose(2).tokens.tolist() == [7, 5]  # same answer: no side effects
        drafter.extend([9])
        assert drafter.propose(3).tokens.tolist() == []  # 9 has no successor yet
    finally:
        lookup.registry._REGISTRY.pop("last-bigram", None)


@pytest.mark.model
def test_drafter_example_runs_on_the_embedded_model(embedded, monkeypatch, capsys):
    import decoding

    monkeypatch.setattr(decoding, "load_model", lambda *a, **k: embedded)
    define, use = python_blocks("writing-a-drafter.md")[:2]
    namespace: dict = {}
    try:
        exec(compile(define, "define", "exec"), namespace)
        exec(compile(use.replace("max_new_tokens=40", "max_new_tokens=24"), "use", "exec"), namespace)
    finally:
        lookup.registry._REGISTRY.pop("last-bigram", None)
    assert "tau" in capsys.readouterr().out
    assert namespace["result"].stats.tau > 1.0
