"""The lookup oracle: the definition, brute force, against the fast version."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.running.oracle import oracle_accepts
from toys import random_sequence


def brute_force_oracle(seq: list[int], start: int, cap: int) -> list[int]:
    """The definition, literally: max over earlier j with seq[j] == last of lcp(seq[j+1:], seq[L:])."""
    out, pos = [], start
    while pos < len(seq):
        best = 0
        for j in range(pos - 1):
            if seq[j] != seq[pos - 1]:
                continue
            run = 0
            while pos + run < len(seq) and seq[j + 1 + run] == seq[pos + run]:
                run += 1
            best = max(best, run)
        a = min(best, cap, len(seq) - pos - 1)
        out.append(a)
        pos += a + 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_oracle_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    seq = random_sequence(rng, 160, vocab=[3, 8, 40][seed % 3])
    for start, cap in [(20, 64), (60, 5), (1, 64), (159, 64)]:
        assert oracle_accepts(seq, start, cap).tolist() == brute_force_oracle(seq, start, cap)


def test_oracle_examples():
    # 5 6 5 | 6 5 6 5 6 5 6: after the last "5", the run that followed its first occurrence
    # (6 5 6 5 ...) overlaps the future, as a drafter copying its own draft would; the target adds 1
    assert oracle_accepts([5, 6, 5, 6, 5, 6, 5, 6, 5, 6], 3).tolist() == [6]
    assert oracle_accepts([5, 6, 7, 5, 6, 7, 5, 6, 7, 5], 3).tolist() == [0, 5]  # "7" had not occurred
    assert oracle_accepts([1, 2, 3, 4], 1).tolist() == [0, 0, 0]  # nothing repeats: one token a step
    assert oracle_accepts([1, 1, 1, 1, 1, 1], 2, cap=2).tolist() == [2, 0]  # the cap, then the last token
