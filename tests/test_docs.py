"""The code in README.md and docs/ runs as written, and the docs name what exists.

Every ```python block of README.md and docs/*.md (docs/notes/ holds dated notes, as they were then)
runs: the blocks of one doc in order, in one fresh Python process started in an empty folder, as a
reader pasting them into one session would run them. An HTML comment on the line before a block
changes that, sparingly:

- ``<!-- not run: REASON -->``: a fragment, or code that needs what the tests cannot have (vLLM);
- ``<!-- file: NAME.py -->``: the reader saves the block as NAME.py (a drafter file, say): it is
  written into the folder, not run, and later blocks load it by that name, as the reader's would;
- ``<!-- needs the model -->``: it loads the embedded model, so the doc's run is a ``model`` test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import lookup

DOCS = Path(__file__).resolve().parent.parent / "docs"
ROOT = DOCS.parent
#: the docs whose code runs: the README and the reference docs (not the dated notes)
RUN = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
#: a python block, with the HTML comment on the line before it when there is one
BLOCK = re.compile(r"(?:^<!--[ \t]*(?P<mark>[^\n]*?)[ \t]*-->[ \t]*\n)?^```python\n(?P<code>.*?)^```", re.S | re.M)
MARKS = ("not run", "file", "needs the model")
#: how many blocks may go unrun, in all the docs together: a fragment is the exception
MAX_NOT_RUN = 3


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # the doc's line of the block's first line of code
    code: str
    mark: str = ""  # one of MARKS, or "" (runs)
    arg: str = ""  # the reason not to run it, or the file's name


def blocks(doc: Path) -> list[Block]:
    """The python blocks of ``doc``, in order, with their marks."""
    text = doc.read_text()
    out = []
    for m in BLOCK.finditer(text):
        mark, _, arg = (m["mark"] or "").partition(":")
        line = text.count("\n", 0, m.start("code")) + 1
        out.append(Block(doc, line, m["code"], mark.strip(), arg.strip()))
    return out


def test_every_block_runs_or_says_why_not():
    marked = [b for doc in RUN for b in blocks(doc) if b.mark]
    for b in marked:
        where = f"{b.doc.name}:{b.line}"
        assert b.mark in MARKS, f"{where}: unknown mark {b.mark!r} (one of {MARKS})"
        if b.mark == "not run":
            assert b.arg, f"{where}: say why it is not run: <!-- not run: REASON -->"
        if b.mark == "file":
            assert re.fullmatch(r"\w+\.py", b.arg), f"{where}: <!-- file: NAME.py -->"
    assert sum(b.mark == "not run" for b in marked) <= MAX_NOT_RUN


def runner(doc_blocks: list[Block]) -> str:
    """A script that saves the ``file`` blocks and runs the others in order, in one namespace, each
    compiled under the doc's name and line numbers so that a traceback points into the doc."""
    steps = []
    for b in doc_blocks:
        if b.mark == "file":
            steps.append(("file", b.arg, b.code))
        elif b.mark != "not run":
            steps.append(("run", f"{b.doc.relative_to(ROOT)}", "\n" * (b.line - 1) + b.code))
    return (f"STEPS = {steps!r}\n"
            "namespace = {'__name__': '__main__'}\n"
            "for kind, name, code in STEPS:\n"
            "    if kind == 'file':\n"
            "        open(name, 'w').write(code)\n"
            "    else:\n"
            "        exec(compile(code, name, 'exec'), namespace)\n")


def doc_params():
    for doc in RUN:
        found = [b for b in blocks(doc) if b.mark != "not run"]
        if any(b.mark != "file" for b in found):
            marks = [pytest.mark.model] if any(b.mark == "needs the model" for b in found) else []
            yield pytest.param(doc, marks=marks, id=doc.name)


@pytest.mark.parametrize("doc", list(doc_params()))
def test_the_snippets_run_as_written_in_a_fresh_process(doc, tmp_path):
    script = tmp_path / "snippets.py"
    script.write_text(runner(blocks(doc)))
    work = tmp_path / "reader"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{doc.name}'s snippets failed:\n{done.stderr[-3000:]}"
    if doc.name == "writing-a-drafter.md":  # the example drafter pays on its repetitive prompt
        assert float(re.search(r"tau (\d+\.\d+) tokens per forward", done.stdout)[1]) > 1.0


def test_drafter_example_is_at_most_30_lines_and_honours_the_contract(tmp_path):
    example = blocks(DOCS / "writing-a-drafter.md")[0]
    assert example.mark == "file" and len(example.code.strip().splitlines()) <= 30
    path = tmp_path / example.arg
    path.write_text(example.code)
    try:
        drafter = lookup.create(str(path))
        drafter.reset([5, 6, 7, 5, 6])
        assert drafter.propose(8).tokens.tolist() == [7, 5, 6, 7, 5, 6, 7, 5]
        assert drafter.propose(2).tokens.tolist() == [7, 5]  # same answer: no side effects
        drafter.extend([9])
        assert drafter.propose(3).tokens.tolist() == []  # 9 has no successor yet
    finally:
        lookup.registry._REGISTRY.pop("last-bigram", None)


# -- the docs name what exists --------------------------------------------------------------------------------
#: the reference docs (docs/notes/ holds dated notes: names as they were then)
REFERENCE = RUN
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
