"""The recycling drafter's per-step kernels (lookup/drafters/recycling_steps.py) against brute force:
the Python each of them replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lookup.drafters.recycling_steps import remember_rows, score_rows, walk
from lookup.indexes.id_map import IdMap

tokens_ = st.integers(0, 9)


@st.composite
def trees(draw) -> tuple[np.ndarray, np.ndarray]:
    """A draft tree: [n] parents (each -1 or an earlier node) and [n] tokens."""
    n = draw(st.integers(0, 12))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    return np.array(parents, dtype=np.int32), np.array(draw(st.lists(tokens_, min_size=n, max_size=n)), dtype=np.int64)


@given(trees(), st.lists(tokens_, max_size=10), st.integers(1, 4))
def test_walk_follows_the_committed_tokens_down_the_tree(tree, committed, max_siblings):
    parents, drafted = tree
    firsts, trials, hits = np.zeros(len(committed)), np.zeros(max_siblings), np.zeros(max_siblings)
    depths = walk(parents, drafted, np.array(committed, dtype=np.int64), firsts, trials, hits, max_siblings)
    # the reference: children by node, in order; at each level the first child holding the token
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(parents.tolist()):
        kids.setdefault(p, []).append(i)
    want_firsts, want_trials, want_hits = [], np.zeros(max_siblings), np.zeros(max_siblings)
    node = -1
    for token in committed:
        below = kids.get(node)
        if not below:
            break
        hit = next((r for r, child in enumerate(below) if drafted[child] == token), None)
        want_firsts.append(float(hit == 0))
        if len(below) > 1:
            want_trials[: min(len(below), max_siblings + 1) - 1] += 1
        if hit is None:
            break
        if hit > 0:
            want_hits[min(hit, max_siblings) - 1] += 1
        node = below[hit]
    assert firsts[:depths].tolist() == want_firsts
    assert trials.tolist() == want_trials.tolist() and hits.tolist() == want_hits.tolist()


@given(st.lists(st.tuples(tokens_, st.lists(tokens_, min_size=3, max_size=3)), min_size=1, max_size=15),
       st.integers(1, 3))
def test_rows_keep_the_latest_top_ids_after_each_token(steps, width):
    slot, rows, n_rows = IdMap(4), np.full((len(steps), 3), -1, dtype=np.int64), 0
    table: dict[int, list[int]] = {}
    for chunk in (steps[: len(steps) // 2], steps[len(steps) // 2:]):  # two calls, as steps bring them
        tokens = np.array([t for t, _ in chunk], dtype=np.int64)
        top = np.array([ids[:width] for _, ids in chunk], dtype=np.int64).reshape(len(chunk), width)
        slot.reserve(len(tokens))
        n_rows = slot.count = remember_rows(tokens, top, slot.table, rows, n_rows)
        for t, ids in chunk:
            table[t] = ids[:width] + table.get(t, [-1, -1, -1])[width:]
    assert n_rows == len(table)
    assert {t: rows[slot.get(t)].tolist() for t in range(10) if slot.get(t) >= 0} == table


@given(st.dictionaries(tokens_, st.lists(tokens_, min_size=4, max_size=4, unique=True)), st.integers(-1, 9),
       st.lists(tokens_, max_size=10))
def test_each_committed_token_scores_the_row_before_it(table, last, committed):
    slot, rows = IdMap(2), np.full((max(len(table), 1), 4), -1, dtype=np.int64)
    for i, (t, ids) in enumerate(table.items()):
        if t < 8:  # tokens 8 and 9 are given no row
            slot.put(t, i)
            rows[i] = ids
    hits = np.zeros(4)
    known = score_rows(last, np.array(committed, dtype=np.int64), slot.table, rows, hits)
    want_known, want_hits = 0, np.zeros(4)
    for before, token in zip([last, *committed[:-1]], committed):
        ids = table.get(before) if 0 <= before < 8 else None
        if ids is None:
            continue
        want_known += 1
        if token in ids:
            want_hits[ids.index(token)] += 1
    assert known == want_known and hits.tolist() == want_hits.tolist()
