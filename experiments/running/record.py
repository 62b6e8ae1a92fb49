"""Record greedy traces: plain decoding of every turn of a suite's prompts, once, with the target's top-k rows."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

import decoding
from decoding.target import TopRows
from experiments.benchmarks.tasks import Prompt
from experiments.benchmarks.traces import TraceCase, append_case, read_cases, trace_file
from experiments.running.cases import Case, conversation_cases
from lookup.base import EMPTY_DRAFT, MAX_TOP, Draft, Drafter


class TopRecorder(Drafter):
    """Plain decoding (drafts nothing) that keeps every top-k row the loop hands it.

    Recording through the loop itself means a trace holds exactly the rows a live run hands a
    drafter that wants them: the prompt's from the prefill, then one per committed token.
    """

    name = "none"

    def __init__(self, k: int = MAX_TOP) -> None:
        super().__init__()
        self.wants_top = k
        self._ids: list[np.ndarray] = []
        self._probs: list[np.ndarray] = []

    def reset(self, prompt: Sequence[int]) -> None:
        self._ids, self._probs = [], []

    def extend(self, tokens: Sequence[int]) -> None:
        pass

    def propose(self, budget: int) -> Draft:
        return EMPTY_DRAFT

    def observe_top(self, tokens: np.ndarray, top: np.ndarray, probs: np.ndarray) -> None:
        self._ids.append(top)
        self._probs.append(probs)

    def rows(self) -> TopRows:
        """Every row handed so far, in sequence order: [prompt + output - 1, k]."""
        return TopRows(np.concatenate(self._ids).astype(np.int64), np.concatenate(self._probs).astype(np.float16))


def record_case(target, case: Case, max_new_tokens: int, top_k: int = MAX_TOP) -> TraceCase:
    """Greedy-decode one case and return its trace (with the target's top-``top_k`` rows)."""
    recorder = TopRecorder(top_k)
    out = decoding.generate(target, case.ids, recorder, max_new_tokens)
    return TraceCase(case.id, case.category, case.turn, case.ids, out.tokens, [], target.name, target.vocab_size,
                     sorted(target.eos_token_ids), max_new_tokens, top=recorder.rows())


def record(target, task: str, prompts: Sequence[Prompt], max_new_tokens: int, folder: Path, progress=None) -> Path:
    """Greedy-decode every turn of ``prompts`` not yet in the trace file; returns the file."""
    path = trace_file(folder, task, max_new_tokens)
    done = {c.case: c for c in read_cases(path)}

    def answer(case: Case) -> list[int]:
        if case.id not in done:
            done[case.id] = record_case(target, case, max_new_tokens)
            append_case(path, done[case.id])
        if progress is not None:
            progress.update()
        return done[case.id].output

    for prompt in prompts:
        for _ in conversation_cases(target, prompt, answer):
            pass  # conversation_cases calls answer() for each turn
    return path
