"""Acceptance per drafted token (lookup/acceptance/tokens.py), against a brute-force count, and its use
by the acceptance model and ``adaptive``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.acceptance import AcceptanceModel
from lookup.acceptance.tokens import BETA, PRIOR, STRENGTH, TokenRates, adjusted
from lookup.drafters.adaptive import AdaptiveDrafter
from pldcore.setting import reference_setting


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


# a step: (source, chain of token ids, nodes tried, nodes right, the free node's verdict or None)
steps = st.lists(st.tuples(st.integers(0, 1), st.lists(st.integers(0, 5), min_size=1, max_size=6),
                           st.integers(0, 6), st.integers(0, 6), st.none() | st.booleans()), max_size=30)


@given(steps, st.integers(0, 1), st.lists(st.integers(0, 6), min_size=1, max_size=6))
def test_offsets_are_each_tokens_smoothed_log_odds_against_its_kinds(history, source, asked):
    check_offsets(history, source, asked)


# token ids anywhere in a large vocabulary, and more distinct ones than the arrays start with room for
wide = st.integers(0, 300_000)
many_steps = st.lists(st.tuples(st.integers(0, 1), st.lists(wide, min_size=1, max_size=12),
                                st.integers(0, 12), st.integers(0, 12), st.none() | st.booleans()),
                      min_size=1, max_size=40)


@given(many_steps, st.integers(0, 1), st.lists(wide, min_size=1, max_size=6), st.data())
def test_offsets_hold_for_any_token_id_as_the_arrays_grow(history, source, asked, data):
    # ask for tokens seen too, not only fresh ones
    seen = [t for _, chain, _, _, _ in history for t in chain]
    asked = [data.draw(st.sampled_from(seen)) if i % 2 else t for i, t in enumerate(asked)]
    check_offsets(history, source, asked)


def check_offsets(history, source, asked):
    """TokenRates after ``history`` against a brute-force count of the same steps."""
    rates = TokenRates()
    counts: dict[tuple, list[float]] = {}  # (source, kind, token) -> [tries, hits]
    kinds = {(s, k): [1.0, PRIOR[s][k]] for s in (0, 1) for k in (0, 1)}
    for s, chain, tried, hits, free in history:
        tried = min(tried, len(chain))
        hits = min(hits, tried)
        rates.learn(s, chain, tried, hits, free)
        verdicts = [d < hits for d in range(tried)]
        if free is not None and tried < len(chain):  # the node after them, checked for free
            verdicts.append(free)
        for d, right in enumerate(verdicts):
            kind = (s, int(d > 0))
            entry = counts.setdefault((*kind, chain[d]), [0.0, 0.0])
            entry[0] += 1
            entry[1] += right
            kinds[kind][0] += 1
            kinds[kind][1] += right
    expected = []
    for d, token in enumerate(asked):
        tries, hits = counts.get((source, int(d > 0), token), (0.0, 0.0))
        if not tries:
            expected.append(0.0)
            continue
        g = kinds[(source, int(d > 0))][1] / kinds[(source, int(d > 0))][0]
        expected.append(BETA * (logit((hits + STRENGTH * g) / (tries + STRENGTH)) - logit(g)))
    assert rates.offsets(source, np.array(asked)) == pytest.approx(expected)


def test_a_token_that_breaks_copies_is_trusted_less_and_one_that_holds_more():
    rates = TokenRates()
    for _ in range(5):
        rates.learn(0, [7, 8], tried=2, hits=1)  # 7 holds as a first node, 8 breaks as a later one
        rates.learn(0, [9, 7], tried=1, hits=0)  # 9 breaks as a first node; 7 not reached
    first, later = rates.offsets(0, [7, 8])
    assert first > 0 and later < 0
    assert rates.offsets(0, [9])[0] < 0
    assert rates.offsets(1, [7, 8]).tolist() == [0.0, 0.0]  # the history's drafts are counted apart
    assert rates.offsets(0, [8, 7]).tolist() == [0.0, 0.0]  # and first nodes apart from later ones
    rates.clear()
    assert rates.offsets(0, [7, 8, 9]).tolist() == [0.0, 0.0, 0.0]


def test_a_negative_token_id_is_refused():
    with pytest.raises(ValueError, match="token ids"):
        TokenRates().learn(0, [3, -1], 2, 1)


def test_adjusted_adds_log_odds():
    estimate = np.array([0.2, 0.5, 0.9, 1.0])
    offsets = np.array([0.0, 1.0, -2.0, 0.0])
    expected = [1 / (1 + math.exp(-(logit(p) + o))) for p, o in zip(estimate, offsets)]
    assert adjusted(estimate, offsets) == pytest.approx(expected)
    shifted = [1 / (1 + math.exp(-(logit(p) + o + 0.5))) for p, o in zip(estimate, offsets)]
    assert adjusted(estimate, offsets, 0.5) == pytest.approx(shifted)  # per node, plus one shift for all
    assert adjusted(estimate, None, 0.5).tolist() == adjusted(estimate, 0.5).tolist() == pytest.approx(
        [1 / (1 + math.exp(-(logit(p) + 0.5))) for p in estimate])
    with pytest.raises(ValueError, match="offsets"):
        adjusted(estimate, offsets[:2])


def test_the_model_moves_a_chain_by_its_tokens_and_learns_them_from_its_verdicts():
    model = AcceptanceModel(max_tokens=4, first_node=False, later_nodes=False, tokens=True)
    plain = AcceptanceModel(max_tokens=4, first_node=False, later_nodes=False)
    row = model.row("context", 3)
    chain = np.array([5, 6, 7, 8])
    assert model.chain(row, None, 4, chain).tolist() == pytest.approx(plain.chain(row, None, 4).tolist())
    for _ in range(4):  # sent 2, the first accepted, the second not; and the free check of node 1 after 1 sent
        for m in (model, plain):
            m.age()
            m.learn_chain(row, chain, 2, 1, [5, 1])
            m.age()
            m.learn_chain(row, chain, 1, 1, [5, 9])
    got, want = model.chain(row, None, 4, chain), plain.chain(row, None, 4)
    assert got == pytest.approx(adjusted(want, model.tokens.offsets(row.source, chain)))
    assert got[0] > want[0] and got[1] < want[1]
    assert model.chain(row, None, 4).tolist() == want.tolist()  # no tokens given: the estimates as they were
    model.clear()
    assert model.chain(row, None, 4, chain).tolist() == pytest.approx(model.rates(row)[:4].tolist())


@pytest.mark.parametrize("flag, part", [("token_rates", "tokens"), ("calibrate", "calibration")])
def test_adaptive_corrects_its_models_only_with_them(flag, part):
    """The per-token rates and the request's calibration (test_calibration.py): on by default with the
    models, off on request, and off without the models, so that the fit collector's drafts (what the
    shipped fits are made on) are as they were."""
    on = AdaptiveDrafter(setting=reference_setting())
    assert getattr(on, flag) and getattr(on.model, part) is not None and on.params()[flag] is True
    off = AdaptiveDrafter(setting=reference_setting(), **{flag: False})
    assert getattr(off.model, part) is None and off.params()[flag] is False
    collector = AdaptiveDrafter(setting=reference_setting(), first_token_model=False, chain_model=False)
    assert not getattr(collector, flag) and getattr(collector.model, part) is None
    with pytest.raises(TypeError):
        AdaptiveDrafter(setting=reference_setting(), **{flag: "yes"})
