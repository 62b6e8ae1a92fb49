"""The adaptive drafter: its policy against brute force, and its learning on scripted drafters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.acceptance import BUCKET_EDGES, PRIORS, UNKNOWN_MATCH, WITH_HISTORY, first_token, first_token_inputs, later_nodes
from pldcore.setting import reference_setting
from lookup.base import EMPTY_DRAFT, Agreement, Draft, Drafter, Evidence
from lookup.drafters.adaptive import AdaptiveDrafter
from pldcore.cost import CPU_SMOLLM2, CostProfile
from toys import FixedDrafter  # tests/ is on sys.path (conftest)


class Scripted(FixedDrafter):
    """Proposes `tokens`; reports a fixed match length."""

    name = "scripted-test"

    def __init__(self, tokens, match=5):
        super().__init__(list(tokens))
        self.match = match

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


@pytest.mark.parametrize("chain_model", [True, False])
def test_stops_drafting_when_drafts_are_wrong_and_resumes_when_right(chain_model):
    base = Scripted([7] * 10)
    d = AdaptiveDrafter(base=base, setting=reference_setting(CPU_SMOLLM2), chain_model=chain_model)
    d.reset([1, 2, 3])
    sent = [step(d, [9] * 11) for _ in range(40)]  # the target never says 7
    # a second token costs only ~1.1x one on this CPU, so a small chance keeps it worth a while
    assert sent[0] > 0 and sum(n > 0 for n in sent) <= 25 and sent[-10:] == [0] * 10
    sent = [step(d, [7] * 11) for _ in range(30)]  # now it always does: learnt through the free check
    # the plan waits a little longer for the free checks to confirm the chain before sending again
    resumes = 8 if chain_model else 5
    assert sent[:resumes].count(0) < resumes and sent[-1] >= 8


def test_flat_gpu_profile_sends_everything_a_decent_match_offers():
    d = AdaptiveDrafter(base=Scripted(range(20), match=8), setting=reference_setting(CostProfile.flat(64)), max_tokens=32)
    d.reset([1])
    assert len(d.propose(32)) == 20


def test_observe_counts_tried_and_accepted_nodes():
    d = AdaptiveDrafter(base=Scripted([5, 6, 7, 8], match=3), setting=reference_setting(CostProfile.flat(64)), max_tokens=8, decay=1.0)
    d.reset([1])
    draft = d.propose(8)
    assert len(draft) == 4
    d.extend([5, 6, 0])  # two accepted, then the target's own token
    d.observe(draft, 2)
    trials, hits = d.model.counts(d.candidate(8).row)
    assert trials[:4].tolist() == [1, 1, 1, 0] and hits[:4].tolist() == [1, 1, 0, 0]


def test_propose_has_no_side_effects_on_proposals():
    d = AdaptiveDrafter(setting=reference_setting(), base=Scripted(range(10)))
    d.reset([1, 2])
    assert all(a.tokens.tolist() == b.tokens.tolist() for a, b in itertools.pairwise([d.propose(8) for _ in range(3)]))


def test_long_contexts_make_multi_token_forwards_dearer_so_drafts_shrink():
    # free to verify 32 tokens after 100 cached tokens; 6x one token after 4,000
    profile = CostProfile((1, 33), (1.0, 1.0), contexts=(100, 4000), grid=((1.0, 1.0), (1.0, 6.0)))
    d = AdaptiveDrafter(base=Scripted(range(20), match=8), setting=reference_setting(profile), max_tokens=32)
    d.reset([1] * 50)
    short = len(d.propose(32))
    d.reset([1] * 4000)
    long = len(d.propose(32))
    assert short == 20 and long < short
    d.extend([5] * 10)  # the table follows the context as it grows (and back after a reset)
    assert len(d.propose(32)) == long
    d.reset([1] * 50)
    assert len(d.propose(32)) == short


def test_a_base_without_a_match_length_counts_as_a_middling_match():
    d = AdaptiveDrafter(setting=reference_setting(), base=FixedDrafter(range(5)))  # reports no match length (the base class default)
    d.reset([1, 2])
    assert d.match_length() is None
    assert d.candidate(8).row == d.model.row("context", UNKNOWN_MATCH)
    assert d.candidate(8).row.bucket == int(np.searchsorted(BUCKET_EDGES, UNKNOWN_MATCH, side="right"))
    reporting = AdaptiveDrafter(setting=reference_setting(), base=Scripted(range(5), match=UNKNOWN_MATCH))
    reporting.reset([1, 2])
    assert reporting.match_length() == UNKNOWN_MATCH
    assert reporting.propose(8).tokens.tolist() == d.propose(8).tokens.tolist()


def test_the_match_length_is_the_wrapped_drafters():
    d = AdaptiveDrafter(setting=reference_setting())
    d.reset([1, 2, 3, 1, 2])
    assert d.match_length() == d.base.match_length() == 2


def test_a_missing_base_is_refused_by_name():
    with pytest.raises(TypeError, match="base must be a drafter name or instance"):
        AdaptiveDrafter(setting=reference_setting(), base=None)


class Agreeing(Scripted):
    """A scripted drafter that also reports evidence: its match's ``occurrences``, ``share`` of them
    followed by the first token and all of those by the rest; ``other``: what a second index says
    (a match of ``other[0]`` tokens, support and agree per depth), from ``source``."""

    def __init__(self, tokens, match=3, evidence=(4, 0.75), source="context", other=None, second_index=False):
        super().__init__(tokens, match)
        self.counts, self.source, self.other, self.second_index = evidence, source, other, second_index
        self.asked = []

    def evidence(self, draft):
        self.asked.append(draft.tokens.tolist())
        n = len(draft)
        own = None
        if self.counts is not None:
            occurrences, share = self.counts
            agreeing = round(occurrences * share)
            own = Agreement(self.match, np.array([occurrences] + [agreeing] * (n - 1), dtype=np.int64),
                            np.full(n, agreeing, dtype=np.int64))
        other = None if self.other is None else Agreement(self.other[0], np.asarray(self.other[1][:n]),
                                                          np.asarray(self.other[2][:n]))
        return Evidence(self.source, self.match, own, other, self.second_index)


def fit(model: str, name: str):
    return getattr(AdaptiveDrafter(setting=reference_setting()).fits, model)[name]


def judged(drafter: AdaptiveDrafter) -> tuple[np.ndarray, np.ndarray]:
    """(the statistics' estimate, the model's) of ``drafter``'s candidate now, per node."""
    candidate = drafter.candidate(32)
    n = len(candidate.draft)
    return drafter.model.rates(candidate.row)[:n], drafter.model.chain(candidate.row, candidate.evidence, n)


