"""Names users type: the one "did you mean" message for an unknown name of any kind."""

from __future__ import annotations

import difflib
from typing import Iterable


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> str:
    """The message for an unknown ``name`` of some ``kind``, with the close choices and all of them.

    ``unknown_name("drafter", "unfodl", ["none", "unfold"])`` ->
    ``"unknown drafter 'unfodl'; did you mean 'unfold'? available: none, unfold"``.
    """
    names = sorted(set(choices))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    return f"unknown {kind} {name!r}; {hint}available: {', '.join(names) if names else '(none)'}"
