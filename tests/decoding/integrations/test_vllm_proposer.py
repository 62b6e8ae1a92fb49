"""decoding.integrations.vllm: the proposer recognises each batch row's request by its tokens, drafts
what the drafter alone would, sends less of it as the batch grows (the batch rule), and stays
within vLLM's contract (no vLLM needed: arrays in, lists out)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import lookup
from decoding.integrations.drafters import fresh_each_request
from decoding.integrations.vllm import (KEEP_ABSENT_STEPS, BatchRule, DrafterProposer, batch_cut, configured_drafter,
                                       first_chain)
from lookup.base import Draft
from pldcore.errors import PLDError

K = 4


def texts(n: int, seed: int) -> list[list[int]]:
    """Requests whose futures repeat their past, so drafts get accepted."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        base = rng.integers(0, 50, int(rng.integers(6, 12))).tolist()
        out.append(base * 6)
    return out


class Batch:
    """What vLLM hands the proposer: rows of a padded id matrix, lengths, and the last sampled ids."""

    def __init__(self, width: int = 200):
        self.width = width

    def call(self, proposer, rows: list[list[int]]):
        ids = np.zeros((len(rows), self.width), dtype=np.int32)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
        return proposer.propose([r[-1:] for r in rows], np.array([len(r) for r in rows]), ids)


def reference(spec: str, tokens: list[int]) -> list[int]:
    d = lookup.create(spec)
    d.reset(tokens)
    return first_chain(d.propose(K))[:K].tolist()


@pytest.mark.parametrize("spec", ["suffix-automaton", "unfold", "voting:tree=True"])
def test_rows_that_move_join_and_leave_get_their_own_requests_drafts(spec):
    proposer = DrafterProposer(drafter=spec, num_speculative_tokens=K, batch_rule=False)  # offered drafts whole
    batch, futures = Batch(), texts(5, seed=1)
    live = {0: 8, 1: 10, 2: 7}  # request -> tokens seen so far
    rng = np.random.default_rng(0)
    for step in range(25):
        order = list(live)
        rng.shuffle(order)  # rows move as requests finish and join
        rows = [futures[r][: live[r]] for r in order]
        drafts = batch.call(proposer, rows)
        for r, row, draft in zip(order, rows, drafts):
            assert len(draft) <= K
            if spec != "voting:tree=True":  # history-free drafters: the same as a fresh one on the row
                assert draft == reference(spec, row)
            live[r] += 1 + int(rng.integers(0, 3))  # accepted tokens + the bonus
        if step == 8:
            del live[1]  # finishes ...
            live[3] = 9  # ... and a new request joins
        if step == 15:
            live[4] = 6
    assert proposer.resets == 5  # one drafter per request: rows were recognised, never rebuilt


@pytest.mark.parametrize("spec", ["suffix-automaton:history=true", "adaptive:history=true"])
def test_requests_draft_from_the_outputs_of_requests_that_finished(spec):
    proposer = DrafterProposer(drafter=spec, num_speculative_tokens=K, batch_rule=False)
    batch = Batch()
    a = [1, 2, 3] + [40, 41, 42, 43, 44, 45, 46]  # a prompt, then the output
    for n in range(4, len(a) + 1):  # its first row: the prompt and the first token sampled
        batch.call(proposer, [a[:n]])
    b = [7, 8, 9, 10] * 10  # another request, while the first one is gone ...
    for n in range(5, 5 + KEEP_ABSENT_STEPS):
        assert proposer.history.requests == 0
        batch.call(proposer, [b[:n]])
    assert proposer.history.requests == 1  # ... until it is forgotten: its output joins the history
    assert proposer.history.tokens.tolist() == a[3:]
    c = [20, 21, 40, 41]  # a new request that ends as the first one's output began
    got_b, got_c = batch.call(proposer, [b[:13], c])
    assert got_c and got_c == [42, 43, 44, 45][: len(got_c)]  # adaptive may send fewer
    assert reference("suffix-automaton", c)[:1] != [42]  # its own context does not hold them
    if spec.startswith("suffix-automaton"):
        assert (got_b, got_c) == (reference("suffix-automaton", b[:13]), [42, 43, 44, 45])


