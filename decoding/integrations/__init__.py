"""Our loop and drafters where people decode: transformers' ``generate()`` (:mod:`.hf`) and vLLM
(:mod:`.vllm`, with :mod:`.vllm_sampling`).

Each adapter imports the engine it adapts; importing this package imports none of them. The
adapters are attributes all the same, imported on first use (PEP 562): after ``import decoding``,
``decoding.integrations.hf.generate`` imports transformers' adapter then, and only then.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: the adapter modules, importable as attributes of this package
ADAPTERS = ("drafters", "hf", "vllm", "vllm_sampling")
__all__ = list(ADAPTERS)


def __getattr__(name: str) -> ModuleType:
    if name not in ADAPTERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")  # the import binds it as an attribute too


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
