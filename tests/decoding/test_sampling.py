"""Sampled verification: the warpers, each branch of each acceptance rule, the uniform stream,
and seeded generation on a tiny Llama. The distributional proof is in test_sampling_distribution.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling_toys import QDrafter
from toys import FixedDrafter, RandomDrafter, tiny_llama
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

import decoding
import lookup
from decoding.sampling import (
    BLOCK,
    SamplingRule,
    UniformStream,
    accept_deterministic,
    accept_stochastic,
    process_logits,
    residual,
    sample_rows,
    sampling_rule,
)
from decoding.target import Scores
from lookup.base import Draft
from pldcore.errors import PLDError

@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here runs on one torch thread (see tests/conftest.py)."""


M = 2000  # uniforms on a grid: a rule's frequencies over it are its probabilities within 1/M
GRID = (torch.arange(M, dtype=torch.float64) + 0.5) / M  # [M]


def grid_frequencies(pick, V: int) -> np.ndarray:
    """Frequencies of ``pick(u)`` over the uniform grid: [V]."""
    counts = np.zeros(V)
    for u in GRID.tolist():
        counts[pick(u)] += 1
    return counts / M


def t(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float32)


# -- process_logits ---------------------------------------------------------------------------


def hf_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """transformers' warpers chained as its generate chains them, then softmax."""
    warpers = [TemperatureLogitsWarper(float(temperature))]
    if top_k:
        warpers.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=top_p))
    scores = logits.clone()
    for w in warpers:
        scores = w(None, scores)
    return scores.softmax(dim=-1)


@st.composite
def warper_cases(draw):
    n = draw(st.integers(1, 4))
    V = draw(st.integers(1, 24))
    # few distinct values make ties, at the top-k boundary and inside top-p's sort
    values = st.one_of(st.sampled_from([-3.0, -1.0, 0.0, 0.0, 0.5, 2.0]), st.floats(-8, 8, width=32))
    logits = torch.tensor(draw(st.lists(st.lists(values, min_size=V, max_size=V), min_size=n, max_size=n)))
    temperature = draw(st.sampled_from([1.0, 0.7, 1.3]) | st.floats(0.05, 5.0))
    top_k = draw(st.integers(0, V + 2))
    top_p = draw(st.sampled_from([1.0, 0.9, 0.5]) | st.floats(0.01, 1.0))
    return logits.float(), temperature, top_k, top_p


