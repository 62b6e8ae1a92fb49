"""``peer:sam-decoding`` against SAM-Decoding's own ``DynSAM`` (``samd_sam_only/sam/dyn_sam.py``).

The repository has no licence, so its code is not vendored: the comparison runs when a checkout
is at hand (``$SAM_DECODING_SRC``, at commit 18c41f05), and the golden file holds drafts recorded
from it for everywhere else.
"""

from __future__ import annotations

import itertools
import os
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from peer_originals import random_scenarios, run_port

PEER = "peer:sam-decoding"
COMMIT = "18c41f055b424fa3fa0bac41a8953d34cea1ed77"
ORIGINAL = f"hyx1999/SAM-Decoding samd_sam_only/sam/dyn_sam.py @{COMMIT[:8]}, driven as samd_sam_only/draft.py"
SOURCE = "samd_sam_only/sam/dyn_sam.py"
PARAMS = [{}, {"max_predicts": 5}, {"alpha": 1.0}, {"max_predicts": 3, "alpha": 0.5}]


def original_source() -> str | None:
    """``dyn_sam.py`` from the checkout ``$SAM_DECODING_SRC`` names, else None."""
    checkout = os.environ.get("SAM_DECODING_SRC")
    if checkout and (Path(checkout) / SOURCE).exists():
        return (Path(checkout) / SOURCE).read_text()
    return None


def original_class() -> type:
    source = original_source()
    if source is None:
        pytest.skip("SAM-Decoding's source is not here (set SAM_DECODING_SRC to a checkout)")
    module = types.ModuleType("original_dyn_sam")
    sys.modules[module.__name__] = module  # its dataclass looks its module up
    try:
        exec(compile(source, SOURCE, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.DynSAM


def original_drafts(dyn_sam: type, case: dict) -> list:
    """``DraftModel``'s use of ``DynSAM``: every committed token but the last is added; the last is
    the start token that ``lookup`` matches; the draft follows it."""
    p = {"max_predicts": 60, "alpha": 4.0, **case["params"]}
    sam, start, drafts = None, None, []
    for op, arg in case["ops"]:
        if op == "reset":
            sam, start = dyn_sam(max_predicts=p["max_predicts"], alpha=p["alpha"], device="cpu"), None
            pending = list(arg)
        elif op == "extend":
            pending = ([start] if start is not None else []) + list(arg)
        else:
            if start is None or arg <= 0:
                drafts.append(([], None))
            else:
                index, length = sam.lookup(start)
                seq, _ = sam.gen_draft(index, length, start)
                drafts.append((seq[1:][:arg], None))
            continue
        if pending:
            sam.add_tokens(pending[:-1])  # SamdModel.update with the accepted tokens
            start = pending[-1]
    return drafts


def make_cases(seed: int, count: int) -> list[dict]:
    params = itertools.cycle(PARAMS)
    return [{"params": next(params), "ops": ops} for ops in random_scenarios(seed, count, max_budget=64)]


def test_port_equals_original():
    dyn_sam = original_class()
    for case in make_cases(seed=50, count=200):
        got = run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"])
        assert got == original_drafts(dyn_sam, case), case


def test_port_equals_recorded_original(golden):
    def record() -> list[dict]:
        dyn_sam = original_class()
        return [{**case, "drafts": original_drafts(dyn_sam, case)} for case in make_cases(seed=10, count=60)]

    for case in golden(PEER, ORIGINAL, record):
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == case["drafts"], case


@settings(max_examples=200, deadline=None)
@given(seq=st.lists(st.integers(0, 3), min_size=1, max_size=60), alpha=st.sampled_from([4.0, 1.0, 0.5]),
       max_predicts=st.integers(1, 60))
def test_earliest_occurrence_of_the_longest_match_brute_force(seq, alpha, max_predicts):
    """Brute force: the longest suffix of the sequence that occurs in it minus its last token, its
    earliest end there, and what follows (within the indexed tokens)."""
    indexed, best = seq[:-1], (0, 0)  # (match length, end of the earliest occurrence)
    for m in range(1, len(seq)):
        ends = [e for e in range(m, len(indexed) + 1) if indexed[e - m : e] == seq[-m:]]
        if ends:
            best = (m, ends[0])
    n = min(max_predicts, 1 + int(best[0] * alpha))
    expected = indexed[best[1] : best[1] + n - 1] if best[0] else []
    d = lookup.create(PEER, max_predicts=max_predicts, alpha=alpha)
    d.reset(seq)
    assert d.propose(100).tokens.tolist() == expected


def test_worked_example():
    d = lookup.create(PEER)
    # the longest match is 1 2 3 4 1 2 3 (7 tokens, earliest at the start): up to 1 + 28 nodes, but
    # the automaton holds all tokens but the last, so only 4 1 2 can follow
    d.reset([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3])
    assert d.propose(60).tokens.tolist() == [4, 1, 2]
    # a 3-token match: 1 + int(alpha * 3) nodes counting the start token
    seq = [1, 2, 3, 9, 9, 9, 9, 9, 9, 5, 1, 2, 3]
    d.reset(seq)
    assert d.propose(60).tokens.tolist() == [9, 9, 9, 9, 9, 9, 5, 1, 2]
    one = lookup.create(PEER, alpha=1.0)
    one.reset(seq)
    assert one.propose(60).tokens.tolist() == [9, 9, 9]
    d.reset([5, 6, 7])
    assert len(d.propose(8)) == 0
