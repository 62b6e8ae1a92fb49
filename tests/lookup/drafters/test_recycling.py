"""The recycling drafter: its best-first tree against brute force, its learning, its sizing, and
the loop's plumbing of the target's top-k rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling_toys import RandomTreeDrafter
from toys import FixedDrafter, tiny_llama

import decoding
import lookup
from pldcore.setting import reference_setting
from lookup.base import Draft, Drafter
from pldcore.cost import CPU_SMOLLM2, CostProfile
from lookup.drafters.recycling import DEFAULT_BASE_PARAMS, DEFAULT_BRANCHES, MAX_DEPTH, PRIOR_CHAIN, RecyclingDrafter


def brute_force_probs(d: RecyclingDrafter, chain, last: int, limit: int) -> list[float]:
    """P(node) of every node of the full candidate tree down to depth ``limit``, best first."""
    chain_p, rank_p = d.chain_acceptance(), d.rank_acceptance()
    out = []

    def expand(token, p_node, depth, level):
        if level == limit:
            return
        cands = {}
        if 0 <= depth < len(chain):
            cands[chain[depth]] = (chain_p[min(depth, MAX_DEPTH - 1)], depth + 1)
        row = d.row_of(token)
        for rank, t in enumerate([] if row is None else row.tolist()):
            p, nd = cands.get(t, (0.0, -1))
            cands[t] = (1 - (1 - p) * (1 - rank_p[rank]), nd)
        total = sum(p for p, _ in cands.values())
        if total > 1:  # at most one candidate is next: the likeliest keeps its own, the rest share what is left
            best = max(cands, key=lambda t: cands[t][0])  # the first of equals, as the kernel takes it
            scale = (1 - cands[best][0]) / (total - cands[best][0])
            cands = {t: (p if t == best else p * scale, nd) for t, (p, nd) in cands.items()}
        for t, (p, nd) in cands.items():
            out.append(p_node * p)
            expand(t, p_node * p, nd, level + 1)

    expand(last, 1.0, 0, 0)
    return sorted(out, reverse=True)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.dictionaries(st.integers(0, 5), st.lists(st.integers(0, 5), min_size=3, max_size=3, unique=True)),
    chain=st.lists(st.integers(0, 5), max_size=6),
    last=st.integers(0, 5),
    limit=st.integers(1, 6),
    hits=st.lists(st.floats(0, 5), min_size=3, max_size=3),
)
def test_best_first_takes_the_most_probable_nodes_parents_first(rows, chain, last, limit, hits):
    d = RecyclingDrafter(setting=reference_setting(), base=FixedDrafter(chain), width=3, max_nodes=limit)
    d.reset([last])
    top = np.array(list(rows.values()), dtype=np.int64).reshape(-1, 3)
    d.observe_top(np.array(list(rows), dtype=np.int64), top, np.zeros(top.shape, np.float16))
    d._ranks.trials[:], d._ranks.hits[:] = 5.0, hits  # learnt rates, any
    tokens, parents, probs = d.best_first(np.asarray(chain, dtype=np.int64), limit)
    assert all(-1 <= p < i for i, p in enumerate(parents))  # parents first: any prefix is a tree
    assert all(probs[i] <= (1.0 if p < 0 else probs[p]) + 1e-12 for i, p in enumerate(parents))
    for node in range(-1, len(tokens)):  # siblings are distinct
        kids = tokens[parents == node]
        assert len(set(kids.tolist())) == len(kids)
    assert probs.tolist() == pytest.approx(brute_force_probs(d, chain, last, limit)[:limit])


def step(d: RecyclingDrafter, truth: list[int], pos: int, rows) -> int:
    """One simulated greedy step against ``truth`` (the whole sequence); returns the new position."""
    draft = d.propose(16)
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(draft.parents if draft.parents is not None else range(-1, len(draft) - 1)):
        kids.setdefault(int(p), []).append(i)
    node, accepted = -1, 0
    while pos + accepted < len(truth):
        nxt = next((i for i in kids.get(node, []) if draft.tokens[i] == truth[pos + accepted]), None)
        if nxt is None:
            break
        node, accepted = nxt, accepted + 1
    new = truth[pos : pos + accepted + 1]
    d.extend(new)
    d.observe(draft, accepted)
    top = np.array([rows(t) for t in [truth[pos - 1], *new[:-1]]])
    d.observe_top(np.array([truth[pos - 1], *new[:-1]]), top, np.zeros(top.shape, np.float16))
    return pos + len(new)


def test_learns_that_the_recycled_top_token_is_right():
    truth = [i % 50 for i in range(400)]  # each token is followed by its successor
    d = RecyclingDrafter(setting=reference_setting(), base=None, width=2, max_nodes=16)
    d.reset(truth[:1])
    pos = 1
    while pos < 300:
        pos = step(d, truth, pos, lambda t: [(t + 1) % 50, (t + 7) % 50])
    assert d.rank_acceptance()[0] > 0.9 and d.rank_acceptance()[1] < 0.1
    draft = d.propose(16)
    assert draft.tokens[:10].tolist() == truth[pos : pos + 10]  # the top chain, first


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_rows_learn_as_each_committed_token_checks_the_row_before_it(data):
    """What a step teaches of the rows' ranks, against a token-by-token reference: each committed token
    is a trial of every rank of its predecessor's row (as it was at propose), a hit at the first
    rank holding it; a token without a row teaches nothing."""
    width = data.draw(st.integers(1, 4))
    d = RecyclingDrafter(setting=reference_setting(), base=None, width=width, max_nodes=4)
    d.reset([data.draw(st.integers(0, 9))])
    vocab = st.integers(0, 12)
    for _ in range(data.draw(st.integers(1, 5))):
        seen = data.draw(st.lists(vocab, min_size=1, max_size=5))
        rows = np.array(data.draw(st.lists(st.lists(vocab, min_size=width, max_size=width),
                                           min_size=len(seen), max_size=len(seen))))
        d.observe_top(np.array(seen), rows, np.full(rows.shape, 0.1, dtype=np.float16))
        trials, hits = d._ranks.trials.copy() * d.decay, d._ranks.hits.copy() * d.decay
        draft = d.propose(4)
        new = data.draw(st.lists(vocab, max_size=6))  # none: a step that committed nothing
        for before, token in zip([d._last, *new[:-1]], new):
            row = d.row_of(before)
            if row is not None:
                trials += 1
                at = np.flatnonzero(row == token)
                hits[at[:1]] += 1
        d.extend(new)
        d.observe(draft, 0)
        assert np.allclose(d._ranks.trials, trials) and np.allclose(d._ranks.hits, hits)


def test_learns_that_the_lookup_chain_is_wrong_and_stops_sending_it():
    truth = list(range(300))
    d = RecyclingDrafter(base=FixedDrafter([999] * 8), width=1, max_nodes=16, setting=reference_setting(CPU_SMOLLM2))
    d.reset(truth[:1])
    pos, sent = 1, []
    while pos < 100:
        sent.append(len(d.propose(16)))
        pos = step(d, truth, pos, lambda t: [t + 2])  # rows are always wrong too
    assert sent[0] > 0 and sent[-10:] == [0] * 10
    assert d.chain_acceptance()[0] < 0.1


def test_a_flat_profile_sends_the_whole_budget_and_a_cpu_one_trims():
    d = RecyclingDrafter(base=FixedDrafter(range(40)), max_nodes=32, setting=reference_setting(CostProfile.flat(64)))
    d.reset([1])
    d.observe_top(np.arange(64), np.tile(np.arange(8), (64, 1)), np.zeros((64, 8), np.float16))
    assert len(d.propose(32)) == 32
    cpu = RecyclingDrafter(base=FixedDrafter(range(40)), max_nodes=32, setting=reference_setting(CPU_SMOLLM2))
    cpu.reset([1])
    cpu.observe_top(np.arange(64), np.tile(np.arange(8), (64, 1)), np.zeros((64, 8), np.float16))
    assert 0 < len(cpu.propose(32)) < 32


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        RecyclingDrafter(setting=reference_setting(), max_nodes=0)
    with pytest.raises(ValueError):
        RecyclingDrafter(setting=reference_setting(), decay=0.0)


class TopRecorder(RandomTreeDrafter):
    """Random trees (so accepted paths leave the first branch), recording every observe_top."""

    wants_top = 3

    def reset(self, prompt):
        super().reset(prompt)
        self.calls = []

    def observe_top(self, tokens, top, probs):
        self.calls.append((np.asarray(tokens).tolist(), np.asarray(top).tolist(), np.asarray(probs)))


def test_the_loop_hands_the_drafter_the_top_rows_of_every_committed_token():
    target = tiny_llama(vocab_size=32, seed=4)
    prompt = [3, 7, 1, 3, 7, 1, 9, 3, 7]
    truth = prompt + decoding.generate(target, prompt, lookup.create("none"), 30).tokens
    d = TopRecorder(32, nodes=6, truth=truth, hit=0.7, seed=1)
    out = decoding.generate(target, prompt, d, 30)
    assert out.stats.accepted > 5  # trees were accepted, deep paths included
    seq = prompt + out.tokens
    with torch.no_grad():  # teacher forcing: every position's top-3 in one forward
        logits = target.model(torch.tensor([seq])).logits[0]
    probs, ids = torch.softmax(logits, dim=-1).topk(3, dim=-1)
    expected = ids[: len(seq) - 1].tolist()  # the newest token is never read
    prompt_call, *step_calls = d.calls
    assert len(step_calls) == out.stats.forwards
    tokens, top, p = list(prompt_call[0]), list(prompt_call[1]), [prompt_call[2]]
    for (call_tokens, call_top, call_probs), s in zip(step_calls, out.stats.steps):
        assert len(call_tokens) == s.committed  # the committed tokens only, never a rejected node
        tokens += call_tokens
        top += call_top
        p.append(call_probs)
    assert tokens == seq[:-1]
    assert top == expected
    p = np.concatenate(p)
    assert p.dtype == np.float16
    np.testing.assert_allclose(p.astype(np.float32), probs[: len(seq) - 1].numpy(), rtol=2e-3, atol=1e-4)


def test_adaptive_passes_the_rows_to_a_wrapped_drafter_that_wants_them():
    import lookup

    wrapped = lookup.create("adaptive", base="recycling")
    assert wrapped.wants_top == 8 and lookup.create("adaptive").wants_top == 0
    wrapped.reset([1, 2])
    wrapped.observe_top(np.array([1]), np.array([[2, 3, 4, 5, 6, 7, 8, 9]]), np.zeros((1, 8), np.float16))
    assert wrapped.base.row_of(1).tolist() == [2, 3, 4, 5, 6, 7, 8, 9]


def test_the_match_length_is_the_lookup_drafters():
    assert RecyclingDrafter(setting=reference_setting(), base=None).match_length() is None
    d = RecyclingDrafter(setting=reference_setting())
    d.reset([4, 5, 6, 4, 5])
    assert d.match_length() == d.base.match_length() == 2
    assert RecyclingDrafter(setting=reference_setting(), base=FixedDrafter([1])).match_length() is None  # a base that reports none


def test_branches_send_every_occurrences_continuation_and_learn_which_rank_is_right():
    # [5, 6] occurred three times, continued by 1, 2 and 3; the truth is always the oldest (3)
    prompt = [5, 6, 3, 7, 5, 6, 2, 8, 5, 6, 1, 9, 5, 6]
    # continuations that stop at the end of the text (round the loop, the newest one's nodes would
    # fill the budget before its siblings)
    d = RecyclingDrafter(branches=4, max_nodes=16, setting=reference_setting(CostProfile.flat(64)),
                         base_params={**DEFAULT_BASE_PARAMS, "loop": False})
    d.reset(prompt)
    draft = d.propose(16)
    roots = [int(t) for t, p in zip(draft.tokens, draft.parents) if p < 0]
    assert roots[:3] == [1, 2, 3]  # ties: the newest occurrence first
    before, bucket = d.sibling_acceptance()[1], d.bucket()
    d.extend([3])
    d.observe(draft, 0)
    assert d.sibling_acceptance()[1] > before  # the third sibling was right
    # the first child was wrong: learnt after the match the draft was copied after (2 tokens), not now (3)
    assert d.chain_acceptance(bucket)[0] < PRIOR_CHAIN[bucket][0] and d.bucket() != bucket
    assert d.chain_acceptance()[0] == PRIOR_CHAIN[d.bucket()][0] and d.params()["branches"] == 4


def test_branches_default_to_a_tree_for_the_suffix_automaton_and_to_the_base_s_draft_otherwise():
    prompt = [5, 6, 3, 7, 5, 6, 2, 8, 5, 6]
    # not cost-aware: the whole tree, as the budget allows
    # continuations that stop at the end of the text, so that both fit in the budget
    no_loop = {**DEFAULT_BASE_PARAMS, "loop": False}
    chain = RecyclingDrafter(setting=reference_setting(), branches=1, cost_aware=False, base_params=no_loop)
    tree = RecyclingDrafter(setting=reference_setting(), cost_aware=False, base_params=no_loop)
    for d in (chain, tree):
        d.reset(prompt)
    assert tree.params()["branches"] == DEFAULT_BRANCHES and tree.base.params()["branches"] == DEFAULT_BRANCHES
    assert chain.params()["branches"] == 1 and "branches" not in chain.base.params()
    roots = lambda draft: sorted(int(t) for t, p in zip(draft.tokens, draft.parents) if p < 0)
    # the chain copies one occurrence (here the earliest: the newest runs into the suffix), the tree both
    assert roots(chain.propose(8)) == [3] and roots(tree.propose(8)) == [2, 3]
    assert RecyclingDrafter(setting=reference_setting(), base=FixedDrafter([1])).params()["branches"] == 1
    with pytest.raises(ValueError):
        RecyclingDrafter(setting=reference_setting(), branches=0)
    with pytest.raises(ValueError):
        RecyclingDrafter(setting=reference_setting(), base=FixedDrafter([1]), branches=2)


class MatchedDrafter(FixedDrafter):
    """The same chain every step, reported as copied after a match of ``match`` tokens."""

    def __init__(self, tokens, match: int) -> None:
        super().__init__(tokens)
        self.match = match

    def match_length(self) -> int:
        return self.match


def floored(prior, match: int) -> list[float]:
    """The documented floor of a chain's estimates: node d (its d parents right, the match then
    ``match + d`` tokens long) is at least the first-node prior of the long level ``match + d`` reaches."""
    from lookup.drafters.recycling import LONG_EDGES, LONG_PRIORS

    out = []
    for d, p in enumerate(np.asarray(prior).tolist()):
        level = sum(match + d >= edge for edge in LONG_EDGES)
        out.append(max(p, LONG_PRIORS[level - 1][0]) if level else p)
    return out


def shortest(row: tuple[int, int]) -> int:
    """The shortest match of statistics row ``row`` (long level, match-length bucket)."""
    from lookup.acceptance import BUCKET_EDGES
    from lookup.drafters.recycling import LONG_EDGES

    level, b = row
    return LONG_EDGES[level - 1] if level else (0, *BUCKET_EDGES)[b]


def test_with_a_history_the_tree_copies_what_an_earlier_request_went_on_with_and_learns_per_request():
    flat = reference_setting(CostProfile.flat(64))
    drafts = {}
    for history in (False, True):
        d = RecyclingDrafter(setting=flat, history=history, max_nodes=8)
        assert d.keeps_history() is history and d.params()["history"] is history
        d.reset([5, 6, 7, 3, 5, 6, 7])  # the first request: "5 6 7" went on with 3 once
        d.observe_top(np.array([6]), np.array([[1, 2, 3, 4, 11, 12, 13, 14]]), np.zeros((1, 8), np.float16))
        bucket, draft = d.bucket(), d.propose(8)
        assert draft.tokens[0] == 3
        d.extend([8])
        d.observe(draft, 0)  # wrong: learnt
        assert d.chain_acceptance(bucket)[0] < PRIOR_CHAIN[bucket][0]
        d.extend([9, 10])
        d.reset([1, 2, 6, 7, 8])  # the second request matches the first's "6 7 8"
        # the tree's statistics and rows are per request, with a history or without
        assert np.array_equal(d.rank_acceptance(), RecyclingDrafter(setting=flat, max_nodes=8).rank_acceptance())
        assert d.chain_acceptance(bucket)[0] == PRIOR_CHAIN[bucket][0] and d.row_of(6) is None
        drafts[history] = d.propose(8).tokens.tolist()
    assert drafts[True][:2] == [9, 10] and 9 not in drafts[False]


def test_a_history_needs_the_lookup_drafter_by_name():
    with pytest.raises(ValueError, match="by name"):
        RecyclingDrafter(setting=reference_setting(), base=FixedDrafter([1]), history=True)
    spec = lookup.parse_drafter("recycling:history=true")
    assert spec.wrapped[0].params["history"] is True
    assert "history" not in lookup.parse_drafter("recycling").wrapped[0].params


def test_a_chain_that_holds_is_judged_by_the_match_it_reaches():
    """After a 6-token match the chain's node 10 has 16 tokens of match behind it once its parents are
    right: never judged below the 16-token level's first node (a second turn that copies the first
    answer from a short match on the chat template goes deep)."""
    from lookup.drafters.recycling import LONG_PRIORS

    d = RecyclingDrafter(base=MatchedDrafter(range(100, 164), 6), setting=reference_setting())
    d.reset([1])
    estimate = d.chain_acceptance()
    assert estimate.tolist() == floored(PRIOR_CHAIN[d.bucket()], 6)
    assert (estimate[10:26] >= LONG_PRIORS[0][0]).all() and (estimate[26:] >= LONG_PRIORS[1][0]).all()
    assert estimate[:10].tolist() == PRIOR_CHAIN[d.bucket()][:10].tolist()  # below 16 tokens: the bucket's own
    # a row given alone is read at its shortest match; with the match, at that match
    assert d.chain_acceptance((0, 4)).tolist() == floored(PRIOR_CHAIN[0, 4], 6)
    assert d.chain_acceptance((0, 4), 9).tolist() == floored(PRIOR_CHAIN[0, 4], 9)


def test_the_chain_is_judged_by_its_match_length_bucket_and_learnt_there_alone():
    from lookup.acceptance import match_bucket

    short, long = (RecyclingDrafter(base=MatchedDrafter(range(10, 20), m), width=1, setting=reference_setting()) for m in (1, 12))
    for d in (short, long):
        d.reset([1])
    # before any feedback: the prior of the bucket, a longer match likelier
    row = (0, match_bucket(1))
    assert short.bucket() == row and long.bucket() == (0, match_bucket(12))
    assert short.chain_acceptance().tolist() == floored(PRIOR_CHAIN[row], 1)
    assert long.chain_acceptance()[0] > short.chain_acceptance()[0]
    draft = short.propose(8)
    short.extend([10, 11, 99])  # the first two nodes right, the third wrong
    short.observe(draft, 2)
    learnt = short.chain_acceptance()
    prior = np.array(floored(PRIOR_CHAIN[row], 1))
    assert np.all(learnt[:2] > prior[:2]) and learnt[2] < prior[2] and learnt[3:].tolist() == prior[3:].tolist()
    for other in np.ndindex(PRIOR_CHAIN.shape[:2]):
        if other != row:
            assert short.chain_acceptance(other).tolist() == floored(PRIOR_CHAIN[other], shortest(other))


@pytest.mark.parametrize("match, level", [(10, 0), (15, 0), (16, 1), (31, 1), (32, 2), (63, 2), (64, 3), (500, 3)])
def test_a_long_match_has_a_level_of_its_own_and_its_chain_goes_deeper(match, level):
    """The shared bucketing ends at 10+ tokens; a chain copied after 16, 32 or 64 tokens of match is
    judged by a level of its own, likelier with each level, so that where nodes cost (the H100 serving
    a batch of 32) the tree sends more of the chain (a turn that copies the one before: Gemma's loops)."""
    from lookup.acceptance import match_bucket
    from lookup.drafters.recycling import LONG_PRIORS
    from pldcore.hardware import profile_named

    d = RecyclingDrafter(base=MatchedDrafter(range(100, 164), match), setting=reference_setting().with_profile(profile_named("h100-8b-b32")))
    d.reset([1])
    d.observe_top(np.array([1]), np.array([[7, 8, 9, 10, 11, 12, 13, 14]]), np.full((1, 8), 0.1, dtype=np.float16))
    assert d.bucket() == (level, match_bucket(match))
    estimate = d.chain_acceptance()
    if level:
        row = [LONG_PRIORS[level - 1][0]] + [LONG_PRIORS[level - 1][1]] * (len(estimate) - 1)
        assert estimate.tolist() == floored(row, match)
    else:
        assert estimate.tolist() == floored(PRIOR_CHAIN[0, match_bucket(match)], match)
    draft = d.propose(63)
    chain = 0  # how deep the lookup chain goes in the tree sent
    while chain < len(draft) and draft.tokens[chain] == 100 + chain and draft.parents[chain] == chain - 1:
        chain += 1
    shallower = RecyclingDrafter(base=MatchedDrafter(range(100, 164), 12), setting=d.setting)
    shallower.reset([1])
    shallower.observe_top(np.array([1]), np.array([[7, 8, 9, 10, 11, 12, 13, 14]]), np.full((1, 8), 0.1, dtype=np.float16))
    base = shallower.propose(63)
    base_chain = 0
    while base_chain < len(base) and base.tokens[base_chain] == 100 + base_chain and base.parents[base_chain] == base_chain - 1:
        base_chain += 1
    # below 16 tokens, the same bucket: the floor alone tells the chains apart, a longer match deeper
    assert (chain > base_chain) if level else (chain >= base_chain if match >= 12 else chain <= base_chain)


@pytest.mark.parametrize("match", [5, 12, 40])
def test_where_nodes_are_free_a_likely_chain_takes_the_whole_budget_and_no_row_outbids_it(match):
    """A node's candidates are different tokens, at most one of them next: a row's token beside a chain
    node that a match makes likely gets what the chain leaves, not its rank's rate (0.45 first). On a
    flat profile (64 tokens a forward cost one) the tree then spends its budget down the chain, as a
    turn that copies the one before needs, where before a dozen of the root's row tokens cut it short."""
    from pldcore.hardware import profile_named

    d = RecyclingDrafter(base=MatchedDrafter(range(100, 164), match), setting=reference_setting().with_profile(profile_named("flat")))
    d.reset([1])
    d.observe_top(np.array([1]), np.array([[7, 8, 9, 10, 11, 12, 13, 14]]), np.full((1, 8), 0.1, dtype=np.float16))
    # past the chain's 64 nodes, the root's 8 row tokens: they share what the chain's first node leaves
    tokens, parents, probs = d.best_first(d._lookup(63), 72, d.bucket(), match)
    root = parents == -1
    assert tokens[root].tolist() == [100, 7, 8, 9, 10, 11, 12, 13, 14]
    assert probs[0] == pytest.approx(d.chain_acceptance()[0]) and probs[root].sum() == pytest.approx(1.0)
    draft = d.propose(63)
    chain = draft.tokens.tolist() == list(range(100, 163)) and draft.parents.tolist() == list(range(-1, 62))
    assert chain == (match >= 12)  # after 5 tokens the chain is less sure, and the row's first token is worth a node


def test_top_ids_must_come_a_row_per_token():
    drafter = RecyclingDrafter(setting=reference_setting())
    with pytest.raises(ValueError, match="rows of top ids"):
        drafter.observe_top(np.array([1, 2, 3]), np.zeros((2, 8), dtype=np.int64), np.zeros((2, 8)))
