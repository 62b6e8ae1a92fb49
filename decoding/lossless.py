"""Compare an output with a reference, and tell a bug from float noise.

Two greedy runs can legitimately part ways where the target's top-2 logits are within
float error of each other (a different kernel order changes the last bits). A difference
where the margin is large is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch

if TYPE_CHECKING:
    from decoding.model_target import ModelTarget

#: a first difference at a top-2 logit margin above this is a bug, not numerics
NUMERIC_MARGIN = 1e-3


@dataclass(frozen=True)
class Mismatch:
    position: int  # index into the generated tokens of the first difference
    ours: int | None  # our token there (None: our output ended)
    reference: int | None
    margin: float  # the target's top-1 minus top-2 logit at that position

    @property
    def is_numeric(self) -> bool:
        return self.margin <= NUMERIC_MARGIN

    def __str__(self) -> str:
        kind = "float noise" if self.is_numeric else "BUG"
        return (
            f"first difference at token {self.position}: ours {self.ours}, reference {self.reference}; "
            f"top-2 logit margin {self.margin:.2e} ({kind})"
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


def compare_outputs(
    target: ModelTarget, prompt: Sequence[int], ours: Sequence[int], reference: Sequence[int]
) -> Mismatch | None:
    """None when identical; else where they first differ and the target's margin there."""
    pos = first_difference(ours, reference)
    if pos is None:
        return None
    margin = top2_margin(target, [*prompt, *reference[:pos]])
    pick = lambda seq: int(seq[pos]) if pos < len(seq) else None  # noqa: E731
    return Mismatch(pos, pick(ours), pick(reference), margin)
