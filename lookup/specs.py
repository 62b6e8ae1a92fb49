"""Drafter specs on the command line: ``"name:key=value:key=value"`` -> ``(name, params)``.

A name may start with a namespace (``peer:vllm-ngram:prompt_lookup_max=3`` names the drafter
``peer:vllm-ngram``): the part after ``peer:`` belongs to the name.

Values are Python literals (``max_tokens=8``, ``length_rule=(2, 2)``,
``base_params={'tree': True}``) and may hold separators inside brackets or quotes. ``true``,
``false``, ``none`` and ``null``, in any case and also inside containers, read as ``True``,
``False`` and ``None``: a shell user's ``tree=false`` must not arrive as the (truthy) string
``"false"``. Any other value that is not a literal stays a string (``base=voting``).
"""

from __future__ import annotations

import ast

from lookup.errors import PLDError
from lookup.registry import PEER_PREFIX

#: name prefixes that contain the separator: ``peer`` + ``:`` + the rest of the name
NAMESPACES = (PEER_PREFIX[:-1],)

_KEYWORDS = {"true": True, "false": False, "none": None, "null": None}
_OPEN, _CLOSE, _QUOTES = "([{", ")]}", "'\""


def split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes: ``"a:b={'x':1}"`` -> ``["a", "b={'x':1}"]``.

    Inside quotes a backslash escapes the next character, as in Python (``'it\\'s'``).
    Always returns at least one piece (``""`` -> ``[""]``); pieces are not stripped.
    """
    parts, depth, quote, start = [], 0, "", 0
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in _QUOTES:
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``: items stripped, empty ones dropped; commas inside
    brackets or quotes do not split."""
    return [part.strip() for part in split_top_level(text, ",") if part.strip()]


class _Keywords(ast.NodeTransformer):
    """Turns the bare names true/false/none/null (any case) into constants."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        key = node.id.lower()
        return ast.copy_location(ast.Constant(_KEYWORDS[key]), node) if key in _KEYWORDS else node


def parse_value(text: str) -> object:
    """A parameter value: a Python literal when ``text`` is one (``true``/``false``/``none``/``null``
    included, in any case), else ``text`` itself, stripped."""
    text = text.strip()
    try:
        tree = _Keywords().visit(ast.parse(text, mode="eval"))
        return ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        # not a literal (a bare name such as a drafter's, or free text): the string itself
        return text


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"name:key=value:key=value"`` -> ``(name, {key: value, ...})``, values by :func:`parse_value`.

    A name in a namespace keeps its prefix: ``"peer:vllm-ngram:k=1"`` -> ``("peer:vllm-ngram", {"k": 1})``.
    Raises :class:`PLDError` for an empty name, a pair without ``=``, a key that is not an
    identifier, and a key given twice.
    """
    name, *pairs = (part.strip() for part in split_top_level(spec, ":"))
    if name in NAMESPACES:
        if not pairs or not pairs[0] or "=" in pairs[0]:
            raise PLDError(f"no name after {name + ':'!r} in {spec!r}: write {name}:name:key=value")
        name = f"{name}:{pairs.pop(0)}"
    if not name:
        raise PLDError(f"no name in {spec!r}: write name:key=value")
    params: dict = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise PLDError(f"bad parameter {pair!r} in {spec!r}: write name:key=value "
                           "(quote a value that holds a colon: base='peer:vllm-ngram')")
        if key in params:
            raise PLDError(f"parameter {key!r} given twice in {spec!r}")
        params[key] = parse_value(value)
    return name, params
