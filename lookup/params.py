"""Checks of drafter constructor parameters that Python's duck typing would let through."""

from __future__ import annotations

import inspect

import numpy as np

#: the annotation kinds a value can be judged against: kind -> the types a value of that kind may have
#: (numpy's scalars count as Python's; a list is no tuple: a drafter may tell them apart by type)
_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int, np.integer), "float": (int, float, np.integer, np.floating), "bool": (bool, np.bool_),
    "str": (str,), "None": (type(None),), "list": (list,), "tuple": (tuple,), "dict": (dict,),
    "set": (set, frozenset), "Sequence": (list, tuple),
}
#: kinds that a bool must not pass for, although Python's bool is an int (``max_tokens=true`` is a slip)
_NOT_BOOL = ("int", "float")


def require_bool(name: str, value: object) -> bool:
    """``value`` as a bool, or a TypeError naming the parameter.

    Only True and False (numpy's included) pass: a string such as ``"false"`` or ``"yes"`` is
    truthy, and accepting it would silently switch the option on.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def with_history(base: object, params: dict, history: object) -> dict:
    """``params`` for the drafter a wrapper wraps (``base``: a name or an instance), with
    ``history=True`` added when the wrapper's ``history`` is on: the one rule of every wrapper with a
    ``history`` option. A history is made with the drafter, so it needs ``base`` by name: with an
    instance it is a ValueError (so is a ``history`` that is not a bool: a TypeError)."""
    if require_bool("history", history) and not isinstance(base, str):
        raise ValueError("history=True needs the wrapped drafter by name (it is created with history=True)")
    return {**params, "history": True} if history else dict(params)


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` outside brackets, pieces stripped (``"dict[str, int] | None"`` on ``|``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def annotation_kinds(annotation: str) -> list[str] | None:
    """The kinds of a type annotation written as text, e.g. ``"int | None"`` -> ``["int", "None"]``
    (``list[int]`` is ``list``, ``Optional[X]`` is X or None, a ``typing.`` prefix is dropped); None
    when a member is a type of its own (an enum, a cost profile, a drafter), whose values only the
    constructor can judge."""
    kinds: list[str] = []
    for member in _top_level(annotation.strip().strip("'\""), "|"):
        head, _, inner = member.partition("[")
        head = head.strip().removeprefix("typing.").removeprefix("collections.abc.")
        if head in ("Optional", "Union"):
            inner_kinds = annotation_kinds(" | ".join(_top_level(inner.rstrip("]"), ",")))
            if inner_kinds is None:
                return None
            kinds += inner_kinds + (["None"] if head == "Optional" else [])
        elif head == "NoneType":
            kinds.append("None")
        elif head in _KINDS or head == "Callable":
            kinds.append(head)
        else:
            return None
    return kinds


def _fits(value: object, kind: str) -> bool:
    if kind == "Callable":
        return callable(value)
    if kind in _NOT_BOOL and isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, _KINDS[kind])


def type_problem(key: str, value: object, param: inspect.Parameter, untyped: bool = False) -> str | None:
    """Why ``value`` cannot be the value of constructor parameter ``param`` (named ``key``), by its
    annotation: ``"max_tokens must be int, e.g. max_tokens=16 (the default); got 'eight'"``; None
    when it may be, or when the annotation names a type of its own. The default value always passes.

    With ``untyped``, a parameter without an annotation whose default is a number is judged by its
    default's type (``scale=2.0`` takes a float); without, an unannotated parameter is never judged
    (its author promised nothing: a caller may know better).
    """
    default = param.default
    if default is not param.empty and value is default:
        return None
    annotation = param.annotation
    if annotation is param.empty:
        if not untyped or not isinstance(default, (int, float)) or isinstance(default, bool):
            return None
        annotation = type(default).__name__
    elif not isinstance(annotation, str):  # a live annotation (a module without ``from __future__``)
        annotation = inspect.formatannotation(annotation)
    annotation = annotation.strip().strip("'\"")  # a quoted annotation reads as its text
    kinds = annotation_kinds(annotation)
    if kinds is None or any(_fits(value, kind) for kind in kinds):
        return None
    example = "" if default is param.empty else f", e.g. {key}={default!r} (the default)"
    expected = "True or False" if kinds == ["bool"] else annotation  # as require_bool says it
    return f"{key} must be {expected}{example}; got {value!r}"
