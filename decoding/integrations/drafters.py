"""A drafter from what a user of an engine writes: a name, a ``name:key=value`` spec, a ``.py``
file or an instance (``docs/integrations.md``)."""

from __future__ import annotations

import lookup
from lookup.base import Drafter
from lookup.errors import PLDError
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


def fresh_each_request(spec: str | Drafter, where: str, instead: str) -> None:
    """Refuse a drafter ``spec`` that asks for a history (``history=true``) where the engine builds a
    new drafter from it for every request (``where``): it would keep none, silently. ``instead``
    says what to do."""
    if isinstance(spec, Drafter):
        return
    if make_drafter(spec).params().get("history") is True:
        raise PLDError(f"{spec}: {where} builds a new drafter from a spec for every request, so history=true "
                       f"would keep no history across requests; {instead}")

