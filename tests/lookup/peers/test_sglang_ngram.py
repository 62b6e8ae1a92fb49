"""``peer:sglang-ngram`` against SGLang's own ``cpp_ngram/trie_cache.cpp`` (compiled here), driven
as ``ngram_worker.py`` drives it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from lookup.peers.sglang_ngram import Trie, tree_to_draft
from peer_originals import chain_or_tree, draft_key, random_scenarios, run_batch, run_port

PEER = "peer:sglang-ngram"
ORIGINAL = ("sgl-project/sglang python/sglang/srt/speculative/cpp_ngram/trie_cache.cpp @0657507f, "
            "driven as ngram_worker.py drives it")
DEFAULTS = {"draft_token_num": None, "min_match_window_size": 1, "max_match_window_size": 12, "min_bfs_breadth": 1,
            "max_bfs_breadth": 10, "match_type": "BFS", "branch_length": 18, "capacity": 10_000_000, "history": False}
HARNESS_CAPACITY = 100_000  # > the nodes any scenario here inserts (30 windows of 18: < 10,000)
PARAMS = [{}, {"match_type": "PROB"}, {"history": True}, {"history": True, "match_type": "PROB"},
          {"min_match_window_size": 2, "max_match_window_size": 4, "branch_length": 6, "draft_token_num": 6},
          {"min_bfs_breadth": 2, "max_bfs_breadth": 3, "capacity": 40, "history": True},
          {"branch_length": 5, "max_match_window_size": 3, "capacity": 30, "match_type": "PROB", "history": True}]


def parse(line: str) -> tuple[list[int], list[int] | None]:
    """A harness line -> the draft without fillResult's root and zero padding (our ids are >= 1)."""
    head, parents = line.split("|")
    tokens = [int(x) for x in head.split()[1:]]
    prevs = [int(x) for x in parents.split()]
    n = len(tokens)
    while n > 1 and tokens[n - 1] == 0:
        n -= 1
    return chain_or_tree(tokens[1:n], [p - 1 for p in prevs[1:n]])


def original_drafts(binary: Path, cases: list[dict]) -> list[list]:
    """Each case's drafts from the original: one harness run, the worker's logic here."""
    commands: list[str] = []
    plans: list[list[bool]] = []  # per case, per propose: whether the original was asked (else: empty)
    for case in cases:
        p = {**DEFAULTS, **case["params"]}
        dtn = p["draft_token_num"] or p["max_match_window_size"]
        # the C++ allocates every node up front: a capacity no scenario here fills stands in for 10M
        capacity = min(p["capacity"], HARNESS_CAPACITY)
        new_cache = (f"C {capacity} {p['branch_length']} {p['min_match_window_size']} "
                     f"{p['max_match_window_size']} {p['min_bfs_breadth']} {p['max_bfs_breadth']} "
                     f"{int(p['match_type'] == 'PROB')}")
        context: list[int] = []
        started = False
        plans.append([])
        for op, arg in case["ops"]:
            if op == "reset":  # a new request: a new trie, unless one trie serves all requests
                if not p["history"] or not started:
                    commands.append(new_cache)
                started = True
                context = list(arg)
            elif op == "extend":  # _update_ngram_cache: the last branch_length tokens
                context += arg
                window = context[-p["branch_length"]:]
                commands.append(f"I {len(window)} {' '.join(map(str, window))}")
            else:  # _prepare_draft_tokens: the last max_match_window_size tokens
                nodes = min(dtn - 1, arg)
                asked = nodes > 0 and bool(context)
                plans[-1].append(asked)
                if asked:
                    window = context[-p["max_match_window_size"]:]
                    commands.append(f"B {len(window)} {' '.join(map(str, window))} {nodes}")
    lines = iter(run_batch(binary, commands))
    return [[parse(next(lines)) if asked else ([], None) for asked in plan] for plan in plans]


def make_cases(seed: int, count: int) -> list[dict]:
    params = itertools.cycle(PARAMS)
    return [{"params": next(params), "ops": ops} for ops in random_scenarios(seed, count, first_token=1)]


