"""Run vLLM on the embedded model, with or without our proposer, and print what it generated as JSON.

    python tests/integrations/vllm_generate.py MODEL_DIR [DRAFTER_SPEC [PASSES [TEMPERATURE [BATCH_RULE]]]]

With PASSES = 2 the same requests are served twice, one batch after the other (a drafter that keeps
a history can copy the second batch's answers from the first's). With TEMPERATURE > 0 the requests
sample (request i with seed i). With a drafter, the proposer is linked to the requests' sampling
parameters (decoding.integrations.vllm_sampling.SamplingLink), and the result says for which regimes
it built its drafters. BATCH_RULE is the proposer's ``batch_rule`` setting as JSON (default: absent,
the default rule, which prices the engine's steps by their wall-clock time, so what it sends varies
from run to run; ``false`` sends every offered draft whole, the same drafts every run).

A script of its own (not a test module): vLLM spawns its engine process, which must be started
under ``if __name__ == "__main__"``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "0-1")  # vLLM binds one thread by default on 2 cores
# numba caches compiled kernels beside our sources (lookup/**/__pycache__), for one numba version: the
# vLLM venv pins another numba than the main venv, and each would invalidate the other's cache (then
# the competition's sandboxed child, which may not write it, compiles inside its time limit)
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(sys.prefix) / "numba-cache"))

TEXTS = [
    "Repeat exactly: the quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
    "Summarize: Lists are mutable sequences, typically used to store collections of homogeneous items. " * 3,
    "Write a Python function that returns the sum of a list of numbers.",
    "Copy this code:\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
]
MAX_TOKENS = [96, 64, 80, 48]  # requests of different lengths, finishing at different times


def main(model: str, drafter: str | None, passes: int = 1, temperature: float = 0.0,
         batch_rule: object = None) -> dict:
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams

    tokenizer = AutoTokenizer.from_pretrained(model)
    prompts = [{"prompt_token_ids": tokenizer.apply_chat_template([{"role": "user", "content": t}],
                                                                  add_generation_prompt=True,
                                                                  return_dict=True)["input_ids"]} for t in TEXTS]
    settings = dict(model=model, dtype="float32", enforce_eager=True, max_model_len=2048, seed=0,
                    disable_log_stats=False)
    if drafter:
        settings["speculative_config"] = {"method": "custom_class", "num_speculative_tokens": 5,
                                          "model": "decoding.integrations.vllm.DrafterProposer"}
        settings["additional_config"] = {"pld_lab": {"drafter": drafter}}
        if batch_rule is not None:
            settings["additional_config"]["pld_lab"]["batch_rule"] = batch_rule
        settings["worker_extension_cls"] = "decoding.integrations.vllm_sampling.SamplingLink"
    llm = LLM(**settings)
    if drafter:
        from decoding.integrations.vllm_sampling import link_sampling

        assert link_sampling(llm)
    params = [SamplingParams(temperature=temperature, max_tokens=n, seed=i if temperature else None)
              for i, n in enumerate(MAX_TOKENS)]
    tokens = []
    for _ in range(passes):
        outputs = llm.generate(prompts, params)
        tokens.append([list(o.outputs[0].token_ids) for o in outputs])
    metrics = {m.name: getattr(m, "value", getattr(m, "values", None)) for m in llm.get_metrics()
               if m.name.startswith("vllm:spec_decode")}
    regimes = llm.collective_rpc("pld_regimes_built")[0] if drafter else None
    return {"tokens": tokens[0], "passes": tokens, "metrics": metrics, "regimes": regimes}


if __name__ == "__main__":
    result = main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None,
                  int(sys.argv[3]) if len(sys.argv) > 3 else 1, float(sys.argv[4]) if len(sys.argv) > 4 else 0.0,
                  json.loads(sys.argv[5]) if len(sys.argv) > 5 else None)
    print("RESULT " + json.dumps(result, default=list))
