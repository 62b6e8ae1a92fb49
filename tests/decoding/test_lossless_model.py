"""Greedy speculative decoding on the embedded model is token-identical to transformers' greedy."""

from __future__ import annotations

import inspect
import textwrap

import pytest
from pydoc_data.topics import topics
from toys import RandomDrafter

import decoding
import lookup
from decoding.lossless import compare_outputs
from decoding.reference import hf_generate

pytestmark = pytest.mark.model
MAX_NEW = 32  # identity and speculation both hold at this length with a wide margin (accepted >> 20)


def real_prompts() -> list[str]:
    """Input-grounded prompts from text that ships with Python."""
    docs = [f"Summarize this documentation in a few sentences:\n\n{topics[k][:1500]}" for k in ("assert", "break", "with")]
    funcs = [textwrap.dedent(inspect.getsource(f)) for f in (textwrap.indent, inspect.cleandoc)]
    return docs + [f"Rename every variable in this function to a longer name and return the whole function:\n\n{f}" for f in funcs]


_REFERENCES: dict[tuple[int, ...], list[int]] = {}  # transformers' greedy output per prompt, once per session


def greedy_reference(target, ids: list[int]) -> list[int]:
    """transformers' greedy output of ``MAX_NEW`` tokens for ``ids``, computed once per session
    (test_tree_model.py compares against the same references)."""
    if tuple(ids) not in _REFERENCES:
        _REFERENCES[tuple(ids)] = hf_generate(target, ids, MAX_NEW).tokens
    return _REFERENCES[tuple(ids)]


@pytest.fixture(scope="module")
def cases(embedded):
    return [(ids, greedy_reference(embedded, ids)) for ids in map(embedded.chat_ids, real_prompts())]


@pytest.fixture(scope="module")
def unfold_runs(embedded, cases):
    """unfold's run on every case, made once: the identity, speculation and tau tests all read it."""
    return [decoding.generate(embedded, ids, lookup.create("unfold"), max_new_tokens=MAX_NEW) for ids, _ in cases]


# none and random on the embedded model run in `make test-slow` (CI): unfold here decodes the same prompts on
# the same model (its steps without a match draft nothing, as none does), test_tree_model.py's random trees
# have the embedded model reject drafts, and test_families.py checks the random drafter's chains against
# greedy on a tiny model of every family (llama, the embedded model's, among them)
@pytest.mark.parametrize("name", [pytest.param("none", marks=pytest.mark.slow), "unfold",
                                  pytest.param("random", marks=pytest.mark.slow)])
def test_identical_to_transformers_greedy(embedded, cases, name, request):
    runs = request.getfixturevalue("unfold_runs") if name == "unfold" else None
    for i, (ids, reference) in enumerate(cases):
        drafter = RandomDrafter(embedded.vocab_size, length=4) if name == "random" else lookup.create(name)
        ours = (runs[i] if runs is not None else decoding.generate(embedded, ids, drafter, max_new_tokens=MAX_NEW)).tokens
        mismatch = compare_outputs(embedded, ids, ours, reference)
        assert mismatch is None, str(mismatch)


def test_lookup_actually_speculates(unfold_runs):
    # unfold must find and accept drafts on input-grounded text, or the test above proves little
    assert sum(run.stats.accepted for run in unfold_runs) > 20


def replay_published(prompt: list[int], output: list[int]) -> float:
    """tau of the published lookup function replayed over a finished greedy output (plain Python)."""
    from toys import published

    seq, pos, forwards = list(prompt), 0, 0
    while pos < len(output):
        budget = len(output) - pos - 1
        draft = published(seq)[:budget]
        accepted = next((i for i, t in enumerate(draft) if t != output[pos + i]), len(draft))
        step = output[pos : pos + accepted + 1]
        seq += step
        pos += len(step)
        forwards += 1
    return len(output) / forwards


def test_unfold_tau_equals_a_replay_of_the_published_function(cases, unfold_runs):
    for (ids, reference), live in zip(cases, unfold_runs):
        assert live.tokens == reference
        assert live.stats.tau == replay_published(ids, reference)
