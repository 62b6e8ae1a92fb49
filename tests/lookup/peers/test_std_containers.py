"""The two transcriptions of libstdc++ the ports rely on for ties, against libstdc++ itself."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.peers.std_heap import StdPriorityQueue
from lookup.peers.std_int_map import StdIntMap
from peer_originals import run_batch


def test_unordered_map_order_equals_libstdcxx(original_binary):
    binary = original_binary("unordered_map")
    rng = random.Random(80)
    cases = []
    for _ in range(300):
        top = rng.choice([3, 30, 1000, 262_143, 3_000_000])
        cases.append([(rng.randint(0, top), rng.randint(1, 3)) for _ in range(rng.randint(0, rng.choice([20, 300])))])
    lines = run_batch(binary, [f"{len(c)} " + " ".join(f"{k} {v}" for k, v in c) for c in cases])
    for case, line in zip(cases, lines, strict=True):
        ours = StdIntMap()
        for key, value in case:
            ours.add(key, value)
        assert " ".join(f"{k}:{v}" for k, v in ours.copy().items()) == line.strip(), case


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 50), st.integers(1, 3)), max_size=80))
def test_unordered_map_holds_what_a_dict_holds(pairs):
    ours, reference = StdIntMap(), {}
    for key, value in pairs:
        ours.add(key, value)
        reference[key] = reference.get(key, 0) + value
    assert dict(ours.items()) == reference and len(ours) == len(reference)
    assert dict(StdIntMap.from_items(ours.items()).items()) == reference


def test_priority_queue_ties_equal_libstdcxx(original_binary):
    binary = original_binary("priority_queue")
    rng = random.Random(81)
    cases = [[rng.choice([-1, -1, 0, 1, 2, 3]) for _ in range(rng.randint(0, 80))] for _ in range(300)]
    lines = run_batch(binary, [f"{len(c)} " + " ".join(map(str, c)) for c in cases])
    for case, line in zip(cases, lines, strict=True):
        queue: StdPriorityQueue[tuple[int, int]] = StdPriorityQueue(key=lambda item: item[0])
        ids, popped = 0, []
        for op in case:
            if op >= 0:
                queue.push((op, ids))
                ids += 1
            elif len(queue):
                popped.append(queue.pop()[1])
        while len(queue):
            popped.append(queue.pop()[1])
        assert popped == [int(x) for x in line.split()], case


@settings(max_examples=200, deadline=None)
@given(priorities=st.lists(st.integers(0, 5), max_size=60))
def test_priority_queue_pops_in_decreasing_priority(priorities):
    queue: StdPriorityQueue[int] = StdPriorityQueue(key=lambda p: p)
    for p in priorities:
        queue.push(p)
    assert [queue.pop() for _ in priorities] == sorted(priorities, reverse=True)
