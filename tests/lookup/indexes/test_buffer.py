"""TokenBuffer: appends by doubling, read as a view, against a plain list."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from lookup.indexes.buffer import TokenBuffer


@given(chunks=st.lists(st.lists(st.integers(0, 1 << 20), max_size=40), max_size=30), clear_at=st.integers(-1, 30))
def test_the_view_is_what_was_appended(chunks, clear_at):
    flat = TokenBuffer(lambda c: np.zeros(c, dtype=np.int64), capacity=4)
    row = TokenBuffer(lambda c: torch.zeros(1, c, dtype=torch.long), capacity=4,
                      convert=lambda t: torch.as_tensor(np.asarray(t, dtype=np.int64)))
    expected: list[int] = []
    for i, chunk in enumerate(chunks):
        if i == clear_at:
            flat.clear(), row.clear()
            expected = []
        flat.extend(chunk)
        row.extend(chunk)
        expected += chunk
        assert flat.view().tolist() == expected and flat.length == len(expected)
        assert row.view().shape == (1, len(expected)) and row.view()[0].tolist() == expected
