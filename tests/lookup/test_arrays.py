"""Arrays for numba kernels (lookup/arrays.py): one compiled type whatever the caller passes."""

from __future__ import annotations

import numpy as np
import pytest

from lookup.acceptance.tokens import TokenRates, _offsets
from lookup.arrays import kernel_array


@pytest.mark.parametrize("make", [
    lambda a: a,
    lambda a: np.frombuffer(a.tobytes(), dtype=a.dtype),  # read-only
    lambda a: np.repeat(a, 2)[::2],  # strided
    lambda a: a.astype(np.int32),  # another dtype
    lambda a: a.tolist(),
])
def test_whatever_the_caller_passes_a_kernel_gets_one_type(make):
    base = np.array([3, 1, 2], dtype=np.int64)
    got = kernel_array(make(base), np.int64)
    assert got.dtype == np.int64 and got.flags.c_contiguous and got.flags.writeable
    assert got.tolist() == [3, 1, 2]
    assert kernel_array(base, np.int64) is base  # no copy where none is needed


def test_a_wrapper_compiles_no_second_kernel_for_a_read_only_or_strided_chain():
    rates = TokenRates()
    rates.learn(0, [1, 2, 3], 3, 2)
    rates.offsets(0, np.array([1, 2], dtype=np.int64))
    before = len(_offsets.signatures)
    rates.offsets(0, np.frombuffer(np.array([1, 2], dtype=np.int64).tobytes(), dtype=np.int64))
    rates.offsets(0, np.arange(6, dtype=np.int64)[::2])
    assert len(_offsets.signatures) == before