def test_port_equals_original(original_binary):
    binary = original_binary("sglang")
    cases = make_cases(seed=30, count=210)
    for case, expected in zip(cases, original_drafts(binary, cases)):
        got = run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"])
        assert got == expected, case


def test_port_equals_recorded_original(golden, original_binary):
    def record() -> list[dict]:
        cases = make_cases(seed=8, count=56)
        return [{**case, "drafts": drafts} for case, drafts in zip(cases, original_drafts(original_binary("sglang"), cases))]

    for case in golden(PEER, ORIGINAL, record):
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == case["drafts"], case


# -- worked examples -------------------------------------------------------------------------------

def test_the_example_of_ngram_cache_py():
    """``cpp_ngram/ngram_cache.py``'s ``__main__``: two sequences in, three lookups (BFS, its defaults)."""
    trie = Trie(capacity=1_000_000, branch_length=12, min_match_window_size=1)
    trie.insert([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    trie.insert([1, 2, 3, 44, 55, 66, 77, 88, 99, 100])

    def lookup_(context):
        return draft_key(tree_to_draft(trie.build_recency(context, 7, 1, 10, 1, 8)))

    # the most recent continuation (44) comes first in the trie, but the draft lists nodes in
    # std::unordered_map order, as fillResult does: this is what the original prints
    assert lookup_([1, 2, 3]) == ([4, 44, 5, 55, 6, 66, 77], [-1, -1, 0, 1, 2, 3, 5])
    assert lookup_([3, 44]) == ([55, 66, 77, 88, 99, 100], None)
    assert lookup_([3, 6, 999]) == ([], None)


def test_the_prompt_is_not_inserted_only_the_last_window_after_each_step():
    d = lookup.create(PEER)
    d.reset([5, 6, 7, 8] * 10)
    assert len(d.propose(8)) == 0  # SGLang inserts nothing at prefill
    d.extend([5])
    assert d.propose(3).tokens.tolist() == [6, 7, 8]
    d2 = lookup.create(PEER)
    d2.reset([5, 6, 7, 8] * 10 + [5])  # the same context with no step taken: an empty trie
    assert len(d2.propose(3)) == 0


def test_history_keeps_the_trie_across_requests():
    shared, fresh = lookup.create(PEER, history=True), lookup.create(PEER)
    for d in (shared, fresh):
        d.reset([1, 2, 3])
        d.extend([4, 5, 6])
        d.reset([9, 4])
    assert shared.propose(2).tokens.tolist() == [5, 6]
    assert len(fresh.propose(2)) == 0


@settings(max_examples=60, deadline=None)
@given(windows=st.lists(st.lists(st.integers(1, 4), max_size=12), max_size=6), branch=st.integers(2, 7),
       min_window=st.integers(1, 2))
def test_frequencies_count_the_inserted_suffixes(windows, branch, min_window):
    """Brute force: a node's frequency is how many inserted suffixes (up to ``branch`` tokens) start with its path."""
    trie = Trie(capacity=10_000, branch_length=branch, min_match_window_size=min_window)
    count: dict[tuple, int] = {}
    for window in windows:
        trie.insert(window)
        for i in range(len(window)):
            if i + min_window >= len(window):
                break
            suffix = window[i : i + branch]
            for j in range(1, len(suffix) + 1):
                count[tuple(suffix[:j])] = count.get(tuple(suffix[:j]), 0) + 1
    seen: dict[tuple, int] = {}
    stack = [((), trie.root)]
    while stack:
        path, node = stack.pop()
        for token, child in node.children.items():
            seen[path + (token,)] = child.freq
            stack.append((path + (token,), child))
    assert seen == count


def test_settings_are_checked():
    with pytest.raises(ValueError, match="max_match_window_size must be less than branch_length"):
        lookup.create(PEER, max_match_window_size=18)
    with pytest.raises(ValueError, match="match_type"):
        lookup.create(PEER, match_type="DFS")
    with pytest.raises(TypeError, match="history"):
        lookup.create(PEER, history=1)
