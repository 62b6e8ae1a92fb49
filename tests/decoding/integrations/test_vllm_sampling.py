"""decoding.integrations.vllm_sampling and the proposer under sampling: each request's drafter is built
for the regime vLLM's input batch gives its row, once a worker links it; unlinked, for greedy decoding
(no vLLM needed: a fake input batch of the fields vLLM's InputBatch has)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from decoding.integrations.vllm import DrafterProposer
from decoding.integrations.vllm_sampling import LINKED, UNLINKED, SamplingLink, row_regime
from pldcore.setting import GREEDY, Regime

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the embedded model: a sampled (t1) fit is shipped
VOCAB = 49152
K = 4


def input_batch(rows: list[tuple[float, int, float]], spare: int = 2) -> SimpleNamespace:
    """vLLM's InputBatch as the proposer reads it: float32 temperature and top-p, int32 top-k (the
    vocabulary's size where off), per row, with spare rows past the batch as vLLM allocates them."""
    rows = rows + [(0.0, VOCAB, 1.0)] * spare
    return SimpleNamespace(temperature_cpu=np.array([r[0] for r in rows], dtype=np.float32),
                           top_k_cpu=np.array([r[1] for r in rows], dtype=np.int32),
                           top_p_cpu=np.array([r[2] for r in rows], dtype=np.float32), vocab_size=VOCAB)


def proposer(drafter: str = "suffix-automaton") -> DrafterProposer:
    config = SimpleNamespace(model_config=SimpleNamespace(model=MODEL, tokenizer=None), additional_config=None)
    return DrafterProposer(config, drafter=drafter, num_speculative_tokens=K, batch_rule=False)


def call(p: DrafterProposer, rows: list[list[int]]) -> list[list[int]]:
    ids = np.zeros((len(rows), 64), dtype=np.int32)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
    return p.propose([r[-1:] for r in rows], np.array([len(r) for r in rows]), ids)


def watch_settings(p: DrafterProposer) -> list:
    """The settings the proposer builds its requests' drafters with, in order."""
    seen, spec = [], p.drafter_spec
    p.drafter_spec = SimpleNamespace(build=lambda setting: seen.append(setting) or spec.build(setting))
    return seen


ROWS = [[1, 2, 3, 1, 2, 3, 1], [5, 6, 7, 5, 6, 7], [9, 8, 9, 8, 9]]


def test_a_vllm_row_reads_as_a_regime():
    assert row_regime(0.0, VOCAB, 1.0, VOCAB) is GREEDY
    assert row_regime(0.0, 50, np.float32(0.9), VOCAB) is GREEDY  # a greedy pick ignores top-k and top-p
    assert row_regime(np.float32(1.0), VOCAB, np.float32(1.0), VOCAB) == Regime(1.0)
    # float32 0.7 and 0.9 read back as the decimals they were set from: the regime's name finds its fit
    sampled = row_regime(np.float32(0.7), 50, np.float32(0.9), VOCAB)
    assert sampled == Regime(0.7, 50, 0.9) and sampled.name == "t0.7-k50-p0.9"
    assert row_regime(1.0, 0, 1.0, VOCAB).top_k == 0 == row_regime(1.0, -1, 1.0, VOCAB).top_k  # off


def test_each_request_drafter_is_built_for_the_regime_of_its_row():
    p = proposer()
    p.read_sampling_from(lambda: input_batch([(0.0, VOCAB, 1.0), (1.0, VOCAB, 1.0), (0.7, 50, 0.9)]))
    seen = watch_settings(p)
    drafts = call(p, ROWS)
    assert [s.regime for s in seen] == [GREEDY, Regime(1.0), Regime(0.7, 50, 0.9)]
    # the embedded model's sampled fit for t1; t0.7-k50-p0.9 has none: the model's greedy fit
    assert [s.fits.regime for s in seen] == ["greedy", "t1", "greedy"] and all(s.batch >= 1 for s in seen)
    assert [r.regime for r in p.kept] == [GREEDY, Regime(1.0), Regime(0.7, 50, 0.9)]
    assert p.built == {"greedy": 1, "t1": 1, "t0.7-k50-p0.9": 1} and p.regime_source == LINKED
    assert drafts[0] == [2, 3, 1, 2]  # the regime chooses the fit, not what a lookup drafter copies


