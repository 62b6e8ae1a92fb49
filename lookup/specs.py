"""Drafter specs on the command line: ``"name:key=value:key=value"`` -> ``(name, params)``, and the
parsed spec that every path builds its drafters from.

    spec = parse_drafter("adaptive:history=true")   # parsed and checked once, nothing built
    spec.wants_top, spec.classes()                  # what it reads, what it is made of
    drafter = spec.build(setting)                   # one build per request, for where it runs

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lookup.base import Drafter
from lookup.registry import PEER_PREFIX, UnknownDrafterError, check_params, construct, get
from pldcore.errors import PLDError

if TYPE_CHECKING:
    from pldcore.setting import Setting

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


@dataclass(frozen=True)
class DrafterSpec:
    """A drafter spec, parsed and checked once: its class, its parameters, and what it is made of.

    It knows without building anything what its drafter wants (:attr:`wants_top`, :attr:`wants_vocab`,
    :attr:`uses_setting`) and which classes (and so source files) it is made of (:meth:`classes`);
    :meth:`build` is the one way every path (replay, live runs, the sandbox's child, the integrations,
    the board) makes a drafter of it.
    """

    text: str  # as the user wrote it: the method's name in tables and rows
    name: str  # the drafter's name (registered, or a drafter file's path)
    params: dict = field(hash=False)  # parsed values (``lookup.specs.parse_value``)
    cls: type[Drafter] = field(hash=False)

    @property
    def wrapped(self) -> "tuple[DrafterSpec, ...]":
        """The specs of the drafters it would wrap (:meth:`lookup.base.Drafter.wrapped_specs`)."""
        return tuple(_spec_of(name, params, f"{self.text} (its {name})")
                     for name, params in self.cls.wrapped_specs(dict(self.params)))

    @property
    def wants_top(self) -> int:
        """The target's top ids per token its drafter reads (0: none): its own or a wrapped drafter's."""
        return max([self.cls.top_rows(dict(self.params)), *(w.wants_top for w in self.wrapped)])

    @property
    def wants_vocab(self) -> bool:
        """Whether its drafter (or one it wraps) may ask for the vocabulary's strings."""
        return any(c.wants_vocab is not Drafter.wants_vocab or c.set_vocab is not Drafter.set_vocab
                   for c in self.classes())

    @property
    def uses_setting(self) -> bool:
        return self.cls.uses_setting

    def classes(self) -> list[type[Drafter]]:
        """Its class and those of the drafters it wraps: what its rows depend on (``code_key``)."""
        return [self.cls, *(c for w in self.wrapped for c in w.classes())]

    def build(self, setting: "Setting | None") -> Drafter:
        """A new drafter for ``setting``: a drafter that plans (``uses_setting``) gets it; errors are
        one-line TypeErrors naming the drafter (:func:`lookup.registry.construct`). ``setting`` may be
        None only for a drafter that plans nothing (an entry point need not measure a profile for it)."""
        params = dict(self.params)
        if self.cls.uses_setting:
            if setting is None:
                raise TypeError(f"drafter {self.name!r} plans by its setting: build it with one")
            params["setting"] = setting
        return construct(self.cls, params, self.name)

    def __str__(self) -> str:
        return self.text


def _spec_of(name: str, params: dict, text: str) -> DrafterSpec:
    cls = get(name)
    check_params(cls, params, name)
    return DrafterSpec(text, name, dict(params), cls)


def parse_drafter(spec: "str | DrafterSpec") -> DrafterSpec:
    """``"name:key=value"`` (or a drafter file's path) parsed and checked: the name is known, each
    parameter is one its constructor takes, with a value its annotation allows, and ``setting`` is
    not among them (the run hands it). Nothing is built. Mistakes are one-line :class:`PLDError`\ s."""
    if isinstance(spec, DrafterSpec):
        return spec
    if not isinstance(spec, str):
        raise PLDError(f"a drafter spec is a name or 'name:key=value', got {spec!r}")
    name, params = parse_spec(spec)
    if "setting" in params:
        raise PLDError(f"{spec}: setting is not a parameter: the run hands it (--profile, --benchmark, the model)")
    try:
        return _spec_of(name, params, spec)
    except UnknownDrafterError:
        raise
    except (TypeError, ValueError) as exc:
        raise PLDError(f"{spec}: {exc}") from None

