"""What the decoding loop needs from a target: score a draft in one forward, keep what was accepted.

Two implementations share this interface: :class:`decoding.model_target.ModelTarget` (a real
transformers model with a KV cache) and a trace target that answers from a recorded greedy
run. Because the loop is the same, a drafter's greedy acceptance on a trace is exactly what it
gets live.

Chains go through :meth:`Target.score` and :meth:`Target.keep`; token trees (see
:mod:`decoding.tree`) through :meth:`Target.score_tree` and :meth:`Target.keep_path`, which a
target implements when it can verify trees.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from lookup.base import MAX_TOP  # noqa: F401  (re-exported: the loop's limit)
from pldcore.errors import PLDError


@dataclass
class Scores:
    """The target's verdict on ``[last committed token] + draft``.

    Row ``i`` is the target's prediction for the token that follows input ``i`` (for a tree:
    given input ``i`` and its ancestors).
    """

    argmax: np.ndarray  # [n] int64, greedy next token per input position
    logits: torch.Tensor | None = None  # [n, V] float, None for targets that only know argmax
    seconds: float = 0.0  # wall time of the forward (synchronised on CUDA)


@dataclass(frozen=True)
class TopRows:
    """The target's ``k`` most likely next ids after each of ``n`` tokens, with their probabilities."""

    ids: np.ndarray  # [n, k] int64, most likely first
    probs: np.ndarray  # [n, k] float16: softmax of the raw logits (temperature 1), rounded to float16

    def __len__(self) -> int:
        return len(self.ids)

    def narrow(self, k: int) -> "TopRows":
        """The first ``k`` columns."""
        return TopRows(self.ids[:, :k], self.probs[:, :k])

    @staticmethod
    def joined(parts: Sequence[TopRows]) -> TopRows:
        """``parts``' rows one after another."""
        return TopRows(np.concatenate([p.ids for p in parts]), np.concatenate([p.probs for p in parts]))


def top_rows(logits: torch.Tensor, k: int) -> TopRows:
    """The ``k`` most likely ids per row of ``logits`` [n, V] and their probabilities.

    Probabilities are rounded to float16 here, so a live target hands a drafter the same numbers
    a recorded trace (which stores float16) hands it in replay.
    """
    probs, ids = torch.softmax(logits.float(), dim=-1).topk(min(k, logits.shape[-1]), dim=-1)
    return TopRows(ids.cpu().numpy().astype(np.int64), probs.cpu().numpy().astype(np.float16))


class Target(abc.ABC):
    """A model (or a stand-in) that verifies drafts."""

    vocab_size: int
    eos_token_ids: frozenset[int]
    device: torch.device
    #: longest sequence (prompt + generated) the target can handle; None = unbounded
    max_length: int | None = None

    @abc.abstractmethod
    def start(self, prompt_ids: Sequence[int], top_k: int = 0) -> TopRows | None:
        """Begin a sequence: put every prompt token but the last into the cache.

        With ``top_k > 0``, return the ``top_k`` most likely next ids after each of those tokens
        (``P - 1`` rows), or None when the target cannot tell.
        """

    @abc.abstractmethod
    def score(self, tokens: np.ndarray) -> Scores:
        """One forward over ``tokens`` ([n] int64: the last committed token, then the draft)."""

    @abc.abstractmethod
    def keep(self, n: int) -> None:
        """After :meth:`score`, keep only its first ``n`` inputs in the cache (the accepted path)."""

    def committed_top(self, scores: Scores, rows: np.ndarray, k: int) -> TopRows | None:
        """After :meth:`keep`/:meth:`keep_path`: the top-``k`` rows of the last forward at the inputs
        ``rows`` (the committed ones: the last committed token and the accepted draft nodes, whose
        next token the step committed). None when the target cannot tell."""
        return None if scores.logits is None else top_rows(scores.logits[rows], k)

    def score_tree(self, tokens: np.ndarray, parents: np.ndarray) -> Scores:
        """One forward over a token tree: ``tokens`` [n+1] as in :meth:`score`, ``parents`` [n] the
        draft's parents (-1 = input 0). Row ``i`` sees the context, input ``i`` and its ancestors only."""
        raise PLDError(f"{type(self).__name__} cannot verify token trees; use a drafter that proposes chains")

    def keep_path(self, inputs: np.ndarray) -> None:
        """After :meth:`score_tree`, keep only ``inputs`` ([a+1] increasing, ``inputs[0] == 0``: the
        accepted root-to-node path) in the cache, in that order. The default handles a path that is
        a prefix of the inputs."""
        inputs = np.asarray(inputs)
        if not np.array_equal(inputs, np.arange(len(inputs))):
            raise PLDError(f"{type(self).__name__} cannot keep a tree path; use a drafter that proposes chains")
        self.keep(len(inputs))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (needed for stop strings); targets without a tokenizer raise."""
        raise PLDError(f"{type(self).__name__} has no tokenizer; stop strings need one")

    def vocab(self) -> Sequence[str] | None:
        """Each id's text alone (:func:`decoding.vocab.vocab_strings`), for a drafter that asks for
        the vocabulary's strings; None (the default) for a target without a tokenizer."""
        return None
