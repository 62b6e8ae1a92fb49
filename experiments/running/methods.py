"""The things compare.py runs side by side: our loop with a drafter, and transformers' references.

A method is named by a spec string: a drafter name with optional parameters
(``suffix-automaton:min_match=2:max_tokens=8``), or ``hf-greedy`` / ``hf-lookup``.
"""

from __future__ import annotations

import abc
import ast
import inspect
import contextlib
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch

import decoding
import lookup
from decoding.reference import hf_generate
from experiments.cli import split_top_level
from lookup.errors import PLDError


@dataclass
class Sampling:
    """Decoding settings shared by every method in a comparison. temperature 0 = greedy."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def hf_kwargs(self) -> dict:
        if self.greedy:
            return {}
        return dict(do_sample=True, temperature=self.temperature, top_k=self.top_k or None, top_p=self.top_p)


@dataclass
class Run:
    """One method on one prompt."""

    tokens: list[int]
    wall_s: float
    forwards: int
    drafted: int = 0
    accepted: int = 0
    drafter_s: float = 0.0
    forward_s: float = 0.0
    accepted_lengths: list[int] = field(default_factory=list)  # per step
    contexts: list[int] = field(default_factory=list)  # context length per step
    drafted_lengths: list[int] = field(default_factory=list)  # per step
    steps: list = field(default_factory=list)  # decoding.StepRecord per step (our loop only)
    top_rows: int = 0  # top ids per token the drafter read from the target (0: none)

    @property
    def new_tokens(self) -> int:
        return len(self.tokens)

    @property
    def tau(self) -> float:
        return self.new_tokens / self.forwards if self.forwards else 0.0


class Method(abc.ABC):
    """Something that generates: ``run(target, prompt_ids, max_new_tokens, sampling) -> Run``."""

    spec: str

    @abc.abstractmethod
    def run(self, target, prompt_ids: Sequence[int], max_new_tokens: int, sampling: Sampling, profile=None) -> Run:
        """Generate once and measure it."""

    def params(self) -> dict:
        return {}


@contextlib.contextmanager
def count_forwards(model) -> Iterator[list[int]]:
    """Count the model's forward calls (transformers does not report them)."""
    calls = [0]
    handle = model.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        yield calls
    finally:
        handle.remove()


class HFMethod(Method):
    """transformers' ``generate``: greedy/sampling, or its prompt lookup with (10 tokens, n-gram 3)."""

    def __init__(self, spec: str, lookup_tokens: int | None = None, ngram: int | None = None) -> None:
        self.spec, self.lookup_tokens, self.ngram = spec, lookup_tokens, ngram

    def run(self, target, prompt_ids, max_new_tokens, sampling, profile=None):
        torch.manual_seed(sampling.seed)
        with count_forwards(target.model) as calls:
            ref = hf_generate(target, prompt_ids, max_new_tokens, self.lookup_tokens, self.ngram, **sampling.hf_kwargs())
        return Run(tokens=ref.tokens, wall_s=ref.wall_s, forwards=calls[0])

    def params(self) -> dict:
        return {"prompt_lookup_num_tokens": self.lookup_tokens, "max_matching_ngram_size": self.ngram}


class DrafterMethod(Method):
    """Our loop with a registered drafter."""

    def __init__(self, spec: str, name: str, params: dict) -> None:
        self.spec, self.name, self._params = spec, name, params
        lookup.create(name, **params)  # fail now, not halfway through a run

    def make(self, target, profile=None) -> lookup.Drafter:
        """A fresh drafter; cost-aware ones (a ``profile`` parameter) get the target's cost profile."""
        params = dict(self._params)
        if profile is not None and "profile" not in params and "profile" in inspect.signature(lookup.get(self.name)).parameters:
            params["profile"] = profile
        return lookup.create(self.name, **params)

    def run(self, target, prompt_ids, max_new_tokens, sampling, profile=None):
        out = decoding.generate(
            target, prompt_ids, self.make(target, profile), max_new_tokens,
            temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p, seed=sampling.seed,
        )
        s = out.stats
        return Run(
            tokens=out.tokens, wall_s=s.wall_s, forwards=s.forwards, drafted=s.drafted, accepted=s.accepted,
            drafter_s=s.drafter_s, forward_s=s.forward_s,
            accepted_lengths=[r.accepted for r in s.steps], contexts=[r.context for r in s.steps],
            drafted_lengths=[r.drafted for r in s.steps], steps=s.steps, top_rows=s.top_rows,
        )

    def params(self) -> dict:
        return {"drafter": self.name, **self._params}


REFERENCES = {
    "hf-greedy": lambda: HFMethod("hf-greedy"),
    "hf-lookup": lambda: HFMethod("hf-lookup", lookup_tokens=10, ngram=3),
}


def parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_method(spec: str) -> Method:
    """``"name:key=value:key=value"`` -> a Method. Unknown names list the close ones.

    Values are Python literals and may hold colons inside brackets or quotes:
    ``adaptive:base='voting':base_params={'tree':True}``.
    """
    name, *pairs = split_top_level(spec, ":")
    if name in REFERENCES:
        if pairs:
            raise PLDError(f"{name} takes no parameters")
        return REFERENCES[name]()
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PLDError(f"bad parameter {pair!r} in {spec!r}: write name:key=value")
        params[key] = parse_value(value)
    try:
        return DrafterMethod(spec, name, params)
    except lookup.UnknownDrafterError as exc:
        raise PLDError(f"{exc}; references: {', '.join(REFERENCES)}") from None
    except (TypeError, ValueError) as exc:
        raise PLDError(f"{spec}: {exc}") from None
