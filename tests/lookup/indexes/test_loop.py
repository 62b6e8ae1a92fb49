"""The overlapping copy (a continuation round a loop) against a text that grows by what it copies."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lookup.indexes.loop import looped_token, overlapping_copy


def naive_copy(sequence: list[int], start: int, n: int) -> list[int]:
    """Append ``text[start + i]`` to the text ``n`` times (LZ77's copy, source and destination
    overlapping); what was appended is the copy."""
    text = list(sequence)
    for i in range(n):
        text.append(text[start + i])
    return text[len(sequence):]


@given(sequence=st.lists(st.integers(0, 5), min_size=1, max_size=30), data=st.data(), n=st.integers(0, 40))
def test_the_copy_is_the_text_grown_by_copying(sequence, data, n):
    start = data.draw(st.integers(0, len(sequence) - 1))
    tokens = np.asarray(sequence + [99] * 7, dtype=np.int32)  # capacity past the text: never read
    out = np.full(max(n, 1), -1, dtype=np.int64)
    assert overlapping_copy(tokens, len(sequence), start, n, out) == n
    assert out[:n].tolist() == naive_copy(sequence, start, n)
    # within the text it is a plain slice
    inside = min(n, len(sequence) - start)
    assert out[:inside].tolist() == sequence[start : start + inside]


def test_a_loop_goes_round_with_its_period():
    seq = [7, 1, 2, 3, 1, 2, 3, 1]  # the suffix "1" matched at position 4: period 3 ("2 3 1")
    out = np.zeros(8, dtype=np.int64)
    overlapping_copy(np.asarray(seq, dtype=np.int64), len(seq), 5, 8, out)
    assert out.tolist() == [2, 3, 1, 2, 3, 1, 2, 3]


def test_nothing_to_copy_gives_nothing():
    tokens = np.asarray([1, 2, 3], dtype=np.int64)
    out = np.zeros(4, dtype=np.int64)
    assert overlapping_copy(tokens, 3, 3, 4, out) == 0  # starts at the end: no period
    assert overlapping_copy(tokens, 3, 0, 0, out) == 0


def test_looped_token_reads_the_draft_past_the_text():
    tokens = np.asarray([4, 5, 0, 0], dtype=np.int64)
    draft = np.asarray([6, 7], dtype=np.int64)
    assert [looped_token(tokens, 2, draft, i) for i in range(4)] == [4, 5, 6, 7]