def test_the_chain_comes_from_the_models_of_acceptance():
    drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10]))
    drafter.reset([1, 2, 3])
    own, chain = judged(drafter)
    assert drafter.base.asked == [[7, 8, 9, 10]]
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75),
                                                             *fit("first", "context")))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree, coefficients=fit("later", "context")[0],
                                                                intercept=fit("later", "context")[1]))
    candidate = drafter.candidate(32)
    assert drafter.propose(32).tokens.tolist() == [7, 8, 9, 10][: drafter.planner.chain(chain, 3)]
    assert drafter.decide(candidate) == drafter.planner.chain(chain, 3)
    # each model can be off alone; without occurrences counted, the statistics alone
    first_only = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10]), chain_model=False)
    first_only.reset([1, 2, 3])
    assert judged(first_only)[1][1:].tolist() == own[1:].tolist()
    later_only = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10]), first_token_model=False)
    later_only.reset([1, 2, 3])
    assert judged(later_only)[1][0] == own[0]
    off = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10]), first_token_model=False, chain_model=False)
    off.reset([1, 2, 3])
    assert judged(off)[1].tolist() == own.tolist() and off.fits is None
    silent = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10], evidence=None))
    silent.reset([1, 2, 3])
    assert judged(silent)[1].tolist() == own.tolist()


def test_a_base_without_evidence_is_judged_by_the_statistics_and_says_so():
    plain = AdaptiveDrafter(setting=reference_setting(), base=Scripted([7, 8, 9, 10], match=3))
    plain.reset([1, 2, 3])
    own, chain = judged(plain)
    assert chain.tolist() == own.tolist()
    assert plain.params()["evidence"] is False and "fits" not in plain.params()
    assert AdaptiveDrafter(setting=reference_setting()).params()["evidence"] is True and "SmolLM2" in AdaptiveDrafter(setting=reference_setting()).params()["fits"]
    voting = AdaptiveDrafter(setting=reference_setting(), base="voting")
    assert voting.params()["evidence"] is False and voting.fits is None


