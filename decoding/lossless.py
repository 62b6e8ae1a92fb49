"""Compare an output with a reference, and tell a bug from float noise.

Two greedy runs can legitimately part ways where the target's top-2 logits are within
float error of each other (a different kernel order changes the last bits). A difference
where the margin is large is a bug.

Two sampled runs with one seed (our sampler: a uniform per output position, :mod:`decoding.sampling`)
commit the same tokens with any deterministic drafter, up to the same last bits: at a position whose
uniform lies within float error of an edge of its token's interval of the CDF, a one-token forward
and a wider one can pick neighbouring ids. There the margin is the uniform's distance to that edge, in
probability mass; again, a difference at a large margin is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch

if TYPE_CHECKING:
    from decoding.model_target import ModelTarget
    from pldcore.setting import Regime

#: a first difference at a top-2 logit margin above this is a bug, not numerics
NUMERIC_MARGIN = 1e-3
#: a first difference of two sampled runs whose uniform lies further than this (probability mass)
#: from an edge of its token's CDF interval is a bug. The CDF sums the whole vocabulary's
#: probabilities: logits that move by 1e-5 between two kernels move an edge by up to ~1e-5
SAMPLING_MARGIN = 1e-4


@dataclass(frozen=True)
class Mismatch:
    position: int  # index into the generated tokens of the first difference
    ours: int | None  # our token there (None: our output ended)
    reference: int | None
    #: greedy: the target's top-1 minus top-2 logit there; sampled: the distance of the position's
    #: uniform (times the CDF's total) to the nearest edge of the reference token's interval
    margin: float
    sampled: bool = False

    @property
    def is_numeric(self) -> bool:
        return self.margin <= (SAMPLING_MARGIN if self.sampled else NUMERIC_MARGIN)

    def __str__(self) -> str:
        kind = "float noise" if self.is_numeric else "BUG"
        what = "sampling boundary margin" if self.sampled else "top-2 logit margin"
        return (
            f"first difference at token {self.position}: ours {self.ours}, reference {self.reference}; "
            f"{what} {self.margin:.2e} ({kind})"
        )


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where ``a`` and ``b`` differ (a length difference counts)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@torch.inference_mode()
def top2_margin(target: ModelTarget, context: Sequence[int]) -> float:
    """The target's top-1 minus top-2 logit for the token after ``context`` (one full forward)."""
    ids = torch.tensor([list(context)], device=target.device)
    logits = target.model(input_ids=ids).logits[0, -1].float()
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


@torch.inference_mode()
def sampling_margin(target: ModelTarget, context: Sequence[int], position: int, regime: Regime, seed: int) -> float:
    """How close the sample at output ``position`` (after ``context``, one full forward) came to picking
    another token: the distance, in probability mass, from the position's uniform (of ``seed``'s
    stream, :class:`decoding.sampling.UniformStream`) to the nearest edge of the picked token's interval."""
    from decoding.sampling import SAMPLE, UniformStream, process_logits  # sampling only

    ids = torch.tensor([list(context)], device=target.device)
    logits = target.model(input_ids=ids).logits[0, -1:].float()  # [1, V]
    probs = process_logits(logits, regime.temperature, regime.top_k, regime.top_p)[0]  # [V]
    cdf = probs.cumsum(dim=-1, dtype=torch.float64)
    u = float(UniformStream(seed, target.device).take(position, 1)[0, SAMPLE])
    x = u * float(cdf[-1])
    j = int(torch.searchsorted(cdf, torch.tensor([x], dtype=torch.float64, device=cdf.device), right=True)[0])
    low = float(cdf[j - 1]) if j > 0 else 0.0
    return min(x - low, float(cdf[min(j, len(cdf) - 1)]) - x)


def compare_outputs(
    target: ModelTarget, prompt: Sequence[int], ours: Sequence[int], reference: Sequence[int],
    regime: Regime | None = None, seed: int | None = None,
) -> Mismatch | None:
    """None when identical; else where they first differ and the target's margin there: the top-2 logit
    margin for greedy runs, the sampling boundary margin (:func:`sampling_margin`) for runs sampled in
    ``regime`` with ``seed``."""
    pos = first_difference(ours, reference)
    if pos is None:
        return None
    context = [*prompt, *reference[:pos]]
    sampled = regime is not None and not regime.greedy
    if sampled and seed is None:
        raise ValueError("a sampled comparison needs the seed both runs were sampled with")
    margin = sampling_margin(target, context, pos, regime, seed) if sampled else top2_margin(target, context)
    pick = lambda seq: int(seq[pos]) if pos < len(seq) else None  # noqa: E731
    return Mismatch(pos, pick(ours), pick(reference), margin, sampled=sampled)
