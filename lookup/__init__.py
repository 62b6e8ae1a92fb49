"""Drafters: propose continuations by looking them up in the token history.

The package by role: ``lookup.drafters`` (the strategies, one module each), ``lookup.indexes``
(what they look up in: the suffix automaton, the history across requests), ``lookup.acceptance``
(evidence, the acceptance model and the planner that ``adaptive`` is a thin drafter over) and
``lookup.peers`` (other systems' lookup functions, ported). The contract, the registry and spec
parsing stay at the top. Importing this package registers the built-in drafters.
"""

import sys as _sys

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.errors import PLDError
from lookup.registry import (DEFAULT_DRAFTER, UnknownDrafterError, available, builtin_names, canonical, create, get,
                             register, trusted_names, unknown_name)

# Built-in drafters register themselves on import.
from lookup import acceptance, drafters, indexes, peers  # noqa: E402,F401  isort: skip

#: the modules' paths before the package was grouped by role, kept importable (``lookup.automaton``
#: is ``lookup.indexes.automaton``) so that code written against them keeps working
MOVED = {"adaptive": drafters.adaptive, "baseline": drafters.plain, "recycling": drafters.recycling,
         "suffix_automaton": drafters.suffix_automaton, "unfold": drafters.unfold, "voting": drafters.voting,
         "automaton": indexes.automaton, "automaton_kernels": indexes.automaton_kernels,
         "buffer": indexes.buffer, "history": indexes.history, "first_token": acceptance.first_token,
         "later_nodes": acceptance.later_nodes, "policy": acceptance}
for _old, _module in MOVED.items():
    _sys.modules.setdefault(f"{__name__}.{_old}", _module)
    globals().setdefault(_old, _module)

__all__ = [
    "DEFAULT_DRAFTER",
    "Draft",
    "Drafter",
    "EMPTY_DRAFT",
    "PLDError",
    "UnknownDrafterError",
    "available",
    "builtin_names",
    "canonical",
    "create",
    "get",
    "register",
    "trusted_names",
    "unknown_name",
]
