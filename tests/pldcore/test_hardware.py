"""The roofline cost model of GPUs: its terms, its profiles, the named-profile registry, and its
calibration against published measurements (the table docs/hardware.md shows)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path

import pytest

from pldcore.cost import CPU_SMOLLM2
from pldcore.errors import PLDError
from pldcore.hardware import (
    A100, BATCH_CALIBRATION, BATCH_DEPLOYMENTS, BATCHES, CALIBRATION, CONTEXTS, DEPLOYMENTS, FLAT_FORWARD_S, H100,
    LLAMA_2_7B, LLAMA_2_70B, LLAMA_31_8B, LLAMA_31_70B, LLAMA_32_1B, PROFILES, SIZES, SOURCES, TOLERANCE, Deployment,
    batch_calibration_rows, batch_profile_rows, batch_summary, calibration_rows, compute_bound_from, gpu_rows,
    model_rows, profile_named, profile_rows, summary,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardware.md"
H100_8B = DEPLOYMENTS["h100-8b"]


# -- the inputs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("model, params", [
    (LLAMA_32_1B, 1_235_814_400), (LLAMA_31_8B, 8_030_261_248), (LLAMA_31_70B, 70_553_706_496),
    (LLAMA_2_7B, 6_738_415_616), (LLAMA_2_70B, 68_976_648_192),
])
def test_parameter_counts_match_the_model_cards(model, params):
    assert model.params == params


def test_bytes_read_per_forward_match_what_gpt_fast_and_torchao_count():
    # their "model size" leaves out the input embedding, of which a forward reads only a few rows
    assert round(LLAMA_31_8B.read_params * 2 / 1e9, 2) == 15.01
    assert round(LLAMA_2_7B.read_params * 2 / 1e9, 2) == 13.21
    assert LLAMA_32_1B.read_params == LLAMA_32_1B.params  # tied: the embedding is the head, read in full


def test_kv_cache_bytes_per_token():
    assert LLAMA_31_8B.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2  # 128 KiB
    assert LLAMA_2_7B.kv_bytes_per_token == 4 * LLAMA_31_8B.kv_bytes_per_token  # 32 KV heads, not 8


def test_flops_of_one_token_without_context():
    m = LLAMA_31_8B
    assert m.flops(1, 0) == 2 * m.read_params + 4 * m.layers * m.hidden
    assert m.flops(8, 100, rows=1) < m.flops(8, 100)  # the LM head on one row only


# -- the estimate --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_forward_time_never_falls_with_more_tokens_or_a_longer_context(name):
    d = DEPLOYMENTS[name]
    for context in (0, 512, 4096, 8192):
        times = [d.forward_seconds(k, context) for k in range(1, 300)]
        assert all(b >= a for a, b in zip(times, times[1:]))
    for k in (1, 16, 64, 256):
        times = [d.forward_seconds(k, c) for c in range(0, 16384, 512)]
        assert all(b > a for a, b in zip(times, times[1:]))  # the KV cache is read every time


def test_8b_on_an_h100_is_memory_bound_at_one_token_and_compute_bound_at_many():
    assert H100_8B.terms(1, 1024).bound == "memory"
    assert H100_8B.terms(64, 8192).bound == "memory"
    assert H100_8B.terms(1024, 1024).bound == "compute"
    assert H100_8B.terms(4096, 0, rows=1).bound == "compute"  # a prefill
    ridge = compute_bound_from(H100_8B, 1024)
    assert 64 < ridge < 1024
    assert H100_8B.terms(ridge - 1, 1024).bound == "memory"


def test_a_forward_pays_the_overhead_and_tensor_parallel_pays_all_reduces():
    one = H100_8B.terms(1, 0)
    assert one.seconds == pytest.approx(one.memory_s + one.overhead_s)
    assert one.communication_s == 0.0
    four = replace(H100_8B, tensor_parallel=4).terms(1, 0)
    assert four.memory_s == pytest.approx(one.memory_s / 4)
    assert four.communication_s == pytest.approx(2 * LLAMA_31_8B.layers * H100_8B.allreduce_s)


def test_prefill_with_every_rows_logits_costs_more():
    assert H100_8B.prefill_seconds(2048, rows=True) > H100_8B.prefill_seconds(2048)
    assert H100_8B.prefill_seconds(4096) > 2 * H100_8B.prefill_seconds(1024)  # compute-bound, attention quadratic


def test_what_fits_on_the_gpus():
    assert all(d.fits() for d in DEPLOYMENTS.values())
    assert not Deployment(H100, LLAMA_31_70B).fits()
    with pytest.raises(ValueError, match="8 KV heads"):
        Deployment(H100, LLAMA_31_70B, tensor_parallel=3)


# -- the profiles --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_each_gpu_profile_is_the_estimate_on_the_shared_grid(name):
    p, d = PROFILES[name], DEPLOYMENTS[name]
    assert p.sizes == SIZES and SIZES[: len(CPU_SMOLLM2.sizes)] == CPU_SMOLLM2.sizes
    assert p.sizes[0] == 1 and 64 in p.sizes
    assert p.contexts == CONTEXTS == (512, 1024, 2048, 4096, 8192)
    assert len(p.grid) == len(CONTEXTS) and all(len(row) == len(SIZES) for row in p.grid)
    assert len(p.prefill) == len(p.prefill_rows) == len(CONTEXTS)
    assert p.seconds == p.grid[0]
    assert p.cost(16, 2048) == pytest.approx(d.forward_seconds(16, 2048))
    assert p.prefill_cost(4096) == pytest.approx(d.prefill_seconds(4096))
    for text in (p.model, p.device, p.host):
        assert "roofline estimate" in text and "measured" not in text
    assert p.measured_at == "" and p.spread is None


def test_profile_names_are_gpu_model_and_tensor_parallel():
    assert all(re.fullmatch(r"[a-z0-9]+-\d+b(-tp\d+)?", name) for name in DEPLOYMENTS)
    assert {"h100-8b", "h200-8b", "a100-8b", "l4-1b", "h100-70b-tp4"} <= set(DEPLOYMENTS)


# -- the registry --------------------------------------------------------------------------------------
def test_registry_holds_the_reference_cpu_profile_itself_and_the_flat_idealisation():
    assert profile_named("cpu") is CPU_SMOLLM2
    flat = profile_named("flat")
    assert flat.cost(1) == flat.cost(64) == FLAT_FORWARD_S
    assert flat.relative(65) == 2.0
    assert set(PROFILES) == {"cpu", "flat", *DEPLOYMENTS, *BATCH_DEPLOYMENTS}
    assert profile_named("h100-8b") is profile_named(" H100-8B") is PROFILES["h100-8b"]


@pytest.mark.parametrize("name, close", [("h100-8", "h100-8b"), ("cpu2", "cpu"), ("a100-70b", "a100-70b-tp4")])
def test_an_unknown_profile_name_is_a_one_line_error_with_close_names(name, close):
    with pytest.raises(PLDError) as err:
        profile_named(name)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"unknown cost profile {name!r}")
    assert f"did you mean {close!r}" in message or f"{close!r}," in message.split("?")[0]
    assert "h200-70b-tp2" in message  # and every name


# -- the calibration -----------------------------------------------------------------------------------
def test_every_calibration_check_is_within_the_tolerance_or_says_why_not():
    for point in CALIBRATION:
        assert abs(point.error) <= TOLERANCE or point.note, (point.setting, point.error)
        assert point.source in SOURCES


def test_the_fitted_points_reproduce_and_most_checks_hold():
    fitted = [p for p in CALIBRATION if p.fitted]
    checks = [p for p in CALIBRATION if not p.fitted]
    assert {p.fitted for p in fitted} == {"A100 bandwidth share and overhead", "H100 bandwidth share",
                                          "compute share", "all-reduce latency", "RTX 4090 bandwidth share"}
    assert all(abs(p.error) <= 0.01 for p in fitted if not p.note)
    assert sum(abs(p.error) <= TOLERANCE for p in checks) >= len(checks) - 1


def test_calibration_estimates_move_with_their_inputs():
    point = CALIBRATION[0]
    slower = replace(point, deployment=replace(point.deployment, gpu=replace(A100, bandwidth_share=0.5)))
    assert slower.estimate < point.estimate and slower.error < point.error


# -- a batch of requests -------------------------------------------------------------------------------
#: sha256 of the one-request profiles' JSON (sorted by name), as they were before the batch existed:
#: adding the batch changed none of their numbers; an input changed on purpose changes this digest too
ONE_REQUEST_DIGEST = "aa33138ae6a5b38ff761b1232ad8d7c39f30fc5c05714d1ca6a8ddca977282c9"


def test_batch_one_is_the_one_request_model_to_the_last_bit():
    text = "".join(PROFILES[name].to_json() for name in sorted(DEPLOYMENTS))
    assert hashlib.sha256(text.encode()).hexdigest() == ONE_REQUEST_DIGEST
    for name, d in DEPLOYMENTS.items():
        assert replace(d, batch=1) == d and d.name == name
    for k, c in ((1, 0), (7, 1000), (300, 8192)):
        assert H100_8B.terms(k, c, batch=1) == H100_8B.terms(k, c)


def test_a_step_reads_the_weights_once_and_each_requests_cache_and_does_each_requests_flops():
    one, b32 = H100_8B.terms(4, 2048), BATCH_DEPLOYMENTS["h100-8b-b32"].terms(4, 2048)
    m, bandwidth = LLAMA_31_8B, H100.memory_gbps * 1e9 * H100.bandwidth_share
    weights_s = m.read_params * m.weight_bytes / bandwidth
    assert b32.memory_s - weights_s == pytest.approx(32 * (one.memory_s - weights_s))
    assert b32.compute_s == pytest.approx(32 * one.compute_s)
    assert b32.overhead_s == one.overhead_s  # one engine step, whatever the batch


def test_batch_profiles_are_named_priced_per_step_and_turn_compute_bound_sooner():
    assert set(BATCH_DEPLOYMENTS) == {f"h100-8b-b{b}" for b in BATCHES} == {"h100-8b-b32", "h100-8b-b128"}
    for name, d in BATCH_DEPLOYMENTS.items():
        p = profile_named(name)
        assert p is PROFILES[name] and p.sizes == SIZES and p.contexts == CONTEXTS
        assert p.cost(8, 1024) == pytest.approx(d.forward_seconds(8, 1024))
        assert p.prefill_cost(1024) == PROFILES["h100-8b"].prefill_cost(1024)  # a prompt priced alone
        assert f"batch {d.batch}" in p.device and "roofline estimate" in p.device
    ridges = [compute_bound_from(d, 1024) for d in (H100_8B, *BATCH_DEPLOYMENTS.values())]
    assert ridges == sorted(ridges, reverse=True) and ridges[-1] <= 8
    assert profile_named("h100-8b-b128").relative(16, 1024) > profile_named("h100-8b-b32").relative(16, 1024) > 1.5


def test_a_batch_holds_fewer_tokens_per_request():
    b128 = BATCH_DEPLOYMENTS["h100-8b-b128"]
    assert b128.fits(b128.max_context()) and not b128.fits(b128.max_context() + 1)
    assert not b128.fits(4096) and BATCH_DEPLOYMENTS["h100-8b-b32"].fits(8192)
    with pytest.raises(ValueError, match="batch"):
        Deployment(H100, LLAMA_31_8B, batch=0)


def test_every_batched_check_is_within_the_tolerance_or_says_why_not():
    assert {p.source for p in BATCH_CALIBRATION} <= set(SOURCES)
    for point in BATCH_CALIBRATION:
        assert abs(point.error) <= TOLERANCE or point.note, (point.setting, point.error)
        assert point.deployment.batch == 1  # the point's concurrency sets the batch
    gain = next(p for p in BATCH_CALIBRATION if p.gain_over)
    assert gain.throughput(8) > gain.throughput(1)  # weights shared: more requests, more tokens a second


# -- the docs show these very tables ---------------------------------------------------------------------
def test_the_docs_tables_are_the_codes():
    text = DOC.read_text()
    rows = (*gpu_rows(), *model_rows(), *calibration_rows(), *profile_rows(), *batch_calibration_rows(),
            *batch_profile_rows())
    missing = [row for row in rows if row not in text]
    assert missing == []
    assert summary() in text and batch_summary() in text
    assert all(source in text for source in SOURCES.values())


def test_an_estimated_profile_survives_json_as_a_trace_folder_stores_it():
    from pldcore.cost import CostProfile

    p = PROFILES["h200-70b-tp2"]
    assert CostProfile.from_json(p.to_json()) == p
