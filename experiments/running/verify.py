"""Check recorded traces against the model here: re-decode cases (greedy, or sampled with each case's
seed) and compare token by token.

    checks = check_traces(target, sets, count=10)
    [c for c in checks if not c.identical]       # where this machine's model parts from the traces

Traces are one model's greedy behaviour on one machine. Another machine (other kernels, another
library version) can part from them where the target's top two logits are within float error of
each other; a difference at a wide margin means the traces are not this model's behaviour here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import decoding
import lookup
from decoding.lossless import Mismatch, compare_outputs
from decoding.progress import progress_bar
from experiments.benchmarks.traces import TraceSet, spread_cases
from pldcore.errors import PLDError


@dataclass(frozen=True)
class TraceCheck:
    """One re-decoded case: None as mismatch when every token is the trace's."""

    case: str
    task: str
    tokens: int  # tokens in the trace's output
    mismatch: Mismatch | None

    @property
    def identical(self) -> bool:
        return self.mismatch is None


def check_traces(target, sets: Sequence[TraceSet], count: int, progress: bool = True) -> list[TraceCheck]:
    """Decode ``count`` cases (one per task in turn) on ``target`` as they were recorded (greedy, or in their
    sampling regime with their seed) and compare each with its trace."""
    if count < 1:
        raise PLDError(f"--cases must be >= 1, got {count}")
    picked = spread_cases(sets, count)
    sizes = {case.vocab_size for _, case in picked}
    if sizes and sizes != {target.vocab_size}:
        raise PLDError(f"the traces come from a model with a vocabulary of {', '.join(map(str, sorted(sizes)))}; "
                       f"{target.name} has {target.vocab_size}: pick its own traces (--traces DIR)")
    checks = []
    with progress_bar(len(picked), "verify", enabled=progress) as bar:
        for trace_set, case in picked:
            regime = case.regime  # a sampled trace is decoded again with its own seed
            out = decoding.generate(target, case.prompt, lookup.create("none"), case.max_new_tokens,
                                    eos_token_ids=case.eos or None, temperature=regime.temperature,
                                    top_k=regime.top_k, top_p=regime.top_p, seed=case.seed)
            checks.append(TraceCheck(case.case, trace_set.task, len(case.output),
                                     compare_outputs(target, case.prompt, out.tokens, case.output, regime, case.seed)))
            bar.update()
    return checks
