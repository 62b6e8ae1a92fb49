"""The bound on a drafter's parameters wherever they come from someone else (a submission's
``--params``, a board entry's ``params``): what a spec can hold, and no more.

    check_params({"max_tokens": 8}, "--params")     # the same dict, or a PLDError of one line

A drafter's parameters are numbers, strings, booleans, None, and short lists or objects of them
(``ngrams=(3, 2)``). Anything past that is no parameter but a payload: a list 60 deep made the
board file unreadable (its reader refuses JSON nested past 64), a megabyte of numbers makes every
view slow. So the bound is checked where parameters enter, before anything is scored or written,
and again where a board entry's are read back (a hand-edited file).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pldcore.errors import PLDError

#: how deep lists and objects may nest inside the parameters (``{"a": [[1, 2]]}`` is 3 deep)
MAX_PARAMS_DEPTH = 4
#: the parameters as JSON, at most: a spec is a line of text, not a data set
MAX_PARAMS_BYTES = 4096
#: the longest parameter name
MAX_KEY_CHARS = 64
#: the largest integer a parameter may be (what a C ``int64`` holds; JSON readers agree on it)
MAX_INT = 2**63 - 1


def check_params(params: Any, where: str = "the parameters") -> dict:
    """``params`` when it is an object of at most :data:`MAX_PARAMS_BYTES` bytes as JSON whose
    names are strings (at most :data:`MAX_KEY_CHARS`) and whose values are None, booleans, finite
    numbers (integers within int64), strings, and lists (or tuples) and objects of them nested at
    most :data:`MAX_PARAMS_DEPTH` deep; else a PLDError of one line starting with ``where``."""
    if not isinstance(params, dict):
        raise PLDError(f"{where} must be an object of parameters (name: value), not {type(params).__name__}")
    # a loop, not recursion: a hostile value 200k deep must not exhaust the stack before it is refused
    stack: list[tuple[Any, int, str]] = [(params, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, (dict, list, tuple)) and len(value) > MAX_PARAMS_BYTES:
            raise PLDError(f"{where}: over {MAX_PARAMS_BYTES} bytes as JSON")  # each item takes a byte at least
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
                    raise PLDError(f"{where}: a parameter name must be a string of 1-{MAX_KEY_CHARS} characters")
                items.append((item, f"{path}.{key}" if path else key))
        elif isinstance(value, (list, tuple)):
            items = [(item, f"{path}[{i}]") for i, item in enumerate(value)]
        else:
            _check_scalar(value, path, where)
            continue
        if items and depth >= MAX_PARAMS_DEPTH and any(isinstance(v, (dict, list, tuple)) for v, _ in items):
            raise PLDError(f"{where}: {_short(path)} is nested deeper than {MAX_PARAMS_DEPTH} levels")
        stack.extend((item, depth + 1, at) for item, at in items)
    size = len(json.dumps(params, separators=(",", ":")).encode())
    if size > MAX_PARAMS_BYTES:
        raise PLDError(f"{where}: {size:,} bytes as JSON, over {MAX_PARAMS_BYTES}")
    return params


def _check_scalar(value: Any, path: str, where: str) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise PLDError(f"{where}: {_short(path)} is an integer past int64")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PLDError(f"{where}: {_short(path)} is {value}, not a finite number")
        return
    raise PLDError(f"{where}: {_short(path)} is a {type(value).__name__}; a parameter is a number, a string, "
                   "a boolean, None, or a list or object of them")


def _short(path: str) -> str:
    """A parameter's path as the message names it (bounded: a path is made of names from outside)."""
    text = "".join(c if c.isprintable() else "?" for c in path)
    return repr(text if len(text) <= 80 else text[:79] + "…")
