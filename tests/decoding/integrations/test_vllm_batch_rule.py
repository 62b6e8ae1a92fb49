"""decoding.integrations.vllm's batch rule: nodes judged by the match their draft was copied after,
rates shared by every request, and the prices of a row and a node learnt from the engine's steps."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.integrations.vllm import BatchRule, DrafterProposer
from lookup.acceptance import BUCKETS, match_bucket
from pldcore.errors import PLDError
from pldcore.setting import GREEDY

K = 4
#: a tiny drafter, as a user's drafter file: the true continuation of a counting sequence after an
#: even context length (reporting a long match), a wrong one after an odd length (a 1-token match)
PARITY = '''
from lookup import Draft, Drafter


class Parity(Drafter):
    name = "parity-toy"

    def propose(self, budget):
        last, n = self.context[-1], len(self.context)
        step = 1 if n % 2 == 0 else 500
        return Draft([last + step * (i + 1) for i in range(budget)])

    def match_length(self):
        return 8 if len(self.context) % 2 == 0 else 1
'''


class Engine:
    """vLLM's side under greedy decoding: counting sequences, one a row; each step a row commits its
    sent draft's matching prefix and the next true token; ``clock`` advances by the step's cost."""

    def __init__(self, proposer: DrafterProposer, rows: int, start: int = 10, cost=(0.02, 0.006, 0.004)):
        self.proposer, self.cost, self.now = proposer, cost, 0.0
        self.seen = {i: list(range(1000 * i, 1000 * i + start)) for i in range(rows)}
        self.sent: dict[int, list[int]] = {}

    def step(self) -> dict[int, tuple[int, int]]:
        """One step: per row, (its context length's parity, nodes sent)."""
        rows = list(self.seen)
        ids = np.zeros((len(rows), max(len(s) for s in self.seen.values()) + 8), dtype=np.int32)
        for i, r in enumerate(rows):
            ids[i, :len(self.seen[r])] = self.seen[r]
        drafts = self.proposer.propose([self.seen[r][-1:] for r in rows],
                                       np.array([len(self.seen[r]) for r in rows]), ids)
        out = {}
        for r, draft in zip(rows, drafts):
            seq = self.seen[r]
            out[r] = (len(seq) % 2, len(draft))
            accepted = next((j for j, d in enumerate(draft) if d != seq[-1] + j + 1), len(draft))
            seq.extend(range(seq[-1] + 1, seq[-1] + accepted + 2))
        nodes = sum(len(d) for d in drafts)
        self.now += self.cost[0] + self.cost[1] * len(rows) + self.cost[2] * nodes
        return out


@pytest.fixture
def parity(tmp_path):
    path = tmp_path / "parity_drafter.py"
    path.write_text(PARITY)
    return str(path)


def test_drafts_are_judged_in_the_one_bucketing_of_match_lengths(parity):
    # the parity drafter reports 8 and 1: its drafts' rates are learnt in those two buckets of
    # lookup.acceptance's bucketing (adaptive's and recycling's), the others stay at the prior
    rule = BatchRule(fixed_tokens=6.0, row_tokens=1.0, learn_costs=0)
    proposer = DrafterProposer(drafter=parity, num_speculative_tokens=K, batch_rule=rule)
    engine = Engine(proposer, rows=4)
    for _ in range(6):
        engine.step()
    shared = proposer.shared_rates(GREEDY)  # unlinked, every request is greedy's
    assert list(proposer.shared) == ["greedy"]
    learnt = {b for b in range(BUCKETS) if shared.trials[b].any()}
    assert learnt == {match_bucket(8), match_bucket(1)} and len(learnt) == 2
    long, short = (shared.estimate((match_bucket(n),))[0] for n in (8, 1))
    assert long > rule.prior_first > short
    request = proposer.kept[0]
    assert request.rates.parent is shared  # a request's rates are smoothed towards every request's
    assert request.path_probs().tolist() == pytest.approx(
        np.cumprod(request.rates.estimate((request.offered_bucket,))[: len(request.offered)]).tolist())


def test_drafts_after_short_matches_are_withheld_where_long_ones_are_sent(parity):
    # in a batch of 16, with rows dear next to nodes, only likely nodes pay: the rule learns that a
    # draft copied after a 1-token match always misses and one after an 8-token match always hits
    rule = BatchRule(fixed_tokens=6.0, row_tokens=1.0, learn_costs=0)
    engine = Engine(DrafterProposer(drafter=parity, num_speculative_tokens=K, batch_rule=rule), rows=16)
    for _ in range(12):
        engine.step()
    sent = {0: 0, 1: 0}
    for _ in range(6):
        for odd, n in engine.step().values():
            sent[odd] += n
    assert sent[1] == 0 and sent[0] > 0  # odd lengths: 1-token matches


def test_a_new_request_starts_from_what_the_requests_before_it_taught(parity):
    # at the prior, 16 rows can afford no draft (see test_vllm_proposer); rows that share the rates
    # learnt from the requests before them draft their long matches from their first steps
    rule = BatchRule(fixed_tokens=6.0, row_tokens=1.0, learn_costs=0)
    proposer = DrafterProposer(drafter=parity, num_speculative_tokens=K, batch_rule=rule)
    first = Engine(proposer, rows=16)
    assert sum(n for _, n in first.step().values()) == 0
    for _ in range(12):
        first.step()
    fresh = Engine(proposer, rows=16, start=20)
    fresh.seen = {i + 100: list(range(100_000 * (i + 1), 100_000 * (i + 1) + 20)) for i in range(16)}
    sent = sum(n for odd, n in fresh.step().values() if not odd)
    assert sent > 0


def test_the_prices_come_from_the_engines_steps(parity):
    # the engine's truth: a step 20 ms, a row 6 ms, a node 4 ms (5 and 1.5 nodes), not the hand fit's 22 and 5
    proposer = DrafterProposer(drafter=parity, num_speculative_tokens=K, batch_rule=BatchRule())
    proposer.clock = lambda: engine.now
    engine = Engine(proposer, rows=8)
    for _ in range(60):
        engine.step()
    fixed, row = proposer.costs.tokens()
    assert fixed + 8 * row == pytest.approx((0.02 + 8 * 0.006) / 0.004, rel=0.1)  # the hand fit: 62


def test_steps_with_a_new_request_are_not_counted(parity):
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=BatchRule())
    proposer.clock = lambda: engine.now
    engine = Engine(proposer, rows=4)
    for _ in range(20):
        engine.step()
    counted = proposer.costs.steps
    engine.seen[99] = list(range(99_000, 99_010))  # a request joins, after its prefill: a long step
    engine.now += 100.0
    engine.step()
    assert proposer.costs.steps == counted
    engine.step()
    assert proposer.costs.steps == counted + 1


def test_learnt_prices_can_be_turned_off():
    assert DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K,
                           batch_rule={"learn_costs": False}).costs is None
    assert DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K).costs is not None
    assert DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=False).costs is None
    with pytest.raises(PLDError, match="learn_costs"):
        BatchRule.from_setting({"learn_costs": 0.5})
