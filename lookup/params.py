"""Checks of drafter constructor parameters that Python's duck typing would let through."""

from __future__ import annotations

import numpy as np


def require_bool(name: str, value: object) -> bool:
    """``value`` as a bool, or a TypeError naming the parameter.

    Only True and False (numpy's included) pass: a string such as ``"false"`` or ``"yes"`` is
    truthy, and accepting it would silently switch the option on.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")
