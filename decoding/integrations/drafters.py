"""A drafter from what a user of an engine writes: a name, a ``name:key=value`` spec, a ``.py``
file or an instance (``docs/integrations.md``)."""

from __future__ import annotations

import lookup
from lookup.base import Drafter
from lookup.errors import PLDError
from lookup.indexes.history import History
from lookup.specs import parse_spec


def make_drafter(drafter: str | Drafter) -> Drafter:
    """A new drafter for ``drafter`` (an instance is returned as it is)."""
    if isinstance(drafter, Drafter):
        return drafter
    if not isinstance(drafter, str):
        raise PLDError(f"drafter must be a name, a 'name:key=value' spec or a lookup.Drafter, got {drafter!r}")
    name, params = parse_spec(drafter)
    try:
        return lookup.create(name, **params)
    except (TypeError, ValueError) as exc:
        raise PLDError(f"{drafter}: {exc}") from None


def asks_for_history(drafter: Drafter) -> bool:
    """Whether ``drafter``, or a drafter it wraps, was made to keep a history across requests
    (``history=True``)."""
    return drafter.keeps_history()


def fresh_each_request(spec: str | Drafter, where: str, instead: str) -> None:
    """Refuse a drafter ``spec`` that asks for a history (``history=true``) where the engine builds a
    new drafter from it for every request (``where``): it would keep none, silently. ``instead``
    says what to do."""
    # a spec that never says "history" keeps none: no drafter is built to ask
    if isinstance(spec, str) and "history" in spec and asks_for_history(make_drafter(spec)):
        raise PLDError(f"{spec}: {where} builds a new drafter from a spec for every request, so history=true "
                       f"would keep no history across requests; {instead}")


def history_of(drafter: Drafter) -> History | None:
    """The :class:`lookup.indexes.history.History` ``drafter`` keeps (or a drafter it wraps keeps): the one
    kind of history that requests served side by side can share (:func:`share_history`). None for a
    drafter without one, or whose history is of another kind (the peers')."""
    holder = drafter.shareable_history()
    return None if holder is None else holder.history


def share_history(drafter: Drafter, history: History) -> None:
    """Make a new drafter (before its first ``reset``) draft from ``history``, shared with other
    requests, through a cursor of its own (:meth:`lookup.indexes.history.History.cursor`), instead of the
    history it was made with."""
    holder = drafter.shareable_history()
    if holder is None:
        raise PLDError(f"{drafter!r} keeps no history that requests can share")
    holder.share_history(history.cursor())
