"""Acceptance rules: how many draft tokens the target agrees with, and which token it adds.

Each rule is a small pure function, testable alone. Greedy is here; the sampling rules live in
:mod:`decoding.sampling`.
"""

from __future__ import annotations

import numpy as np


def accept_greedy(draft: np.ndarray, argmax: np.ndarray) -> tuple[int, int]:
    """Longest prefix of ``draft`` ([k]) equal to the target's argmax ([k+1]).

    Returns ``(accepted, next_token)``: the target's own token after the accepted prefix is
    the correction (on a mismatch) or the bonus (when the whole draft matched).
    """
    k = len(draft)
    mismatch = np.flatnonzero(draft != argmax[:k])
    accepted = int(mismatch[0]) if len(mismatch) else k
    return accepted, int(argmax[accepted])
