"""Check what a caller hands :func:`decoding.generate`, once per generation, before any forward.

Every check raises :class:`~pldcore.errors.PLDError` with one line that names the argument and
the value it got, so that a CLI prints it as ``error: ...`` instead of a traceback from deep in
torch. The loop's per-step checks of what a *drafter* returns live in :mod:`decoding.generate`.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np
import torch

from decoding.target import MAX_TOP, Target
from lookup.base import Drafter
from pldcore.errors import PLDError

#: token ids as callers hold them: [n] (or [1, n] for an array or tensor) integers
TokenIds = Union[Sequence[int], np.ndarray, torch.Tensor]


@dataclass(frozen=True)
class Request:
    """A generation request after the checks, in the types the loop uses."""

    prompt: list[int]  # [P] token ids, P >= 1, each in [0, vocab_size)
    max_new_tokens: int  # >= 1, cut to what the target's context window leaves after the prompt
    draft_budget: int  # >= 0
    temperature: float  # finite, >= 0 (0 = greedy)
    top_k: int  # >= 0 (0 = off)
    top_p: float  # in (0, 1] (1 = off)
    stop_strings: tuple[str, ...]  # non-empty strings
    eos: frozenset[int]  # ids that end the generation


def check_request(
    target: Any,
    prompt_ids: Any,
    drafter: Any,
    max_new_tokens: Any,
    draft_budget: Any,
    temperature: Any,
    top_k: Any,
    top_p: Any,
    stop_strings: Any,
    eos_token_ids: Any,
) -> Request:
    """All of :func:`decoding.generate`'s checks; returns the request in normal form."""
    if not isinstance(target, Target):
        raise PLDError(f"target must be a decoding.Target (e.g. decoding.load_model()), got {_kind(target)}")
    if not isinstance(drafter, Drafter):
        raise PLDError(f"drafter must be a lookup.base.Drafter (e.g. lookup.create('unfold')), got {_kind(drafter)}")
    wants = drafter.wants_top
    if isinstance(wants, bool) or not isinstance(wants, int) or not 0 <= wants <= MAX_TOP:
        raise PLDError(f"drafter {drafter.name!r} wants_top={wants!r}: it must be an int in [0, {MAX_TOP}] "
                       f"(the top-{MAX_TOP} rows are what traces hold)")
    vocab_size = getattr(target, "vocab_size", None)
    prompt = token_ids("prompt_ids", prompt_ids, vocab_size)
    if not prompt:
        raise PLDError("prompt_ids is empty: give at least one token")
    max_new_tokens = integer("max_new_tokens", max_new_tokens, minimum=1)
    draft_budget = integer("draft_budget", draft_budget, minimum=0)
    temperature, top_k, top_p = check_temperature(temperature), check_top_k(top_k), check_top_p(top_p)
    if temperature > 0 and getattr(target, "greedy_only", False):
        raise PLDError(f"{type(target).__name__} replays greedy runs only; use temperature 0, got {temperature!r}")
    stops = check_stop_strings(stop_strings)
    eos = target.eos_token_ids if eos_token_ids is None else token_ids("eos_token_ids", eos_token_ids, vocab_size)
    if target.max_length is not None:
        if len(prompt) >= target.max_length:
            raise PLDError(
                f"prompt_ids has {len(prompt)} tokens but the model's context window is {target.max_length}"
            )
        max_new_tokens = min(max_new_tokens, target.max_length - len(prompt))
    return Request(prompt, max_new_tokens, draft_budget, temperature, top_k, top_p, stops, frozenset(eos))


