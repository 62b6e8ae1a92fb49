"""Targets, acceptance rules, the speculative loop, model loading and cost profiles.

``import decoding`` stays light: it loads the loop (numpy, torch, ``lookup.base``) but not
transformers. Names that need transformers (:class:`ModelTarget`, :func:`load_model`) and the
loading helpers are imported on first use (PEP 562), so ``decoding.load_model(...)`` and
``from decoding import ModelTarget`` work as if they were imported here. So is the subpackage
:mod:`decoding.integrations`: ``decoding.integrations.hf.generate`` works after ``import decoding``
and costs nothing until it is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported now, not lazily: ``generate`` is also the name of the submodule, and importing the
# submodule binds ``decoding.generate`` to the module unless this line rebinds it to the function.
from decoding.generate import GenerationResult, Stats, StepRecord, generate
from decoding.target import Scores, Target

if TYPE_CHECKING:  # for type checkers and IDEs; at run time these come from __getattr__
    from decoding.devices import default_device
    from decoding.loading import cache_dir, load_model
    from decoding.model_target import ModelTarget

#: lazily imported name -> the module that defines it
_LAZY = {
    "ModelTarget": "decoding.model_target",
    "cache_dir": "decoding.loading",
    "default_device": "decoding.devices",
    "load_model": "decoding.loading",
}
#: subpackages bound as attributes on first use (each imports what it adapts only when used itself)
_LAZY_SUBPACKAGES = ("integrations",)

__all__ = [
    "GenerationResult",
    "ModelTarget",
    "Scores",
    "Stats",
    "StepRecord",
    "Target",
    "cache_dir",
    "default_device",
    "generate",
    "integrations",
    "load_model",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # the import binds it here too
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
