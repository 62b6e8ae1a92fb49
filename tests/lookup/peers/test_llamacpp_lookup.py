"""``peer:llamacpp-lookup`` against llama.cpp's own ``common/ngram-cache.cpp`` (compiled here)."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lookup
from lookup.peers.llamacpp_lookup import MIN_PERCENT_STRICT, MIN_SAMPLE_STRICT, _try_draft
from lookup.peers.std_int_map import StdIntMap
from peer_originals import ints, random_scenarios, run_batch, run_port

PEER = "peer:llamacpp-lookup"
ORIGINAL = "ggml-org/llama.cpp common/ngram-cache.cpp @5c5f166e, driven as examples/lookup/lookup.cpp"
#: settings worth comparing: the default, other n-gram ranges, and cross-request history
PARAMS = [{}, {"ngram_min": 2, "ngram_max": 3}, {"ngram_min": 1, "ngram_max": 1}, {"history": True},
          {"history": True, "ngram_min": 3, "ngram_max": 4}, {"n_draft": 5}]


def original_drafts(binary: Path, cases: list[dict]) -> list[list]:
    """Each case's drafts from the original, all cases in one run of the harness."""
    commands, counts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            p = {"n_draft": 16, "ngram_min": 1, "ngram_max": 4, "history": False, **case["params"]}
            commands.append(f"C {p['ngram_min']} {p['ngram_max']} {int(p['history'])} {tmp}/dynamic{i}.bin")
            counts.append(0)
            for op, arg in case["ops"]:
                if op == "propose":
                    commands.append(f"P {min(p['n_draft'], arg)}")
                    counts[-1] += 1
                else:
                    commands.append(f"{'R' if op == 'reset' else 'E'} {len(arg)} {' '.join(map(str, arg))}")
        lines = iter(run_batch(binary, commands))
        return [[(ints(next(lines))[1:], None) for _ in range(n)] for n in counts]


def make_cases(seed: int, count: int) -> list[dict]:
    params = itertools.cycle(PARAMS)
    return [{"params": next(params), "ops": ops} for ops in random_scenarios(seed, count)]


def test_port_equals_original(original_binary):
    binary = original_binary("llama.cpp")
    cases = make_cases(seed=20, count=240)
    for case, expected in zip(cases, original_drafts(binary, cases)):
        got = run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"])
        assert got == expected, case


def test_port_equals_recorded_original(golden, original_binary):
    def record() -> list[dict]:
        cases = make_cases(seed=7, count=60)
        return [{**case, "drafts": drafts} for case, drafts in zip(cases, original_drafts(original_binary("llama.cpp"), cases))]

    for case in golden(PEER, ORIGINAL, record):
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == case["drafts"], case


# -- worked examples, read off ngram-cache.cpp ----------------------------------------------------

def draft(prompt, budget=16, **params):
    d = lookup.create(PEER, **params)
    d.reset(prompt)
    return d.propose(budget).tokens.tolist()


def test_longest_ngram_first_and_the_draft_extends_itself():
    # the 4-gram (2, 3, 1, 2) was followed by 3, then (3, 1, 2, 3) by 1, ...: a chain of 16
    assert draft([1, 2, 3, 1, 2, 3, 1, 2]) == [3, 1, 2] * 5 + [3]
    assert draft([1, 2, 3, 1, 2, 3, 1, 2], budget=4) == [3, 1, 2, 3]


def test_lax_thresholds_of_one_token():
    # after 5 came 1 and 2 once each: 2 samples, but 50 % < 66 %: no draft
    assert draft([9, 5, 1, 5, 2, 5]) == []
    # after 5 came 1 twice: then (5, 1) -> 5 twice, ...
    assert draft([9, 5, 1, 5, 1, 5], budget=3) == [1, 5, 1]
    # one sample of a 1-gram or a 2-gram is not enough (sample size 2), of a 3-gram it is
    assert draft([4, 5, 6, 7, 5]) == []
    assert draft([4, 5, 6, 7, 4, 5]) == []
    assert draft([4, 5, 6, 7, 4, 5, 6], budget=2) == [7, 4]


def test_history_uses_earlier_requests_with_strict_thresholds():
    d = lookup.create(PEER, history=True)
    d.reset([8, 1, 8, 1, 8, 1, 8, 1, 8])  # 8 -> 1 four times: strict n = 1 wants 4 samples, 75 %
    d.reset([3, 8])
    assert d.propose(1).tokens.tolist() == [1]
    fresh = lookup.create(PEER)
    fresh.reset([3, 8])
    assert fresh.propose(1).tokens.tolist() == []


@given(counts=st.dictionaries(st.integers(0, 200), st.integers(1, 6), min_size=1, max_size=12),
       n=st.integers(1, 4), data=st.data())
def test_the_dynamic_cache_reads_the_same_whatever_the_order_of_its_tokens(counts, n, data):
    # Why the port may skip the save-and-load that reorders each entry of the dynamic cache: read
    # with the strict thresholds, a token qualifies only as the one most frequent, never on a tie.
    order = data.draw(st.permutations(sorted(counts)))
    ngrams = [(7,) * k for k in range(1, n + 1)]
    drafted = []
    for keys in (sorted(counts), order):
        part = StdIntMap()
        for key in keys:
            part.add(key, counts[key])
        drafted.append(_try_draft({ngrams[-1]: part}, ngrams, StdIntMap(), MIN_SAMPLE_STRICT, MIN_PERCENT_STRICT))
    assert drafted[0] == drafted[1]
    if drafted[0] is not None:
        assert list(counts.values()).count(counts[drafted[0]]) == 1


def test_settings_are_checked():
    with pytest.raises(ValueError):
        lookup.create(PEER, ngram_max=5)
    with pytest.raises(ValueError):
        lookup.create(PEER, ngram_min=3, ngram_max=2)
    with pytest.raises(TypeError, match="history"):
        lookup.create(PEER, history="true")
