"""decoding.integrations.vllm: the proposer recognises each batch row's request by its tokens, drafts
what the drafter alone would, and stays within vLLM's contract (no vLLM needed: arrays in, lists out)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import lookup
from decoding.integrations.vllm import DrafterProposer, configured_drafter, first_chain
from lookup.base import Draft
from lookup.errors import PLDError

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
    proposer = DrafterProposer(drafter=spec, num_speculative_tokens=K)
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


def test_a_new_request_in_a_reused_row_is_a_new_drafter():
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K)
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
    proposer.spec = Spy()  # one instance is enough to watch the feedback
    batch = Batch()
    batch.call(proposer, [[1, 2, 3]])
    batch.call(proposer, [[1, 2, 3, 7, 8, 5]])  # two of 7, 8, 9 accepted, then the target's 5
    batch.call(proposer, [[1, 2, 3, 7, 8, 5, 6]])  # none accepted
    assert seen == [([7, 8, 9], 2), ([7, 8, 9], 0)]


def test_rows_in_prefill_get_no_draft_and_do_not_count():
    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=K)
    ids = np.zeros((2, 20), dtype=np.int32)
    ids[0, :6] = [1, 2, 3, 1, 2, 3]
    assert proposer.propose([[3], []], np.array([6, 0]), ids) == [[1, 2, 3], []]
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
