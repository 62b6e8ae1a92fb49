"""The speculative loop on a tiny random Llama: losslessness, budgets, stops and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from toys import FixedDrafter, OracleDrafter, RandomDrafter, tiny_llama

import decoding
import lookup
from decoding.generate import DraftError
from decoding.reference import hf_generate
from lookup.base import Draft, Drafter

PROMPT = [3, 17, 5, 3, 17, 5, 9, 3, 17]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=64)


def greedy(target, prompt, n):
    return hf_generate(target, prompt, n).tokens


@pytest.mark.parametrize("make", [lambda: lookup.create("none"), lambda: lookup.create("unfold"),
                                  lambda: RandomDrafter(64, length=6, seed=1)])
def test_identical_to_hf_greedy(tiny, make):
    out = decoding.generate(tiny, PROMPT, make(), max_new_tokens=40)
    assert out.tokens == greedy(tiny, PROMPT, 40)
    assert out.stats.new_tokens == 40 and out.stop_reason == "length"


def test_oracle_accepts_everything_and_counts_are_consistent(tiny):
    ref = greedy(tiny, PROMPT, 30)
    out = decoding.generate(tiny, PROMPT, OracleDrafter(PROMPT + ref), max_new_tokens=30, draft_budget=7)
    s = out.stats
    assert out.tokens == ref
    assert s.accepted == s.drafted  # nothing wasted
    assert s.forwards == len(s.steps) == int(np.ceil(30 / 8))  # 7 drafted + 1 own per forward
    assert s.tau == pytest.approx(30 / s.forwards)
    assert sum(r.committed for r in s.steps) == 30
    assert [r.context for r in s.steps][0] == len(PROMPT)


def test_eos_inside_an_accepted_draft_stops_there(tiny):
    ref = greedy(tiny, PROMPT, 20)
    at = next(i for i in range(2, 20) if ref[i] not in ref[:i])  # first occurrence, not at the start
    eos = ref[at]
    out = decoding.generate(tiny, PROMPT, OracleDrafter(PROMPT + ref), max_new_tokens=20, eos_token_ids=[eos])
    assert out.tokens == ref[: at + 1]
    assert out.stop_reason == "eos"
    last = out.stats.steps[-1]
    assert last.committed <= last.accepted  # the EOS was a draft token, not the target's own
    # transformers agrees
    tiny.eos_token_ids, saved = frozenset([eos]), tiny.eos_token_ids
    try:
        assert greedy(tiny, PROMPT, 20) == out.tokens
    finally:
        tiny.eos_token_ids = saved


def test_draft_never_exceeds_the_remaining_budget(tiny):
    ref = greedy(tiny, PROMPT, 5)
    seen = []

    class Spy(OracleDrafter):
        def propose(self, budget):
            seen.append(budget)
            return super().propose(budget)

    out = decoding.generate(tiny, PROMPT, Spy(PROMPT + ref + [0] * 50), max_new_tokens=5, draft_budget=32)
    assert out.tokens == ref and len(out.tokens) == 5
    assert seen == [4]  # 4 drafted + the target's own token = exactly 5


def test_a_drafter_over_budget_is_named_in_the_error(tiny):
    class Greedy(Drafter):
        name = "greedy-test"

        def propose(self, budget):
            return Draft(np.arange(budget + 3))

    with pytest.raises(DraftError, match="greedy-test.*budget"):
        decoding.generate(tiny, PROMPT, Greedy(), max_new_tokens=10)


@pytest.mark.parametrize("tokens", [[70], [-1], [1, 2, 10_000]])
def test_out_of_vocabulary_drafts_are_refused(tiny, tokens):
    with pytest.raises(DraftError, match="fixed-test.*outside the vocabulary"):
        decoding.generate(tiny, PROMPT, FixedDrafter(tokens), max_new_tokens=10)


def test_malformed_trees_are_refused(tiny):
    class Tree(Drafter):
        name = "tree-test"

        def propose(self, budget):
            return Draft([1, 2][:budget], parents=[0, -1][:budget])  # node 0 is its own parent

    with pytest.raises(DraftError, match="tree-test.*malformed tree"):
        decoding.generate(tiny, PROMPT, Tree(), max_new_tokens=10)


def test_max_new_tokens_one(tiny):
    out = decoding.generate(tiny, PROMPT, FixedDrafter([1, 2, 3]), max_new_tokens=1)
    assert out.tokens == greedy(tiny, PROMPT, 1)
    assert out.stats.drafted == 0 and out.stats.forwards == 1


def test_one_token_prompt(tiny):
    out = decoding.generate(tiny, [7], lookup.create("unfold"), max_new_tokens=25)
    assert out.tokens == greedy(tiny, [7], 25)


def test_stop_strings(tiny):
    ref = greedy(tiny, PROMPT, 20)
    stop = f"<{ref[4]}>"  # IdTokenizer renders ids as <id>
    out = decoding.generate(tiny, PROMPT, lookup.create("none"), max_new_tokens=20, stop_strings=[stop])
    assert out.stop_reason == "stop_string"
    assert out.tokens == ref[: ref.index(ref[4]) + 1]


@pytest.mark.parametrize(
    "prompt,n,match",
    [([], 5, "empty"), ([1, 2], 0, "max_new_tokens"), ([1, 99], 5, "outside the vocabulary"),
     (list(range(10)) * 60, 5, "context window")],
)
def test_bad_requests_are_one_line_errors(tiny, prompt, n, match):
    with pytest.raises(lookup.PLDError, match=match):
        decoding.generate(tiny, prompt, lookup.create("none"), max_new_tokens=n)
