"""Drafters: propose continuations by looking them up in the token history.

Importing this package registers the built-in drafters.
"""

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.errors import PLDError
from lookup.registry import (UnknownDrafterError, available, builtin_names, create, get, register,
                             trusted_names, unknown_name)

# Built-in drafters register themselves on import.
from lookup import adaptive, baseline, peers, recycling, suffix_automaton, unfold, voting  # noqa: E402,F401  isort: skip

__all__ = [
    "Draft",
    "Drafter",
    "EMPTY_DRAFT",
    "PLDError",
    "UnknownDrafterError",
    "available",
    "builtin_names",
    "create",
    "get",
    "register",
    "trusted_names",
    "unknown_name",
]
