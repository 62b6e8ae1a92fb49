"""The things compare.py runs side by side: our loop with a drafter, and transformers' references.

A method is named by a spec string: a drafter name with optional parameters
(``suffix-automaton:min_match=2:max_tokens=8``), or ``hf-greedy`` / ``hf-lookup``.
"""

from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch

import decoding
import lookup
from decoding.generate import GenerationResult, StepRecord
from decoding.reference import hf_generate
from lookup.cost import CostProfile
from lookup.errors import PLDError
from lookup.specs import parse_spec


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
    """One method on one prompt, as measured; ``experiments.running.rows`` turns it into a row."""

    tokens: list[int]
    wall_s: float
    forwards: int
    drafted: int = 0
    accepted: int = 0
    drafter_s: float = 0.0
    forward_s: float = 0.0
    steps: list[StepRecord] = field(default_factory=list)  # [forwards] per-step records (our loop only)
    top_rows: int = 0  # top ids per token the drafter read from the target (0: none)
    has_drafter: bool = False  # our loop with a drafter (transformers' references have none)

    @classmethod
    def of(cls, result: GenerationResult) -> "Run":
        """The run of our loop's ``result``."""
        s = result.stats
        return cls(tokens=result.tokens, wall_s=s.wall_s, forwards=s.forwards,
                   drafted=s.drafted, accepted=s.accepted, drafter_s=s.drafter_s, forward_s=s.forward_s,
                   steps=s.steps, top_rows=s.top_rows, has_drafter=True)

    @property
    def new_tokens(self) -> int:
        return len(self.tokens)


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

    def drafter_class(self) -> type[lookup.Drafter]:
        return lookup.get(self.name)

    def make(self, profile: CostProfile | None = None) -> lookup.Drafter:
        """A fresh drafter; cost-aware ones (``uses_profile``) get ``profile`` unless the spec sets one."""
        params = dict(self._params)
        if profile is not None and "profile" not in params and self.drafter_class().uses_profile:
            params["profile"] = profile
        return lookup.create(self.name, **params)

    def run(self, target, prompt_ids, max_new_tokens, sampling, profile=None, drafter: lookup.Drafter | None = None):
        """Generate once with a fresh drafter, or with ``drafter`` (one that serves a stream of requests)."""
        return Run.of(decoding.generate(
            target, prompt_ids, drafter or self.make(profile), max_new_tokens,
            temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p, seed=sampling.seed,
        ))

    def params(self) -> dict:
        return {"drafter": self.name, **self._params}


REFERENCES = {
    "hf-greedy": lambda: HFMethod("hf-greedy"),
    "hf-lookup": lambda: HFMethod("hf-lookup", lookup_tokens=10, ngram=3),
}


def parse_method(spec: str) -> Method:
    """``"name:key=value:key=value"`` -> a Method. Unknown names list the close ones.

    Values are Python literals and may hold colons inside brackets or quotes:
    ``adaptive:base='voting':base_params={'tree':True}``.
    """
    name, params = parse_spec(spec)
    if name in REFERENCES:
        if params:
            raise PLDError(f"{name} takes no parameters")
        return REFERENCES[name]()
    try:
        return DrafterMethod(spec, name, params)
    except lookup.UnknownDrafterError as exc:
        raise PLDError(f"{exc}; references: {', '.join(REFERENCES)}") from None
    except (TypeError, ValueError) as exc:
        raise PLDError(f"{spec}: {exc}") from None
