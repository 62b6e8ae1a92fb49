"""The speculative loop on a tiny random Llama: losslessness, budgets, stops and bad input."""

from __future__ import annotations

import re

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


def test_a_propose_that_changes_the_drafter_is_named_as_that(tiny):
    """A propose that appends its own guess to what it knows: the draft it ends up over budget with is
    the symptom, the change of state the cause, and the error says the cause (with the step)."""
    class Mutating(Drafter):
        name = "mutating-test"

        def reset(self, prompt):
            self.seq = list(prompt)

        def extend(self, tokens):
            self.seq.extend(tokens)

        def propose(self, budget):
            guess = [(self.seq[-1] + 1) % 64] * max(budget, 2)  # over a budget of 1
            self.seq.extend(guess)  # the bug
            return Draft(guess)

    with pytest.raises(DraftError) as info:
        decoding.generate(tiny, PROMPT, Mutating(), max_new_tokens=10)
    message = str(info.value)
    assert message.startswith("drafter 'mutating-test' (Mutating): propose changes what the drafter knows (two "
                              "calls of propose(1) with nothing extended between gave ")
    assert re.search(r"Seen at step \d+, where it proposed 2 tokens with a budget of 1$", message)


def test_an_over_budget_draft_of_a_drafter_that_changes_nothing_is_named_as_that(tiny):
    class Stubborn(Drafter):
        name = "stubborn-test"

        def propose(self, budget):
            return Draft([1, 2, 3])  # the same whatever the budget: no change of state, a budget ignored

    with pytest.raises(DraftError, match=r"^drafter 'stubborn-test' \(Stubborn\) proposed 3 tokens with a budget "
                                         r"of [12] at step \d+$"):
        decoding.generate(tiny, PROMPT, Stubborn(), max_new_tokens=10)


@pytest.mark.parametrize("call", ["reset", "propose", "extend", "observe"])
def test_an_exception_in_a_drafter_names_the_drafter_the_call_the_step_and_the_line(tiny, call):
    from decoding.generate import DrafterFailed

    class Raising(Drafter):
        name = "raising-test"

        def __init__(self):
            self.steps = 0

        def reset(self, prompt):
            self._fail("reset")

        def extend(self, tokens):
            self.steps += 1
            self._fail("extend")

        def observe(self, draft, accepted):
            self._fail("observe")

        def propose(self, budget):
            self._fail("propose")
            return Draft([])

        def _fail(self, where):
            if where == call and (call == "reset" or self.steps == 3):
                raise KeyError("oops")

    with pytest.raises(DrafterFailed) as info:
        decoding.generate(tiny, PROMPT, Raising(), max_new_tokens=10)
    step = 1 if call == "reset" else 4 if call == "propose" else 3
    context = len(PROMPT) + (0 if call == "reset" else 3 if call == "propose" else 2)
    line = Raising._fail.__code__.co_firstlineno + 2
    assert str(info.value) == (f"drafter 'raising-test' (Raising) raised KeyError in {call} at step {step} ({context} "
                               f"tokens of context) at test_generate.py:{line}: 'oops' (PLD_LAB_TRACEBACK=1 shows "
                               "the traceback)")
    assert isinstance(info.value.__cause__, KeyError)  # the traceback, for whoever asks for it
    assert str(info.value.in_case("doc-qa/3")).startswith("case doc-qa/3: drafter 'raising-test'")


def test_an_error_of_the_target_is_not_blamed_on_the_drafter(tiny, monkeypatch):
    def broken(*_a, **_k):
        raise RuntimeError("the forward failed")

    monkeypatch.setattr(tiny, "score", broken)
    with pytest.raises(RuntimeError, match="the forward failed"):
        decoding.generate(tiny, PROMPT, FixedDrafter([1, 2]), max_new_tokens=10)


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