def test_the_first_token_model_sends_more_where_occurrences_agree():
    """Unanimous occurrences of a long match earn a longer draft than split ones, all else equal."""
    sent = {}
    for share in (1.0, 0.1):
        drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing(list(range(10, 30)), match=4, evidence=(8, share)), chain_model=False)
        drafter.reset([1, 2, 3])
        sent[share] = len(drafter.propose(32))
    assert sent[1.0] > sent[0.1]


def test_the_chain_model_sends_more_where_occurrences_keep_agreeing():
    """Occurrences that follow the whole chain earn a longer draft than the draft's own occurrence alone."""
    sent = {}
    for occurrences in (8, 1):
        drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing(list(range(10, 30)), match=4, evidence=(occurrences, 1.0)),
                                  first_token_model=False)  # the first node from the statistics either way
        drafter.reset([1, 2, 3])
        sent[occurrences] = len(drafter.propose(32))
    assert sent[8] > sent[1]


#: what the context's match (2 tokens, 3 occurrences) says of a draft from the history: followed by
#: its first token once, and by no more of it
CONTEXT_SAYS = (2, [3, 1, 1, 1], [1, 0, 0, 0])
#: what the history's match (5 tokens, 2 occurrences) says of a draft from the context: followed by its
#: first token at both
HISTORY_SAYS = (5, [2, 2, 2, 2], [2, 1, 1, 1])


def test_a_draft_from_the_history_is_judged_by_the_history_fit_with_what_the_context_says():
    drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10], source="history", other=CONTEXT_SAYS, second_index=True))
    drafter.reset([1, 2, 3])
    candidate = drafter.candidate(32)
    assert candidate.row.source == 1 and drafter.model.fit_names(candidate.evidence) == ("history", "history")
    own, chain = judged(drafter)
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75, (2, 3, 1)),
                                                             *fit("first", "history")))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    context = (2, np.array([3, 1, 1, 1]), np.array([1, 0, 0, 0]))
    coefficients, intercept = fit("later", "history")
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree, context, coefficients=coefficients,
                                                                intercept=intercept))
    assert first_token.features(3, own[0], 4, 0.75, (2, 3, 1))[4:] == pytest.approx([3.0, 1 / 3, 0.0, np.log(3)])
    assert later_nodes.features(3, support, agree, context)[:, 6:] == pytest.approx(
        np.array([[1.0, 0.0, 1.0, np.log(4 + d)] for d in range(3)]))
    # the statistics too: a draft from the history is judged by its own row
    assert drafter.model.rates(candidate.row)[0] == pytest.approx(PRIORS.first_history[candidate.row.bucket])
    # the fits differ: the same evidence from the context is judged otherwise, and what another index
    # says of it is not read by the context's own fit
    context_drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10], other=CONTEXT_SAYS))
    context_drafter.reset([1, 2, 3])
    assert not np.allclose(judged(context_drafter)[1], chain)
    inputs = context_drafter.model.inputs(context_drafter.candidate(32).row, context_drafter.candidate(32).evidence, 4)
    assert inputs.first[4:].tolist() == [0.0] * 4 and inputs.later[:, 6:].tolist() == [[0.0] * 4] * 3


def test_a_draft_from_the_context_with_a_history_is_judged_by_a_fit_of_its_own_with_what_the_history_says():
    drafter = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10], other=HISTORY_SAYS, second_index=True))
    drafter.reset([1, 2, 3])
    evidence = drafter.candidate(32).evidence
    # later nodes keep the context's own fit
    assert drafter.model.fit_names(evidence) == (WITH_HISTORY, "context")
    own, chain = judged(drafter)
    assert chain[0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75, (5, 2, 2)),
                                                             *fit("first", WITH_HISTORY)))
    support, agree = np.array([4, 3, 3, 3]), np.array([3, 3, 3, 3])
    assert chain[1:] == pytest.approx(later_nodes.probabilities(3, support, agree, coefficients=fit("later", "context")[0],
                                                                intercept=fit("later", "context")[1]))
    # a drafter without a second index keeps the context's own fit, whatever it says
    alone = AdaptiveDrafter(setting=reference_setting(), base=Agreeing([7, 8, 9, 10], other=HISTORY_SAYS))
    alone.reset([1, 2, 3])
    assert alone.model.fit_names(alone.candidate(32).evidence) == ("context", "context")
    assert judged(alone)[1][0] == pytest.approx(first_token.probability(first_token.features(3, own[0], 4, 0.75),
                                                                        *fit("first", "context")))


