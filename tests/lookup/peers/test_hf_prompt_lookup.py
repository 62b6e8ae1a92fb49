"""``peer:hf-prompt-lookup`` is transformers' ``PromptLookupCandidateGenerator`` itself: the drafter
must hand it the committed context and return exactly its candidates, cut to the budget."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

import lookup
from peer_originals import random_scenarios, run_port

PEER = "peer:hf-prompt-lookup"
PARAMS = [{}, {"num_output_tokens": 3}, {"max_matching_ngram_size": 4}, {"eos_token_id": 2},
          {"eos_token_id": [1, 3], "num_output_tokens": 20}]


def original_drafts(case: dict) -> list:
    """What ``generate`` would get from the generator at each propose (its defaults, no length cap)."""
    p = {"num_output_tokens": 10, "max_matching_ngram_size": 2, "eos_token_id": None, **case["params"]}
    eos = None if p["eos_token_id"] is None else torch.tensor(p["eos_token_id"]).reshape(-1)
    generator = PromptLookupCandidateGenerator(eos_token_id=eos, num_output_tokens=p["num_output_tokens"],
                                               max_matching_ngram_size=p["max_matching_ngram_size"], max_length=10**9)
    context, out = [], []
    for op, arg in case["ops"]:
        if op == "reset":
            context = list(arg)
        elif op == "extend":
            context += arg
        elif arg <= 0 or not context:
            out.append(([], None))
        else:
            candidates, _ = generator.get_candidates(torch.tensor([context]))
            out.append((candidates[0, len(context):].tolist()[:arg], None))
    return out


def test_drafts_are_the_generators_candidates():
    params = itertools.cycle(PARAMS)
    for ops in random_scenarios(seed=70, count=150):
        case = {"params": next(params), "ops": ops}
        assert run_port(lambda: lookup.create(PEER, **case["params"]), ops) == original_drafts(case), case


@settings(max_examples=200, deadline=None)
@given(seq=st.lists(st.integers(0, 3), min_size=1, max_size=40), n=st.integers(1, 4), k=st.integers(1, 12))
def test_first_match_from_the_left_with_any_continuation(seq, n, k):
    """Transcription of the documented rule: n-gram sizes n..1; the first earlier occurrence from
    the left with at least one token after it; up to k tokens of what follows."""
    expected: list[int] = []
    for size in range(min(n, len(seq) - 1), 0, -1):
        hits = [i for i in range(len(seq) - size) if seq[i : i + size] == seq[-size:]]
        if hits:
            expected = seq[hits[0] + size : hits[0] + size + k]
            break
    d = lookup.create(PEER, num_output_tokens=k, max_matching_ngram_size=n)
    d.reset(seq)
    assert d.propose(64).tokens.tolist() == expected


def test_eos_cuts_the_draft():
    d = lookup.create(PEER, eos_token_id=9)
    d.reset([1, 2, 3, 9, 4, 1, 2])
    assert d.propose(10).tokens.tolist() == [3]


def test_a_missing_transformers_is_one_clear_line():
    code = textwrap.dedent("""
        import sys
        sys.modules["transformers"] = None  # as if not installed
        import lookup, lookup.peers
        from pldcore.errors import PLDError
        try:
            lookup.create("peer:hf-prompt-lookup")
        except PLDError as exc:
            print(str(exc).count(chr(10)), "pip install" in str(exc))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["0", "True"], out.stderr
