"""Record traces: plain decoding (greedy, or sampled with a seed per case) of every turn of a suite's
prompts, once, with the target's top-k rows."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

import decoding
from decoding.batch_decode import DEFAULT_BATCH, BatchJob, decode_batch
from decoding.model_target import ModelTarget
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
    return _trace(target, case, max_new_tokens, out.tokens, recorder.rows(), regime, drawn)


def _trace(target, case: Case, max_new_tokens: int, tokens: list[int], rows: TopRows, regime: Regime,
           drawn: int) -> TraceCase:
    """The trace of ``case`` decoded into ``tokens`` in ``regime`` (sampled with seed ``drawn``)."""
    return TraceCase(case.id, case.category, case.turn, case.ids, tokens, [], target.name, target.vocab_size,
                     sorted(target.eos_token_ids), max_new_tokens, top=rows, sampling=sampling_of(regime, drawn))


def record(target, task: str, prompts: Sequence[Prompt], max_new_tokens: int, folder: Path, progress=None,
           regime: Regime = GREEDY, seed: int = 0, batch: int = DEFAULT_BATCH) -> Path:
    """Decode every turn of ``prompts`` not yet in the trace file (greedy, or sampled in ``regime``
    from ``seed``); returns the file. A file that holds another regime or seed is refused: its cases
    would mix two recordings. :func:`record_regimes` with one regime."""
    return record_regimes(target, task, prompts, max_new_tokens, {regime: folder}, progress, seed, batch)[regime]


def record_regimes(target, task: str, prompts: Sequence[Prompt], max_new_tokens: int, folders: Mapping[Regime, Path],
                   progress=None, seed: int = 0, batch: int = DEFAULT_BATCH) -> dict[Regime, Path]:
    """Record ``task``'s ``prompts`` in each regime of ``folders`` (greedy, or sampled from ``seed``,
    a seed per case) into that regime's folder; returns each regime's trace file.

    Cases already in a file are kept (a recording that stopped goes on where it stopped). The rest
    decode side by side, ``batch`` at a time (:func:`decoding.batch_decode.decode_batch`; a prompt that
    several regimes ask for is prefilled once), turn by turn: every prompt's first turn, then the
    second turns, which follow each regime's own first answers. A file's cases are in the prompts'
    order, as one at a time would write them: a prompt's cases are appended once its every turn is
    recorded and the prompts before it are."""
    paths, done = {}, {}
    for regime, folder in folders.items():
        paths[regime] = path = trace_file(folder, task, max_new_tokens)
        done[regime] = {c.case: c for c in read_cases(path)}
        for case in done[regime].values():
            if case.sampling != sampling_of(regime, case_seed(seed, case.case)):
                held = case.regime.describe() + ("" if case.seed is None else ", another seed")
                raise PLDError(f"{path} holds cases recorded {held}; record {regime.describe()} into another "
                               "folder (--out), or remove it")
    written = {regime: set(cases) for regime, cases in done.items()}

    def answer(regime: Regime):
        return lambda case: done[regime][case.id].output

    # one conversation per (regime, prompt), driven a turn at a time: each yields its next case once
    # the previous one's answer is recorded
    talks = [(regime, conversation_cases(target, prompt, answer(regime))) for regime in folders for prompt in prompts]
    cases: list[list[Case]] = [[] for _ in talks]
    ended = [False] * len(talks)
    flushed = {regime: 0 for regime in folders}  # prompts whose cases are in the file, in order
    while not all(ended):
        pending = []
        for t, (regime, talk) in enumerate(talks):
            if ended[t]:
                continue
            case = next(talk, None)
            if case is None:
                ended[t] = True
            elif case.id in done[regime]:
                cases[t].append(case)
                if progress is not None:
                    progress.update()
            else:
                cases[t].append(case)
                pending.append((regime, case))
        # like prompts side by side (less padding), the regimes of one prompt together (one prefill)
        pending.sort(key=lambda item: (len(item[1].ids), item[1].ids))
        traces = record_cases(target, pending, max_new_tokens, seed=seed, batch=batch) if pending else []
        for (regime, case), trace in zip(pending, traces):
            done[regime][case.id] = trace
            if progress is not None:
                progress.update()
        for regime in folders:  # append each finished prompt's cases, in the prompts' order
            mine = [t for t, (r, _) in enumerate(talks) if r == regime]
            while flushed[regime] < len(mine) and ended[mine[flushed[regime]]]:
                for case in cases[mine[flushed[regime]]]:
                    if case.id not in written[regime]:
                        append_case(paths[regime], done[regime][case.id])
                        written[regime].add(case.id)
                flushed[regime] += 1
    return paths


def record_cases(target, cases: Sequence[tuple[Regime, Case]], max_new_tokens: int, top_k: int = MAX_TOP,
                 seed: int = 0, batch: int = DEFAULT_BATCH) -> list[TraceCase]:
    """:func:`record_case` of each ``(regime, case)``, decoded side by side, ``batch`` at a time
    (:func:`decoding.batch_decode.decode_batch`: tokens as one at a time decodes them but where float
    noise decides, and the same top-k rows up to that noise); a target other than a model's
    (:class:`~decoding.model_target.ModelTarget`) records one at a time."""
    if not isinstance(target, ModelTarget):  # a stand-in target: one at a time through the loop
        return [record_case(target, case, max_new_tokens, top_k, regime, seed) for regime, case in cases]
    drawn = [case_seed(seed, case.id) for _, case in cases]
    jobs = [BatchJob(case.ids, regime.temperature, regime.top_k, regime.top_p, None if regime.greedy else d)
            for (regime, case), d in zip(cases, drawn)]
    outs = decode_batch(target, jobs, max_new_tokens, rows_k=top_k, batch=batch)
    return [_trace(target, case, max_new_tokens, out.tokens, out.rows, regime, d)
            for (regime, case), d, out in zip(cases, drawn, outs)]