def test_a_request_served_alongside_sees_what_finishes_meanwhile():
    proposer = DrafterProposer(drafter="suffix-automaton:history=true", num_speculative_tokens=K, batch_rule=False)
    batch = Batch()
    a, c = [1, 2, 3, 40, 41, 42, 43, 44, 45], [20, 21, 30, 40, 41, 42]
    for n in range(4, len(a) + 1):  # c runs beside a, its first tokens followed while the history is empty
        batch.call(proposer, [a[:n], c[:5]])
    for _ in range(KEEP_ABSENT_STEPS):
        assert proposer.history.requests == 0
        assert batch.call(proposer, [c[:5]]) == [reference("suffix-automaton", c[:5])]
    assert proposer.history.requests == 1
    # with no new token, c's drafter finds its request again in the history that changed under it
    assert batch.call(proposer, [c[:5]]) == [[42, 43, 44, 45]]
    assert batch.call(proposer, [c]) == [[43, 44, 45]]  # then follows on (nothing followed twice)


def test_a_wrapped_drafters_history_counts_as_asked_for():
    with pytest.raises(PLDError, match="pass an instance"):
        fresh_each_request(lookup.parse_drafter("adaptive:base_params={'history': True}"), "generate()", "pass an instance")
    assert DrafterProposer(drafter="adaptive:base_params={'history': True}", num_speculative_tokens=K).history


@pytest.mark.parametrize("spec", ["peer:suffix-decoding:history=true", "peer:llamacpp-lookup:history=true"])
def test_a_history_requests_cannot_share_is_refused_when_the_engine_starts(spec):
    with pytest.raises(PLDError, match="cannot be shared"):
        DrafterProposer(drafter=spec, num_speculative_tokens=K)
    assert DrafterProposer(drafter=spec.replace("true", "false"), num_speculative_tokens=K).history is None


def test_a_new_request_in_a_reused_row_is_a_new_drafter():
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=False)
    a, b = texts(2, seed=2)
    batch = Batch()
    batch.call(proposer, [a[:10]])
    batch.call(proposer, [a[:12]])
    assert proposer.resets == 1
    assert batch.call(proposer, [b[:10]]) == [reference("suffix-automaton", b[:10])]
    assert proposer.resets == 2


def test_observe_hears_how_much_of_the_last_draft_was_confirmed():
    seen = []

    class Spy(lookup.Drafter):
        def propose(self, budget):
            return Draft([7, 8, 9][:budget])

        def observe(self, draft, accepted):
            seen.append((draft.tokens.tolist(), accepted))

    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=3)
    spy = Spy()  # one instance is enough to watch the feedback
    proposer.drafter_spec = SimpleNamespace(build=lambda setting: spy)
    batch = Batch()
    batch.call(proposer, [[1, 2, 3]])
    batch.call(proposer, [[1, 2, 3, 7, 8, 5]])  # two of 7, 8, 9 accepted, then the target's 5
    batch.call(proposer, [[1, 2, 3, 7, 8, 5, 6]])  # none accepted
    assert seen == [([7, 8, 9], 2), ([7, 8, 9], 0)]


def test_rows_in_prefill_get_no_draft_and_do_not_count():
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K)
    ids = np.zeros((2, 20), dtype=np.int32)
    ids[0, :6] = [1, 2, 3, 1, 2, 3]
    # the match "1 2 3" is followed by one period of the loop; the draft goes round it (K tokens)
    assert proposer.propose([[3], []], np.array([6, 0]), ids) == [[1, 2, 3, 1], []]
    assert proposer.resets == 1


