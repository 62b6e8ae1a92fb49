"""The sequence's calibration (lookup/acceptance/calibration.py), against a brute-force count, and its
use by the acceptance model and ``adaptive``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.acceptance import AcceptanceModel
from lookup.acceptance.model import Priors
from lookup.acceptance.calibration import DECAY, STRENGTH, Calibration
from lookup.acceptance.tokens import adjusted
from lookup.base import Agreement, Evidence
from lookup.drafters.adaptive import AdaptiveDrafter
from pldcore.setting import reference_setting

# an event: None = a step passes (age), else (expected, hits) learnt
events = st.lists(st.one_of(st.none(), st.tuples(st.floats(0.0, 8.0), st.integers(0, 8))), max_size=40)


@given(events, st.floats(0.5, 5.0), st.floats(0.5, 1.0))
def test_the_offset_is_the_log_ratio_of_decayed_hits_to_decayed_expectations(history, strength, decay):
    calibration = Calibration(strength, decay)
    seen: list[tuple[int, float, float]] = []  # (the step it was learnt at, expected, hits)
    step, offset = 0, 0.0
    for event in history:
        if event is None:
            calibration.age()
            step += 1
            continue
        calibration.learn(*event)
        seen.append((step, *event))
        # brute force: every node weighs decay ** (steps since it was learnt)
        hits = sum(decay ** (step - s) * h for s, _, h in seen)
        expected = sum(decay ** (step - s) * e for s, e, _ in seen)
        offset = math.log((hits + strength) / (expected + strength))
    # the offset moves only when something is learnt: a step passing leaves it as it was
    assert calibration.offset == pytest.approx(offset, abs=1e-9)


def test_defaults_and_bad_arguments():
    calibration = Calibration()
    assert (calibration.strength, calibration.decay, calibration.offset) == (STRENGTH, DECAY, 0.0)
    for strength, decay in ((0.0, 0.9), (1.0, 0.0), (1.0, 1.5)):
        with pytest.raises(ValueError):
            Calibration(strength, decay)


def evidence(n: int, support: int = 4) -> Evidence:
    """A chain's evidence from the context: a 3-token match whose ``support`` occurrences all agree."""
    return Evidence("context", 3, Agreement(3, np.full(n, support), np.full(n, support)))


def test_the_model_moves_every_node_by_the_offset_and_learns_from_the_nodes_checked():
    on = AcceptanceModel(fits=None, calibrate=True)
    off = AcceptanceModel(fits=None)
    row, chain = on.row("context", 3), np.array([5, 6, 7, 8])
    before = off.chain(row, evidence(4), 4, chain)
    assert np.array_equal(on.chain(row, evidence(4), 4, chain), before)  # nothing learnt: no offset
    # two nodes sent and accepted, the third checked for free and right: 3 hits against what the
    # estimates of those three said
    on.learn_chain(row, chain, 2, 2, [5, 6, 7], before)
    off.learn_chain(row, chain, 2, 2, [5, 6, 7], before)
    offset = math.log((3 + STRENGTH) / (before[:3].sum() + STRENGTH))
    assert on.calibration.offset == pytest.approx(offset) and offset > 0
    # the statistics learn what they did without it; the offset moves every node's log-odds
    assert on.chain(row, evidence(4), 4, chain) == pytest.approx(adjusted(off.chain(row, evidence(4), 4, chain), offset))


def test_a_miss_counts_the_nodes_up_to_it_and_nothing_after():
    model = AcceptanceModel(fits=None, calibrate=True)
    row, chain, estimate = model.row("context", 3), np.array([5, 6, 7, 8]), np.full(4, 0.8)
    model.learn_chain(row, chain, 4, 1, [5, 9], estimate)  # node 0 right, node 1 wrong, 2-3 never checked
    assert model.calibration.hits == 1 and model.calibration.expected == pytest.approx(1.6)
    # nothing sent: node 0 checked for free, wrong; its estimate counts without the offset it carried
    offset = model.calibration.offset
    model.learn_chain(row, chain, 0, 0, [9], estimate)
    expected = 1.6 + float(adjusted(estimate[:1], -offset)[0])
    assert model.calibration.hits == 1 and model.calibration.expected == pytest.approx(expected)
    model.learn_chain(row, chain, 2, 2, [5, 6, 7], None)  # no estimates given: the calibration learns nothing
    assert model.calibration.expected == pytest.approx(expected)


def test_it_compares_the_outcome_with_the_estimates_before_its_own_offset():
    model = AcceptanceModel(fits=None, calibrate=True)
    row, chain = model.row("context", 3), np.array([5])
    for _ in range(20):  # a sequence where every first node is right: the offset climbs
        raw = model.chain(row, evidence(1), 1, chain)  # what the step plans on, offset included
        model.age()
        model.learn_chain(row, chain, 1, 1, [5, 6], raw)
    # had it compared with its own corrected estimates, the expectation would have risen with the
    # offset; it sums the estimates without it (which the statistics alone move here)
    plain = AcceptanceModel(fits=None)
    expected = 0.0
    for _ in range(20):
        estimate = plain.chain(row, evidence(1), 1, chain)
        plain.age()
        plain.learn_chain(row, chain, 1, 1, [5, 6])
        expected = expected * DECAY + float(estimate[0])
    assert model.calibration.expected == pytest.approx(expected, rel=1e-6)
    assert model.calibration.offset == pytest.approx(math.log((model.calibration.hits + STRENGTH) / (expected + STRENGTH)))


