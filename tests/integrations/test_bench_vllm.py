"""experiments/bench_vllm.py without vLLM (so in the main venv too): each method's engine settings, the
interleaved schedule, per-request counters, the summary over rounds and the table (the spreads and the
verdict rule are experiments.reporting.repeats', tested with it)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pldcore.errors import PLDError

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
    args = bench.parse_args(["--model", "M", "--methods", "none, ngram,ngram@schedule,suffix,adaptive,"
                             "suffix-automaton@whole", "--batch-rule", '{"fixed_tokens": 4}'])
    none, ngram, scheduled, suffix, ours, whole = (bench.engine_settings(m, args, 2048, 2 ** 30)
                                                   for m in args.methods)
    assert "speculative_config" not in none and none["enable_prefix_caching"] is False
    assert "per_request_spec_decode_metrics" not in none  # vLLM refuses it without speculation
    assert none["kv_cache_memory_bytes"] == 2 ** 30 and none["max_num_seqs"] == 32
    assert ngram["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 5,
                                           "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    assert scheduled["speculative_config"]["num_speculative_tokens_per_batch_size"] == [
        [1, 1, 5], [2, 4, 4], [5, 16, 2], [17, 1024, 1]]
    assert suffix["speculative_config"] == {"method": "suffix", "num_speculative_tokens": 5,
                                            "suffix_decoding_max_cached_requests": 0}
    assert ours["speculative_config"]["model"] == "decoding.integrations.vllm.DrafterProposer"
    assert ours["additional_config"] == {"pld_lab": {"drafter": "adaptive", "batch_rule": {"fixed_tokens": 4}}}
    assert whole["additional_config"] == {"pld_lab": {"drafter": "suffix-automaton", "batch_rule": False}}
    assert all(s["per_request_spec_decode_metrics"] == "summary" for s in (ngram, scheduled, suffix, ours, whole))
    assert args.batches == [1, 4, 16, 32] and args.prompts == 32 and args.rounds == 3


def test_the_proposer_path_names_the_class(bench):
    from decoding.integrations import vllm

    module, _, name = bench.PROPOSER.rpartition(".")
    assert module == vllm.__name__ and hasattr(vllm, name)


def test_a_batch_schedule_runs_on_from_one(bench):
    assert bench.parse_schedule("1-4:5, 5-32:2") == [(1, 4, 5), (5, 32, 2)]
    assert bench.parse_schedule("1:3,2-8:1") == [(1, 1, 3), (2, 8, 1)]
    for bad in ("2-4:5", "1-4:5,6-8:1", "1-4", "1-4:x", "4-1:2", ""):
        with pytest.raises(PLDError):
            bench.parse_schedule(bad)


def test_rounds_interleave_every_method_and_rotate_who_goes_first(bench):
    kept = bench.schedule(["A", "B", "C"], [1, 4], 3, kept=True)
    assert [(s.method, s.batch) for s in kept[:6]] == [("A", 1), ("B", 1), ("C", 1), ("A", 4), ("B", 4), ("C", 4)]
    assert [s.method for s in kept if s.round == 1 and s.batch == 1] == ["B", "C", "A"]
    assert [s.method for s in kept if s.round == 2 and s.batch == 4] == ["C", "A", "B"]
    assert len(kept) == 18 and len(set(kept)) == 18  # every method at every batch in every round, once
    restarted = bench.schedule(["A", "B"], [1, 4], 2, kept=False)
    assert [(s.round, s.method, s.batch) for s in restarted] == [
        (0, "A", 1), (0, "A", 4), (0, "B", 1), (0, "B", 4), (1, "B", 1), (1, "B", 4), (1, "A", 1), (1, "A", 4)]


def test_engines_are_kept_only_where_they_fit(bench):
    gib = 2 ** 30
    assert bench.keep_engines("auto", 6, 2 * gib, 14 * gib, margin=3 * gib)
    assert not bench.keep_engines("auto", 6, 3 * gib, 14 * gib, margin=3 * gib)
    assert bench.keep_engines("kept", 6, 9 * gib, 1 * gib) and not bench.keep_engines("restart", 1, 0, 99 * gib)
    # fp32 SmolLM2-135M: 30 layers x 3 KV heads x 64 x 2 x 4 bytes = 46,080 bytes a token
    config = {"num_hidden_layers": 30, "num_key_value_heads": 3, "num_attention_heads": 9, "head_dim": 64,
              "hidden_size": 576}
    got = bench.kv_cache_bytes(config, [100, 300, 200], batch=2, extra_tokens=50)
    assert got >= 1.25 * (300 + 200 + 100) * 46080 and got % 2 ** 20 == 0


def test_importing_it_loads_no_numba():
    # vLLM's engine processes import the file again, and one holding numba fails to start its CPU worker:
    # `lookup` itself may load (it imports no drafter), no drafter or numba may
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('bench_vllm', sys.argv[1])\n"
            "module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(module)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')\n"
            "             or m.startswith(('lookup.drafters', 'lookup.indexes', 'lookup.peers', 'lookup.acceptance'))))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "experiments" / "bench_vllm.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class Metrics:
    """vLLM's RequestSpecDecodeMetrics, as much of it as the benchmark reads."""

    def __init__(self, histogram, drafted):
        self.histogram, self.drafted = histogram, drafted

    def to_dict(self):
        return {"num_spec_steps": sum(self.histogram), "num_draft_tokens": self.drafted,
                "num_accepted_draft_tokens": sum(j * c for j, c in enumerate(self.histogram)),
                "acceptance_histogram": self.histogram}


