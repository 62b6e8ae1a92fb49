"""Drafters: propose continuations by looking them up in the token history.

The package by role: ``lookup.drafters`` (the strategies, one module each), ``lookup.indexes``
(what they look up in: the suffix automaton, the history across requests), ``lookup.acceptance``
(evidence, the acceptance model and the planner that ``adaptive`` is a thin drafter over) and
``lookup.peers`` (other systems' lookup functions, ported). The contract, the registry and spec
parsing stay at the top. Importing this package imports no drafter (and so no numba): the registry
imports a built-in's module when its name is first asked for (``lookup.registry.BUILTINS``).
"""

from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.registry import (DEFAULT_DRAFTER, UnknownDrafterError, available, builtin_names, canonical, create, get,
                             register, trusted_names)
from lookup.specs import DrafterSpec, parse_drafter
from pldcore.errors import PLDError
from pldcore.names import unknown_name

__all__ = [
    "DEFAULT_DRAFTER",
    "Draft",
    "Drafter",
    "DrafterSpec",
    "EMPTY_DRAFT",
    "PLDError",
    "UnknownDrafterError",
    "available",
    "builtin_names",
    "canonical",
    "create",
    "get",
    "parse_drafter",
    "register",
    "trusted_names",
    "unknown_name",
]