def test_clear_and_restart_forget_it():
    model = AcceptanceModel(fits=None, calibrate=True)
    row, chain = model.row("context", 3), np.array([5, 6])
    model.learn_chain(row, chain, 2, 2, [5, 6], np.full(2, 0.1))
    assert model.calibration.offset > 0
    model.restart()
    assert model.calibration.offset == 0.0 and model.calibration.hits == 0.0
    assert model.counts(row)[0].sum() > 0  # the statistics carry on
    model.learn_chain(row, chain, 2, 2, [5, 6], np.full(2, 0.1))
    model.clear()
    assert model.calibration.offset == 0.0 and model.counts(row)[0].sum() == 0


def test_adaptive_starts_it_over_each_request():
    # (on with the models only: test_tokens.py::test_adaptive_corrects_its_models_only_with_them)
    # a request that copies itself: the calibration learns; the next request starts it over, with a
    # history too (the statistics carry on there)
    text = [3, 4, 5, 6, 7] * 6
    for history in (False, True):
        drafter = AdaptiveDrafter(setting=reference_setting(), history=history)
        drafter.reset(text[:10])
        at = 10
        while at < len(text):  # the loop's protocol: propose, extend by what is committed, observe
            draft = drafter.propose(8)
            future = text[at:]
            accepted = next((i for i, t in enumerate(draft.tokens.tolist()) if i >= len(future) or t != future[i]),
                            len(draft))
            drafter.extend(future[: accepted + 1])
            drafter.observe(draft, accepted)
            at += accepted + 1
        assert drafter.model.calibration.expected > 0 and drafter.model.calibration.offset != 0.0
        drafter.reset([1, 2, 3])
        assert drafter.model.calibration.expected == 0.0 and drafter.model.calibration.offset == 0.0


def test_without_a_correction_the_estimates_are_the_statistics_as_they_are():
    # no offset to add: nothing is clipped either, so a model without its corrections judges as before
    # they existed (a prior past 1 - 1e-4 stays what it is)
    sure = Priors(first=(0.99999,) * 6)
    for calibrate in (False, True):
        model = AcceptanceModel(fits=None, first_node=False, later_nodes=False, priors=sure, calibrate=calibrate)
        row = model.row("context", 3)
        assert model.chain(row, None, 3)[0] == model.rates(row)[0] == 0.99999


@given(st.floats(-6.0, 6.0), st.floats(1e-9, 1.0 - 1e-9))
def test_the_estimates_before_the_offset_come_back_whatever_the_offset(offset, p):
    # what the step planned on is the estimate moved by the offset; the learner takes the offset off
    # again, far from 0.5 too (a clipped inverse would drift the offset the way it leans)
    model = AcceptanceModel(fits=None, calibrate=True)
    model.calibration.offset = offset
    moved = 1.0 / (1.0 + math.exp(-(math.log(p / (1.0 - p)) + offset)))
    if not 0.0 < moved < 1.0:  # rounded to 0 or 1: nothing left to recover
        return
    model.learn_chain(model.row("context", 3), np.array([5]), 0, 0, [9], np.array([moved]))
    assert model.calibration.expected == pytest.approx(p, rel=1e-6, abs=1e-12)


def test_a_caller_that_plans_on_its_own_still_calibrates():
    drafter = AdaptiveDrafter(setting=reference_setting())
    text = [3, 4, 5, 6, 7] * 4
    drafter.reset(text[:12])
    candidate = drafter.candidate(8)
    assert len(candidate.draft) and candidate.draft.is_chain
    draft = drafter.send(candidate, drafter.decide(candidate))  # no estimate handed over
    drafter.extend(text[12:13])
    drafter.observe(draft, 0)
    assert drafter.model.calibration.expected > 0


_EVERY_KIND_OF_CHAIN = """
import itertools
import numpy as np
from lookup.acceptance import AcceptanceModel
from lookup.acceptance.chain_kernel import chain_estimate
from lookup.base import Agreement, Evidence

models = [AcceptanceModel(first_node=m, later_nodes=m, tokens=t, calibrate=c)
          for m, t, c in itertools.product((False, True), repeat=3)]
compiled = len(chain_estimate.signatures)
chain = np.array([5, 6, 7, 8, 9], dtype=np.int64)
own = Agreement(3, np.full(5, 4), np.full(5, 4))
kinds = (Evidence("context", 3, own), None, Evidence("history", 2, own, Agreement(4, np.full(5, 2), np.full(5, 1)), True))
for model in models:
    if model.calibration is not None:
        model.calibration.learn(4.0, 1.0)  # an offset that moves the estimates
    for evidence in kinds:
        for tokens in (chain, None):
            estimate = model.chain(model.row("context", 3), evidence, 5, tokens)
            assert estimate.shape == (5,) and np.all((estimate > 0) & (estimate < 1))
assert len(chain_estimate.signatures) == compiled, chain_estimate.signatures
"""


def test_a_model_compiles_its_chain_kernel_when_built_not_in_a_timed_call():
    # in a fresh process: one where an earlier test had compiled the kernel would prove nothing
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", _EVERY_KIND_OF_CHAIN], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