def test_per_request_metrics_sum_to_the_measurements_counters(bench):
    a = bench.request_record("p/0", SimpleNamespace(token_ids=[1] * 10, spec_decode_metrics=Metrics([1, 2, 0, 1], 12)))
    b = bench.request_record("p/1", SimpleNamespace(token_ids=[1] * 4, spec_decode_metrics=Metrics([3, 0, 0, 0], 3)))
    plain = bench.request_record("p/0", SimpleNamespace(token_ids=[1] * 10, spec_decode_metrics=None))
    # 10 tokens, 5 of them accepted draft tokens: 5 forwards produced them (the prompt's among them)
    # a last step past max_tokens: 24 tokens output, 18 draft tokens accepted in 8 steps with a draft
    assert bench.request_steps(24, 8, 18) == 9 and bench.request_steps(10, 4, 5) == 5
    assert a == {"prompt": "p/0", "tokens": 10, "steps": 5, "spec_steps": 4, "draft_tokens": 12,
                 "accepted_tokens": 5, "histogram": [1, 2, 0, 1], "acceptance": 5 / 12}
    assert b["acceptance"] == 0 and plain == {"prompt": "p/0", "tokens": 10, "steps": 10}
    # node 0 accepted in the 3 steps with >= 1 accepted, node 1 in 1, node 2 in 1
    assert bench.accepted_by_position([1, 2, 0, 1]) == [3, 1, 1]
    assert bench.totals([a, b, plain]) == {"steps": 19, "drafts": 7, "draft_tokens": 15, "accepted_tokens": 5,
                                           "accepted_per_position": [3, 1, 1]}
    assert bench.totals([plain]) == {"steps": 10, "drafts": 0, "draft_tokens": 0, "accepted_tokens": 0,
                                     "accepted_per_position": []}


