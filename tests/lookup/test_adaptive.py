"""The adaptive drafter: its policy against brute force, and its learning on scripted drafters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.adaptive import BUCKET_EDGES, COST_REFRESH, UNKNOWN_MATCH, AdaptiveDrafter
from lookup.base import EMPTY_DRAFT, Draft, Drafter
from lookup.cost import CPU_SMOLLM2, CostProfile


class Scripted(Drafter):
    """Proposes `tokens`; reports a fixed match length."""

    name = "scripted-test"

    def __init__(self, tokens, match=5):
        super().__init__()
        self.tokens, self.match = list(tokens), match

    def propose(self, budget):
        return Draft(self.tokens[:budget]) if budget > 0 else EMPTY_DRAFT

    def match_length(self):
        return self.match


def step(drafter: AdaptiveDrafter, truth: list[int]) -> int:
    """One simulated decoding step against a target whose output is `truth`; returns tokens sent."""
    draft = drafter.propose(32)
    accepted = next((i for i, t in enumerate(draft.tokens) if t != truth[i]), len(draft))
    committed = truth[: accepted + 1]
    drafter.extend(committed)
    drafter.observe(draft, accepted)
    return len(draft)


@settings(max_examples=100, deadline=None)
@given(acc=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_best_length_maximises_expected_tokens_per_second(acc):
    """Without the chain model, each forward is judged alone."""
    d = AdaptiveDrafter(base=Scripted(range(12)), profile=CPU_SMOLLM2, max_tokens=12, chain_model=False)
    d.acceptance = lambda bucket: np.asarray(acc + [0.0] * (12 - len(acc)))
    k = d.best_length(0, len(acc))

    def rate(n):
        # a fresh drafter (no context yet) prices forwards in its first context bucket
        return (1 + sum(np.prod(acc[: i + 1]) for i in range(n))) / CPU_SMOLLM2.cost(n + 1, COST_REFRESH // 2)

    assert rate(k) == pytest.approx(max(rate(n) for n in range(len(acc) + 1)))


@settings(max_examples=50, deadline=None)
@given(acc=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_with_the_chain_model_best_length_plans_the_chain(acc):
    from lookup.policy import forward_costs, plan_chain

    d = AdaptiveDrafter(base=Scripted(range(12)), profile=CPU_SMOLLM2, max_tokens=12)
    d.acceptance = lambda bucket: np.asarray(acc + [0.0] * (12 - len(acc)))
    assert d.best_length(0, len(acc)) == plan_chain(np.asarray(acc), forward_costs(CPU_SMOLLM2, 12, COST_REFRESH // 2))


@pytest.mark.parametrize("chain_model", [True, False])
def test_stops_drafting_when_drafts_are_wrong_and_resumes_when_right(chain_model):
    base = Scripted([7] * 10)
    d = AdaptiveDrafter(base=base, profile=CPU_SMOLLM2, chain_model=chain_model)
    d.reset([1, 2, 3])
    sent = [step(d, [9] * 11) for _ in range(40)]  # the target never says 7
    # a second token costs only ~1.1x one on this CPU, so a small chance keeps it worth a while
    assert sent[0] > 0 and sum(n > 0 for n in sent) <= 25 and sent[-10:] == [0] * 10
    sent = [step(d, [7] * 11) for _ in range(30)]  # now it always does: learnt through the free check
    # the plan waits a little longer for the free checks to confirm the chain before sending again
    resumes = 8 if chain_model else 5
    assert sent[:resumes].count(0) < resumes and sent[-1] >= 8


def test_flat_gpu_profile_sends_everything_a_decent_match_offers():
    d = AdaptiveDrafter(base=Scripted(range(20), match=8), profile=CostProfile.flat(64), max_tokens=32)
    d.reset([1])
    assert len(d.propose(32)) == 20


def test_observe_counts_tried_and_accepted_nodes():
    d = AdaptiveDrafter(base=Scripted([5, 6, 7, 8], match=3), profile=CostProfile.flat(64), max_tokens=8, decay=1.0)
    d.reset([1])
    draft = d.propose(8)
    assert len(draft) == 4
    d.extend([5, 6, 0])  # two accepted, then the target's own token
    d.observe(draft, 2)
    b = d._bucket()
    assert d._depth.trials[b, :4].tolist() == [1, 1, 1, 0] and d._depth.hits[b, :4].tolist() == [1, 1, 0, 0]


def test_propose_has_no_side_effects_on_proposals():
    d = AdaptiveDrafter(base=Scripted(range(10)))
    d.reset([1, 2])
    assert all(a.tokens.tolist() == b.tokens.tolist() for a, b in itertools.pairwise([d.propose(8) for _ in range(3)]))


def test_long_contexts_make_multi_token_forwards_dearer_so_drafts_shrink():
    # free to verify 32 tokens after 100 cached tokens; 6x one token after 4,000
    profile = CostProfile((1, 33), (1.0, 1.0), contexts=(100, 4000), grid=((1.0, 1.0), (1.0, 6.0)))
    d = AdaptiveDrafter(base=Scripted(range(20), match=8), profile=profile, max_tokens=32)
    d.reset([1] * 50)
    short = len(d.propose(32))
    d.reset([1] * 4000)
    long = len(d.propose(32))
    assert short == 20 and long < short
    d.extend([5] * 10)  # the table follows the context as it grows (and back after a reset)
    assert len(d.propose(32)) == long
    d.reset([1] * 50)
    assert len(d.propose(32)) == short


class NoMatchLength(Drafter):
    """Proposes `tokens` and reports no match length (the base class default)."""

    name = "no-match-length-test"

    def __init__(self, tokens):
        super().__init__()
        self.tokens = list(tokens)

    def propose(self, budget):
        return Draft(self.tokens[:budget]) if budget > 0 else EMPTY_DRAFT


def test_a_base_without_a_match_length_counts_as_a_middling_match():
    d = AdaptiveDrafter(base=NoMatchLength(range(5)))
    d.reset([1, 2])
    assert d.match_length() is None
    assert d._bucket() == int(np.searchsorted(BUCKET_EDGES, UNKNOWN_MATCH, side="right"))
    reporting = AdaptiveDrafter(base=Scripted(range(5), match=UNKNOWN_MATCH))
    reporting.reset([1, 2])
    assert reporting.match_length() == UNKNOWN_MATCH
    assert reporting.propose(8).tokens.tolist() == d.propose(8).tokens.tolist()


def test_the_match_length_is_the_wrapped_drafters():
    d = AdaptiveDrafter()
    d.reset([1, 2, 3, 1, 2])
    assert d.match_length() == d.base.match_length() == 2


def test_a_missing_base_is_refused_by_name():
    with pytest.raises(TypeError, match="base must be a drafter name or instance"):
        AdaptiveDrafter(base=None)


class Agreeing(Scripted):
    """A scripted drafter that also reports how its match's occurrences agree with its chain:
    ``occurrences`` of them, ``share`` followed by the first token and all of those by the rest."""

    def __init__(self, tokens, match=3, evidence=(4, 0.75)):
        super().__init__(tokens, match)
        self.evidence, self.asked = evidence, []

    def chain_agreement(self, draft):
        self.asked.append(draft.tolist())
        if self.evidence is None:
            return None
        occurrences, share = self.evidence
        agreeing = round(occurrences * share)
        support = np.array([occurrences] + [agreeing] * (len(draft) - 1), dtype=np.int64)
        return support, np.full(len(draft), agreeing, dtype=np.int64)


def test_the_chain_comes_from_the_models_of_acceptance():
    from lookup import first_token, later_nodes

    drafter = AdaptiveDrafter(base=Agreeing([7, 8, 9, 10]))
    drafter.reset([1, 2, 3])
    full, bucket = drafter.candidate(32)
    own = drafter.acceptance(bucket)[:4]
    chain = drafter.chain_acceptance(bucket, 4, full.tokens)
    assert drafter.base.asked == [[7, 8, 9, 10]]
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75)))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree))
    assert drafter.propose(32).tokens.tolist() == [7, 8, 9, 10][: drafter.chain_cut(chain)]
    # each model can be off alone; without evidence (a draft from the history), the statistics alone
    first_only = AdaptiveDrafter(base=Agreeing([7, 8, 9, 10]), chain_model=False)
    first_only.reset([1, 2, 3])
    assert first_only.chain_acceptance(bucket, 4, full.tokens)[1:].tolist() == own[1:].tolist()
    later_only = AdaptiveDrafter(base=Agreeing([7, 8, 9, 10]), first_token_model=False)
    later_only.reset([1, 2, 3])
    assert later_only.chain_acceptance(bucket, 4, full.tokens)[0] == own[0]
    off = AdaptiveDrafter(base=Agreeing([7, 8, 9, 10]), first_token_model=False, chain_model=False)
    off.reset([1, 2, 3])
    assert off.chain_acceptance(bucket, 4, full.tokens).tolist() == own.tolist() and off.base.asked == []
    silent = AdaptiveDrafter(base=Agreeing([7, 8, 9, 10], evidence=None))
    silent.reset([1, 2, 3])
    assert silent.chain_acceptance(bucket, 4, full.tokens).tolist() == own.tolist()
    assert silent.chain_acceptance(bucket, 4).tolist() == own.tolist()  # no chain given
    with pytest.raises(ValueError, match="fewer than the 4 nodes"):
        drafter.chain_acceptance(bucket, 4, full.tokens[:3])


def test_the_first_token_model_sends_more_where_occurrences_agree():
    """Unanimous occurrences of a long match earn a longer draft than split ones, all else equal."""
    sent = {}
    for share in (1.0, 0.1):
        drafter = AdaptiveDrafter(base=Agreeing(list(range(10, 30)), match=4, evidence=(8, share)), chain_model=False)
        drafter.reset([1, 2, 3])
        sent[share] = len(drafter.propose(32))
    assert sent[1.0] > sent[0.1]


def test_the_chain_model_sends_more_where_occurrences_keep_agreeing():
    """Occurrences that follow the whole chain earn a longer draft than the draft's own occurrence alone."""
    sent = {}
    for occurrences in (8, 1):
        drafter = AdaptiveDrafter(base=Agreeing(list(range(10, 30)), match=4, evidence=(occurrences, 1.0)),
                                  first_token_model=False)  # the first node from the statistics either way
        drafter.reset([1, 2, 3])
        sent[occurrences] = len(drafter.propose(32))
    assert sent[8] > sent[1]


