"""The layers: imports between our modules point down the table in docs/architecture.md, never up,
and never in a cycle (imports inside functions count: hiding an import in a function does not
make a cycle go away)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pldcore", "lookup", "decoding", "experiments")
#: module-name prefix -> layer, lowest first; the longest matching prefix wins
LAYERS = {
    "pldcore": -1,  # the base: errors, names, cost and hardware profiles, fits, the setting
    "lookup": 0,
    "decoding": 1,
    "decoding.integrations": 1.5,  # our loop inside other engines: builds drafters by name
    "experiments.benchmarks": 2,
    "experiments.running": 3,
    "experiments.reporting": 4,
    "experiments.competition": 5,
    "experiments": 6,  # the command-line entry points (compare.py, traces.py, leaderboard.py, ...)
}
#: folders of files that are data, not modules of ours (example competition entries)
NOT_MODULES = ("experiments/competition/submissions",)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def our_modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not any(path.relative_to(ROOT).as_posix().startswith(f + "/") for f in NOT_MODULES):
                out[module_name(path)] = path
    return out


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """Our modules that ``name`` imports, anywhere in its body."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from pkg import mod" imports pkg.mod; "from mod import name" imports mod
            candidates = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in candidates:
            # the longest prefix that is one of our modules: "experiments.running.rows.CaseResult" -> the module
            parts = candidate.split(".")
            for i in range(len(parts), 0, -1):
                prefix = ".".join(parts[:i])
                if prefix in modules:
                    if prefix != name:
                        found.add(prefix)
                    break
    return found


def layer_of(name: str) -> int:
    best = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return LAYERS[best]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
                  for a, deps in graph.items() for b in deps if layer_of(b) > layer_of(a))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = our_modules()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def test_every_module_has_a_layer(graph):
    assert len(graph) > 40
    for name in graph:
        layer_of(name)  # raises on a module outside every layer


def test_imports_never_point_up(graph):
    assert upward_imports(graph) == []


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_decoding_never_imports_a_concrete_drafter(graph):
    allowed = {"lookup.base", "lookup.registry", "lookup.specs"}  # the contract, names and parsed specs
    bad = {(a, b) for a, deps in graph.items() if a.startswith("decoding") and layer_of(a) == LAYERS["decoding"]
           for b in deps if b.startswith("lookup") and b not in allowed}
    assert bad == set()


# -- the checks themselves can fail --------------------------------------------------------------------
def test_the_checks_find_an_upward_import_and_a_cycle():
    graph = {"lookup.base": {"decoding.generate"}, "decoding.generate": {"lookup.base"},
             "experiments.running.rows": {"experiments.reporting.summary"}, "experiments.reporting.summary": set()}
    assert upward_imports(graph) == [
        "experiments.running.rows (layer 3) imports experiments.reporting.summary (layer 4)",
        "lookup.base (layer 0) imports decoding.generate (layer 1)"]
    assert cycles(graph) == [["decoding.generate", "lookup.base"]]


def test_imports_inside_functions_and_relative_imports_count(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from experiments.reporting import summary\n    from .rows import CaseResult\n")
    modules = {"experiments.running.mod", "experiments.reporting.summary", "experiments.running.rows",
               "experiments.reporting"}
    assert imports_of("experiments.running.mod", path, modules) == {
        "experiments.reporting.summary", "experiments.running.rows"}
