"""Arrays as numba kernels are compiled for.

A kernel (``@njit``) is compiled once per type of its arguments, and an array's type includes its
layout and whether it is writable: a strided view or a read-only buffer (``np.frombuffer``) makes
the kernel compile again, inside the call that passes it (docs/notes/2026-12-07-drafter-time.md:
far longer than a step's drafting). Wrappers pass their arrays through :func:`kernel_array`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike


def kernel_array(values: ArrayLike, dtype: DTypeLike) -> np.ndarray:
    """``values`` as a C-contiguous, writable array of ``dtype``: itself where it is one already, else
    a copy."""
    array = np.asarray(values, dtype=dtype)
    if not (array.flags.c_contiguous and array.flags.writeable):
        array = np.array(array, dtype=dtype, order="C")
    return array
