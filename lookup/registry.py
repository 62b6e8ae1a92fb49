"""Name -> drafter class registry, with entry-point plug-ins (group ``pld_lab.drafters``)."""

from __future__ import annotations

import difflib
from importlib import metadata
from typing import Callable, Iterable, TypeVar

from lookup.base import Drafter
from lookup.errors import PLDError
from lookup.files import drafter_class_in, file_drafter_name, is_drafter_file
from lookup.params import type_problem

ENTRY_POINT_GROUP = "pld_lab.drafters"
#: names of the peers (other systems' lookup functions, ``lookup.peers``) start with this; the
#: colon is part of the name, and ``lookup.specs.parse_spec`` keeps it there
PEER_PREFIX = "peer:"

#: the drafter that drafts where a caller names none (``decoding.integrations.hf.generate``, the
#: README's snippet, ``traces.py explain``): the best of ours per request on the committed board
#: (``leaderboard/LEADERBOARD.md``). vLLM's proposer defaults to another, for measured reasons that
#: ``decoding.integrations.vllm.DEFAULT_DRAFTER`` states (``docs/choosing-a-drafter.md``).
DEFAULT_DRAFTER = "adaptive"

_REGISTRY: dict[str, type[Drafter]] = {}
#: other names of registered drafters (``none`` for ``plain``): they create the same class, and are
#: never listed, so that nothing is listed (or scored on the board) twice
_ALIASES: dict[str, str] = {}
#: names registered while plug-ins were being imported: never among the trusted names
_PLUGINS: set[str] = set()
_loading_plugins = False
T = TypeVar("T", bound=type[Drafter])


class UnknownDrafterError(PLDError, KeyError):
    """Raised by :func:`create` for a name that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> str:
    """The message for an unknown ``name`` of some ``kind``, with the close choices and all of them.

    ``unknown_name("drafter", "unfodl", ["none", "unfold"])`` ->
    ``"unknown drafter 'unfodl'; did you mean 'unfold'? available: none, unfold"``.
    """
    names = sorted(set(choices))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    return f"unknown {kind} {name!r}; {hint}available: {', '.join(names) if names else '(none)'}"


def register(name: str, aliases: Iterable[str] = ()) -> Callable[[T], T]:
    """Class decorator: make a :class:`Drafter` subclass available as ``create(name)`` (and as
    ``create(alias)`` for each of ``aliases``, which :func:`available` does not list)."""

    def deco(cls: T) -> T:
        if not (isinstance(cls, type) and issubclass(cls, Drafter)):
            raise TypeError(f"@register({name!r}) needs a Drafter subclass, got {cls!r}")
        existing = _REGISTRY.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"drafter name {name!r} is already taken by {existing.__qualname__}")
        cls.name = name
        _REGISTRY[name] = cls
        for alias in aliases:
            _ALIASES[alias] = name
        if _loading_plugins:
            _PLUGINS.add(name)
        return cls

    return deco


def _load_entry_points() -> None:
    """Import plug-in drafters; a broken plug-in is skipped, never fatal. (This runs the plug-ins'
    code: the competition never calls it, see :func:`trusted_names`.)"""
    global _loading_plugins
    _loading_plugins, was = True, _loading_plugins
    try:
        _import_plugins()
    finally:
        _loading_plugins = was


def _import_plugins() -> None:
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # noqa: BLE001 - a third-party bug must not break the registry
            import warnings

            warnings.warn(f"skipping drafter plug-in {ep.name!r}: {exc}", stacklevel=2)
            continue
        if isinstance(cls, type) and issubclass(cls, Drafter) and ep.name not in _REGISTRY:
            register(ep.name)(cls)


def available(peers: bool = True) -> list[str]:
    """Names of all registered drafters, plug-ins included, sorted; ``peers=False`` leaves out the
    peers' lookup functions (``peer:...``), which tools compare only when asked to."""
    _load_entry_points()
    return sorted(name for name in _REGISTRY if peers or not name.startswith(PEER_PREFIX))