class FromHistory(Agreeing):
    """The same evidence, for a draft copied from earlier requests; the context's match (2 tokens,
    3 occurrences) is followed by the draft's first token once and by no more of it."""

    def match_source(self):
        return "history"

    def context_agreement(self, draft):
        n = len(draft)
        return 2, np.array([3] + [1] * (n - 1), dtype=np.int64), np.array([1] + [0] * (n - 1), dtype=np.int64)


class InContext(FromHistory):
    """The same, for a draft from the context: what the context says of it must not be asked."""

    context_asked = 0

    def match_source(self):
        return "context"

    def context_agreement(self, draft):
        self.context_asked += 1
        return super().context_agreement(draft)


class InContextWithHistory(InContext):
    """A draft from the context while a history is kept: the history's match (5 tokens, 2 occurrences)
    is followed by the draft's first token at both; each of its answers is counted."""

    history_asked = 0
    history_lengths: list[int] = []

    def history_agreement(self, draft):
        self.history_asked += 1
        self.history_lengths = [*self.history_lengths, len(draft)]
        n = len(draft)
        return 5, np.array([2] * n, dtype=np.int64), np.array([2] + [1] * (n - 1), dtype=np.int64)


def test_a_draft_from_the_history_is_judged_by_the_history_fit_with_what_the_context_says():
    from lookup import first_token, later_nodes

    drafter = AdaptiveDrafter(base=FromHistory([7, 8, 9, 10]))
    drafter.reset([1, 2, 3])
    full, bucket = drafter.candidate(32)
    assert drafter.source(bucket) == "history" and AdaptiveDrafter.source(0) == "context"
    own = drafter.acceptance(bucket)[:4]
    chain = drafter.chain_acceptance(bucket, 4, full.tokens)
    coefficients, intercept = first_token.FITS["history"]
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75, (2, 3, 1)),
                                                             coefficients, intercept))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    context = (2, np.array([3, 1, 1, 1]), np.array([1, 0, 0, 0]))
    coefficients, intercept = later_nodes.FITS["history"]
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree, context, coefficients=coefficients,
                                                                intercept=intercept))
    assert first_token.features(3, own[0], 4, 0.75, (2, 3, 1))[4:] == pytest.approx([3.0, 1 / 3, 0.0, np.log(3)])
    assert later_nodes.features(3, support, agree, context)[:, 6:] == pytest.approx(
        np.array([[1.0, 0.0, 1.0, np.log(4 + d)] for d in range(3)]))
    # the fits differ: the same evidence from the context is judged otherwise, and the context's own
    # view is not asked for
    context_drafter = AdaptiveDrafter(base=InContext([7, 8, 9, 10]))
    context_drafter.reset([1, 2, 3])
    judged = context_drafter.chain_acceptance(context_drafter.candidate(32)[1], 4, full.tokens)
    assert not np.allclose(judged, chain) and context_drafter.base.context_asked == 0
    assert first_token.features(3, own[0], 4, 0.75)[4:].tolist() == [0.0] * 4
    assert later_nodes.features(3, support, agree)[:, 6:].tolist() == [[0.0] * 4] * 3


