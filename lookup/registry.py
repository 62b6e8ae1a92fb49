"""Name -> drafter class registry: the built-ins, imported when first named, and entry-point plug-ins
(group ``pld_lab.drafters``).

The built-in drafters are listed in :data:`BUILTINS` by name and module, and a module is imported
only when its drafter is asked for (``get``, ``create``): ``import lookup`` imports no drafter, no
numba and no torch, so every CLI and the competition's sandbox pay only for what they build.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Callable, Iterable, TypeVar

from lookup.base import Drafter
from lookup.files import drafter_class_in, file_drafter_name, is_drafter_file
from lookup.params import type_problem
from pldcore.errors import PLDError
from pldcore.names import unknown_name
from pldcore.setting import reference_setting

ENTRY_POINT_GROUP = "pld_lab.drafters"
#: names of the peers (other systems' lookup functions, ``lookup.peers``) start with this; the
#: colon is part of the name, and ``lookup.specs.parse_spec`` keeps it there
PEER_PREFIX = "peer:"

#: the drafter that drafts where a caller names none (``decoding.integrations.hf.generate``, the
#: README's snippet, ``traces.py explain``): the best of ours per request on the committed board
#: (``leaderboard/LEADERBOARD.md``). vLLM's proposer defaults to another, for measured reasons that
#: ``decoding.integrations.vllm.DEFAULT_DRAFTER`` states (``docs/choosing-a-drafter.md``).
DEFAULT_DRAFTER = "adaptive"

#: the drafters that ship with pld-lab, by name: the module that defines (and ``@register``\ s) each.
#: ``tests/lookup/test_registry.py`` checks that every module registers exactly the names listed here
BUILTINS: dict[str, str] = {
    "adaptive": "lookup.drafters.adaptive",
    "frequency": "lookup.drafters.frequency",
    "plain": "lookup.drafters.plain",
    "recycling": "lookup.drafters.recycling",
    "suffix-automaton": "lookup.drafters.suffix_automaton",
    "unfold": "lookup.drafters.unfold",
    "voting": "lookup.drafters.voting",
    "peer:hf-prompt-lookup": "lookup.peers.hf_prompt_lookup",
    "peer:llamacpp-lookup": "lookup.peers.llamacpp_lookup",
    "peer:sam-decoding": "lookup.peers.sam_decoding",
    "peer:sglang-ngram": "lookup.peers.sglang_ngram",
    "peer:suffix-decoding": "lookup.peers.suffix_decoding",
    "peer:vllm-ngram": "lookup.peers.vllm_ngram",
}
_REGISTRY: dict[str, type[Drafter]] = {}
#: other names of registered drafters (``none`` for ``plain``): they create the same class, and are
#: never listed, so that nothing is listed (or scored on the board) twice. A built-in's aliases are
#: here from the start, so that an alias, too, imports its module only when asked for
_ALIASES: dict[str, str] = {"none": "plain"}
#: names registered while plug-ins were being imported: never among the trusted names
_PLUGINS: set[str] = set()
_loading_plugins = False
T = TypeVar("T", bound=type[Drafter])


class UnknownDrafterError(PLDError, KeyError):
    """Raised by :func:`create` for a name that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def register(name: str, aliases: Iterable[str] = ()) -> Callable[[T], T]:
    """Class decorator: make a :class:`Drafter` subclass available as ``create(name)`` (and as
    ``create(alias)`` for each of ``aliases``, which :func:`available` does not list)."""

    def deco(cls: T) -> T:
        if not (isinstance(cls, type) and issubclass(cls, Drafter)):
            raise TypeError(f"@register({name!r}) needs a Drafter subclass, got {cls!r}")
        existing = _REGISTRY.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"drafter name {name!r} is already taken by {existing.__qualname__}")
        if name in BUILTINS and cls.__module__ != BUILTINS[name]:  # a built-in not imported yet
            raise ValueError(f"drafter name {name!r} is already taken by {BUILTINS[name]}")
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
        if ep.name in _REGISTRY or ep.name in BUILTINS:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # noqa: BLE001 - a third-party bug must not break the registry
            import warnings

            warnings.warn(f"skipping drafter plug-in {ep.name!r}: {exc}", stacklevel=2)
            continue
        if isinstance(cls, type) and issubclass(cls, Drafter) and ep.name not in _REGISTRY and ep.name not in BUILTINS:
            register(ep.name)(cls)