def test_first_token_inputs_read_the_first_depth():
    own = Agreement(3, np.array([4, 3]), np.array([3, 3]))
    other = Agreement(5, np.array([2, 2]), np.array([1, 1]))
    assert first_token_inputs(own, 0.5, other) == (3, 0.5, 4, 0.75, (5, 2, 1))
    assert first_token_inputs(own, 0.5) == (3, 0.5, 4, 0.75, None)


def rate_of(drafter: AdaptiveDrafter, draft: Draft, evidence: Evidence, context: int) -> float:
    """Expected tokens a second of the forward the plan sends of ``draft``: computed afresh."""
    row = drafter.model.row(evidence.source, evidence.match_length)
    acceptance = drafter.model.chain(row, evidence, len(draft), draft.tokens)
    k = drafter.planner.chain(acceptance, context)
    return (1 + np.cumprod(acceptance[:k]).sum()) / drafter.planner.costs(context)[k]


def agreement_lists(evidence: Evidence) -> tuple:
    return tuple(None if a is None else (a.match_length, a.support.tolist(), a.agree.tolist())
                 for a in (evidence.own, evidence.other))


@pytest.mark.parametrize("choose_source", [True, False])
def test_with_a_history_the_draft_the_plan_rates_higher_is_chosen(choose_source):
    """Where the base's draft comes from the history, ``candidate`` is that draft or the context's own
    (``context_candidate``), whichever the plan rates higher (the history's without ``choose_source``),
    with the evidence its base reports for it: nothing of the other's left in it."""
    rng = np.random.default_rng(7)
    drafter = AdaptiveDrafter(setting=reference_setting(), history=True, choose_source=choose_source)
    base = drafter.base
    chosen = {"history": 0, "context": 0}
    phrases = [rng.integers(0, 6, size=rng.integers(3, 9)).tolist() for _ in range(6)]
    for _ in range(40):  # requests made of shared phrases: the history often holds the longer match
        text = [t for i in rng.integers(0, len(phrases), size=6) for t in phrases[i]]
        prompt, output = text[:10], text[10:]
        drafter.reset(prompt)
        done = 0
        while done < len(output) - 1:
            budget = int(rng.integers(1, 12))
            context = len(prompt) + done
            candidate = drafter.candidate(budget)
            told = agreement_lists(candidate.evidence) if candidate.evidence is not None else None  # scratch: read now
            full = base.propose(min(budget, drafter.max_tokens))
            if len(full) and base.evidence(full).source == "history":
                want = rate_of(drafter, full, base.evidence(full), context)
                found = base.context_candidate(min(budget, drafter.max_tokens))
                other = found is not None and len(found[0]) and rate_of(drafter, *found, context) > want
                if other and choose_source:
                    assert candidate.draft.tokens.tolist() == found[0].tokens.tolist()
                    assert told == agreement_lists(found[1])
                    chosen["context"] += 1
                else:
                    assert candidate.draft.tokens.tolist() == full.tokens.tolist()
                    assert told == agreement_lists(base.evidence(full))
                    chosen["history"] += 1
            candidate = drafter.candidate(budget)  # asked again: the checks above used the base's scratch
            draft = drafter.send(candidate, drafter.decide(candidate))
            truth = output[done:]
            accepted = next((i for i, t in enumerate(draft.tokens) if i >= len(truth) - 1 or t != truth[i]), len(draft))
            drafter.extend(truth[: accepted + 1])
            drafter.observe(draft, accepted)
            done += accepted + 1
    assert chosen["history"] > 0 and (chosen["context"] > 0) == choose_source


def test_the_source_is_chosen_only_with_the_models():
    """With the models off (as the fits' collector drafts), the history's draft is sent as before."""
    on = AdaptiveDrafter(setting=reference_setting(), history=True)
    off = AdaptiveDrafter(setting=reference_setting(), history=True, first_token_model=False, chain_model=False)
    assert on.params()["choose_source"] and not off.params()["choose_source"]
