"""Bad input to ``decoding.generate`` is one clear PLDError naming the argument, raised once
before the first forward; every good form of the same input gives the same output."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

import decoding
import lookup
from decoding.trace_target import TraceTarget
from pldcore.errors import PLDError

ALPHABET = " abcdefghijklmnopqrstuvwxyz"


def encode(text: str) -> list[int]:
    return [ALPHABET.index(c) for c in text]


class TextTrace(TraceTarget):
    """A recorded run whose ids spell letters, so stop strings can be tested without a model."""

    def decode(self, ids):
        return "".join(ALPHABET[i] for i in ids)


PROMPT = encode("say it ")
OUTPUT = encode("the cat sat on the mat and more")


def trace() -> TextTrace:
    return TextTrace(PROMPT, OUTPUT, vocab_size=len(ALPHABET))


UNSET = object()  # "use the default" (None is a value under test)


def run(prompt=PROMPT, drafter=UNSET, max_new_tokens=len(OUTPUT), target=UNSET, **kwargs):
    drafter = lookup.create("unfold") if drafter is UNSET else drafter
    return decoding.generate(trace() if target is UNSET else target, prompt, drafter, max_new_tokens, **kwargs)


def refused(match: str, **kwargs) -> str:
    """Run with ``kwargs`` and return the message of the PLDError it must raise (one line)."""
    with pytest.raises(PLDError, match=match) as err:
        run(**kwargs)
    message = str(err.value)
    assert "\n" not in message
    return message


# -- prompt ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        PROMPT,
        tuple(PROMPT),
        np.asarray(PROMPT, dtype=np.int64),
        np.asarray(PROMPT, dtype=np.int32),
        np.asarray(PROMPT, dtype=np.uint8),
        [np.int64(t) for t in PROMPT],
        torch.tensor(PROMPT),
        torch.tensor(PROMPT, dtype=torch.int32),
        torch.tensor([PROMPT]),  # [1, P], as tokenizers return it
        np.asarray([PROMPT]),
    ],
    ids=lambda p: type(p).__name__ + (f"-{p.dtype}-{list(p.shape)}" if hasattr(p, "dtype") else ""),
)
def test_every_integer_form_of_the_prompt_gives_the_same_output(prompt):
    out = run(prompt)
    assert out.tokens == OUTPUT


@pytest.mark.parametrize(
    "prompt,match",
    [
        ([*PROMPT[:-1], 3.0], r"prompt_ids must hold integer token ids, got 3\.0 at index 6"),
        ([3.5], r"prompt_ids must hold integer token ids, got 3\.5 at index 0"),
        ([np.float64(3.0)], r"prompt_ids must hold integer token ids, got .*3\.0.* at index 0"),
        ([True, 2], r"prompt_ids must hold integer token ids, got True at index 0"),
        ([[1, 2]], r"prompt_ids must hold integer token ids, got \[1, 2\] \(list\) at index 0"),
        (np.asarray(PROMPT, dtype=np.float32), r"must hold integer token ids, got a numpy array of dtype float32"),
        (torch.tensor(PROMPT, dtype=torch.float32), r"got a torch tensor of dtype torch\.float32"),
        (torch.tensor(PROMPT, dtype=torch.bfloat16), r"got a torch tensor of dtype torch\.bfloat16"),
        (torch.tensor(PROMPT) > 3, r"got a torch tensor of dtype torch\.bool"),
        (torch.zeros(2, 3, dtype=torch.long),
         r"prompt_ids must be one sequence of ids \(\[n\] or \[1, n\]\), got shape \(2, 3\)"),
        ([], r"prompt_ids is empty: give at least one token"),
        (np.zeros(0, dtype=np.int64), r"prompt_ids is empty"),
        ([1, -1, 2], r"prompt_ids has ids outside the vocabulary \[0, 27\): \[-1\]"),
        ([1, 27, 99], r"prompt_ids has ids outside the vocabulary \[0, 27\): \[27, 99\]"),
        ("say it", r"prompt_ids must be token ids, got text 'say it'; tokenize it first"),
        (None, r"prompt_ids must be a sequence of integer token ids, got None"),
        (3.0, r"prompt_ids must be a sequence of integer token ids, got float"),
    ],
)
def test_bad_prompt_ids(prompt, match):
    refused(match, prompt=prompt)


# -- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1.5, 2.0, None, 0, -3, True, "5", math.nan])
def test_max_new_tokens_must_be_an_integer_of_at_least_one(value):
    assert refused("max_new_tokens", max_new_tokens=value) == f"max_new_tokens must be an integer >= 1, got {value!r}"


def test_max_new_tokens_may_be_a_numpy_integer():
    assert run(max_new_tokens=np.int64(5)).tokens == OUTPUT[:5]


@pytest.mark.parametrize("value", [-1, 1.5, None, True])
def test_draft_budget_must_be_an_integer_of_at_least_zero(value):
    assert refused("draft_budget", draft_budget=value) == f"draft_budget must be an integer >= 0, got {value!r}"


@pytest.mark.parametrize(
    "params,match",
    [
        (dict(temperature=-0.5), r"temperature must be a finite number >= 0 \(0 = greedy\), got -0\.5"),
        (dict(temperature=math.nan), r"temperature must be .*, got nan"),
        (dict(temperature=None), r"temperature must be .*, got None"),
        (dict(temperature="0.5"), r"temperature must be .*, got '0\.5'"),
        (dict(top_k=-1), r"top_k must be an integer >= 0 \(0 = off\), got -1"),
        (dict(top_k=1.5), r"top_k must be an integer >= 0 \(0 = off\), got 1\.5"),
        (dict(top_k=True), r"top_k must be an integer >= 0 \(0 = off\), got True"),
        (dict(top_p=0.0), r"top_p must be in \(0, 1\] \(1 = off\), got 0\.0"),
        (dict(top_p=1.5), r"top_p must be in \(0, 1\] \(1 = off\), got 1\.5"),
        (dict(top_p=None), r"top_p must be in \(0, 1\] \(1 = off\), got None"),
    ],
)
def test_bad_sampling_parameters_are_refused_even_when_greedy(params, match):
    # a greedy run ignores top_k and top_p, but a bad value is still the caller's mistake
    refused(match, **params)


# -- drafter and target -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "drafter,kind",
    [
        (None, "None"),
        (lookup.get("unfold"), f"the class {lookup.get('unfold').__name__} (an instance is needed)"),
        (lookup.create, "function"),
    ],
)
def test_drafter_must_be_a_drafter(drafter, kind):
    message = refused("drafter", drafter=drafter)
    assert message == f"drafter must be a lookup.base.Drafter (e.g. lookup.create('unfold')), got {kind}"


def test_target_must_be_a_target():
    refused(r"target must be a decoding\.Target \(e\.g\. decoding\.load_model\(\)\), got None", target=None)


# -- stop strings and EOS -----------------------------------------------------------------------


def test_one_stop_string_is_one_string_not_its_characters():
    out = run(stop_strings="mat")
    assert out.stop_reason == "stop_string"
    assert trace().decode(out.tokens) == "the cat sat on the mat"
    assert run(stop_strings=["mat"]).tokens == out.tokens


def test_any_of_several_stop_strings_stops():
    out = run(stop_strings=("mat", "sat"))
    assert trace().decode(out.tokens) == "the cat sat"


def test_no_stop_strings():
    for none in (None, (), []):
        assert run(stop_strings=none).tokens == OUTPUT


@pytest.mark.parametrize(
    "stops,match",
    [
        ([3], r"stop_strings must hold strings, got 3"),
        (["mat", None], r"stop_strings must hold strings, got None"),
        ([b"mat"], r"stop_strings must hold strings, got b'mat'"),
        ("", r"stop_strings holds an empty string, which would stop after every token"),
        (["mat", ""], r"stop_strings holds an empty string"),
        (5, r"stop_strings must be a string or a list of strings, got int"),
    ],
)
def test_bad_stop_strings(stops, match):
    refused(match, stop_strings=stops)


def test_one_eos_id_is_one_id():
    space = encode(" ")[0]
    out = run(eos_token_ids=space)
    assert out.stop_reason == "eos" and trace().decode(out.tokens) == "the "
    assert run(eos_token_ids=[space]).tokens == out.tokens
    assert run(eos_token_ids=np.asarray([space])).tokens == out.tokens


@pytest.mark.parametrize(
    "eos,match",
    [([1.5], r"eos_token_ids must hold integer token ids, got 1\.5 at index 0"),
     ([99], r"eos_token_ids has ids outside the vocabulary \[0, 27\): \[99\]")],
)
def test_bad_eos_ids(eos, match):
    refused(match, eos_token_ids=eos)


# -- where the checks run -----------------------------------------------------------------------


class NoForward(TextTrace):
    def start(self, prompt_ids, top_k=0):
        raise AssertionError("bad input reached the target")


@pytest.mark.parametrize(
    "kwargs",
    [dict(prompt=[1.5]), dict(max_new_tokens=None), dict(drafter=None), dict(stop_strings=[1]), dict(top_p=2)],
)
def test_bad_input_fails_before_the_target_is_touched(kwargs):
    with pytest.raises(PLDError):
        run(target=NoForward(PROMPT, OUTPUT, vocab_size=len(ALPHABET)), **kwargs)


def test_inputs_are_checked_once_per_generation_not_per_step(monkeypatch):
    loop = sys.modules["decoding.generate"]
    calls = []
    check = loop.check_request
    monkeypatch.setattr(loop, "check_request", lambda *a: calls.append(1) or check(*a))
    out = run(drafter=lookup.create("none"))
    assert out.stats.forwards == len(OUTPUT) > 1 and len(calls) == 1