def test_a_tree_is_cut_to_its_first_path():
    tree = Draft([5, 6, 7, 8, 9], parents=[-1, 0, 0, 1, -1])
    assert first_chain(tree).tolist() == [5, 6, 8]
    assert first_chain(Draft([1, 2])).tolist() == [1, 2]


def test_the_drafter_is_chosen_without_code(monkeypatch):
    config = SimpleNamespace(additional_config={"pld_lab": {"drafter": "unfold"}},
                             speculative_config=SimpleNamespace(num_speculative_tokens=5))
    assert configured_drafter(config) == "unfold"
    assert DrafterProposer(config).k == 5
    monkeypatch.setenv("PLD_LAB_DRAFTER", "voting")
    assert configured_drafter(SimpleNamespace(additional_config=None)) == "voting"
    monkeypatch.delenv("PLD_LAB_DRAFTER")
    assert configured_drafter(None) == "suffix-automaton"
    with pytest.raises(PLDError, match="did you mean"):
        DrafterProposer(drafter="sufix-automaton", num_speculative_tokens=3)
    with pytest.raises(PLDError, match="num_speculative_tokens"):
        DrafterProposer(drafter="unfold")


# --------------------------------------------------------------------------- the batch rule


#: a cost model where a row costs no more than a draft token (a GPU below its compute bound):
#: the rule's effect is strongest there
CHEAP_ROWS = BatchRule(fixed_tokens=6.0, row_tokens=1.0, learn_costs=0)  # these prices, not the clock's


def ratio(path_probs: list[list[float]], sent: list[int], fixed: float, per_row: float) -> float:
    """The batch's expected tokens per unit of step cost when row i sends sent[i] nodes."""
    rows = len(path_probs)
    return (rows + sum(sum(p[:n]) for p, n in zip(path_probs, sent))) / (fixed + per_row * rows + sum(sent))


def test_the_batch_cut_drafts_less_per_row_as_the_batch_grows():
    row = [0.8, 0.6, 0.45, 0.3, 0.2]
    sent = [batch_cut([np.array(row)] * b, 6.0, 1.0)[0] for b in range(1, 33)]
    assert sent[0] == 4 and sent[-1] == 0  # one row: all but the unlikeliest node; 32 rows: none
    assert all(a >= b for a, b in zip(sent, sent[1:]))
    assert batch_cut([np.array(row), np.zeros(0)], 6.0, 1.0)[1] == 0  # a row without a draft sends nothing
    assert batch_cut([], 6.0, 1.0) == [] and batch_cut([np.zeros(0)] * 3, 6.0, 1.0) == [0, 0, 0]


def test_where_rows_are_dear_likely_nodes_are_sent_at_any_batch():
    # a node is worth sending from p ~ rows / (fixed + per_row * rows) < 1 / per_row
    row = np.array([0.5, 0.3, 0.15])
    assert [batch_cut([row] * b, 22.0, 5.0)[0] for b in (1, 16, 256)] == [3, 2, 2]
    assert batch_cut([row] * 256, 6.0, 1.0)[0] == 0


def test_in_a_big_batch_only_the_likely_rows_draft():
    likely, unlikely = np.cumprod([0.97] * 5), np.cumprod([0.6] * 5)
    sent = batch_cut([likely] * 8 + [unlikely] * 8, 6.0, 1.0)
    assert sent[:8] == [5] * 8 and sent[8:] == [0] * 8


def test_the_batch_cut_is_the_best_choice_of_prefixes():
    rng = np.random.default_rng(0)
    for _ in range(200):
        rows, fixed, per_row = int(rng.integers(1, 4)), float(rng.uniform(0, 30)), float(rng.uniform(0.5, 8))
        probs = [np.cumprod(rng.uniform(0.05, 1.0, int(rng.integers(0, 4)))) for _ in range(rows)]
        sent = batch_cut(probs, fixed, per_row)
        assert all(0 <= n <= len(p) for n, p in zip(sent, probs))
        best = max(ratio(probs, list(c), fixed, per_row) for c in np.ndindex(*[len(p) + 1 for p in probs]))
        assert ratio(probs, sent, fixed, per_row) == pytest.approx(best)