def canonical(name: str) -> str:
    """The registered name behind ``name``: itself, or the name an alias stands for."""
    return _ALIASES.get(name, name)


def get(name: str) -> type[Drafter]:
    """The class registered as ``name``, or the one drafter a ``.py`` file at that path defines
    (``lookup.files``); unknown names raise with close suggestions."""
    if is_drafter_file(name):
        cls = drafter_class_in(name)
        if cls.name == Drafter.name:  # a file that does not @register its class
            cls.name = file_drafter_name(name)
        return cls
    name = canonical(name)
    if name not in _REGISTRY:
        _load_entry_points()
    if name not in _REGISTRY:
        raise UnknownDrafterError(unknown_name("drafter", name, _REGISTRY))
    return _REGISTRY[name]


def create(name: str, **params) -> Drafter:
    """A new drafter instance: ``create("unfold", max_ngram_size=3)``.

    Mistakes are one-line TypeErrors that name the drafter, checked before the constructor runs: a
    parameter its constructor does not take lists the close names (``max_token`` -> ``did you mean
    'max_tokens'?``), and a value its annotation rules out (``max_tokens='eight'``, which Python would
    let through to fail later as ``'<' not supported between instances of 'str' and 'int'``) names
    the parameter, the type it takes, its default and the value (:func:`lookup.params.type_problem`).
    A constructor that still fails with a TypeError that names no parameter has an unannotated
    number judged by its default's type; any other message stands, prefixed with the drafter's name.
    """
    return construct(get(name), params, name)


def construct(cls: type[Drafter], params: dict, name: str) -> Drafter:
    """``cls(**params)`` with :func:`create`'s checks and one-line TypeErrors, naming the drafter
    ``name``: for a class at hand rather than a registered name (the competition's sandbox builds a
    submitted file's class so, and ``submit --params`` is checked as a spec is)."""
    import inspect  # already loaded by dataclasses: ``import lookup`` pays nothing for it

    try:
        parameters = dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):  # no signature to read (a constructor in C): let the call decide
        parameters = None
    if parameters is not None and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        keywords = [k for k, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        for key in params:
            if key not in keywords:
                raise TypeError(f"drafter {name!r}: {unknown_name('parameter', key, keywords)}")
    parameters = parameters or {}
    _check_types(name, parameters, params, untyped=False)
    try:
        return cls(**params)
    except TypeError as exc:
        # a message that names none of the parameters comes from deep inside the constructor (a
        # comparison, an addition): an unannotated number of another type is then the likelier cause.
        # A constructor's own message about a parameter stands.
        if not any(k in str(exc) for k in params):
            _check_types(name, parameters, params, untyped=True)
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TypeError(f"drafter {name!r}: {first_line}") from None


def _check_types(name: str, parameters: dict, params: dict, untyped: bool) -> None:
    """Raise the one-line TypeError of the first value in ``params`` that its parameter rules out."""
    for key, value in params.items():
        problem = None if key not in parameters else type_problem(key, value, parameters[key], untyped=untyped)
        if problem:
            raise TypeError(f"drafter {name!r}: {problem}")


def trusted_names() -> list[str]:
    """The drafters whose code ships with pld-lab: ours and the peers' ports (``lookup.peers``),
    registered by our own modules; never a plug-in, a drafter file or anything registered while
    plug-ins were imported. Lists what is registered now and imports nothing, so the competition's
    parent can name what it may run in-process without running anyone's code. (An alias is not
    listed: :func:`canonical` names what it stands for.)"""
    return sorted(name for name, cls in _REGISTRY.items()
                  if name not in _PLUGINS and cls.__module__.split(".")[0] == "lookup")


def builtin_names() -> list[str]:
    """Our drafters that ship with pld-lab (not plug-ins, not drafter files, not the peers of
    ``lookup.peers``, which ``lookup.peers.names()`` lists), sorted."""
    return [name for name in trusted_names() if not name.startswith(PEER_PREFIX)]