def test_outputs_are_compared_with_plain_decoding_in_the_same_round_and_summarized(bench):
    M = bench.Measurement
    prompts = [bench.BenchPrompt("p/0", [1]), bench.BenchPrompt("p/1", [2])]
    clock = {"calls": 50, "rows": 200, "seconds": 0.1, "cpu_seconds": 0.09}
    rows = [M("none", 4, 0, 100, 10.0, 10.0, load_before=1.0),
            M("ours", 4, 0, 100, 5.0, 20.0, load_before=1.5, proposer=clock),
            M("none", 4, 1, 100, 8.0, 12.5, load_before=2.0),
            M("ours", 4, 1, 100, 4.0, 25.0, load_before=2.5, drafts=10, draft_tokens=30, accepted_tokens=15,
              steps=85, proposer={**clock, "seconds": 0.2})]
    outputs = {("none", 4, 0): [[5], [6]], ("ours", 4, 0): [[5], [6]],
               ("none", 4, 1): [[5], [6]], ("ours", 4, 1): [[5], [7]]}
    records = [{"method": "ours", "batch": 4, "round": 1, "prompt": "p/1", "acceptance": 0.5},
               {"method": "ours", "batch": 4, "round": 1, "prompt": "p/0", "acceptance": 1.0},
               {"method": "none", "batch": 4, "round": 1, "prompt": "p/0"}]
    bench.compare(rows, records, outputs, prompts)
    assert (rows[1].same_as_none, rows[3].same_as_none, rows[3].differing) == (2, 1, ["p/1"])
    assert [r.get("same_as_none") for r in records] == [False, True, None]
    none, ours = bench.summarize(rows, records)
    assert none.method == "none" and none.ratio is None and none.vs_none is None
    assert ours.tokens_per_s.median == 22.5 and ours.ratio.lo == 2.0 and ours.ratio.hi == 2.0
    assert ours.vs_none == "faster" and (ours.same_as_none, ours.compared) == (3, 4)
    assert ours.request_acceptance.median == 0.75 and (ours.load.lo, ours.load.hi) == (1.5, 2.5)
    # 2,000 and 4,000 us a call, 2% and 5% of the measured time: the medians
    assert ours.proposer_us_per_step == 3000 and ours.proposer_share == 0.035 and ours.steps == 42
    assert none.proposer_us_per_step is None and none.proposer_share is None
    text = bench.table([none, ours])
    assert "22.5 (20-25)" in text and "2 (2-2)" in text and "faster" in text and "3/4" in text
    assert "75 (62.5-87.5)" in text and "3,000" in text and "3.5" in text and "2 (1.5-2.5)" in text
    assert bench.versus(rows, ["ours"], ["none"]) == [(4, "ours", "none", "faster")]


def test_the_proposer_clock_times_whichever_proposer_the_worker_has(bench):
    class Proposer:  # vLLM's proposers return one draft per batch row
        def propose(self, *rows):
            return [[1, 2]] * len(rows)

    worker = bench.ProposerClock()
    worker.model_runner = SimpleNamespace(drafter=Proposer())
    started = {"calls": 0, "rows": 0, "seconds": 0.0, "cpu_seconds": 0.0, "learnt_prices": None, "regimes": None}
    assert worker.pld_proposer_clock() == started  # starts it
    assert worker.model_runner.drafter.propose("a", "b") == [[1, 2], [1, 2]]  # the drafts pass through
    worker.model_runner.drafter.propose("a")
    read = worker.pld_proposer_clock()
    assert (read["calls"], read["rows"]) == (2, 3) and read["seconds"] >= 0 and read["cpu_seconds"] >= 0
    assert worker.pld_proposer_clock()["calls"] == 0  # each read restarts the count
    plain = bench.ProposerClock()
    plain.model_runner = SimpleNamespace(drafter=None)
    assert plain.pld_proposer_clock() is None  # no speculation: no proposer


def test_speculative_engines_carry_the_proposer_clock(bench):
    args = bench.parse_args(["--model", "M", "--methods", "none,suffix,adaptive"])
    none, suffix, ours = (bench.engine_settings(m, args, 2048) for m in args.methods)
    assert "worker_extension_cls" not in none
    assert suffix["worker_extension_cls"] == ours["worker_extension_cls"] == bench.CLOCK
    module, _, name = bench.CLOCK.rpartition(".")
    assert module == "experiments.bench_vllm" and hasattr(bench, name)


def test_cpu_lists(bench):
    assert bench.cpu_list("0-2,5") == [0, 1, 2, 5] and bench.cpu_list("0-1|2-3") == [0, 1, 2, 3]