def available(peers: bool = True) -> list[str]:
    """Names of all registered drafters, the built-ins (imported or not) and plug-ins included, sorted;
    ``peers=False`` leaves out the peers' lookup functions (``peer:...``), which tools compare only when
    asked to."""
    _load_entry_points()
    return sorted(name for name in {*BUILTINS, *_REGISTRY} if peers or not name.startswith(PEER_PREFIX))


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
    if name not in _REGISTRY and name in BUILTINS:
        importlib.import_module(BUILTINS[name])  # registers it
    if name not in _REGISTRY:
        _load_entry_points()
    if name not in _REGISTRY:
        raise UnknownDrafterError(unknown_name("drafter", name, {*BUILTINS, *_REGISTRY}))
    return _REGISTRY[name]


def create(name: str, **params) -> Drafter:
    """A new drafter instance: ``create("unfold", max_ngram_size=3)``.

    A drafter that plans (``uses_setting``) takes ``setting=`` (:class:`pldcore.setting.Setting`: where
    it will run); without one it is built for :func:`pldcore.setting.reference_setting` (the embedded
    model, greedy, on a 2-core CPU). Entry points build from a parsed spec with their own setting
    (:meth:`lookup.specs.DrafterSpec.build`); this is for a user building one by hand.

    Mistakes are one-line TypeErrors that name the drafter, checked before the constructor runs: a
    parameter its constructor does not take lists the close names (``max_token`` -> ``did you mean
    'max_tokens'?``), and a value its annotation rules out (``max_tokens='eight'``, which Python would
    let through to fail later as ``'<' not supported between instances of 'str' and 'int'``) names
    the parameter, the type it takes, its default and the value (:func:`lookup.params.type_problem`).
    A constructor that still fails with a TypeError that names no parameter has an unannotated
    number judged by its default's type; any other message stands, prefixed with the drafter's name.
    """
    cls = get(name)
    if cls.uses_setting and "setting" not in params:  # the one default, for a drafter built by hand
        params = {**params, "setting": reference_setting()}
    return construct(cls, params, name)


def construct(cls: type[Drafter], params: dict, name: str) -> Drafter:
    """``cls(**params)`` with :func:`create`'s checks and one-line TypeErrors, naming the drafter
    ``name``: for a class at hand rather than a registered name (a parsed spec builds so, and the
    competition's sandbox builds a submitted file's class so)."""
    parameters = check_params(cls, params, name)
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


def check_params(cls: type[Drafter], params: dict, name: str) -> dict:
    """Raise :func:`create`'s one-line TypeError when ``params`` holds a parameter ``cls``'s constructor
    does not take, or a value its annotation rules out; nothing is built. Returns the constructor's
    parameters (empty when it has no signature to read: the call decides)."""
    import inspect  # already loaded by dataclasses: ``import lookup`` pays nothing for it

    try:
        parameters = dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):  # no signature to read (a constructor in C): let the call decide
        return {}
    if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        keywords = [k for k, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        for key in params:
            if key not in keywords:
                raise TypeError(f"drafter {name!r}: {unknown_name('parameter', key, keywords)}")
    _check_types(name, parameters, params, untyped=False)
    return parameters


def _check_types(name: str, parameters: dict, params: dict, untyped: bool) -> None:
    """Raise the one-line TypeError of the first value in ``params`` that its parameter rules out."""
    for key, value in params.items():
        problem = None if key not in parameters else type_problem(key, value, parameters[key], untyped=untyped)
        if problem:
            raise TypeError(f"drafter {name!r}: {problem}")


def trusted_names() -> list[str]:
    """The drafters whose code ships with pld-lab: ours and the peers' ports (``lookup.peers``),
    registered by our own modules; never a plug-in, a drafter file or anything registered while
    plug-ins were imported. Imports nothing, so the competition's parent can name what it may run
    in-process without running anyone's code: the built-ins (:data:`BUILTINS`), whether imported yet or
    not, and any other class a module of ``lookup`` registered. (An alias is not listed:
    :func:`canonical` names what it stands for.)"""
    ours = {name for name, cls in _REGISTRY.items() if name not in _PLUGINS and cls.__module__.split(".")[0] == "lookup"}
    return sorted(ours | set(BUILTINS))


def builtin_names() -> list[str]:
    """Our drafters that ship with pld-lab (not plug-ins, not drafter files, not the peers of
    ``lookup.peers``, which ``lookup.peers.names()`` lists), sorted."""
    return [name for name in trusted_names() if not name.startswith(PEER_PREFIX)]