def test_a_draft_from_the_context_with_a_history_is_judged_by_a_fit_of_its_own_with_what_the_history_says():
    from lookup import first_token, later_nodes

    drafter = AdaptiveDrafter(base=InContextWithHistory([7, 8, 9, 10]))
    drafter.history = True  # as history=True sets it for a wrapped drafter named, which a test double is not
    drafter.reset([1, 2, 3])
    full, bucket = drafter.candidate(32)
    assert drafter.source(bucket) == "context"
    assert drafter.fit_of(first_token, "context") == first_token.WITH_HISTORY
    assert drafter.fit_of(later_nodes, "context") == "context"  # later nodes keep the context's own fit
    assert drafter.fit_of(first_token, "history") == "history"
    own = drafter.acceptance(bucket)[:4]
    chain = drafter.chain_acceptance(bucket, 4, full.tokens)
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75, (5, 2, 2)),
                                                             *first_token.FITS[first_token.WITH_HISTORY]))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree))
    assert drafter.base.history_asked == 1 and drafter.base.context_asked == 0
    assert drafter.base.history_lengths == [1]  # only the first node's fit reads it
    # without a history the context's own fit judges it, and the history is not asked
    alone = AdaptiveDrafter(base=InContextWithHistory([7, 8, 9, 10]))
    alone.reset([1, 2, 3])
    assert alone.fit_of(first_token, "context") == "context"
    judged = alone.chain_acceptance(bucket, 4, full.tokens)
    assert judged[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75)))
    assert judged[0] != pytest.approx(chain[0]) and alone.base.history_asked == 0
    # nor when only the later nodes are judged by a model (theirs does not read it)
    later = AdaptiveDrafter(base=InContextWithHistory([7, 8, 9, 10]), first_token_model=False)
    later.history = True
    later.reset([1, 2, 3])
    judged = later.chain_acceptance(bucket, 4, full.tokens)
    assert judged[0] == pytest.approx(own[0]) and judged[1:] == pytest.approx(later_nodes.probabilities(3, support, agree))
    assert later.base.history_asked == 0
    # and a wrapped drafter that cannot say what its history says keeps the context's own fit
    mute = AdaptiveDrafter(base=InContext([7, 8, 9, 10]))
    mute.history = True
    mute.reset([1, 2, 3])
    assert mute.fit_of(first_token, "context") == "context"
    assert mute.chain_acceptance(bucket, 4, full.tokens)[0] == pytest.approx(
        first_token.probability(first_token.features(3, own[0], 4, 0.75)))
