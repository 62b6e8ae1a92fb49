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


# -- the docs name what exists --------------------------------------------------------------------------------
ROOT = DOCS.parent
#: the reference docs (docs/notes/ holds dated notes: names as they were then)
REFERENCE = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
#: a path of ours inside backticks (a path inside another system's tree, such as llama.cpp's
#: examples/lookup/lookup.cpp, starts with something else)
OUR_PATH = re.compile(r"`((?:lookup|decoding|experiments|tests)/[\w./*<>-]*)")
#: a dotted name of ours inside backticks: a module, or an attribute of one
OUR_NAME = re.compile(r"`((?:lookup|decoding|experiments)(?:\.\w+)+)")
#: capability hooks the contract replaced by Drafter.evidence (docs/notes/2026-12-03-drafter-hooks.md)
REMOVED = ("chain_agreement", "context_agreement", "history_agreement", "match_source", "model_evidence")


def _exists(path: str) -> bool:
    path = path.rstrip("/.")
    if "<" in path or "*" in path:  # a pattern: its folder must exist
        path = path[: min(i for i in (path.find("<"), path.find("*")) if i >= 0)].rpartition("/")[0]
    return (ROOT / path).exists()


def _resolves(name: str) -> bool:
    """Whether ``name`` is a module of ours, or an attribute of one, under its own name (not through
    the aliases ``lookup`` keeps for modules that moved)."""
    import importlib
    import sys

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        if sys.modules[module].__name__ != module:  # an alias of a moved module
            return False
        obj = sys.modules[module]
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("doc", REFERENCE, ids=lambda p: p.name)
def test_the_docs_name_paths_and_modules_that_exist(doc):
    text = doc.read_text()
    missing = sorted({p for p in OUR_PATH.findall(text) if not _exists(p)})
    unresolved = sorted({n for n in OUR_NAME.findall(text) if not _resolves(n)})
    removed = sorted({h for h in REMOVED if re.search(rf"\b{h}\b", text)})
    assert (missing, unresolved, removed) == ([], [], [])
