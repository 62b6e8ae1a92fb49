"""The things compare.py runs side by side: our loop with a drafter, and transformers' references.

A method is named by a spec string: a drafter name with optional parameters
(``suffix-automaton:min_match=2:max_tokens=8``), or ``hf-greedy`` / ``hf-lookup``.
"""

from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

import decoding
import lookup
from decoding.generate import GenerationResult, Stats
from decoding.reference import hf_generate
from lookup.specs import DrafterSpec, parse_drafter, parse_spec
from pldcore.errors import PLDError
from pldcore.setting import Regime, Setting


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

    @property
    def regime(self) -> Regime:
        """The decoding regime (without the seed): what a drafter's setting holds."""
        return Regime(self.temperature, self.top_k, self.top_p)

    def hf_kwargs(self) -> dict:
        if self.greedy:
            return {}
        return dict(do_sample=True, temperature=self.temperature, top_k=self.top_k or None, top_p=self.top_p)


class Method(abc.ABC):
    """Something that generates: ``run(target, prompt_ids, max_new_tokens, sampling) -> GenerationResult``
    (``experiments.running.rows.case_result`` turns it into a row)."""

    spec: str

    @abc.abstractmethod
    def run(self, target, prompt_ids: Sequence[int], max_new_tokens: int, sampling: Sampling,
            setting: Setting) -> GenerationResult:
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

    def run(self, target, prompt_ids, max_new_tokens, sampling, setting: Setting) -> GenerationResult:
        """transformers' run: its tokens, wall time and forward count (it reports no drafter time,
        no forward time and no per-step records: those stay zero and empty)."""
        torch.manual_seed(sampling.seed)
        with count_forwards(target.model) as calls:
            ref = hf_generate(target, prompt_ids, max_new_tokens, self.lookup_tokens, self.ngram, **sampling.hf_kwargs())
        stopped = "eos" if ref.tokens and ref.tokens[-1] in target.eos_token_ids else "length"
        return GenerationResult(tokens=ref.tokens, stats=Stats(new_tokens=len(ref.tokens), forwards=calls[0],
                                                               wall_s=ref.wall_s),
                                stop_reason=stopped, seed=None if sampling.greedy else sampling.seed)

    def params(self) -> dict:
        return {"prompt_lookup_num_tokens": self.lookup_tokens, "max_matching_ngram_size": self.ngram}


class DrafterMethod(Method):
    """Our loop with a drafter, from its spec parsed once (:class:`lookup.specs.DrafterSpec`)."""

    def __init__(self, spec: DrafterSpec) -> None:
        self.drafter_spec = spec
        self.spec, self.name, self._params = spec.text, spec.name, dict(spec.params)

    def drafter_class(self) -> type[lookup.Drafter]:
        return self.drafter_spec.cls

    def make(self, setting: Setting) -> lookup.Drafter:
        """A fresh drafter for ``setting`` (:meth:`lookup.specs.DrafterSpec.build`)."""
        return self.drafter_spec.build(setting)

    def run(self, target, prompt_ids, max_new_tokens, sampling, setting: Setting,
            drafter: lookup.Drafter | None = None) -> GenerationResult:
        """Generate once with ``drafter`` (the one serving this request:
        :mod:`experiments.running.serving`), or a fresh one built for ``setting``."""
        return decoding.generate(
            target, prompt_ids, drafter or self.make(setting), max_new_tokens,
            temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p, seed=sampling.seed,
        )

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
        return DrafterMethod(parse_drafter(spec))
    except lookup.UnknownDrafterError as exc:
        raise PLDError(f"{exc}; references: {', '.join(REFERENCES)}") from None