def run(proposer: DrafterProposer, futures: list[list[int]], start: int, steps: int) -> tuple[int, int]:
    """Decode ``futures`` (one row each, from ``start`` tokens) as vLLM would under greedy decoding:
    each step a row commits its sent draft's matching prefix and the next true token; a row that
    reaches its end leaves. Returns (draft tokens sent, tokens committed)."""
    batch, seen = Batch(width=max(map(len, futures)) + 8), [start] * len(futures)
    sent_total = 0
    for _ in range(steps):
        live = [i for i, f in enumerate(futures) if seen[i] < len(f)]
        if not live:
            break
        drafts = batch.call(proposer, [futures[i][: seen[i]] for i in live])
        for i, draft in zip(live, drafts):
            truth = futures[i][seen[i]:]
            accepted = next((j for j, (d, t) in enumerate(zip(draft, truth)) if d != t), min(len(draft), len(truth)))
            seen[i] = min(seen[i] + accepted + 1, len(futures[i]))
            sent_total += len(draft)
    return sent_total, sum(seen) - start * len(futures)


def test_the_proposer_sends_less_per_row_in_a_big_batch():
    futures = texts(16, seed=3)
    # the same requests for the same steps: each alone (batch 1), then all together (batch 16)
    def proposer():
        return DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=CHEAP_ROWS)

    alone = sum(run(proposer(), [f], 6, 10)[0] for f in futures)
    together = run(proposer(), futures, 6, 10)[0]
    assert together < alone / 4


def test_withheld_drafts_still_teach_the_rule_so_sure_rows_draft_again():
    futures = [[1, 2, 3, 4, 5, 6, 7] * 40 for _ in range(16)]  # every draft is right
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=CHEAP_ROWS)
    first, _ = run(proposer, futures, 8, 1)
    assert first == 0  # at the prior, 16 rows can afford no draft
    # the match grows a token a step while nothing is sent, so drafts keep reaching younger buckets
    # (lookup.acceptance.match_bucket) until the last one, 10 tokens and more; a draft is judged once
    # K more tokens are committed
    later, committed = run(proposer, futures, 8 + 1, 16)
    assert later > 0 and committed > 16 * 16  # learnt from committed tokens alone, then drafted


def test_without_the_rule_every_offered_draft_is_sent():
    futures = texts(16, seed=3)
    cut = run(DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=CHEAP_ROWS),
              futures, 6, 3)[0]
    whole = run(DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K, batch_rule=False),
                futures, 6, 3)[0]
    assert cut < whole


def test_the_batch_rule_is_configured_without_code():
    def config(rule):
        extra = {"pld_lab": {"drafter": "unfold"} | ({} if rule is None else {"batch_rule": rule})}
        return SimpleNamespace(additional_config=extra, speculative_config=SimpleNamespace(num_speculative_tokens=5))

    assert DrafterProposer(config(None)).rule == BatchRule()
    assert DrafterProposer(config(False)).rule is None
    assert DrafterProposer(config({"fixed_tokens": 2, "decay": 0.9})).rule == BatchRule(fixed_tokens=2.0, decay=0.9)
    assert DrafterProposer(config(False), batch_rule=True).rule == BatchRule()  # the argument wins
    with pytest.raises(PLDError, match="unknown setting"):
        DrafterProposer(config({"fixed": 2}))
    with pytest.raises(PLDError, match="fixed_tokens"):
        DrafterProposer(config({"fixed_tokens": -1}))
    with pytest.raises(PLDError, match="row_tokens"):
        DrafterProposer(config({"row_tokens": 0}))
    with pytest.raises(PLDError, match="every setting is a number"):
        DrafterProposer(config({"decay": "fast"}))
    with pytest.raises(PLDError, match="batch_rule must be"):
        DrafterProposer(config("off"))
