"""Our proposer inside the real vLLM engine (``make test-vllm``; skipped where vLLM is not installed).

SmolLM2 at batch 4, requests of different lengths finishing at different times: the output with
our drafters proposing equals vLLM's own without speculation, and drafts are accepted; with a history
shared by the requests, a second batch of the same requests gets more of its drafts accepted. Sampled
requests get drafters built for their own regime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

SCRIPT = Path(__file__).with_name("vllm_generate.py")
ROOT = Path(__file__).resolve().parents[2]


def generate(drafter: str | None = None, passes: int = 1, temperature: float = 0.0,
             batch_rule: object = None) -> dict:
    model = os.environ.get("PLD_LAB_MODEL_DIR")
    if not model:
        pytest.skip("PLD_LAB_MODEL_DIR (the converted embedded model) is not set; run `make test-vllm`")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [drafter, str(passes), str(temperature)] if drafter else []
    if drafter and batch_rule is not None:
        args.append(json.dumps(batch_rule))
    out = subprocess.run([sys.executable, str(SCRIPT), model, *args], capture_output=True, text=True, timeout=600,
                         env=env)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def plain() -> dict:
    return generate()


@pytest.mark.parametrize("drafter", ["suffix-automaton", "frequency", "adaptive"])
def test_our_drafters_inside_vllm_keep_its_output_and_get_drafts_accepted(plain, drafter):
    ours = generate(drafter)
    assert ours["tokens"] == plain["tokens"]
    assert set(ours["regimes"]) == {"greedy"}  # linked: each request's drafter built for greedy decoding
    assert len({len(t) for t in plain["tokens"]}) > 1  # the requests did finish at different times
    assert ours["metrics"]["vllm:spec_decode_num_drafts"] > 0
    assert ours["metrics"]["vllm:spec_decode_num_accepted_tokens"] > 0


def test_a_history_shared_by_vllms_requests_keeps_its_output_and_copies_earlier_answers(plain):
    # the same four requests twice, one batch after the other: with a history, the second batch's
    # drafts can copy the first batch's answers
    per_request = generate("adaptive", passes=2)
    shared = generate("adaptive:history=true", passes=2)
    assert shared["passes"] == per_request["passes"] == [plain["tokens"]] * 2
    accepted = [r["metrics"]["vllm:spec_decode_num_accepted_tokens"] for r in (per_request, shared)]
    assert accepted[1] > 1.2 * accepted[0], accepted



def test_sampled_requests_get_drafters_built_for_their_regime():
    # vLLM 0.32 tells a custom proposer no request's sampling parameters: the worker extension links them.
    # Every offered draft sent whole: the default batch rule prices steps by their wall-clock time, so
    # what it sends (and how much of it is accepted) varied from run to run (12 to 51 draft tokens)
    sampled = generate("adaptive", temperature=1.0, batch_rule=False)
    assert set(sampled["regimes"]) == {"t1"} and sampled["regimes"]["t1"] >= 4  # one (or more) a request
    assert sampled["metrics"]["vllm:spec_decode_num_drafts"] > 0
    # vLLM 0.32's CPU worker divides the logits of every drafted position by unset memory when sampling,
    # whichever proposer drafts: its output turns to odd tokens and almost no draft token is accepted
    # (0 of 35 here, 1 of 206 and 2 of 102 before). Mended (decoding/integrations/vllm_cpu.py), 10 of 64
    # were, on the dev machine (vLLM's own measurements at temperature 1 report ~30%)
    metrics = sampled["metrics"]
    assert metrics["vllm:spec_decode_num_accepted_tokens"] >= 0.05 * metrics["vllm:spec_decode_num_draft_tokens"]
