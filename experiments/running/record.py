"""Record greedy traces: plain decoding of every turn of a suite's prompts, once."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import decoding
import lookup
from experiments.benchmarks.tasks import Prompt
from experiments.benchmarks.traces import TraceCase, append_case, read_cases, trace_file
from experiments.running.cases import Case, conversation_cases


def record(target, task: str, prompts: Sequence[Prompt], max_new_tokens: int, folder: Path, progress=None) -> Path:
    """Greedy-decode every turn of ``prompts`` not yet in the trace file; returns the file."""
    path = trace_file(folder, task, max_new_tokens)
    done = {c.case: c for c in read_cases(path)}

    def answer(case: Case) -> list[int]:
        if case.id not in done:
            out = decoding.generate(target, case.ids, lookup.create("none"), max_new_tokens)
            done[case.id] = TraceCase(
                case.id, case.category, case.turn, case.ids, out.tokens, [s.forward_s for s in out.stats.steps],
                target.name, target.vocab_size, sorted(target.eos_token_ids), max_new_tokens,
            )
            append_case(path, done[case.id])
        if progress is not None:
            progress.update()
        return done[case.id].output

    for prompt in prompts:
        for _ in conversation_cases(target, prompt, answer):
            pass  # conversation_cases calls answer() for each turn
    return path