@settings(max_examples=200, deadline=None)
@given(warper_cases())
def test_process_logits_equals_transformers_warpers(case):
    logits, temperature, top_k, top_p = case
    ours = process_logits(logits, temperature, top_k, top_p)
    ref = hf_probs(logits, temperature, top_k, top_p)
    assert torch.equal(ours == 0, ref == 0)  # the same tokens are cut, ties included
    torch.testing.assert_close(ours, ref, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(ours.sum(-1), torch.ones(len(logits)))


def test_process_logits_details():
    logits = t([[2.0, 1.0, 1.0, 0.0, -1.0]])
    plain = process_logits(logits, 1.0)
    torch.testing.assert_close(plain, logits.softmax(-1))
    torch.testing.assert_close(process_logits(logits, 2.0), (logits / 2).softmax(-1))
    assert torch.equal(process_logits(logits, 1.0, top_k=99), plain)  # k >= V is off
    assert (process_logits(logits, 1.0, top_k=2)[0] > 0).tolist() == [True, True, True, False, False]  # tie kept
    assert (process_logits(logits, 1.0, top_k=1)[0] > 0).tolist() == [True, False, False, False, False]
    assert (process_logits(logits, 1.0, top_p=1e-6)[0] > 0).sum() == 1  # keeps at least one token
    assert process_logits(logits.half(), 1.0).dtype == torch.float32
    numpy_params = process_logits(logits, np.float32(1.0), np.int64(2), np.float32(1.0))
    assert torch.equal(numpy_params, process_logits(logits, 1.0, 2))


@pytest.mark.parametrize(
    "params",
    [
        dict(temperature=-1.0), dict(temperature=0.0), dict(temperature=math.nan), dict(temperature=math.inf),
        dict(top_k=-1), dict(top_k=1.5), dict(top_k=True),
        dict(top_p=0.0), dict(top_p=1.5), dict(top_p=-0.1), dict(top_p=math.nan), dict(top_p="0.9"),
    ],
)
def test_bad_parameters_are_one_line_errors(params):
    full = dict(temperature=1.0, top_k=0, top_p=1.0) | params
    with pytest.raises(PLDError) as err:
        process_logits(t([[0.0, 1.0]]), **full)
    assert "\n" not in str(err.value)
    with pytest.raises(PLDError):
        sampling_rule(seed=0, device="cpu", **full)


def test_generate_rejects_bad_sampling_parameters():
    tiny = tiny_llama(vocab_size=16)
    for bad in (dict(top_k=-1), dict(top_p=0.0), dict(temperature=-0.5)):
        with pytest.raises(PLDError):
            decoding.generate(tiny, [1, 2, 3], lookup.create("none"), 5, **(dict(temperature=1.0) | bad))
    with pytest.raises(PLDError, match="seed"):
        decoding.generate(tiny, [1, 2, 3], lookup.create("none"), 5, temperature=1.0, seed=-1)


# -- sample_rows ------------------------------------------------------------------------------


def test_sample_rows_is_the_inverse_cdf():
    p = t([[0.1, 0.0, 0.6, 0.3, 0.0]])
    freq = grid_frequencies(lambda u: int(sample_rows(p, torch.tensor([u]))[0]), 5)
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3, 0.0], atol=1 / M)
    # several rows at once, each with its own uniform; rows need not be normalised
    rows = t([[0.0, 2.0, 2.0], [5.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert sample_rows(rows, torch.tensor([0.49, 0.99, 0.0], dtype=torch.float64)).tolist() == [1, 0, 2]
    assert sample_rows(rows, torch.tensor([0.51, 0.0, 0.5], dtype=torch.float64)).tolist() == [2, 0, 2]


@pytest.mark.parametrize("u", [0.0, 1e-300, 0.5, 1 - 2**-52, 1 - 2**-53])
def test_sample_rows_never_picks_a_zero_probability_token(u):
    p = t([[0.0, 0.0, 0.3, 0.0, 0.7, 0.0, 0.0], [0.0] * 6 + [1.0], [1e-30, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    picked = sample_rows(p, torch.full((3,), u, dtype=torch.float64))
    assert (p[torch.arange(3), picked] > 0).all(), picked


# -- deterministic drafts ---------------------------------------------------------------------

P3 = t([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]])  # rows 0..2 for a 2-node draft


def det(draft, u0, u1=0.5, u2=0.5, probs=P3):
    return accept_deterministic(probs, np.asarray(draft), torch.tensor([u0, u1, u2], dtype=torch.float64))


def test_deterministic_accept_and_bonus():
    # u in [0.1, 0.7) of row 0 picks id 1 = d0; u in [0.5, 0.7) of row 1 picks id 1 = d1
    assert det([1, 1], 0.3, 0.6, 0.95) == (2, 2)  # both accepted, bonus from row 2
    assert det([1, 1], 0.3, 0.6, 0.1) == (2, 0)


def test_deterministic_reject_commits_the_sample():
    assert det([1, 1], 0.05, 0.6) == (0, 0)  # first node rejected, correction 0
    assert det([1, 0], 0.3, 0.6) == (1, 1)  # second rejected: correction from row 1


def test_deterministic_acceptance_probability_and_residual():
    accepted = grid_frequencies(lambda u: det([1, 1], u)[0] > 0, 2)[1]
    assert abs(accepted - 0.6) <= 1 / M  # P(accept) = p(d)
    # given a rejection, the correction is p without d, renormalised: (0.1, 0, 0.3) / 0.4
    tokens = [det([1, 1], u)[1] for u in GRID.tolist() if det([1, 1], u)[0] == 0]
    freq = np.bincount(tokens, minlength=3) / len(tokens)
    np.testing.assert_allclose(freq, [0.25, 0.0, 0.75], atol=2 / M)


def test_deterministic_edge_probabilities():
    probs = t([[0.0, 1.0, 0.0], [0.4, 0.0, 0.6], [0.2, 0.2, 0.6]])
    for u in [0.0, 0.3, 0.99, 1 - 2**-53]:
        assert det([1, 1], u, u, probs=probs)[0] == 1  # p(d0) = 1: always accepted; p(d1) = 0: never
        assert det([1, 1], u, u, probs=probs)[1] in (0, 2)
    empty = np.zeros(0, dtype=np.int64)
    assert accept_deterministic(P3[:1], empty, torch.tensor([0.95], dtype=torch.float64)) == (0, 2)


def test_deterministic_is_greedy_at_zero_temperature_limit():
    logits = torch.randn(5, 50)
    draft = logits.argmax(-1)[:4].numpy().copy()
    draft[2] = (draft[2] + 1) % 50
    probs = process_logits(logits, 1e-4)
    for u in [0.0, 0.3, 0.999]:
        u5 = torch.full((5,), u, dtype=torch.float64)
        assert accept_deterministic(probs, draft, u5) == (2, int(logits[2].argmax()))


# -- drafts that carry q ----------------------------------------------------------------------


def stoch(p, q, draft, ua, us):
    k = len(draft)
    return accept_stochastic(
        p, np.asarray(draft), q, torch.tensor(ua, dtype=torch.float64)[:k], torch.tensor(us, dtype=torch.float64)
    )


def test_stochastic_q_above_p_accepts_with_probability_p_over_q():
    p, q = t([[0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]), t([[0.1, 0.8, 0.1]])
    freq = grid_frequencies(lambda u: stoch(p, q, [1], [u], [0.5, 0.5])[0], 2)
    assert abs(freq[1] - 0.5 / 0.8) <= 1 / M


def test_stochastic_q_at_or_below_p_always_accepts():
    p = t([[0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
    for q in (t([[0.6, 0.3, 0.1]]), p[:1].clone()):  # q(d) < p(d), q(d) == p(d)
        for u in [0.0, 0.5, 1 - 2**-53]:
            assert stoch(p, q, [1], [u], [0.5, 0.95]) == (1, 2)  # bonus from the next row


def test_stochastic_p_zero_never_accepts():
    p, q = t([[0.5, 0.0, 0.5], [1.0, 0.0, 0.0]]), t([[0.0, 1.0, 0.0]])
    for u in [0.0, 0.5, 0.999]:
        accepted, token = stoch(p, q, [1], [u], [u, 0.5])
        assert accepted == 0 and token in (0, 2)


def test_stochastic_rejection_samples_the_residual():
    p, q = t([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]]), t([[0.1, 0.8, 0.1]])
    # max(0, p - q) = (0.1, 0, 0.2) -> (1/3, 0, 2/3); u_accept 0.99 forces the rejection
    freq = grid_frequencies(lambda u: stoch(p, q, [1], [0.99], [u, 0.5])[1], 3)
    np.testing.assert_allclose(freq, [1 / 3, 0.0, 2 / 3], atol=1 / M)
    torch.testing.assert_close(residual(p[:1], q) / residual(p[:1], q).sum(), t([[1 / 3, 0.0, 2 / 3]]))


def test_stochastic_chain_stops_at_the_first_rejection():
    p = t([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.0, 0.0, 1.0]])
    q = t([[0.1, 0.8, 0.1], [0.05, 0.9, 0.05]])
    # node 0: q == p, accepted; node 1: 0.9 * u < 0.1 fails for u = 0.5 -> residual (0.05, 0, 0.75)
    accepted, token = stoch(p, q, [1, 1], [0.5, 0.5], [0.5, 0.5, 0.5])
    assert accepted == 1 and token == 2
    assert stoch(p, q, [1, 1], [0.5, 0.05], [0.5, 0.5, 0.5]) == (2, 2)  # all accepted: bonus


def test_residual_of_equal_rows_falls_back_to_p():
    p = t([[0.25, 0.75]])
    torch.testing.assert_close(residual(p, p.clone()), p)


def test_one_hot_q_is_the_deterministic_rule():
    p = t([[0.1, 0.6, 0.3]])
    q = t([[0.0, 1.0, 0.0]])
    torch.testing.assert_close(residual(p, q) / residual(p, q).sum(), t([[0.25, 0.0, 0.75]]))
    freq = grid_frequencies(lambda u: stoch(torch.cat([p, p]), q, [1], [u], [0.5, 0.5])[0], 2)
    assert abs(freq[1] - 0.6) <= 1 / M


@pytest.mark.parametrize("seed", range(3))
def test_stochastic_output_law_is_p(seed):
    """Integrate the rule over its randomness: d ~ q, u_accept and u_sample on grids. The
    first committed token must have law p, whatever q. (On rejection the rule reads only
    u_sample, so the two grids are integrated one after the other.)"""
    rng = np.random.default_rng(seed)
    V = 6
    p = t(rng.dirichlet(np.ones(V)))
    q = t(rng.dirichlet(np.full(V, 0.5)))
    if seed == 2:
        p[:2] = 0  # a truncated target
        p /= p.sum()
    probs = torch.stack([p, t(np.ones(V) / V)])
    grid = GRID[5::10].tolist()  # 200 points
    law = np.zeros(V)
    for d in range(V):
        run = lambda ua, us: stoch(probs, q[None], [d], [ua], [us, 0.5])  # noqa: E731
        acc = np.mean([run(ua, 0.5)[0] for ua in grid])
        law[d] += float(q[d]) * acc
        if acc < 1:
            rejected = [run(1 - 2**-53, us)[1] for us in grid]
            law += float(q[d]) * (1 - acc) * np.bincount(rejected, minlength=V) / len(grid)
    np.testing.assert_allclose(law, p.numpy(), atol=0.01)


# -- the rule and its uniform stream ----------------------------------------------------------


def test_stream_uniforms_depend_only_on_the_position():
    a, b = UniformStream(7, "cpu"), UniformStream(7, "cpu")
    first = a.take(0, 5).clone()
    chunks = [a.take(3, 4).clone(), a.take(BLOCK - 2, 5).clone(), a.take(3 * BLOCK + 1, 2).clone()]
    direct = b.take(3 * BLOCK + 1, 2)
    assert torch.equal(chunks[-1], direct)
    c = UniformStream(7, "cpu")
    assert torch.equal(c.take(0, BLOCK + 3)[BLOCK - 2 : BLOCK + 3], chunks[1])
    assert torch.equal(first[3:], chunks[0][:2])
    assert not torch.equal(UniformStream(8, "cpu").take(0, 5), first)
    with pytest.raises(ValueError):
        a.take(0, 1)  # behind the dropped blocks


def rule_scores(logits: torch.Tensor) -> Scores:
    return Scores(argmax=logits.argmax(-1).numpy(), logits=logits)


def test_rule_advances_the_position_by_the_committed_tokens():
    rule = sampling_rule(1.0, 0, 1.0, seed=0, device="cpu")
    logits = torch.zeros(3, 4)
    logits[:, 2] = 50.0  # p(2) ~ 1: a draft of 2s is accepted
    assert rule(Draft([2, 2]), rule_scores(logits)) == (2, 2)
    assert rule.position == 3
    logits[1] = 0.0
    logits[1, 0] = 50.0
    assert rule(Draft([2, 2]), rule_scores(logits)) == (1, 0)
    assert rule.position == 5


def test_rule_uses_forced_uniforms(monkeypatch):
    """Branches at the rule level, with the stream replaced by fixed uniforms."""
    forced = torch.tensor([[0.9, 0.05], [0.1, 0.5], [0.5, 0.5]], dtype=torch.float64)  # [ACCEPT, SAMPLE]
    monkeypatch.setattr(UniformStream, "take", lambda self, position, n: forced[:n])
    logits = torch.log(t([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]]))
    rule = sampling_rule(1.0, 0, 1.0, seed=0, device="cpu")
    assert rule(Draft([1, 1]), rule_scores(logits)) == (0, 0)  # u_sample 0.05 -> id 0, d0 rejected
    q = np.array([[0.1, 0.8, 0.1], [0.3, 0.4, 0.3]], dtype=np.float32)
    # node 0: 0.9 * 0.8 >= 0.6 -> rejected; residual (0, 0, 0.2) -> id 2
    assert rule(Draft([1, 1], probs=q), rule_scores(logits)) == (0, 2)
    forced[0, 0] = 0.5  # 0.5 * 0.8 < 0.6: accepted; node 1: 0.1 * 0.4 < 0.2 accepted; bonus u 0.5 -> id 2
    assert rule(Draft([1, 1], probs=q), rule_scores(logits)) == (2, 2)


def test_rule_refuses_what_it_cannot_verify_exactly():
    rule = sampling_rule(1.0, 0, 1.0, seed=0, device="cpu")
    logits = torch.zeros(3, 4)
    with pytest.raises(PLDError, match="tree"):
        rule(Draft([1, 2], parents=[-1, -1]), rule_scores(logits))
    with pytest.raises(PLDError, match="logits"):
        rule(Draft([1, 2]), Scores(argmax=np.zeros(3, dtype=np.int64)))
    with pytest.raises(PLDError, match="positions"):
        rule(Draft([1]), rule_scores(logits))
    q = np.full((2, 4), 0.25, dtype=np.float32)
    q[1, 2] = 0.0
    with pytest.raises(PLDError, match="probability 0"):
        rule(Draft([1, 2], probs=q), rule_scores(logits))
    q[1, 2] = -0.1
    with pytest.raises(PLDError, match=">= 0"):
        rule(Draft([1, 2], probs=q), rule_scores(logits))
    # an unnormalised q is normalised: 4 * 0.5 ones -> uniform, the same as p: everything accepted
    assert rule(Draft([1, 2], probs=np.full((2, 4), 0.5, dtype=np.float32)), rule_scores(logits))[0] == 2


def test_seed_none_draws_and_records_a_seed():
    a, b = SamplingRule(1.0, 0, 1.0, None, "cpu"), SamplingRule(1.0, 0, 1.0, None, "cpu")
    assert isinstance(a.seed, int) and a.seed != b.seed
    assert "seed=" in repr(a)


# -- seeded generation on a tiny Llama --------------------------------------------------------

PROMPT = [3, 17, 5, 3, 17, 5, 9, 3, 17, 5, 3, 17]


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(vocab_size=64)


def drafters(vocab: int = 64):
    return {
        "none": lambda: lookup.create("none"),
        "unfold": lambda: lookup.create("unfold"),
        "random": lambda: RandomDrafter(vocab, length=4, seed=1),
        "fixed": lambda: FixedDrafter([3, 17, 5, 3]),
    }


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (2.0, 8, 0.9)])
def test_same_seed_same_output_for_every_deterministic_drafter(tiny, temperature, top_k, top_p):
    """The committed token at each position is the inverse CDF of the target's law at the
    position's uniform, whatever was drafted: every deterministic drafter reproduces ``none``."""
    kw = dict(temperature=temperature, top_k=top_k, top_p=top_p)
    for seed in range(3):
        outs = {name: decoding.generate(tiny, PROMPT, make(), 30, seed=seed, **kw) for name, make in drafters().items()}
        reference = outs["none"].tokens
        for name, out in outs.items():
            assert out.tokens == reference, name
        again = decoding.generate(tiny, PROMPT, drafters()["random"](), 30, seed=seed, **kw)
        assert again.tokens == reference
    assert sum(o.stats.accepted for o in outs.values()) > 0  # some drafts were accepted


def test_different_seeds_give_different_outputs(tiny):
    outs = {tuple(decoding.generate(tiny, PROMPT, lookup.create("unfold"), 20, temperature=3.0, seed=s).tokens)
            for s in range(4)}
    assert len(outs) > 1


def test_q_drafter_is_reproducible(tiny):
    weights = np.ones((64, 64, 64))
    runs = [
        decoding.generate(tiny, PROMPT, QDrafter(weights, length=3, seed=5), 30, temperature=1.5, seed=11)
        for _ in range(2)
    ]
    assert runs[0].tokens == runs[1].tokens and len(runs[0].tokens) == 30
    assert runs[0].stats.drafted > 0


@pytest.mark.parametrize("name", ["none", "unfold", "random"])
def test_near_zero_temperature_is_greedy(tiny, name):
    greedy = decoding.generate(tiny, PROMPT, drafters()[name](), 40, temperature=0.0).tokens
    for seed in range(2):
        sampled = decoding.generate(tiny, PROMPT, drafters()[name](), 40, temperature=1e-4, seed=seed).tokens
        assert sampled == greedy
