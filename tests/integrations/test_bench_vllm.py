"""experiments/bench_vllm.py without vLLM: the engine settings of each method, the counters, the table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_vllm", ROOT / "experiments" / "bench_vllm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_each_method_gets_its_engine_settings(bench):
    args = bench.parse_args(["--model", "M", "--methods", "none, ngram,adaptive,suffix-automaton@whole",
                             "--batch-rule", '{"fixed_tokens": 4}'])
    none, ngram, ours, whole = (bench.engine_settings(m, args, 2048) for m in args.methods)
    assert "speculative_config" not in none and none["enable_prefix_caching"] is False
    assert ngram["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 5,
                                           "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    assert ours["speculative_config"]["model"] == "decoding.integrations.vllm.DrafterProposer"
    assert ours["additional_config"] == {"pld_lab": {"drafter": "adaptive", "batch_rule": {"fixed_tokens": 4}}}
    assert whole["additional_config"] == {"pld_lab": {"drafter": "suffix-automaton", "batch_rule": False}}
    assert args.batches == [1, 4, 16] and args.prompts == 16 and args.max_new_tokens == 128


def test_the_proposer_path_names_the_class(bench):
    from decoding.integrations import vllm

    module, _, name = bench.PROPOSER.rpartition(".")
    assert module == vllm.__name__ and hasattr(vllm, name)


def test_counters_and_the_table(bench):
    before = {"vllm:spec_decode_num_drafts": 3, "vllm:spec_decode_num_accepted_tokens_per_pos": [2, 1]}
    after = {"vllm:spec_decode_num_drafts": 10, "vllm:spec_decode_num_accepted_tokens_per_pos": [6, 4]}
    assert bench.delta(after, before, "vllm:spec_decode_num_drafts") == 7
    assert bench.delta(after, before, "vllm:spec_decode_num_accepted_tokens_per_pos") == [4, 3]
    assert bench.delta({}, {}, "vllm:spec_decode_num_drafts") == 0
    rows = [bench.Row("none", 4, 512, 10.0, 51.2, same_as_none=4),
            bench.Row("adaptive", 4, 512, 5.0, 102.4, drafts=50, draft_tokens=100, accepted_tokens=80,
                      same_as_none=3, differing=["doc-qa/001"])]
    assert rows[1].acceptance == 0.8 and rows[1].mean_acceptance_length == 2.6
    text = bench.table(rows)
    assert "2.00" in text and "3/4" in text and "80" in text
    assert bench.cpu_list("0-2,5") == [0, 1, 2, 5]


def test_a_missing_model_is_one_line(bench, monkeypatch, capsys):
    monkeypatch.delenv(bench.MODEL_ENV, raising=False)
    assert bench.main(["--quick"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: no model: set PLD_LAB_MODEL_DIR")