def token_ids(name: str, value: Any, vocab_size: int | None = None) -> list[int]:
    """Integer token ids from a list, a numpy array or a torch tensor ([n], or [1, n] as a
    tokenizer returns them); a single int is one id. Floats (even 3.0), bools and text are
    refused, as are ids < 0 or >= ``vocab_size`` (when given)."""
    if isinstance(value, (str, bytes)):
        raise PLDError(f"{name} must be token ids, got text {_short(value)}; tokenize it first")
    if isinstance(value, (torch.Tensor, np.ndarray)):
        ids = _array_ids(name, value)
    elif _is_int(value):
        ids = [operator.index(value)]
    elif isinstance(value, Iterable):
        ids = []
        for i, x in enumerate(value):
            if not _is_int(x):
                raise PLDError(f"{name} must hold integer token ids, got {_short(x)} at index {i}")
            ids.append(operator.index(x))
    else:
        raise PLDError(f"{name} must be a sequence of integer token ids, got {_kind(value)}")
    bad = [t for t in ids if t < 0 or (vocab_size is not None and t >= vocab_size)]
    if bad:
        where = f"[0, {vocab_size})" if vocab_size is not None else ">= 0"
        raise PLDError(f"{name} has ids outside the vocabulary {where}: {bad[:5]}")
    return ids


def _array_ids(name: str, value: torch.Tensor | np.ndarray) -> list[int]:
    """The ids of a tensor or array of shape [n] or [1, n] with an integer dtype."""
    if isinstance(value, torch.Tensor):
        integral = not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
        kind = f"a torch tensor of dtype {value.dtype}"
    else:
        if value.dtype == object:  # a ragged or mixed array: judge element by element
            return token_ids(name, value.tolist())
        integral = value.dtype.kind in "iu"
        kind = f"a numpy array of dtype {value.dtype}"
    if not integral:
        raise PLDError(f"{name} must hold integer token ids, got {kind}")
    if value.ndim == 2 and value.shape[0] == 1:  # one row of a batch, as tokenizers return it
        value = value[0]
    if value.ndim > 1:
        raise PLDError(f"{name} must be one sequence of ids ([n] or [1, n]), got shape {tuple(value.shape)}")
    return [int(t) for t in value.reshape(-1).tolist()]


def integer(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; floats (even 2.0), bools and None are refused."""
    if not _is_int(value) or operator.index(value) < minimum:
        raise PLDError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return operator.index(value)


def check_temperature(temperature: Any) -> float:
    """A finite number >= 0 (0 = greedy), as a float."""
    if not (_is_real(temperature) and math.isfinite(temperature) and temperature >= 0):
        raise PLDError(f"temperature must be a finite number >= 0 (0 = greedy), got {temperature!r}")
    return float(temperature)


def check_top_k(top_k: Any) -> int:
    """An integer >= 0 (0 = off)."""
    if not _is_int(top_k) or operator.index(top_k) < 0:
        raise PLDError(f"top_k must be an integer >= 0 (0 = off), got {top_k!r}")
    return operator.index(top_k)


def check_top_p(top_p: Any) -> float:
    """A number in (0, 1] (1 = off)."""
    if not (_is_real(top_p) and 0 < top_p <= 1):
        raise PLDError(f"top_p must be in (0, 1] (1 = off), got {top_p!r}")
    return float(top_p)


def check_stop_strings(stop_strings: Any) -> tuple[str, ...]:
    """A tuple of non-empty strings: one string is one stop string (never its characters); None = none."""
    if stop_strings is None:
        return ()
    if isinstance(stop_strings, str):
        stop_strings = (stop_strings,)
    elif not isinstance(stop_strings, Iterable):
        raise PLDError(f"stop_strings must be a string or a list of strings, got {_kind(stop_strings)}")
    stops = tuple(stop_strings)
    for s in stops:
        if not isinstance(s, str):
            raise PLDError(f"stop_strings must hold strings, got {_short(s)}")
        if not s:
            raise PLDError("stop_strings holds an empty string, which would stop after every token")
    return stops


def _is_int(x: Any) -> bool:
    """An integer that is not a bool: Python and numpy ints, one-element integer tensors."""
    if isinstance(x, (bool, np.bool_)):
        return False
    try:
        operator.index(x)
    except TypeError:
        return False
    return True


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))  # numpy floats included


def _kind(x: Any) -> str:
    """What ``x`` is, in a few words: ``None``, its type's name, or the class it is."""
    if x is None:
        return "None"
    if isinstance(x, type):
        return f"the class {x.__name__} (an instance is needed)"
    return type(x).__name__


def _short(x: Any) -> str:
    """``repr(x)`` cut to one short line, with its type when that is not obvious from the repr."""
    text = repr(x)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text if isinstance(x, (str, bytes, int, float)) else f"{text} ({type(x).__name__})"