def test_a_request_keeps_the_regime_it_was_built_for_as_rows_move():
    p = proposer()
    temperatures = {"now": [(1.0, VOCAB, 1.0), (0.0, VOCAB, 1.0)]}
    p.read_sampling_from(lambda: input_batch(temperatures["now"]))  # read at every use: vLLM moves rows
    call(p, ROWS[:2])
    temperatures["now"] = [(0.0, VOCAB, 1.0), (1.0, VOCAB, 1.0)]  # the two requests swapped rows
    call(p, [ROWS[1] + [5], ROWS[0] + [2]])
    assert p.resets == 2 and [r.regime for r in p.kept] == [Regime(1.0), GREEDY]


def test_adaptive_plans_with_the_sampled_fit_and_an_unfitted_regime_still_drafts():
    p = proposer("adaptive")
    p.read_sampling_from(lambda: input_batch([(1.0, VOCAB, 1.0), (0.5, VOCAB, 0.8)]))
    drafts = call(p, ROWS[:2])
    fitted, unfitted = (r.drafter for r in p.kept)
    assert fitted.setting.regime == Regime(1.0) and fitted.setting.fits.regime == "t1"
    assert unfitted.setting.regime == Regime(0.5, 0, 0.8) and unfitted.setting.fits.regime == "greedy"
    assert all(len(d) <= K for d in drafts)


def test_unlinked_every_drafter_is_built_for_greedy_decoding_and_says_why():
    p = proposer()
    seen = watch_settings(p)
    call(p, ROWS)
    assert [s.regime for s in seen] == [GREEDY] * 3 and p.built == {"greedy": 3}
    assert p.regime_source == UNLINKED and "no sampling parameters" in UNLINKED


def test_the_worker_extension_links_our_proposer_to_the_runners_input_batch():
    p = proposer()
    runner = SimpleNamespace(drafter=p, input_batch=input_batch([(0.0, VOCAB, 1.0)]))
    worker = SamplingLink()
    worker.model_runner = runner
    assert worker.pld_link_sampling() is True and p.regime_source == LINKED
    runner.input_batch = input_batch([(1.0, VOCAB, 1.0)])  # the runner rebuilt its input batch
    call(p, ROWS[:1])
    assert p.kept[0].regime == Regime(1.0) and worker.pld_regimes_built() == {"t1": 1}
    for other in (SimpleNamespace(drafter=object()), SimpleNamespace(drafter=None), None):
        worker.model_runner = other  # vLLM's own proposer, no speculation, no runner: nothing to link
        assert worker.pld_link_sampling() is False and worker.pld_regimes_built() is None


@pytest.mark.parametrize("drafter", ["suffix-automaton", "adaptive"])
def test_greedy_rows_draft_as_before_when_linked(drafter):
    linked, unlinked = proposer(drafter), proposer(drafter)
    linked.read_sampling_from(lambda: input_batch([(0.0, VOCAB, 1.0)] * 3))
    assert call(linked, ROWS) == call(unlinked, ROWS)


def test_the_batch_rule_learns_each_regimes_acceptance_apart():
    # a sampled token is accepted far less often than a greedy one: one regime's rates must not
    # price the other's drafts
    config = SimpleNamespace(model_config=SimpleNamespace(model=MODEL, tokenizer=None), additional_config=None)
    p = DrafterProposer(config, drafter="suffix-automaton", num_speculative_tokens=K)  # with the batch rule
    p.read_sampling_from(lambda: input_batch([(0.0, VOCAB, 1.0), (1.0, VOCAB, 1.0), (1.0, VOCAB, 1.0)]))
    call(p, ROWS)
    greedy, sampled, other = (r.rates.parent for r in p.kept)
    assert greedy is p.shared_rates(GREEDY) and sampled is other is p.shared_rates(Regime(1.0))
    assert greedy is not sampled and sorted(p.shared) == ["greedy", "t1"]
