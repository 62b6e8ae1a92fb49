"""Record traces: plain decoding (greedy, or sampled with a seed per case) of every turn of a suite's
prompts, once, with the target's top-k rows."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

import decoding
from decoding.target import TopRows
from experiments.benchmarks.tasks import Prompt
from experiments.benchmarks.traces import TraceCase, append_case, case_seed, read_cases, sampling_of, trace_file
from experiments.running.cases import Case, conversation_cases
from lookup.base import EMPTY_DRAFT, MAX_TOP, Draft, Drafter
from pldcore.errors import PLDError
from pldcore.setting import GREEDY, Regime


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


def record_case(target, case: Case, max_new_tokens: int, top_k: int = MAX_TOP, regime: Regime = GREEDY,
                seed: int = 0) -> TraceCase:
    """Decode one case (greedy, or sampled in ``regime`` with the case's own seed,
    :func:`~experiments.benchmarks.traces.case_seed` of ``seed``) and return its trace, with the target's
    top-``top_k`` rows."""
    recorder = TopRecorder(top_k)
    drawn = case_seed(seed, case.id)
    out = decoding.generate(target, case.ids, recorder, max_new_tokens, temperature=regime.temperature,
                            top_k=regime.top_k, top_p=regime.top_p, seed=None if regime.greedy else drawn)
    return TraceCase(case.id, case.category, case.turn, case.ids, out.tokens, [], target.name, target.vocab_size,
                     sorted(target.eos_token_ids), max_new_tokens, top=recorder.rows(),
                     sampling=sampling_of(regime, drawn))


def record(target, task: str, prompts: Sequence[Prompt], max_new_tokens: int, folder: Path, progress=None,
           regime: Regime = GREEDY, seed: int = 0) -> Path:
    """Decode every turn of ``prompts`` not yet in the trace file (greedy, or sampled in ``regime``
    from ``seed``); returns the file. A file that holds another regime or seed is refused: its cases
    would mix two recordings."""
    path = trace_file(folder, task, max_new_tokens)
    done = {c.case: c for c in read_cases(path)}
    for case in done.values():
        if case.sampling != sampling_of(regime, case_seed(seed, case.case)):
            held = case.regime.describe() + ("" if case.seed is None else ", another seed")
            raise PLDError(f"{path} holds cases recorded {held}; record {regime.describe()} into another "
                           "folder (--out), or remove it")

    def answer(case: Case) -> list[int]:
        if case.id not in done:
            done[case.id] = record_case(target, case, max_new_tokens, regime=regime, seed=seed)
            append_case(path, done[case.id])
        if progress is not None:
            progress.update()
        return done[case.id].output

    for prompt in prompts:
        for _ in conversation_cases(target, prompt, answer):
            pass  # conversation_cases calls answer() for each turn
    return path