def test_user_mistakes_are_one_line(bench, monkeypatch, capsys):
    monkeypatch.delenv(bench.MODEL_ENV, raising=False)
    assert bench.main(["--quick"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: no model: set PLD_LAB_MODEL_DIR")
    assert bench.main(["--model", str(ROOT), "--ngram-schedule", "2-4:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --ngram-schedule") and "\n" not in err


def test_sampled_runs_are_asked_for_and_bad_values_are_one_line(bench, capsys):
    from pldcore.setting import GREEDY, Regime

    unseeded = bench.parse_args(["--model", "M", "--temperature", "1"])
    assert bench.parse_args(["--model", "M"]).regime == GREEDY and unseeded.seed is None
    args = bench.parse_args(["--model", "M", "--temperature", "1", "--top-p", "0.9", "--seed", "7"])
    assert args.regime == Regime(1.0, 0, 0.9) and args.seed == 7
    assert bench.main(["--model", str(ROOT), "--temperature", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --temperature / --top-p: temperature must be") and "\n" not in err


def test_a_sampled_request_gets_the_seed_of_its_prompt_whatever_its_batch(bench):
    pytest.importorskip("vllm")
    sampled = bench.parse_args(["--model", "M", "--temperature", "1", "--seed", "7", "--max-new-tokens", "9"])
    a, b = bench.sampling_params(sampled, 0), bench.sampling_params(sampled, 3)
    assert (a.temperature, a.top_p, a.seed, b.seed, a.max_tokens) == (1.0, 1.0, 7, 10, 9)
    greedy = bench.sampling_params(bench.parse_args(["--model", "M"]), 3)
    assert greedy.temperature == 0 and greedy.seed is None
    assert bench.sampling_params(bench.parse_args(["--model", "M", "--temperature", "1"]), 3).seed is None


def test_under_sampling_identity_is_reported_and_not_claimed(bench):
    from pldcore.setting import GREEDY, Regime

    M = bench.Measurement
    rows = [M("none", 1, 0, 4, 1.0, 4.0), M("ours", 1, 0, 4, 1.0, 4.0), M("none", 4, 0, 4, 1.0, 4.0),
            M("ours", 4, 0, 4, 1.0, 4.0)]
    prompts = [bench.BenchPrompt("p/0", [1]), bench.BenchPrompt("p/1", [2])]
    outputs = {("none", 1, 0): [[5, 6], [7, 8]], ("ours", 1, 0): [[5, 6], [7, 9]],
               ("none", 4, 0): [[5, 6], [7, 8]], ("ours", 4, 0): [[5, 1], [7, 8]]}
    records = [{"method": "ours", "batch": 1, "round": 0, "prompt": "p/1"},
               {"method": "ours", "batch": 4, "round": 0, "prompt": "p/0"}]
    bench.compare(rows, records, outputs, prompts)
    assert [r["first_difference"] for r in records] == [1, 1]
    assert bench.reproduced(outputs) == (2, 2) and bench.reproduced(outputs, "ours") == (0, 2)
    sampled = bench.identity_line(rows, records, outputs, Regime(1.0), 0)
    assert "2/4 outputs with speculation equal" in sampled and "token 1 (median)" in sampled
    assert "Not a test of losslessness" in sampled and "reproduces itself across batch sizes and rounds: 2/2" in sampled
    assert bench.identity_line(rows, records, outputs, GREEDY, 0).startswith("SOME OUTPUTS DIFFER")
    unseeded = bench.identity_line(rows, records, outputs, Regime(1.0), None)
    assert "(temperature 1, top-k 0, top-p 1, unseeded)" in unseeded and "no two runs are expected to agree" in unseeded


def test_the_clock_links_our_proposer_and_reports_its_drafters_by_regime(bench):
    import numpy as np

    from decoding.integrations.vllm import DrafterProposer

    proposer = DrafterProposer(drafter="suffix-automaton", num_speculative_tokens=3)
    batch = SimpleNamespace(temperature_cpu=np.array([1.0], np.float32), top_k_cpu=np.array([10], np.int32),
                            top_p_cpu=np.array([1.0], np.float32), vocab_size=10)
    worker = bench.ProposerClock()
    worker.model_runner = SimpleNamespace(drafter=proposer, input_batch=batch)
    assert worker.pld_link_sampling() is True
    worker.pld_proposer_clock()
    proposer.propose([[3]], np.array([4]), np.array([[1, 2, 1, 2]]))
    assert worker.pld_proposer_clock()["regimes"] == {"t1": 1}
