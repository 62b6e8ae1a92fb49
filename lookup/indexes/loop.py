"""The continuation of an earlier occurrence that goes on round a loop: an overlapping copy.

An earlier occurrence ending at ``end`` in a sequence of ``n_tokens`` tokens is followed by
``n_tokens - 1 - end`` tokens before the text runs out. When the context's suffix matches there,
the text from ``end + 1`` to the end is one period ``p = n_tokens - 1 - end`` of a loop the
output may be in (Gemma's outputs often are: the same line of code, the same sentence, again
and again). A draft that stops at the end of the text drafts at most one period; going on with
the same period, as an LZ77 copy whose source overlaps its destination (llama.cpp's lookup does
the same by looking up its own draft), drafts the loop as far as the draft wants:

    x = sequence + draft;  draft[i] = x[end + 1 + i]

so the tokens past the end of the text are the draft's own, ``p`` places back.
"""

from __future__ import annotations

import numpy as np

from lookup.kernel_cache import kernel


@kernel
def looped_token(tokens: np.ndarray, n_tokens: int, draft: np.ndarray, pos: int) -> int:
    """Token ``pos`` of the sequence ``tokens[:n_tokens]`` followed by ``draft`` (the draft being
    built, read only where ``pos - n_tokens`` is already written: the caller's invariant)."""
    return tokens[pos] if pos < n_tokens else draft[pos - n_tokens]


@kernel
def overlapping_copy(tokens: np.ndarray, n_tokens: int, start: int, n: int, out: np.ndarray) -> int:
    """Write into ``out[:n]`` the ``n`` tokens that follow from ``start`` in ``tokens[:n_tokens]``
    and, past its end, the copy's own tokens ``n_tokens - start`` places back (the loop's period).

    ``start`` < ``n_tokens`` (at least one real token to copy: an occurrence before the current
    position); ``out``: [>= n]. Returns ``n`` (0 when ``n <= 0`` or ``start`` is out of range).
    """
    if n <= 0 or start < 0 or start >= n_tokens:
        return 0
    for i in range(n):
        out[i] = looped_token(tokens, n_tokens, out, start + i)
    return n
