"""IdMap and its kernels against a dict."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.indexes.id_map import EMPTY, MAX_LOAD, IdMap, hash_find, id_get, id_put, shift_of

keys_ = st.integers(0, 300_000)


@given(st.lists(st.tuples(keys_, st.integers(0, 1 << 40)), max_size=200), st.lists(keys_, max_size=50),
       st.sampled_from([2, 4, 256]))
def test_an_id_map_holds_what_a_dict_holds(puts, asked, size):
    m, want = IdMap(size), {}
    for key, value in puts:
        m.put(key, value)
        want[key] = value
    assert m.count == len(want)
    assert m.count <= len(m.table) * MAX_LOAD  # grown before it filled
    for key in [*want, *asked, -1, -7]:
        assert m.get(key, -5) == want.get(key, -5)
    assert sorted(int(k) for k in m.table[:, 0] if k != EMPTY) == sorted(want)


@given(st.lists(keys_, min_size=1, max_size=100))
def test_the_kernels_find_every_key_they_put(keys):
    m = IdMap()
    m.reserve(len(keys))
    new = [bool(id_put(m.table, k, i)) for i, k in enumerate(keys)]
    assert new == [k not in keys[:i] for i, k in enumerate(keys)]  # a key seen before is not new
    last = {k: i for i, k in enumerate(keys)}  # a later put replaces an earlier one
    assert all(id_get(m.table, k, -1) == i for k, i in last.items())
    shift = shift_of(m.table)
    assert 1 << (64 - shift) == len(m.table)
    assert all(hash_find(m.table, k, shift) >= 0 for k in keys)


def test_clear_forgets_and_bad_input_is_refused():
    m = IdMap(4)
    for key in range(10):
        m.put(key, key)
    m.clear()
    assert m.count == 0 and m.get(3) == -1
    with pytest.raises(ValueError, match="keys are >= 0"):
        m.put(-2, 1)
    with pytest.raises(ValueError, match="power of two"):
        IdMap(6)


def test_a_table_is_sized_by_the_ids_seen_not_by_the_largest():
    m = IdMap()
    for key in (3, 262_143, 150_000):
        m.put(key, 1)
    assert m.table.nbytes == 256 * 16  # an array indexed by id would be 262,144 long
    assert np.all(m.table[:, 0] >= EMPTY)
