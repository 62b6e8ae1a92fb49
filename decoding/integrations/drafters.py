"""A drafter spec from what a user of an engine writes: a name, a ``name:key=value`` spec or a ``.py``
file (``docs/integrations.md``); and the history requests served side by side share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lookup.base import Drafter
from lookup.specs import DrafterSpec, parse_drafter
from pldcore.errors import PLDError

if TYPE_CHECKING:  # the type of a shared history; the module (numba) loads with a drafter that keeps one
    from lookup.indexes.history import History


def drafter_spec(drafter: str | DrafterSpec) -> DrafterSpec:
    """The parsed spec of what a user of an engine wrote: a name, a ``name:key=value`` spec or a ``.py``
    file (:func:`lookup.specs.parse_drafter`); anything else is one line of :class:`PLDError`."""
    if not isinstance(drafter, (str, DrafterSpec)):
        raise PLDError(f"drafter must be a name, a 'name:key=value' spec or a lookup.Drafter, got {drafter!r}")
    return parse_drafter(drafter)


def asks_for_history(drafter: Drafter | DrafterSpec) -> bool:
    """Whether ``drafter`` (an instance, or a spec: read without building it), or a drafter it wraps,
    keeps a history across requests (``history=True``)."""
    if isinstance(drafter, DrafterSpec):
        return any(s.params.get("history") is True for s in (drafter, *drafter.wrapped))
    return drafter.keeps_history()


def fresh_each_request(spec: DrafterSpec, where: str, instead: str) -> None:
    """Refuse a drafter ``spec`` that asks for a history (``history=true``) where the engine builds a
    new drafter from it for every request (``where``): it would keep none, silently. ``instead``
    says what to do."""
    if asks_for_history(spec):
        raise PLDError(f"{spec}: {where} builds a new drafter from a spec for every request, so history=true "
                       f"would keep no history across requests; {instead}")


def history_of(drafter: Drafter) -> "History | None":
    """The :class:`lookup.indexes.history.History` ``drafter`` keeps (or a drafter it wraps keeps): the one
    kind of history that requests served side by side can share (:func:`share_history`). None for a
    drafter without one, or whose history is of another kind (the peers')."""
    holder = drafter.shareable_history()
    return None if holder is None else holder.history


def share_history(drafter: Drafter, history: "History") -> None:
    """Make a new drafter (before its first ``reset``) draft from ``history``, shared with other
    requests, through a cursor of its own (:meth:`lookup.indexes.history.History.cursor`), instead of the
    history it was made with."""
    holder = drafter.shareable_history()
    if holder is None:
        raise PLDError(f"{drafter!r} keeps no history that requests can share")
    holder.share_history(history.cursor())
